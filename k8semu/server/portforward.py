"""``pods/NAME/portforward``: kubectl port-forward into emulated containers.

kube-apiserver proxies port-forward to the kubelet, whose CRI streaming server
(containerd) dials ``localhost:PORT`` inside the pod's network namespace. Here
the "dial" asks the container's behaviour program
(:func:`k8semu.node.behaviour.http_answer`), rebuilt from the pod's spec and
status as ``pods/log`` does, and the bytes the client sends are parsed as
HTTP/1.1 requests (h11) and answered by it.

Protocols:

* **WebSocket tunnel** (kubectl ≥ 1.31, KEP-4006): a WebSocket with subprotocol
  ``SPDY/3.1+portforward.k8s.io`` whose binary messages carry a SPDY/3.1 byte
  stream (message boundaries need not match frames) — :func:`serve_websocket`.
* **Port-forward streams** (upstream's ``httpstream`` port-forward handler):
  per forwarded connection the client opens two SPDY streams with headers
  ``streamType`` (``error`` / ``data``), ``port`` and ``requestID``; each is
  replied to at once; once both of a request id are there, the data stream's
  bytes go to the container and its answer comes back on the data stream; a
  failure is written as text on the error stream; then both are closed (FIN).
  :class:`PortForwarder` does this over a :class:`~k8semu.server.spdy.Session`.

* **SPDY upgrade** (kubectl ≤ 1.30, and newer ones falling back): ``POST`` +
  ``Upgrade: SPDY/3.1`` + ``X-Stream-Protocol-Version: portforward.k8s.io``,
  answered 101 on the raw connection, which :mod:`.upgrade` takes before
  Hypercorn — :func:`serve_spdy`. An upgrade that reaches the ASGI app anyway
  gets :data:`SPDY_UNSUPPORTED` (400).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import h11
import orjson
import trio

from ..api import errors
from ..api.apiserver import RequestContext
from . import spdy

__all__ = ["TUNNEL_PROTOCOL", "SPDY_UNSUPPORTED", "ForwardError", "PodNetwork", "PodTarget", "PortForwarder",
           "check_pod", "serve_websocket", "serve_spdy"]

#: The WebSocket subprotocol of SPDY tunnelled over WebSockets for port-forward.
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
#: The stream protocol of a SPDY port-forward upgrade (``X-Stream-Protocol-Version``).
SPDY_PROTOCOL = "portforward.k8s.io"
#: The message of the 400 answering a SPDY upgrade that reached the ASGI app.
SPDY_UNSUPPORTED = ("k8semu serve: this SPDY upgrade reached the ASGI app; port-forward upgrades are "
                    "served on k8semu serve's own HTTP/1.1 connections")

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


class ForwardError(Exception):
    """A forwarded connection failed; ``str(e)`` is the text for the error stream, in the format of
    upstream's kubelet (``error forwarding port P to pod SANDBOX, uid : ...``)."""


def check_pod(api: Any, ctx: RequestContext, namespace: str, name: str) -> dict[str, Any]:
    """Authorize and look up the pod to forward to (what kube-apiserver does before proxying).

    RBAC: verb ``create`` on ``pods/portforward``, as upstream. The pod is then read with the
    server's own rights.

    Raises:
        Forbidden: RBAC denies it.
        NotFound: no such pod.
        BadRequest: the pod is not Running (kubectl's own message, which it also checks client-side:
            ``unable to forward port because pod is not running. Current status=Pending``).
    """
    info = api.resource("pods")
    api._authz(ctx, "create", info, namespace, name, "portforward")
    pod = api.get(info, name, namespace=namespace)
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase != "Running":
        raise errors.BadRequest(f"unable to forward port because pod is not running. Current status={phase}")
    from ..sim.components import kubelet_unreachable

    if (dial := kubelet_unreachable(api, pod)) is not None:
        raise errors.UnknownError(f"error dialing backend: {dial}")
    return pod


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
        from ..node.runtime import container_id

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
        from ..node import inputs

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
        from ..node import behaviour

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
        from ..node import networkpolicy

        policies, namespaces = self._policies()
        if not policies:
            return True
        return networkpolicy.allowed(policies, namespaces, self.pod, dst_pod, port, protocol,
                                     src_ips=[self.pod_ip],
                                     dst_ips=None if dst_pod is not None else [dst_ip or ""])

    def _route(self, ip: str, port: int, protocol: str) -> Any:
        """kube-proxy's verdict (:func:`k8semu.node.proxy.route`) for a new connection from this pod."""
        import random

        from ..node import proxy

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
        from ..node import dns

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
        from ..node import dns

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
        from ..node import behaviour

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


