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

from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import h11
import trio

__all__ = ["Connections", "serve_connection"]

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

    def _waiting(self, scope: trio.CancelScope) -> int:
        self._next += 1
        self._idle[self._next] = scope
        return self._next

    def _busy(self, key: int) -> None:
        self._idle.pop(key, None)


async def serve_connection(app: ASGIApp, stream: Any, conn: h11.Connection, first: h11.Request, *,
                           connections: Connections, scheme: str, idle_timeout: float) -> None:
    """Serve requests on ``stream`` until the client closes, an error, idleness or shutdown.

    ``conn`` has already parsed ``first`` (the connection's first request head, read by the
    front in :mod:`.upgrade`); later requests are read here. ``idle_timeout`` is how long (in
    the cluster clock's seconds) a kept-alive connection may wait for its next request.
    The stream is closed on return.
    """
    server = _address(stream, "getsockname")
    client = _address(stream, "getpeername")
    request: h11.Request | None = first
    try:
        while request is not None:
            await _one_request(app, stream, conn, request, scheme, server, client)
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE or connections.closing:
                break
            conn.start_next_cycle()
            request = None
            with trio.CancelScope() as idle:
                key = connections._waiting(idle)
                try:
                    with trio.move_on_after(idle_timeout):
                        request = await _next_request(conn, stream)
                finally:
                    connections._busy(key)
    except (_Gone, *_BROKEN):
        pass
    except h11.RemoteProtocolError as e:
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = f"Bad Request: {e}".encode()
            try:
                await stream.send_all(conn.send(h11.Response(status_code=e.error_status_hint, headers=[
                    ("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(body))),
                    ("connection", "close")])) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
            except (*_BROKEN, h11.LocalProtocolError):
                pass
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await stream.aclose()
            except _BROKEN:
                pass


def _reason(status: int) -> bytes:
    """The reason phrase Go's net/http writes (``200 OK``, ``404 Not Found``)."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


def _address(stream: Any, which: str) -> tuple[str, int] | None:
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
        await stream.send_all(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
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
                       server: tuple[str, int] | None, client: tuple[str, int] | None) -> None:
    body = await _read_body(conn, stream)
    path, _, query = request.target.partition(b"?")
    scope = {
        "type": "http",
        "asgi": {"spec_version": "2.1", "version": "3.0"},
        "http_version": request.http_version.decode("ascii"),
        "method": request.method.decode("ascii"),
        "scheme": scheme,
        "path": unquote(path.decode("ascii", "replace")),
        "raw_path": path,
        "query_string": query,
        "root_path": "",
        "headers": list(request.headers),
        "client": client,
        "server": server,
        "extensions": {},
    }
    response = _Response(conn, stream)
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
    message so a complete response goes out in one write."""

    def __init__(self, conn: h11.Connection, stream: Any) -> None:
        self._conn = conn
        self._stream = stream
        self._head: h11.Response | None = None
        self.started = False
        self.finished = False
        self.gone = False

    async def send(self, msg: dict[str, Any]) -> None:
        if self.gone or self.finished:
            return
        kind = msg["type"]
        if kind == "http.response.start":
            headers = list(msg.get("headers") or ())
            self._head = h11.Response(status_code=msg["status"], headers=headers, reason=_reason(msg["status"]))
            self.started = True
            return
        if kind != "http.response.body":
            return
        data = bytes(msg.get("body", b""))
        more = msg.get("more_body", False)
        out = b""
        if self._head is not None:
            head, self._head = self._head, None
            if not more and not any(k.lower() == b"content-length" for k, _ in head.headers):
                head = h11.Response(status_code=head.status_code, reason=head.reason,
                                    headers=[*head.headers, (b"content-length", str(len(data)).encode())])
            out = self._conn.send(head) or b""
        if data:
            out += self._conn.send(h11.Data(data=data)) or b""
        if not more:
            out += self._conn.send(h11.EndOfMessage()) or b""
            self.finished = True
        if out:
            try:
                await self._stream.send_all(out)
            except _BROKEN:
                self.gone = True
