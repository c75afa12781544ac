"""HTTP/1.1 keep-alive connections served with h11 straight into the ASGI app.

Hypercorn serves a request through several tasks and queues (a task per request, one per
keep-alive timer, a message queue between them) and two socket writes per response; at
1,000 requests/s that plumbing took about 60 % of the server's CPU, more than the API
server itself (bench/RESULTS.md, "serve"). Plain HTTP/1.1 requests, which are what the
Python ``kubernetes`` client, curl and kubectl over ``http://`` send, are therefore
served here: one task per connection, h11 for the framing, the ASGI app awaited in that
task, and one ``send_all`` per response (headers and body together) unless the response
streams (watch, ``log?follow``), which is then chunked. HTTP/2 (kubectl over TLS, chosen by
ALPN) and WebSocket upgrades stay with Hypercorn (see :mod:`.upgrade`).

What the app sees is the ASGI ``http`` scope Hypercorn builds (``path`` percent-decoded,
``raw_path`` and ``query_string`` as sent, header names lower-case). ``receive()`` gives
the whole body as one ``http.request`` message, then waits until the client goes away
(``http.disconnect``), which is how a watch notices a closed connection. A ``send()`` to a
client that has gone is a no-op, as in Hypercorn.

Timeouts read the cluster's clock, which runs at ``speed`` virtual seconds per wall second;
the caller passes them scaled.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import h11
import trio

__all__ = ["Connections", "serve_connection", "http_scope", "address"]

_RECEIVE = 65536  # bytes per read
_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]],
                    Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


class _Gone(Exception):
    """The client closed the connection (or it broke) before a request was complete."""


class Connections:
    """The HTTP/1.1 connections of one server, for a graceful shutdown.

    :meth:`close_idle` ends every connection waiting for its next request and makes busy ones
    close after the response they are sending, as Hypercorn and Go's ``Server.Shutdown`` do.
    """

    def __init__(self) -> None:
        self.closing = False
        self._idle: dict[int, trio.CancelScope] = {}
        self._next = 0

    def close_idle(self) -> None:
        """Stop keeping connections alive; cancel the wait of each idle one."""
        self.closing = True
        for scope in list(self._idle.values()):
            scope.cancel()

    def idle_begin(self, scope: trio.CancelScope) -> int:
        """Register a connection waiting for a request (``scope`` is cancelled by :meth:`close_idle`);
        returns the key for :meth:`idle_end`."""
        self._next += 1
        self._idle[self._next] = scope
        return self._next

    def idle_end(self, key: int) -> None:
        """The connection ``key`` stopped waiting (a request came, or it closed)."""
        self._idle.pop(key, None)


async def serve_connection(app: ASGIApp, stream: Any, conn: h11.Connection, first: h11.Request, *,
                           connections: Connections, scheme: str, idle_timeout: float,
                           linger: float = 0.5, client_cert: tuple[str, tuple[str, ...]] | None = None) -> None:
    """Serve requests on ``stream`` until the client closes, an error, idleness or shutdown.

    ``conn`` has already parsed ``first`` (the connection's first request head, read by the
    front in :mod:`.upgrade`); later requests are read here. ``idle_timeout`` is how long (in
    the cluster clock's seconds) a kept-alive connection may wait for its next request; ``linger``
    how long, after answering a request it cannot read (400, 431), it goes on reading what the client
    still sends before closing (Go's ``closeWriteAndWait``: a close with unread bytes is a TCP RST,
    which can destroy the error response before the client reads it). ``client_cert`` is the TLS
    connection's verified client certificate as (user, groups), given to the app as the scope's
    ``client_cert``. The stream is closed on return.
    """
    server = address(stream, "getsockname")
    client = address(stream, "getpeername")
    request: h11.Request | None = first
    try:
        while request is not None:
            await _one_request(app, stream, conn, request, scheme, server, client, connections, client_cert)
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE or connections.closing:
                break
            conn.start_next_cycle()
            request = None
            with trio.CancelScope() as idle:
                key = connections.idle_begin(idle)
                try:
                    with trio.move_on_after(idle_timeout):
                        request = await _next_request(conn, stream)
                finally:
                    connections.idle_end(key)
    except (_Gone, *_BROKEN):
        pass
    except h11.RemoteProtocolError as e:
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            # as Go's net/http: "400 Bad Request: <why>", "431 Request Header Fields Too Large"
            status = e.error_status_hint
            body = f"{status} {_reason(status).decode()}".encode() + (f": {e}".encode() if status == 400 else b"")
            try:
                await stream.send_all(conn.send(h11.Response(status_code=status, reason=_reason(status), headers=[
                    ("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(body))),
                    ("connection", "close")])) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
                await _drain(stream, linger)
            except (*_BROKEN, h11.LocalProtocolError):
                pass
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await stream.aclose()
            except _BROKEN:
                pass


def http_scope(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], http_version: str, *,
               scheme: str, server: tuple[str, int] | None, client: tuple[str, int] | None,
               client_cert: tuple[str, tuple[str, ...]] | None) -> dict[str, Any]:
    """The ASGI ``http`` scope of a request (as Hypercorn builds it: ``path`` percent-decoded,
    ``raw_path`` and ``query_string`` as sent, header names lower-case), plus ``client_cert``,
    the connection's verified client certificate as (user, groups), when there is one."""
    path, _, query = target.partition(b"?")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"spec_version": "2.1", "version": "3.0"},
        "http_version": http_version,
        "method": method.decode("ascii", "replace"),
        "scheme": scheme,
        "path": unquote(path.decode("ascii", "replace")),
        "raw_path": path,
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": client,
        "server": server,
        "extensions": {},
    }
    if client_cert is not None:
        scope["client_cert"] = client_cert
    return scope