def _bad_request() -> bytes:
    body = (b"<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n"
            b"<center><h1>400 Bad Request</h1></center>\r\n</body>\r\n</html>\r\n")
    return (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


class PortForwarder:
    """Upstream's port-forward stream handling over a SPDY session (pass :meth:`on_stream` to
    :class:`~k8semu.server.spdy.Session`).

    A stream without ``requestID`` (very old clients) is paired as upstream does: an error stream's
    request id is its stream id, a data stream's its stream id minus 2. Streams with a missing or
    invalid ``port`` or an unknown ``streamType`` are reset.
    """

    def __init__(self, target: PodTarget) -> None:
        self.target = target
        self._pairs: dict[str, dict[str, spdy.Stream]] = {}

    async def on_stream(self, stream: spdy.Stream) -> None:
        stype = stream.header("streamtype")
        port_text = stream.header("port") or ""
        rid = stream.header("requestid")
        if rid is None:
            rid = str(stream.id if stype == "error" else stream.id - 2)
        if stype not in ("error", "data") or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            await stream.reset(spdy.CANCEL)
            return
        pair = self._pairs.setdefault(rid, {})
        if stype in pair:
            await stream.reset(spdy.PROTOCOL_ERROR)
            return
        await stream.reply()
        pair[stype] = stream
        if len(pair) == 2:
            del self._pairs[rid]
            await self.forward(pair["data"], pair["error"], int(port_text))

    async def forward(self, data: spdy.Stream, error: spdy.Stream, port: int) -> None:
        """Serve one forwarded connection to ``port``; always ends by closing the error stream,
        then the data stream (FIN), as upstream's handler does."""
        try:
            try:
                first = self.target.answer(port)
                if first is None:  # listening, not HTTP: take the bytes, answer nothing
                    while await data.receive_some():
                        pass
                else:
                    await self._http(data, port)
            except ForwardError as e:
                await error.send_all(str(e).encode())
        except spdy.StreamReset:
            return
        await error.close()
        await data.close()

    async def _http(self, data: spdy.Stream, port: int) -> None:
        conn = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError:
                if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    await data.send_all(_bad_request())
                return
            if event is h11.NEED_DATA:
                conn.receive_data(await data.receive_some())
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                ans = self.target.answer(port, request.method.decode(), request.target.decode("latin-1"))
                if ans is None:
                    return
                out = conn.send(h11.Response(status_code=ans.status, reason=ans.reason.encode(),
                                             headers=list(ans.headers)))
                if ans.body:
                    out += conn.send(h11.Data(data=ans.body))
                out += conn.send(h11.EndOfMessage())
                await data.send_all(out)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return  # Connection: close (or HTTP/1.0): the server closes
                conn.start_next_cycle()
                request = None
            elif isinstance(event, (h11.ConnectionClosed, h11.PAUSED)):
                return


async def _reject(scope: dict[str, Any], send: Send, err: errors.StatusError) -> None:
    if "websocket.http.response" in (scope.get("extensions") or {}):
        body = orjson.dumps(err.status())
        await send({"type": "websocket.http.response.start", "status": err.code,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:
        await send({"type": "websocket.close", "code": 1008})


async def serve_websocket(api: Any, ctx: RequestContext, namespace: str, name: str, scope: dict[str, Any],
                          receive: Receive, send: Send, *, shutting_down: trio.Event | None = None) -> None:
    """Serve one ASGI ``websocket`` connection for ``pods/NAME/portforward``.

    Rejections (before accepting) are HTTP responses with a ``Status`` body when the server
    supports the ASGI ``websocket.http.response`` extension (Hypercorn does): 403/404/400 from
    :func:`check_pod`, 400 when the client does not offer :data:`TUNNEL_PROTOCOL`; kubectl then
    falls back to a SPDY upgrade, which gets the same error or :data:`SPDY_UNSUPPORTED`.
    Otherwise it accepts with :data:`TUNNEL_PROTOCOL` and runs a SPDY session on the messages
    until the client goes or ``shutting_down`` is set.
    """
    first = await receive()
    if first.get("type") != "websocket.connect":
        return
    try:
        pod = check_pod(api, ctx, namespace, name)
        if TUNNEL_PROTOCOL not in (scope.get("subprotocols") or []):
            raise errors.BadRequest(f"unable to upgrade: no supported WebSocket subprotocol "
                                    f"(this server speaks {TUNNEL_PROTOCOL})")
    except errors.StatusError as e:
        return await _reject(scope, send, e)
    await send({"type": "websocket.accept", "subprotocol": TUNNEL_PROTOCOL})
    gone = False

    async def ws_receive() -> bytes | None:
        nonlocal gone
        while True:
            msg = await receive()
            if msg["type"] == "websocket.disconnect":
                gone = True
                return None
            if msg["type"] == "websocket.receive" and msg.get("bytes"):
                return msg["bytes"]

    async def ws_send(data: bytes) -> None:
        if gone:
            raise spdy.StreamReset(spdy.CANCEL)
        await send({"type": "websocket.send", "bytes": data})

    await _forward_session(api, pod, ws_send, ws_receive, shutting_down)
    if not gone:
        try:
            await send({"type": "websocket.close", "code": 1000})
        except Exception:
            pass


async def serve_spdy(api: Any, ctx: RequestContext, namespace: str, name: str, request: Any, *,
                     shutting_down: trio.Event | None = None) -> None:
    """Serve ``pods/NAME/portforward`` on a connection asking for ``Upgrade: SPDY/3.1`` (an
    :class:`~k8semu.server.upgrade.UpgradeRequest`): the :func:`check_pod` refusals as ``Status``
    responses, 403 when the client does not offer :data:`SPDY_PROTOCOL` (the kubelet's
    negotiation error), else 101 and the same :class:`PortForwarder` streams as the WebSocket
    tunnel, until the client closes the connection or ``shutting_down`` is set."""
    try:
        pod = check_pod(api, ctx, namespace, name)
    except errors.StatusError as e:
        return await request.respond(e.code, orjson.dumps(e.status()), "application/json")
    offered = request.values("x-stream-protocol-version")
    if SPDY_PROTOCOL not in offered:
        return await request.respond(
            403, (f"unable to upgrade: unable to negotiate protocol: client supports [{' '.join(offered)}], "
                  f"server accepts [{SPDY_PROTOCOL}]").encode(), "text/plain; charset=utf-8",
            [("X-Accepted-Stream-Protocol-Versions", SPDY_PROTOCOL)])
    transport = await request.switch([("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"),
                                      ("X-Stream-Protocol-Version", SPDY_PROTOCOL)])

    async def send(data: bytes) -> None:
        try:
            await transport.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise spdy.StreamReset(spdy.CANCEL) from None

    try:
        await _forward_session(api, pod, send, transport.receive, shutting_down)
    finally:
        await transport.aclose()  # shielded, bounded


async def _forward_session(api: Any, pod: dict[str, Any], send: Callable[[bytes], Awaitable[None]],
                           receive: Callable[[], Awaitable[bytes | None]], shutting_down: trio.Event | None) -> None:
    """A SPDY session of :class:`PortForwarder` streams on ``send``/``receive`` (the WebSocket
    tunnel's messages or the upgraded connection's bytes), until the client closes it or
    ``shutting_down`` is set."""
    session = spdy.Session(send, PortForwarder(PodTarget(api, pod)).on_stream)
    async with trio.open_nursery() as nursery:
        async def stop_on_shutdown() -> None:
            if shutting_down is None:
                return
            await shutting_down.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_on_shutdown)
        await session.run(receive)
        nursery.cancel_scope.cancel()
