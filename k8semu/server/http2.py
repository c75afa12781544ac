"""HTTP/2 connections (client-go over TLS, chosen by ALPN; h2c with prior knowledge) served with
the ``h2`` library straight into the ASGI app.

kubectl and every client-go program speak HTTP/2 to an HTTPS API server and multiplex all their
requests, watches included, over one connection. Hypercorn's HTTP/2 path cost ~1.2–1.7 ms of
server CPU per request, saturating near 650 writes/s (bench/RESULTS.md, "serve"); here one task
reads the connection and hands each complete request to a task of its own, as :mod:`.http1` does
for HTTP/1.1, and h2 does the framing, HPACK and flow control.

What the app sees is the same ASGI ``http`` scope as from :mod:`.http1` (``http_version`` "2").
``receive()`` gives the whole body, then waits until the client resets the stream or the
connection goes (``http.disconnect``). Response bodies are sent as the peer's flow-control
window allows (a watch whose client does not read waits, without holding up other streams).
A ``send()`` to a stream the client reset is a no-op. On shutdown the connection sends GOAWAY,
lets running streams finish (watches end when the server stops) and closes.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame
import trio

from .http1 import ASGIApp, Connections, address, http_scope

__all__ = ["serve_connection", "PREFACE"]

#: the client connection preface that starts an HTTP/2 connection
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_RECEIVE = 65536
_BROKEN = (trio.BrokenResourceError, trio.ClosedResourceError)
_WINDOW = 1 << 24  # our receive window: request bodies are read whole anyway


class _Stream:
    """One request stream: its headers, its body so far, whether the client reset it."""

    def __init__(self, stream_id: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.id = stream_id
        self.headers = headers
        self.body: list[bytes] = []
        self.running = False  # its request is complete and handed to the app
        self.gone = trio.Event()  # reset by the client, or the connection ended


class _Connection:
    """The server side of one HTTP/2 connection: h2's state machine, the socket, the writer, and an
    event replaced whenever the peer opens flow-control window.

    Only the writer task (:meth:`write_loop`) takes bytes from h2 and writes them: a stream task
    that is cancelled (its watch timed out, its client reset it, the server stops) while it waits
    for its bytes to go out must not lose them or stop a write halfway, which would corrupt the
    connection for every other stream (and leave a TLS stream broken)."""

    def __init__(self, stream: Any) -> None:
        cfg = h2.config.H2Configuration(client_side=False, header_encoding=None)
        self.h2 = h2.connection.H2Connection(cfg)
        self.stream = stream
        self.window = trio.Event()
        self.broken = False
        #: GOAWAY sent (shutdown or idle): new streams are refused, running ones finish
        self.going_away = False
        #: the reader's wait for bytes while going away, cancelled when the last stream ends
        self.drain_scope: trio.CancelScope | None = None
        self._extra = b""  # frames h2 does not make for us (a graceful GOAWAY)
        self._wake = trio.Event()
        self._requested = 0
        self._written = 0
        self._progress = trio.Event()

    async def flush(self) -> None:
        """Have what h2 holds written, and wait until it is (or the connection broke). Cancelling
        the wait loses nothing: the writer goes on."""
        if self.broken:
            return
        self._requested += 1
        target = self._requested
        self._wake.set()
        while self._written < target and not self.broken:
            await self._progress.wait()

    async def write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            target = self._requested
            data = self.h2.data_to_send() + self._extra
            self._extra = b""
            if data:
                try:
                    await self.stream.send_all(data)
                except _BROKEN:
                    self.broken = True
            self._written = target
            self._progress.set()
            self._progress = trio.Event()
            if self.broken:
                self.window_opened()  # senders waiting for window give up
                return

    def go_away(self) -> None:
        """Queue a graceful GOAWAY (NO_ERROR, the last stream the client opened): h2's own
        ``close_connection`` would refuse every later frame, including the running streams'."""
        if self.going_away:
            return
        self.going_away = True
        frame = hyperframe.frame.GoAwayFrame(stream_id=0)
        frame.last_stream_id = self.h2.highest_inbound_stream_id
        frame.error_code = h2.errors.ErrorCodes.NO_ERROR
        self._extra += frame.serialize()

    def stream_done(self, streams: dict[int, _Stream]) -> None:
        if not streams and self.drain_scope is not None:
            self.drain_scope.cancel()

    def window_opened(self) -> None:
        self.window.set()
        self.window = trio.Event()


