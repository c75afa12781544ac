"""The connections' front: who serves each connection, chosen from its first request.

kube-apiserver (Go's ``net/http``) lets a handler hijack the connection: a
``POST …/pods/NAME/exec`` with ``Connection: Upgrade`` and ``Upgrade:
SPDY/3.1`` (kubectl ≤ 1.29, and newer kubectl falling back from WebSocket) is
answered ``101 Switching Protocols`` and the socket then carries a SPDY
session. ASGI has no such hand-over: Hypercorn speaks HTTP/1.1, HTTP/2 and
WebSocket itself and gives the app only their messages.

So :func:`serve` takes the listening sockets from Hypercorn's ``Config`` and
looks at each connection first. client-go dials a fresh connection for every
upgrade (its SPDY round tripper and its WebSocket dialer both do), and an
upgrade's request is the first one on its connection; so the first request
head of an HTTP/1.1 connection is read here (with h11), and then:

- an upgrade to another protocol than WebSocket (SPDY): if ``raw_upgrade(request)``
  returns a handler, the handler owns the connection (:class:`UpgradeRequest`
  answers it, or switches protocols and hands over a :class:`Transport`);
- HTTP/2: connections that chose it by ALPN (not looked at) and HTTP/2's
  connection preface on plain HTTP (``PRI * HTTP/2.0``: h2c with prior knowledge,
  which h11 parses as a request): :func:`.http2.serve_connection`;
- a WebSocket or ``h2c`` upgrade and bytes that are not a request: Hypercorn's own
  connection handler (``hypercorn.trio.tcp_server.TCPServer``), with the bytes read
  so far replayed into it;
- every other request: :func:`.http1.serve_connection` serves it and the rest
  of the keep-alive connection, at a fraction of Hypercorn's cost per request.

Shutdown follows Hypercorn's: stop accepting, let idle keep-alive connections
close, cancel what is left after ``config.graceful_timeout``.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

import h11
import trio

from . import http1, http2
from .pki import client_identity

__all__ = ["Transport", "UpgradeRequest", "serve"]

_RECEIVE = 65536  # bytes per read, as Hypercorn's
# the longest request head served: Go's net/http default (MaxHeaderBytes, 1 MiB, plus the 4 KiB it
# allows on top); a longer first one is left to Hypercorn, which refuses it (431), later ones are
# refused by .http1 (431)
_MAX_HEAD = (1 << 20) + 4096

Handler = Callable[[], Awaitable[None]]


class _Replayed:
    """A connection's stream with the bytes already read put back in front (for Hypercorn).

    Everything else (``do_handshake``, ``selected_alpn_protocol``, ``transport_stream``, ``socket``,
    ``send_eof`` where the stream has it) is the wrapped stream's, so Hypercorn tells TLS from plain
    TCP exactly as it does for the stream itself.
    """

    def __init__(self, stream: Any, prefix: bytes) -> None:
        self._stream = stream
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix, b""
            return data
        return await self._stream.receive_some(max_bytes)

    async def send_all(self, data: bytes) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self._stream.aclose()


class Transport:
    """The raw byte stream of a connection after ``101 Switching Protocols``.

    :meth:`receive` returns ``b""`` once the peer closed (or the connection broke); :meth:`send`
    raises ``trio.BrokenResourceError`` / ``trio.ClosedResourceError`` when it cannot send.
    """

    def __init__(self, stream: Any, pending: bytes) -> None:
        self._stream = stream
        self._pending = pending
        self._send_lock = trio.Lock()

    async def receive(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        try:
            return bytes(await self._stream.receive_some(_RECEIVE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

    async def send(self, data: bytes) -> None:
        async with self._send_lock:
            await self._stream.send_all(data)

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await self._stream.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass


class UpgradeRequest:
    """The first request of a connection, asking to upgrade to a protocol Hypercorn does not speak.

    Attributes:
        method: ``POST``, ``GET`` …
        target: the request target as sent (path and query, percent-encoded).
        headers: (name, value) pairs, names lower-case, in order (repeated headers repeat).
    """

    def __init__(self, conn: h11.Connection, request: h11.Request, stream: Any,
                 client_cert: tuple[str, tuple[str, ...]] | None = None) -> None:
        #: the connection's verified client certificate: (user, groups), or None
        self.client_cert = client_cert
        self._conn = conn
        self._stream = stream
        self.method = request.method.decode("ascii")
        self.target = request.target.decode("latin-1")
        self.headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.headers]

    def values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive), comma-separated lists split."""
        name = name.lower()
        return [p.strip() for k, v in self.headers if k == name for p in v.split(",") if p.strip()]

    async def respond(self, status: int, body: bytes, content_type: str,
                      headers: Iterable[tuple[str, str]] = ()) -> None:
        """Refuse the upgrade with an ordinary response, then close the connection."""
        hs = [("Content-Type", content_type), ("Content-Length", str(len(body))), ("Connection", "close"),
              *headers]
        try:
            await self._stream.send_all(self._conn.send(h11.Response(status_code=status, headers=hs))
                                        + self._conn.send(h11.Data(data=body)) + self._conn.send(h11.EndOfMessage()))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        await Transport(self._stream, b"").aclose()

    async def switch(self, headers: Iterable[tuple[str, str]]) -> Transport:
        """Answer ``101 Switching Protocols`` with ``headers``; the connection is then the returned
        :class:`Transport` (holding any bytes the client sent right after its request)."""
        data = self._conn.send(h11.InformationalResponse(status_code=101, headers=list(headers)))
        await self._stream.send_all(data)
        pending, _ = self._conn.trailing_data
        return Transport(self._stream, bytes(pending))


