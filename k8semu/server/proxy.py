"""``pods/NAME/proxy`` and ``services/NAME/proxy``: kube-apiserver's HTTP proxy to a pod.

``kubectl proxy`` (then a browser on ``http://127.0.0.1:8001/api/v1/namespaces/NS/services/web:80/proxy/``)
and ``kubectl get --raw /api/v1/namespaces/NS/services/web:80/proxy/`` reach a container's
HTTP server through the API server. As upstream's pod and service ``ResourceLocation``:

- the name is ``NAME``, ``NAME:PORT`` or ``SCHEME:NAME:PORT``; for a pod ``PORT`` is a number
  and defaults to the first container's first ``containerPort``; for a service it is a port
  name or number (a number is looked up among the service's ports: ``no service port 81 found
  for service "web"``; an unnamed single port otherwise);
- a service picks a ready address of its ``Endpoints`` that has the port (``no endpoints
  available for service "web"`` when there is none) and proxies to that pod's port. As
  upstream's ``isValidAddress``, an address counts only when its ``targetRef`` is a pod in the
  service's namespace whose ``podIPs`` hold the address: the ``kubernetes`` service's address
  (the API server's, no ``targetRef``) never does, so ``services/kubernetes:443/proxy/`` is
  503 ``no endpoints available for service "kubernetes:443"`` on a real cluster too;
- RBAC: the request's verb (``get`` for GET, ``create`` for POST, …) on ``pods/proxy`` /
  ``services/proxy``;
- the answer is the container's (:meth:`k8semu.node.podnetwork.PodTarget.answer`: status, headers, body);
  a refused connection is 503 ``error trying to reach service: dial tcp IP:PORT: connect:
  connection refused``.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import RequestContext

__all__ = ["VERBS", "locate", "answer"]

#: The RBAC verb of each HTTP method on a proxy subresource (upstream's RequestInfo).
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
         "DELETE": "delete", "OPTIONS": "get"}


def _split(id_: str) -> tuple[str, str, str]:
    """``utilnet.SplitSchemeNamePort``: (scheme, name, port)."""
    parts = id_.split(":")
    if len(parts) == 1:
        return "", parts[0], ""
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) == 3 and parts[0] in ("http", "https"):
        return parts[0], parts[1], parts[2]
    raise errors.BadRequest(f"invalid request {id_}")


def _unavailable(message: str) -> errors.StatusError:
    e = errors.ServiceUnavailable(message)
    e.details = {}
    return e


def locate(api: Any, ctx: RequestContext, method: str, namespace: str, resource: str,
           id_: str) -> tuple[dict[str, Any], int]:
    """The pod and its port a proxy request goes to (after RBAC on ``<resource>/proxy``)."""
    info = api.resource(resource)
    api._authz(ctx, VERBS.get(method, "get"), info, namespace, id_, "proxy")
    _scheme, name, port = _split(id_)
    if resource == "pods":
        pod = api.get("pods", name, namespace=namespace)
        if not port:
            for c in (pod.get("spec") or {}).get("containers") or []:
                if c.get("ports"):
                    port = str(c["ports"][0].get("containerPort"))
                    break
        if not port.isdigit():
            raise errors.BadRequest(f"invalid port {port!r} for pod {name}" if port else
                                    f"no port specified for pod {name}")
        return pod, int(port)
    svc = api.get("services", name, namespace=namespace)
    ports = (svc.get("spec") or {}).get("ports") or []
    if port.isdigit():
        match = next((p for p in ports if p.get("port") == int(port)), None)
        if match is None:
            raise _unavailable(f'no service port {port} found for service "{name}"')
        port = match.get("name") or ""
    try:
        eps = api.get("endpoints", name, namespace=namespace)
    except errors.NotFound:
        raise _unavailable(f'no endpoints available for service "{name}"') from None
    subsets = eps.get("subsets") or []
    if not subsets:
        raise _unavailable(f'no endpoints available for service "{name}"')
    for ss in subsets:
        for p in ss.get("ports") or []:
            if (p.get("name") or "") != port:
                continue
            for addr in ss.get("addresses") or []:
                ref = addr.get("targetRef")
                if not ref or ref.get("namespace") != namespace:
                    continue  # upstream: "Address has no target ref, skipping" / namespace mismatch
                try:
                    pod = api.get("pods", ref.get("name"), namespace=namespace)
                except errors.NotFound:
                    continue
                status = pod.get("status") or {}
                ips = [i.get("ip") for i in status.get("podIPs") or []] or [status.get("podIP")]
                if addr.get("ip") not in ips:
                    continue  # "pod ip(s) doesn't match endpoint ip, skipping"
                return pod, int(p.get("port"))
    raise _unavailable(f'no endpoints available for service "{id_}"')


def answer(api: Any, pod: dict[str, Any], port: int, method: str, target: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """The container's HTTP answer: (status, headers, body)."""
    from ..node.podnetwork import ForwardError, PodTarget

    ip = (pod.get("status") or {}).get("podIP") or ""
    refused = _unavailable(f"error trying to reach service: dial tcp {ip}:{port}: connect: connection refused")
    try:
        got = PodTarget(api, pod).answer(port, method=method, target=target)
    except ForwardError:
        raise refused from None
    if got is None:  # it listens but does not speak HTTP
        e = _unavailable(f"error trying to reach service: read tcp {ip}:{port}: EOF")
        raise e
    headers = [(k, v) for k, v in got.headers if k.lower() not in ("content-length", "connection")]
    return got.status, headers, got.body