async def serve_connection(app: ASGIApp, stream: Any, *, connections: Connections, scheme: str,
                           idle_timeout: float, prefix: bytes = b"",
                           client_cert: tuple[str, tuple[str, ...]] | None = None) -> None:
    """Serve an HTTP/2 connection until the client closes it, it idles ``idle_timeout`` seconds
    (of the cluster clock) with no stream open, or the server shuts down (``connections``).

    ``prefix``: bytes already read from the connection (the preface, for h2c with prior knowledge).
    ``client_cert``: the TLS connection's verified client certificate as (user, groups), in each
    request's scope. The stream is closed on return.
    """

    conn = _Connection(stream)
    conn.h2.initiate_connection()
    conn.h2.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW})
    conn.h2.increment_flow_control_window(_WINDOW - 65535)
    server, client = address(stream, "getsockname"), address(stream, "getpeername")
    streams: dict[int, _Stream] = {}
    try:
        async with trio.open_nursery() as writing:
            writing.start_soon(conn.write_loop)
            await conn.flush()
            async with trio.open_nursery() as nursery:
                pending = prefix
                while not conn.broken:
                    if pending:
                        data, pending = pending, b""
                    else:
                        if connections.closing:
                            conn.go_away()
                        if conn.going_away and not streams:
                            break
                        data = await _receive(stream, conn, streams, connections, idle_timeout)
                    if data is None:  # idle, shutdown, or the last stream ended while going away
                        conn.go_away()
                        await conn.flush()
                        continue
                    if not data:  # the client closed (or the connection broke)
                        break
                    try:
                        events = conn.h2.receive_data(data)
                    except h2.exceptions.ProtocolError:
                        conn.h2.close_connection(error_code=h2.errors.ErrorCodes.PROTOCOL_ERROR)
                        await conn.flush()
                        break
                    ended = False
                    for ev in events:
                        ended = _on_event(ev, conn, streams, nursery, app, scheme, server, client,
                                          client_cert) or ended
                    await conn.flush()
                    if ended:
                        break
                # the streams still running (the client went, or its GOAWAY) cannot send any more
                for st in streams.values():
                    st.gone.set()
                conn.window_opened()
            await conn.flush()  # the last frames (END_STREAM, GOAWAY) go out before the close
            writing.cancel_scope.cancel()
    except _BROKEN:
        pass
    finally:
        for st in streams.values():
            st.gone.set()
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await stream.aclose()
            except _BROKEN:
                pass


async def _receive(stream: Any, conn: _Connection, streams: dict[int, _Stream], connections: Connections,
                   idle_timeout: float) -> bytes | None:
    """The next bytes from the client; b"" when it closed; None when the connection idled out with
    no stream open, the server shuts down, or (going away) the last stream ended."""
    with trio.CancelScope() as scope:
        if conn.going_away:
            conn.drain_scope = scope  # cancelled by the last stream to end
        else:
            key = connections.idle_begin(scope)
        try:
            with trio.move_on_after(idle_timeout if not streams and not conn.going_away else float("inf")):
                try:
                    return bytes(await stream.receive_some(_RECEIVE))
                except _BROKEN:
                    return b""
        finally:
            if conn.going_away:
                conn.drain_scope = None
            else:
                connections.idle_end(key)
    return None