def _reason(status: int) -> bytes:
    """The reason phrase Go's net/http writes (``200 OK``, ``404 Not Found``)."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


async def _drain(stream: Any, timeout: float) -> None:
    """Close our side for writing (plain TCP), then discard what the client sends, until it closes
    or ``timeout``."""
    send_eof = getattr(stream, "send_eof", None)
    if send_eof is not None:
        await send_eof()
    with trio.move_on_after(timeout):
        while await stream.receive_some(_RECEIVE):
            pass


def address(stream: Any, which: str) -> tuple[str, int] | None:
    sock = getattr(getattr(stream, "transport_stream", stream), "socket", None)
    try:
        host, port = getattr(sock, which)()[:2]
        return (host, port)
    except (AttributeError, OSError, TypeError, ValueError):
        return None


async def _receive_into(conn: h11.Connection, stream: Any) -> None:
    data = await stream.receive_some(_RECEIVE)
    conn.receive_data(bytes(data))  # b"" tells h11 the client closed


async def _next_request(conn: h11.Connection, stream: Any) -> h11.Request | None:
    """The next request head; None when the client closed the connection cleanly between requests."""
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Request):
            return event
        if isinstance(event, h11.ConnectionClosed):
            return None
        if event is h11.NEED_DATA:
            await _receive_into(conn, stream)
            continue
        raise _Gone()  # PAUSED or anything unexpected: give up on the connection


async def _read_body(conn: h11.Connection, stream: Any) -> bytes:
    """The request body, answering ``Expect: 100-continue`` first (curl sends it for large bodies)."""
    if conn.they_are_waiting_for_100_continue:
        await stream.send_all(conn.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")))
    chunks: list[bytes] = []
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            return b"".join(chunks)
        elif event is h11.NEED_DATA:
            await _receive_into(conn, stream)
        else:
            raise _Gone()


async def _one_request(app: ASGIApp, stream: Any, conn: h11.Connection, request: h11.Request, scheme: str,
                       server: tuple[str, int] | None, client: tuple[str, int] | None,
                       connections: Connections | None = None,
                       client_cert: tuple[str, tuple[str, ...]] | None = None) -> None:
    body = await _read_body(conn, stream)
    scope = http_scope(request.method, request.target, list(request.headers), request.http_version.decode("ascii"),
                       scheme=scheme, server=server, client=client, client_cert=client_cert)
    response = _Response(conn, stream, head=request.method == b"HEAD", connections=connections)
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        # after the body the client sends nothing more (HTTP/1.1 clients do not pipeline
        # behind a streaming response): wait until it goes away
        while not response.gone:
            try:
                data = await stream.receive_some(_RECEIVE)
            except _BROKEN:
                data = b""
            if not data:
                response.gone = True
            else:
                conn.receive_data(bytes(data))  # a pipelined request, read after this one
        return {"type": "http.disconnect"}

    await app(scope, receive, response.send)
    if response.gone:
        raise _Gone()
    if not response.started:
        await response.send({"type": "http.response.start", "status": 500,
                             "headers": [(b"content-length", b"0")]})
    if not response.finished:
        await response.send({"type": "http.response.body", "body": b"", "more_body": False})


class _Response:
    """The ASGI ``send`` side of one request: ``http.response.start`` is held until the first body
    message so a complete response goes out in one write.

    As Go's net/http (and Hypercorn), the body of a response to ``HEAD`` and of a ``204`` or ``304``
    response is dropped (h11 refuses to frame one); a ``HEAD`` response keeps the ``Content-Length``
    the ``GET`` would have. There is no ``Date`` header: k8semu reads no wall clock, and clients do
    not need one. A response the app gets wrong (a body
    longer than its ``Content-Length``, a bad header) is reported on stderr and the connection
    closed, the response unfinished.
    A response begun while the server shuts down says ``Connection: close``.
    """

    def __init__(self, conn: h11.Connection, stream: Any, *, head: bool = False,
                 connections: Connections | None = None) -> None:
        self._conn = conn
        self._connections = connections
        self._stream = stream
        self._head: h11.Response | None = None
        self._is_head = head
        self._no_body = head
        self.started = False
        self.finished = False
        self.gone = False

    async def send(self, msg: dict[str, Any]) -> None:
        if self.gone or self.finished:
            return
        kind = msg["type"]
        if kind == "http.response.start":
            status = msg["status"]
            headers = list(msg.get("headers") or ())
            if self._connections is not None and self._connections.closing:
                headers.append((b"connection", b"close"))  # shutting down: as Go's net/http, say so
            try:
                self._head = h11.Response(status_code=status, headers=headers, reason=_reason(status))
            except h11.LocalProtocolError:  # not a final status, a bad header
                traceback.print_exc(file=sys.stderr)
                self.gone = True
                return
            self._no_body = self._is_head or status in (204, 304)
            self.started = True
            return
        if kind != "http.response.body":
            return
        data = bytes(msg.get("body", b""))
        more = msg.get("more_body", False)
        try:
            out = b""
            if self._head is not None:
                head, self._head = self._head, None
                if (not more and head.status_code not in (204, 304)
                        and not any(k.lower() == b"content-length" for k, _ in head.headers)):
                    head = h11.Response(status_code=head.status_code, reason=head.reason,
                                        headers=[*head.headers, (b"content-length", str(len(data)).encode())])
                out = self._conn.send(head) or b""
            if data and not self._no_body:
                out += self._conn.send(h11.Data(data=data)) or b""
            if not more:
                out += self._conn.send(h11.EndOfMessage()) or b""
                self.finished = True
        except h11.LocalProtocolError:
            traceback.print_exc(file=sys.stderr)
            self.gone = True  # the connection closes; the client sees a response cut short
            return
        if out:
            try:
                await self._stream.send_all(out)
            except _BROKEN:
                self.gone = True
