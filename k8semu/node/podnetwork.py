"""The network as a pod's containers see it: the pod's own network namespace (:class:`PodTarget`,
what ``kubectl port-forward`` dials) and the cluster network beyond it (:class:`PodNetwork`: cluster
DNS, kube-proxy's Service forwarding, other pods, NetworkPolicies), for ``wget``, ``curl`` and
``nslookup`` in containers (:attr:`k8semu.node.behaviour.Run.network`).

Which network a container's run gets:

* the kubelet's own run of a container (its main process, what ``logs`` shows): a
  :class:`PodNetwork` over the live API at the kubelet's virtual now;
* a process exec'd into it (``kubectl exec``): the same, at the server's now;
* a *replay* of a container's run from its start (``k8semu logs``, ``pods/log``, ``kubectl
  attach``, a restarted kubelet catching up): a :class:`PastNetwork`, which answers each call
  from the cluster as it was at that call's virtual time (:func:`k8semu.timeline.view.state_at`),
  so the replay prints what the kubelet's run printed;
* a replay made to answer a connection (:class:`PodTarget` rebuilding the destination's
  containers): none — its own clients stay quiet (``wget`` succeeds without output), which keeps
  two pods that call each other from replaying each other without end.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from ..api import errors

__all__ = ["ForwardError", "PastNetwork", "PodNetwork", "PodTarget"]


class ForwardError(Exception):
    """A forwarded connection failed; ``str(e)`` is the text for the error stream, in the format of
    upstream's kubelet (``error forwarding port P to pod SANDBOX, uid : ...``)."""


class PodTarget:
    """The pod's network namespace as containerd's port-forward sees it: :meth:`answer` plays the
    part of dialling ``localhost:port`` and talking HTTP to whatever listens.

    Each call re-reads the pod (same uid required) and rebuilds its running containers' programs
    from their spec and ``status.containerStatuses[].state.running.startedAt``, advanced to the
    API server's virtual now. Containers that declare the port come first, then the others.
    """

    def __init__(self, api: Any, pod: dict[str, Any]) -> None:
        self.api = api
        meta = pod.get("metadata") or {}
        self.namespace = meta.get("namespace") or "default"
        self.name = meta["name"]
        self.uid = meta.get("uid") or ""
        spec = pod.get("spec") or {}
        from .runtime import container_id

        #: containerd's sandbox id for the pod (the runtime's deterministic id).
        self.sandbox_id = container_id(spec.get("nodeName") or "", self.uid, "POD", 0)
        if spec.get("hostNetwork"):
            self.netns = "host"
        else:
            h = hashlib.sha256(f"netns/{self.sandbox_id}".encode()).hexdigest()
            self.netns = f"/var/run/netns/cni-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def _prefix(self, port: int) -> str:
        return f"error forwarding port {port} to pod {self.sandbox_id}, uid : "

    def refused(self, port: int) -> ForwardError:
        """containerd's dial failure for ``port``, wrapped by the kubelet."""
        return ForwardError(
            f'{self._prefix(port)}failed to execute portforward in network namespace "{self.netns}": '
            f'failed to connect to localhost:{port} inside namespace "{self.sandbox_id}", '
            f"IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused "
            f"IPv6 dial tcp6 [::1]:{port}: connect: connection refused ")

    def _runs(self) -> list[Any]:
        from ..api.humanize import parse_timestamp
        from . import inputs

        api = self.api
        try:
            pod = api.get("pods", self.name, namespace=self.namespace)
        except errors.NotFound:
            pod = None
        if pod is None or (pod.get("metadata") or {}).get("uid") != self.uid or \
                (pod.get("status") or {}).get("phase") != "Running":
            raise ForwardError(f'{self._prefix(0)}failed to find sandbox "{self.sandbox_id}" in store: not found')
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        specs = {c["name"]: c for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or [])}
        epoch, now = api.epoch, api.now
        runs = []
        for st in list(status.get("initContainerStatuses") or []) + list(status.get("containerStatuses") or []):
            running = (st.get("state") or {}).get("running")
            c = specs.get(st.get("name"))
            if running is None or c is None:
                continue
            t = parse_timestamp(running.get("startedAt"))
            start = 0.0 if t is None else (t - epoch).total_seconds()
            try:
                run = inputs.replay_program(api, pod, c, start).start(
                    start, wall_clock=lambda v: epoch + timedelta(seconds=v))
            except ValueError:
                continue
            run.advance(now)
            runs.append(run)
        return runs

    def answer(self, port: int, method: str = "GET", target: str = "/", *, client: str = "127.0.0.1",
               host: str | None = None) -> Any:
        """The :class:`~k8semu.node.behaviour.HTTPAnswer` of whatever listens on ``port``, or None
        when it listens but does not speak HTTP (``client``: the peer address, ``host``: the Host
        header, as :func:`~k8semu.node.behaviour.http_answer` takes them).

        Raises:
            ForwardError: nothing listens there (the refused-connection message), or the pod is gone.
        """
        return self.exchange(port, method, target, client=client, host=host)[1]

    def exchange(self, port: int, method: str = "GET", target: str = "/", *, client: str = "127.0.0.1",
                 host: str | None = None) -> tuple[Any, Any]:
        """(the container's :class:`~k8semu.node.behaviour.Run` that listens on ``port``, its
        :meth:`answer`): what :meth:`answer` returns, with the run that gave it (whose image says
        what a server that does not speak HTTP sends back: :func:`~k8semu.node.behaviour.non_http_reply`).

        Raises:
            ForwardError: as :meth:`answer`.
        """
        from . import behaviour

        runs = self._runs()
        runs.sort(key=lambda r: port not in r.program.declared_ports)
        for run in runs:
            try:
                return run, behaviour.http_answer(run, port, self.api.now, method=method, target=target,
                                                  client=client, host=host)
            except ConnectionRefusedError:
                continue
        raise self.refused(port)