def _on_event(ev: Any, conn: _Connection, streams: dict[int, _Stream], nursery: trio.Nursery, app: ASGIApp,
              scheme: str, server: Any, client: Any, client_cert: Any) -> bool:
    """Handle one h2 event; True when the connection is over."""
    if isinstance(ev, h2.events.RequestReceived):
        if conn.going_away:  # opened after our GOAWAY: refused, the client may retry it elsewhere
            conn.h2.reset_stream(ev.stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
        else:
            streams[ev.stream_id] = _Stream(ev.stream_id, list(ev.headers))
    elif isinstance(ev, h2.events.DataReceived):
        st = streams.get(ev.stream_id)
        if st is not None:
            st.body.append(ev.data)
        if ev.flow_controlled_length:
            conn.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
    elif isinstance(ev, h2.events.StreamEnded):
        st = streams.get(ev.stream_id)
        if st is not None:
            st.running = True
            nursery.start_soon(_run_stream, app, conn, streams, st, scheme, server, client, client_cert)
    elif isinstance(ev, h2.events.StreamReset):
        st = streams.get(ev.stream_id)
        if st is not None:
            st.gone.set()
            if not st.running:  # reset before its request was complete: nothing runs for it
                del streams[ev.stream_id]
                conn.stream_done(streams)
            conn.window_opened()  # a sender waiting for this stream's window gives up
    elif isinstance(ev, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
        conn.window_opened()
    elif isinstance(ev, h2.events.ConnectionTerminated):
        return True
    return False


async def _run_stream(app: ASGIApp, conn: _Connection, streams: dict[int, _Stream], st: _Stream, scheme: str,
                      server: Any, client: Any, client_cert: Any) -> None:
    pseudo = {k: v for k, v in st.headers if k.startswith(b":")}
    headers = [(k, v) for k, v in st.headers if not k.startswith(b":")]
    if b":authority" in pseudo:
        headers.insert(0, (b"host", pseudo[b":authority"]))
    scope = http_scope(pseudo.get(b":method", b"GET"), pseudo.get(b":path", b"/"), headers, "2", scheme=scheme,
                       server=server, client=client, client_cert=client_cert)
    body = b"".join(st.body)
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await st.gone.wait()
        return {"type": "http.disconnect"}

    response = _Response(conn, st, head=scope["method"] == "HEAD")
    try:
        try:
            await app(scope, receive, response.send)
        except Exception:  # noqa: BLE001 - a failing request must not end the connection's other streams
            traceback.print_exc(file=sys.stderr)
            if not response.finished and not st.gone.is_set():
                st.gone.set()
                try:
                    conn.h2.reset_stream(st.id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
                except h2.exceptions.ProtocolError:
                    pass
                await conn.flush()
            return
        if not response.started:
            await response.send({"type": "http.response.start", "status": 500, "headers": []})
        if not response.finished:
            await response.send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        streams.pop(st.id, None)
        conn.stream_done(streams)


class _Response:
    """The ASGI ``send`` side of one stream."""

    def __init__(self, conn: _Connection, st: _Stream, *, head: bool) -> None:
        self._conn = conn
        self._st = st
        self._head = head
        self._headers: list[tuple[bytes, bytes]] | None = None
        self._no_body = head
        self.started = False
        self.finished = False

    def _dead(self) -> bool:
        return self._st.gone.is_set() or self._conn.broken

    async def send(self, msg: dict[str, Any]) -> None:
        if self.finished or self._dead():
            return
        kind = msg["type"]
        if kind == "http.response.start":
            status = int(msg["status"])
            self._no_body = self._head or status in (204, 304)
            hs = [(b":status", str(status).encode())]
            for k, v in msg.get("headers") or ():
                k = bytes(k).lower()
                if k in (b"connection", b"transfer-encoding", b"keep-alive", b"upgrade", b"proxy-connection"):
                    continue  # connection-specific: not in HTTP/2 (h2 refuses them), as Go drops them
                if k != b"te" or bytes(v).lower() == b"trailers":
                    hs.append((k, bytes(v)))
            self._headers = hs
            self.started = True
            return
        if kind != "http.response.body":
            return
        data = b"" if self._no_body else bytes(msg.get("body", b""))
        more = bool(msg.get("more_body", False))
        try:
            if self._headers is not None:
                headers, self._headers = self._headers, None
                self._conn.h2.send_headers(self._st.id, headers, end_stream=not more and not data)
                if not more and not data:
                    self.finished = True
            while data:
                window = min(self._conn.h2.local_flow_control_window(self._st.id),
                             self._conn.h2.max_outbound_frame_size)
                if window <= 0:
                    waiting = self._conn.window
                    await self._conn.flush()
                    await waiting.wait()
                    if self._dead():
                        return
                    continue
                chunk, data = data[:window], data[window:]
                self._conn.h2.send_data(self._st.id, chunk, end_stream=not more and not data)
                if not more and not data:
                    self.finished = True
            if not more and not self.finished:
                self._conn.h2.end_stream(self._st.id)
                self.finished = True
        except h2.exceptions.StreamClosedError:
            self._st.gone.set()
            return
        except Exception:  # noqa: BLE001 - a response h2 cannot frame (a bad header): report it, reset the stream
            traceback.print_exc(file=sys.stderr)
            self._st.gone.set()
            try:
                self._conn.h2.reset_stream(self._st.id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
            except h2.exceptions.ProtocolError:
                pass
        await self._conn.flush()