async def _first_request(stream: Any, timeout: float, connections: http1.Connections | None = None
                         ) -> tuple[h11.Connection | None, h11.Request | None, bytes]:
    """Read until the first request head is complete; returns (h11 connection, request, bytes read).
    The request is None when the bytes are not one (Hypercorn answers those), or the client is idle
    for ``timeout`` seconds, or it closed, or the server shuts down before the client sent a byte
    (``connections.close_idle()``: a connection with no request yet is idle, as in Hypercorn)."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
    seen = bytearray()
    with trio.move_on_after(timeout):
        while True:
            try:
                event = conn.next_event()  # raises once an incomplete head is longer than _MAX_HEAD
            except h11.RemoteProtocolError:
                break
            if isinstance(event, h11.Request):
                return conn, event, bytes(seen)
            if event is not h11.NEED_DATA:
                break
            key = None
            with trio.CancelScope() as idle:
                if connections is not None and not seen:
                    if connections.closing:
                        break
                    key = connections.idle_begin(idle)
                try:
                    data = await stream.receive_some(_RECEIVE)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    break
                finally:
                    if key is not None:
                        connections.idle_end(key)
            if idle.cancelled_caught:
                break
            seen += data
            conn.receive_data(bytes(data))
            if not data:
                break
    return None, None, bytes(seen)


async def _complete_body(conn: h11.Connection, stream: Any) -> bool:
    """Read the upgrade request's (normally empty) body; False when the connection breaks first."""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            return False
        if isinstance(event, h11.EndOfMessage) or event is h11.PAUSED:
            return True
        if isinstance(event, h11.ConnectionClosed):
            return False
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive_some(_RECEIVE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return False
            if not data:
                return False
            conn.receive_data(bytes(data))


async def serve(app: Any, config: Any, *, raw_upgrade: Callable[[UpgradeRequest], Handler | None],
                shutdown_trigger: Callable[[], Awaitable[None]],
                task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the ASGI ``app`` with Hypercorn's ``config`` until ``shutdown_trigger`` returns.

    ``raw_upgrade(request)`` is asked about each HTTP/1.1 connection's first request that carries
    ``Connection: Upgrade`` with an ``Upgrade`` other than ``websocket`` / ``h2c``: a handler it
    returns is awaited and owns the connection; with ``None`` the request is served as any other
    plain HTTP/1.1 request (by :mod:`.http1`).
    ``task_status.started`` gets the bound URLs (``https://127.0.0.1:6443``).
    """
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.utils import repr_socket_addr, wrap_app

    asgi = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    sockets = config.create_sockets()
    ssl_context = config.create_ssl_context()
    listeners: list[Any] = []
    urls = []
    for scheme, socks in (("https", sockets.secure_sockets), ("http", sockets.insecure_sockets)):
        for sock in socks:
            sock.listen(config.backlog)
            listener: Any = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
            if scheme == "https":
                listener = trio.SSLListener(listener, ssl_context, https_compatible=True)
            listeners.append(listener)
            urls.append(f"{scheme}://{repr_socket_addr(sock.family, sock.getsockname())}")

    async def hypercorn(stream: Any, client_cert: Any = None) -> None:
        app_for_connection = asgi
        if client_cert is not None:  # the connection's verified client certificate, in every request's scope
            async def with_cert(scope: dict[str, Any], receive: Any, send: Any) -> None:
                await app({**scope, "client_cert": client_cert}, receive, send)

            app_for_connection = wrap_app(with_cert, config.wsgi_max_body_size, "asgi")
        await TCPServer(app_for_connection, config, context, {}, stream)

    plain = http1.Connections()

    async def connection(stream: Any) -> None:
        try:
            await first_request(stream)
        except Exception:  # noqa: BLE001 - a failing connection must not stop the server
            traceback.print_exc(file=sys.stderr)
            await Transport(stream, b"").aclose()

    async def first_request(stream: Any) -> None:
        tls = hasattr(stream, "do_handshake")
        if tls:
            try:
                with trio.fail_after(config.ssl_handshake_timeout):
                    await stream.do_handshake()
            except (trio.BrokenResourceError, trio.TooSlowError):
                await Transport(stream, b"").aclose()
                return
            client_cert = client_identity(stream.getpeercert())
            if stream.selected_alpn_protocol() == "h2":
                return await http2.serve_connection(app, stream, connections=plain, scheme="https",
                                                    idle_timeout=config.keep_alive_timeout, client_cert=client_cert)
        else:
            client_cert = None
        conn, request, seen = await _first_request(stream, config.keep_alive_timeout, plain)
        if request is None and not seen:  # nothing sent: closed, idle for too long, or shutdown
            await Transport(stream, b"").aclose()
            return
        handler = None
        if request is not None and conn is not None:
            tokens = {t.strip().lower() for k, v in request.headers if k.lower() == b"connection"
                      for t in v.decode("latin-1").split(",")}
            upgrade = next((v.decode("latin-1").strip().lower() for k, v in request.headers
                            if k.lower() == b"upgrade"), "")
            if "upgrade" in tokens and upgrade in ("websocket", "h2c"):
                return await hypercorn(_Replayed(stream, seen), client_cert)
            if request.method == b"PRI" and request.target == b"*" and request.http_version == b"2.0":
                # HTTP/2 with prior knowledge (h2c): h11 read the preface as a request
                return await http2.serve_connection(app, stream, connections=plain, scheme="http",
                                                    idle_timeout=config.keep_alive_timeout, prefix=seen,
                                                    client_cert=client_cert)
            if "upgrade" in tokens and upgrade:
                handler = raw_upgrade(UpgradeRequest(conn, request, stream, client_cert))
            if handler is None:
                return await http1.serve_connection(app, stream, conn, request, connections=plain,
                                                    scheme="https" if tls else "http", client_cert=client_cert,
                                                    idle_timeout=config.keep_alive_timeout,
                                                    # Go's rstAvoidanceDelay (500 ms), scaled by speed
                                                    # as the graceful timeout (2 s) is
                                                    linger=config.graceful_timeout / 4)
        if handler is None:
            return await hypercorn(_Replayed(stream, seen), client_cert)
        if await _complete_body(conn, stream):
            await handler()
        else:
            await Transport(stream, b"").aclose()

    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            accepting.start_soon(partial(trio.serve_listeners, connection, listeners, handler_nursery=connections))
            task_status.started(urls)
            await shutdown_trigger()
            accepting.cancel_scope.cancel()
        # as Hypercorn: idle keep-alive connections close now, busy ones after their request,
        # anything left (open watches, exec sessions) is cancelled after the graceful timeout
        await context.terminated.set()
        plain.close_idle()
        connections.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