class PodNetwork:
    """The cluster network as a container of ``pod`` sees it: the hook exec gives a container's run
    (:attr:`k8semu.node.behaviour.Run.network`) so that ``wget``, ``curl`` and ``nslookup`` reach
    the cluster's DNS, Services and pods, read from the API at its virtual now.

    * :meth:`resolve`: CoreDNS's answer for one absolute name (:func:`k8semu.node.dns.resolve`),
      when the asked nameserver is the cluster DNS.
    * :meth:`http`: a connection to ``ip:port`` — a Service's cluster IP goes through the
      forwarding table kube-proxy programs on the pod's node (:mod:`k8semu.node.proxy`; the
      endpoint drawn with an RNG seeded by the connection), then the pod at the backend address
      answers as ``kubectl port-forward`` would reach it (:class:`PodTarget`); the pod's own IP
      and ``127.0.0.1`` are the pod itself.

    NetworkPolicies are enforced as a policy-capable CNI (Calico) does
    (:mod:`k8semu.node.networkpolicy`): a connection (a DNS query: UDP to port 53 of the DNS pod
    kube-proxy picks behind the cluster DNS address) that the client pod's egress or the
    destination pod's ingress does not allow is dropped — the caller sees :class:`TimeoutError`
    and decides how long the client waits. ``kubectl port-forward`` (:class:`PodTarget` alone)
    dials inside the pod's network namespace and is not subject to them.
    """

    def __init__(self, api: Any, pod: dict[str, Any]) -> None:
        self.api = api
        self.pod = pod
        status = pod.get("status") or {}
        self.pod_ip = status.get("podIP") or status.get("hostIP") or "127.0.0.1"
        self.node = (pod.get("spec") or {}).get("nodeName") or ""

    # ------------------------------------------------------------------ NetworkPolicy

    def _policies(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(every NetworkPolicy, every Namespace) at the API's now; no namespaces when there is no policy."""
        policies = self.api.list("networkpolicies")["items"]
        return policies, (self.api.list("namespaces")["items"] if policies else [])

    def allows(self, dst_pod: dict[str, Any] | None, port: int, protocol: str = "TCP", *,
               dst_ip: str | None = None) -> bool:
        """Whether the NetworkPolicies let this pod open a connection to ``port``/``protocol`` of
        ``dst_pod`` (None: no pod at ``dst_ip``), as :func:`k8semu.node.networkpolicy.allowed`."""
        from . import networkpolicy

        policies, namespaces = self._policies()
        if not policies:
            return True
        return networkpolicy.allowed(policies, namespaces, self.pod, dst_pod, port, protocol,
                                     src_ips=[self.pod_ip],
                                     dst_ips=None if dst_pod is not None else [dst_ip or ""])

    def _route(self, ip: str, port: int, protocol: str) -> Any:
        """kube-proxy's verdict (:func:`k8semu.node.proxy.route`) for a new connection from this pod."""
        import random

        from . import proxy

        table = proxy.build_rules(self.node, self.api.list("services")["items"],
                                  self.api.list("endpointslices")["items"])
        proto = "" if protocol == "TCP" else f"{protocol}/"
        seed = hashlib.sha256(f"connect/{self.pod_ip}/{ip}/{port}/{proto}{self.api.now!r}".encode()).digest()
        return proxy.route(table, self.pod_ip, ip, port, protocol, rng=random.Random(seed), now=self.api.now)

    def dns_reachable(self, server: str) -> bool:
        """Whether a DNS query (UDP, port 53) to ``server`` gets through the NetworkPolicies.

        The cluster DNS address is a Service: the query goes to the DNS pod kube-proxy picks
        (CoreDNS, ``k8s-app: kube-dns`` in ``kube-system``, on a kubeadm cluster). A cluster
        without DNS pods (``cluster create --bare``) still answers names; its DNS counts as a pod
        of ``kube-system`` labelled ``k8s-app: kube-dns`` whose container declares CoreDNS's ports
        (``dns`` 53/UDP, ``dns-tcp`` 53/TCP, ``metrics`` 9153/TCP) and has no address, so the
        usual "allow DNS" egress rules (to that namespace and/or those pods, or to any
        destination on port 53) admit it, while an ``ipBlock`` does not.
        """
        policies, _ = self._policies()
        if not policies:
            return True
        from . import dns

        routed = self._route(server, 53, "UDP")
        if routed.kind == "endpoint" and routed.backend_ip:
            pod = self._pod_at(routed.backend_ip)
            if pod is not None:
                return self.allows(pod, routed.backend_port or 53, "UDP")
        if server != dns.CLUSTER_DNS:
            return self.allows(self._pod_at(server), 53, "UDP", dst_ip=server)
        return self.allows(_virtual_dns_pod(), 53, "UDP")

    # ------------------------------------------------------------------ DNS and connections

    def resolve(self, name: str, nameservers: Any = ()) -> list[str]:
        """The addresses cluster DNS answers for the absolute ``name`` ([] for NXDOMAIN, or when
        none of ``nameservers`` is the cluster DNS); ExternalName targets are not followed.

        Raises:
            TimeoutError: the query to the cluster DNS is dropped (:meth:`dns_reachable`): the
                resolver gets no answer (the caller decides how long it waits).
        """
        from . import dns

        if nameservers and dns.CLUSTER_DNS not in list(nameservers):
            return []
        if not self.dns_reachable(dns.CLUSTER_DNS):
            raise TimeoutError(dns.CLUSTER_DNS, 53)
        services = self.api.list("services")["items"]
        slices = self.api.list("endpointslices")["items"]
        try:
            answer = dns.resolve(name.rstrip(".") + ".", services, slices, None)
        except dns.NXDomain:
            return []
        return [a for a in answer if not isinstance(a, dns.CNAME)]

    def _pod_at(self, ip: str) -> dict[str, Any] | None:
        for pod in self.api.list("pods")["items"]:
            status = pod.get("status") or {}
            ips = [status.get("podIP")] + [p.get("ip") for p in status.get("podIPs") or []]
            if ip in ips and status.get("phase") == "Running" and not (pod.get("spec") or {}).get("hostNetwork"):
                return pod
        return None

    def http(self, ip: str, port: int, method: str = "GET", target: str = "/", host: str | None = None) -> Any:
        """The :class:`~k8semu.node.behaviour.HTTPAnswer` of ``ip:port``, or, when what listens
        there does not speak HTTP, the bytes it sends back to an HTTP request
        (:func:`~k8semu.node.behaviour.non_http_reply`; ``b""``: it closes without a word).

        Raises:
            ConnectionRefusedError: nothing listens there, or the Service has no endpoints.
            TimeoutError: nothing answers at that address (no such pod, a dropped connection), or a
                NetworkPolicy drops the connection (judged against the endpoint a Service picked).
        """
        from . import behaviour

        client = self.pod_ip
        if ip in ("127.0.0.1", "::1", "localhost"):
            pod, client = self.pod, "127.0.0.1"
        else:
            routed = self._route(ip, port, "TCP")
            if routed.kind == "reject":
                raise ConnectionRefusedError(ip, port)
            if routed.kind == "drop":
                raise TimeoutError(ip, port)
            if routed.kind == "endpoint":
                ip, port = routed.backend_ip or ip, routed.backend_port or port
            pod = self.pod if ip == self.pod_ip else self._pod_at(ip)
            if pod is None:
                raise TimeoutError(ip, port)
            if not self.allows(pod, port, "TCP"):
                raise TimeoutError(ip, port)
        try:
            run, answer = PodTarget(self.api, pod).exchange(port, method, target, client=client, host=host)
        except ForwardError:
            raise ConnectionRefusedError(ip, port) from None
        return behaviour.non_http_reply(run.program) if answer is None else answer


def _virtual_dns_pod() -> dict[str, Any]:
    """The stand-in for CoreDNS on a cluster without DNS pods (see :meth:`PodNetwork.dns_reachable`)."""
    return {"metadata": {"name": "coredns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"containers": [{"name": "coredns", "ports": [
                {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                {"name": "metrics", "containerPort": 9153, "protocol": "TCP"}]}]},
            "status": {}}


