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

from collections.abc import Awaitable, Callable
from typing import Any

import h11
import orjson
import trio

from ..api import errors
from ..api.apiserver import RequestContext
from ..node.podnetwork import ForwardError, PodNetwork, PodTarget
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