class PastNetwork:
    """:class:`PodNetwork` for a replay of a container's run: each call is answered by the cluster
    as it was at the run's virtual time then (the last revision written by that time), so that
    the replay's ``wget``/``curl``/``nslookup`` print what they printed when the kubelet ran them.
    Calls at or after the API's now go to the live API.

    ``run`` is the replayed :class:`~k8semu.node.behaviour.Run` (its ``now`` is the call's time);
    an API without an event log (nothing to look back at) always answers from its now.
    """

    def __init__(self, api: Any, pod: dict[str, Any], run: Any) -> None:
        self.api = api
        self.pod = pod
        self.run = run
        self._views: dict[int, PodNetwork] = {}

    def _at(self) -> PodNetwork:
        api, t = self.api, float(self.run.now)
        log = getattr(api, "log", None)
        if log is None or t >= api.now - 1e-9:
            return PodNetwork(api, self.pod)
        from ..timeline.view import revision_at_time, state_at

        revision = revision_at_time(log, t)
        net = self._views.get(revision)
        if net is None:
            net = self._views[revision] = PodNetwork(state_at(log, revision, t), self.pod)
        return net

    def resolve(self, name: str, nameservers: Any = ()) -> list[str]:
        """:meth:`PodNetwork.resolve` at the run's virtual time."""
        return self._at().resolve(name, nameservers)

    def http(self, ip: str, port: int, method: str = "GET", target: str = "/", host: str | None = None) -> Any:
        """:meth:`PodNetwork.http` at the run's virtual time."""
        return self._at().http(ip, port, method=method, target=target, host=host)
