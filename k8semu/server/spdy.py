"""SPDY/3.1 framing and a server-side session over an abstract byte transport.

What ``kubectl port-forward`` speaks: kube-apiserver (and behind it the
kubelet's CRI streaming server) run a SPDY/3.1 server session from
``k8s.io/apimachinery/pkg/util/httpstream/spdy`` (moby/spdystream) on the
connection, and the client opens streams in it. This module knows nothing of
HTTP, WebSockets or ASGI: :class:`Session` reads bytes from a ``receive``
callable and writes with a ``send`` callable, so the same code runs over a
WebSocket tunnel (KEP-4006) or a unit test's in-memory pipe.

Wire format (draft-mbelshe-httpbis-spdy-00, version 3):

* control frame: ``1 | version(15) | type(16) | flags(8) | length(24) | payload``;
* data frame: ``0 | stream id(31) | flags(8) | length(24) | payload``;
* name/value header blocks: ``count(32)`` then ``len(32) name len(32) value``
  pairs (names lower-case, several values joined by NUL), zlib-compressed with
  the SPDY/3 dictionary, one compression context per direction for the whole
  session, each block ending with a sync flush.

Flow control (SPDY/3.1): every stream and the session start with a 64 KiB send
window; WINDOW_UPDATE frames (stream id 0 for the session) grow them. This
session sends WINDOW_UPDATEs for the data its streams' readers consume, and
honours the peer's windows once the peer shows it does flow control (it sent a
WINDOW_UPDATE or an INITIAL_WINDOW_SIZE setting). moby/spdystream, the only
SPDY implementation kubectl and the kubelet use, does neither and never waits
on a window, so against it sending is unlimited, as upstream's.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Union

import attrs
import trio

__all__ = [
    "DICTIONARY", "VERSION", "DEFAULT_WINDOW", "DataFrame", "SynStream", "SynReply", "RstStream", "Settings",
    "Ping", "GoAway", "Headers", "WindowUpdate", "Frame", "FrameDecoder", "FrameEncoder", "ProtocolError",
    "StreamReset", "Stream", "Session", "encode_header_block", "decode_header_block",
]

VERSION = 3
DEFAULT_WINDOW = 64 * 1024
MAX_DATA_FRAME = 16 * 1024  # what this side puts in one DATA frame

# control frame types
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
SETTINGS_CLEAR = 0x01
SETTINGS_INITIAL_WINDOW_SIZE = 7
# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, UNSUPPORTED_VERSION, CANCEL = 1, 2, 3, 4, 5
INTERNAL_ERROR, FLOW_CONTROL_ERROR, STREAM_IN_USE, STREAM_ALREADY_CLOSED = 6, 7, 8, 9


def _dictionary() -> bytes:
    # The SPDY/3 header dictionary: length-prefixed (32-bit big-endian) tokens,
    # then a run of status texts, dates and media types. 1,423 bytes, adler32 0xe3c6a7c2.
    tokens = (
        "options head post put delete trace accept accept-charset accept-encoding accept-language "
        "accept-ranges age allow authorization cache-control connection content-base content-encoding "
        "content-language content-length content-location content-md5 content-range content-type date etag "
        "expect expires from host if-match if-modified-since if-none-match if-range if-unmodified-since "
        "last-modified location max-forwards pragma proxy-authenticate proxy-authorization range referer "
        "retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate "
        "method get status"
    ).split() + ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
        "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
        "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
        "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
        "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
        "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    return b"".join(struct.pack(">I", len(t)) + t.encode() for t in tokens) + tail.encode()


#: The SPDY/3 zlib dictionary for name/value header blocks (a protocol constant).
DICTIONARY: bytes = _dictionary()

HeaderList = Sequence[tuple[str, str]]


class ProtocolError(Exception):
    """The peer broke the SPDY framing (bad version, truncated or undecompressible header block).
    The session answers it with GOAWAY (status 1) and ends."""


class StreamReset(Exception):
    """The stream was reset (RST_STREAM, by either side) or the session ended; ``status`` is the
    RST_STREAM status code (5 ``CANCEL`` when the session ended)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"stream reset (status {status})")
        self.status = status


# ---------------------------------------------------------------------------- frames

@attrs.frozen
class DataFrame:
    stream_id: int
    data: bytes = b""
    fin: bool = False


@attrs.frozen
class SynStream:
    stream_id: int
    headers: tuple[tuple[str, str], ...] = ()
    associated_id: int = 0
    priority: int = 0
    slot: int = 0
    fin: bool = False
    unidirectional: bool = False


@attrs.frozen
class SynReply:
    stream_id: int
    headers: tuple[tuple[str, str], ...] = ()
    fin: bool = False


@attrs.frozen
class RstStream:
    stream_id: int
    status: int


@attrs.frozen
class Settings:
    """``entries``: (id, flags, value) triples."""

    entries: tuple[tuple[int, int, int], ...] = ()
    clear: bool = False


@attrs.frozen
class Ping:
    id: int


@attrs.frozen
class GoAway:
    last_good_stream_id: int
    status: int = 0


@attrs.frozen
class Headers:
    stream_id: int
    headers: tuple[tuple[str, str], ...] = ()
    fin: bool = False


@attrs.frozen
class WindowUpdate:
    stream_id: int
    delta: int


Frame = Union[DataFrame, SynStream, SynReply, RstStream, Settings, Ping, GoAway, Headers, WindowUpdate]


def encode_header_block(headers: Iterable[tuple[str, str]]) -> bytes:
    """The uncompressed SPDY/3 name/value block of ``headers`` (names lower-cased; repeated names are
    joined with NUL into one entry, as the spec requires)."""
    merged: dict[str, list[str]] = {}
    for name, value in headers:
        merged.setdefault(name.lower(), []).append(value)
    out = [struct.pack(">I", len(merged))]
    for name, values in merged.items():
        n, v = name.encode(), "\0".join(values).encode()
        out.append(struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v)
    return b"".join(out)


def decode_header_block(block: bytes) -> tuple[tuple[str, str], ...]:
    """(name, value) pairs of an uncompressed name/value block; NUL-joined values become several pairs.

    Raises:
        ProtocolError: the block is truncated or has trailing bytes.
    """
    try:
        (count,), pos = struct.unpack_from(">I", block, 0), 4
        out = []
        for _ in range(count):
            (n,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4:pos + 4 + n]
            pos += 4 + n
            (v,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4:pos + 4 + v]
            pos += 4 + v
            if len(name) != n or len(value) != v:
                raise ProtocolError("truncated header block")
            for part in value.split(b"\0"):
                out.append((name.decode("latin-1").lower(), part.decode("latin-1")))
    except struct.error:
        raise ProtocolError("truncated header block") from None
    if pos != len(block):
        raise ProtocolError("trailing bytes after the header block")
    return tuple(out)


class FrameEncoder:
    """Serializes frames; owns the sending side's header compression context (so frames must be
    encoded in the order they are sent)."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(zdict=DICTIONARY)

    def _block(self, headers: HeaderList) -> bytes:
        return self._z.compress(encode_header_block(headers)) + self._z.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def _control(ftype: int, flags: int, payload: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, ftype, (flags << 24) | len(payload)) + payload

    def encode(self, frame: Frame) -> bytes:
        """The bytes of ``frame``.

        Raises:
            ValueError: a payload longer than 2**24 - 1 bytes.
        """
        if isinstance(frame, DataFrame):
            if len(frame.data) >= 1 << 24:
                raise ValueError("DATA frame too long")
            return struct.pack(">II", frame.stream_id & 0x7FFFFFFF,
                               (FLAG_FIN if frame.fin else 0) << 24 | len(frame.data)) + frame.data
        if isinstance(frame, SynStream):
            flags = (FLAG_FIN if frame.fin else 0) | (FLAG_UNIDIRECTIONAL if frame.unidirectional else 0)
            return self._control(SYN_STREAM, flags, struct.pack(
                ">IIBB", frame.stream_id, frame.associated_id, (frame.priority & 7) << 5, frame.slot)
                + self._block(frame.headers))
        if isinstance(frame, SynReply):
            return self._control(SYN_REPLY, FLAG_FIN if frame.fin else 0,
                                 struct.pack(">I", frame.stream_id) + self._block(frame.headers))
        if isinstance(frame, Headers):
            return self._control(HEADERS, FLAG_FIN if frame.fin else 0,
                                 struct.pack(">I", frame.stream_id) + self._block(frame.headers))
        if isinstance(frame, RstStream):
            return self._control(RST_STREAM, 0, struct.pack(">II", frame.stream_id, frame.status))
        if isinstance(frame, Settings):
            body = struct.pack(">I", len(frame.entries)) + b"".join(
                struct.pack(">II", (flags << 24) | sid, value) for sid, flags, value in frame.entries)
            return self._control(SETTINGS, SETTINGS_CLEAR if frame.clear else 0, body)
        if isinstance(frame, Ping):
            return self._control(PING, 0, struct.pack(">I", frame.id))
        if isinstance(frame, GoAway):
            return self._control(GOAWAY, 0, struct.pack(">II", frame.last_good_stream_id, frame.status))
        if isinstance(frame, WindowUpdate):
            return self._control(WINDOW_UPDATE, 0, struct.pack(">II", frame.stream_id, frame.delta))
        raise TypeError(f"not a SPDY frame: {frame!r}")


class FrameDecoder:
    """Incremental parser: :meth:`feed` any slice of the byte stream (frame boundaries need not line
    up with it) and get the complete frames. Owns the receiving side's decompression context.
    Unknown control frame types are skipped, as the spec asks."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._z = zlib.decompressobj(zdict=DICTIONARY)

    def _headers(self, block: bytes) -> tuple[tuple[str, str], ...]:
        try:
            raw = self._z.decompress(block)
        except zlib.error as e:
            raise ProtocolError(f"header block does not decompress: {e}") from None
        return decode_header_block(raw)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by ``data``.

        Raises:
            ProtocolError: a control frame of another SPDY version, or a malformed one.
        """
        self._buf += data
        out: list[Frame] = []
        while len(self._buf) >= 8:
            w1, w2 = struct.unpack_from(">II", self._buf, 0)
            length = w2 & 0xFFFFFF
            if len(self._buf) < 8 + length:
                break
            flags = w2 >> 24
            payload = bytes(self._buf[8:8 + length])
            del self._buf[:8 + length]
            if not w1 & 0x80000000:
                out.append(DataFrame(w1 & 0x7FFFFFFF, payload, bool(flags & FLAG_FIN)))
                continue
            version, ftype = (w1 >> 16) & 0x7FFF, w1 & 0xFFFF
            if version != VERSION:
                raise ProtocolError(f"unsupported SPDY version {version}")
            frame = self._control(ftype, flags, payload)
            if frame is not None:
                out.append(frame)
        return out

    def _control(self, ftype: int, flags: int, p: bytes) -> Frame | None:
        try:
            if ftype == SYN_STREAM:
                sid, assoc, pri, slot = struct.unpack_from(">IIBB", p, 0)
                return SynStream(sid & 0x7FFFFFFF, self._headers(p[10:]), assoc & 0x7FFFFFFF, pri >> 5, slot,
                                 bool(flags & FLAG_FIN), bool(flags & FLAG_UNIDIRECTIONAL))
            if ftype in (SYN_REPLY, HEADERS):
                (sid,) = struct.unpack_from(">I", p, 0)
                cls = SynReply if ftype == SYN_REPLY else Headers
                return cls(sid & 0x7FFFFFFF, self._headers(p[4:]), bool(flags & FLAG_FIN))
            if ftype == RST_STREAM:
                sid, status = struct.unpack_from(">II", p, 0)
                return RstStream(sid & 0x7FFFFFFF, status)
            if ftype == SETTINGS:
                (n,) = struct.unpack_from(">I", p, 0)
                entries = []
                for i in range(n):
                    fid, value = struct.unpack_from(">II", p, 4 + 8 * i)
                    entries.append((fid & 0xFFFFFF, fid >> 24, value))
                return Settings(tuple(entries), bool(flags & SETTINGS_CLEAR))
            if ftype == PING:
                return Ping(struct.unpack_from(">I", p, 0)[0])
            if ftype == GOAWAY:
                last, status = struct.unpack_from(">II", p, 0) if len(p) >= 8 else (
                    struct.unpack_from(">I", p, 0)[0], 0)
                return GoAway(last & 0x7FFFFFFF, status)
            if ftype == WINDOW_UPDATE:
                sid, delta = struct.unpack_from(">II", p, 0)
                return WindowUpdate(sid & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error:
            raise ProtocolError(f"truncated control frame (type {ftype})") from None
        return None


# ---------------------------------------------------------------------------- session

class Stream:
    """One stream the peer opened (SYN_STREAM), seen from the server side.

    ``headers``: the SYN_STREAM's (name, value) pairs, names lower-case; :meth:`header` reads one.
    Read with :meth:`receive_some`; write with :meth:`send_all`; :meth:`close` half-closes (FIN),
    :meth:`reset` aborts. Methods raise :class:`StreamReset` once the stream is reset or the
    session is over.
    """

    def __init__(self, session: Session, stream_id: int, headers: tuple[tuple[str, str], ...],
                 *, remote_fin: bool, send_window: int) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self.replied = False
        self.remote_fin = remote_fin
        self.local_fin = False
        self.reset_status: int | None = None
        self.send_window = send_window
        self._buf = bytearray()
        self._unacked = 0  # consumed bytes not yet announced in a WINDOW_UPDATE
        self._changed = trio.Event()

    def header(self, name: str, default: str | None = None) -> str | None:
        """The first value of header ``name`` (case-insensitive), or ``default``."""
        name = name.lower()
        return next((v for k, v in self.headers if k == name), default)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def reply(self, headers: HeaderList = (), *, fin: bool = False) -> None:
        """Send SYN_REPLY (once); ``fin`` also half-closes the stream."""
        if self.replied:
            return
        self._check()
        self.replied = True
        self.local_fin = self.local_fin or fin
        await self.session._send(SynReply(self.id, tuple(headers), fin))

    async def receive_some(self) -> bytes:
        """The next data the peer sent (whatever is buffered), or ``b""`` once it half-closed.
        Consuming data sends WINDOW_UPDATEs (for the stream and the session) when half a window
        has been read."""
        while not self._buf and not self.remote_fin:
            self._check()
            await self._changed.wait()
        if not self._buf:
            self._check()
            return b""
        data = bytes(self._buf)
        self._buf.clear()
        self._unacked += len(data)
        await self.session._consumed(self, len(data))
        return data

    async def send_all(self, data: bytes) -> None:
        """Send ``data`` in DATA frames of at most 16 KiB, waiting on the peer's windows when it
        does flow control.

        Raises:
            StreamReset: reset (or the session ended) before all was sent.
            RuntimeError: the stream was already half-closed by this side.
        """
        if self.local_fin:
            raise RuntimeError("send on a stream this side closed")
        view = memoryview(data)
        while view:
            self._check()
            n = min(len(view), MAX_DATA_FRAME)
            if self.session.peer_flow_control:
                n = min(n, self.send_window, self.session.send_window)
                if n <= 0:
                    await self.session._window_changed_wait()
                    continue
                self.send_window -= n
                self.session.send_window -= n
            await self.session._send(DataFrame(self.id, bytes(view[:n])))
            view = view[n:]

    async def close(self) -> None:
        """Half-close: an empty DATA frame with FIN (nothing if already closed or reset)."""
        if self.local_fin or self.reset_status is not None or self.session.closed:
            return
        if not self.replied:
            await self.reply()
        self.local_fin = True
        await self.session._send(DataFrame(self.id, b"", True))
        self.session._maybe_forget(self)

    async def reset(self, status: int = CANCEL) -> None:
        """Abort the stream with RST_STREAM ``status`` (nothing if already reset)."""
        if self.reset_status is not None:
            return
        self.reset_status = status
        self._wake()
        self.session._streams.pop(self.id, None)
        if not self.session.closed:
            await self.session._send(RstStream(self.id, status))

    def _check(self) -> None:
        if self.reset_status is not None:
            raise StreamReset(self.reset_status)
        if self.session.closed:
            raise StreamReset(CANCEL)


class Session:
    """A SPDY/3.1 session, server side (the peer opens odd-numbered streams).

    Args:
        send: writes bytes to the transport (one call per frame, in order).
        on_stream: ``await on_stream(stream)`` runs as its own task for each SYN_STREAM; it should
            :meth:`Stream.reply` (or :meth:`Stream.reset`) promptly, as upstream's server does in
            its new-stream callback. Its exceptions other than :class:`StreamReset` propagate
            out of :meth:`run`.

    Handled: PING (the peer's odd ids are echoed), SETTINGS (INITIAL_WINDOW_SIZE), WINDOW_UPDATE,
    RST_STREAM, GOAWAY (no new streams accepted; the session ends when the transport does),
    DATA for unknown streams (RST_STREAM ``INVALID_STREAM``), SYN_STREAM with an id that is even
    or not increasing (RST_STREAM ``PROTOCOL_ERROR``). A framing error ends the session with
    GOAWAY status 1.
    """

    def __init__(self, send: Callable[[bytes], Awaitable[None]],
                 on_stream: Callable[[Stream], Awaitable[None]]) -> None:
        self._send_bytes = send
        self._on_stream = on_stream
        self._encoder = FrameEncoder()
        self._decoder = FrameDecoder()
        self._send_lock = trio.Lock()
        self._streams: dict[int, Stream] = {}
        self._last_id = 0
        self._window_event = trio.Event()
        self._session_unacked = 0
        self._nursery: trio.Nursery | None = None
        self.initial_send_window = DEFAULT_WINDOW
        self.send_window = DEFAULT_WINDOW
        self.receive_window = DEFAULT_WINDOW
        self.peer_flow_control = False
        self.goaway_received = False
        self.closed = False

    @property
    def streams(self) -> dict[int, Stream]:
        """Open streams by id (a copy)."""
        return dict(self._streams)

    async def run(self, receive: Callable[[], Awaitable[bytes | None]]) -> None:
        """Serve until ``receive()`` returns ``None`` or ``b""`` (transport closed) or a framing
        error; then every stream task is cancelled and the session is closed."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    while True:
                        data = await receive()
                        if not data:
                            break
                        try:
                            frames = self._decoder.feed(data)
                        except ProtocolError:
                            await self._send(GoAway(self._last_id, PROTOCOL_ERROR))
                            break
                        for frame in frames:
                            await self._handle(frame)
                finally:
                    self._finish()
                    nursery.cancel_scope.cancel()
        finally:
            self._finish()

    def _finish(self) -> None:
        if self.closed:
            return
        self.closed = True
        for stream in list(self._streams.values()):
            stream._wake()
        self._window_event.set()

    async def goaway(self, status: int = 0) -> None:
        """Tell the peer no further streams will be accepted (GOAWAY with the last stream seen)."""
        if not self.closed:
            await self._send(GoAway(self._last_id, status))

    # ------------------------------------------------------------- internals
    async def _send(self, frame: Frame) -> None:
        async with self._send_lock:  # encoding order is the compression context's order
            if self.closed and not isinstance(frame, GoAway):
                raise StreamReset(CANCEL)
            await self._send_bytes(self._encoder.encode(frame))

    async def _window_changed_wait(self) -> None:
        if self.closed:
            raise StreamReset(CANCEL)
        await self._window_event.wait()

    def _window_changed(self) -> None:
        self._window_event.set()
        self._window_event = trio.Event()

    async def _consumed(self, stream: Stream, n: int) -> None:
        self._session_unacked += n
        half = DEFAULT_WINDOW // 2
        updates = []
        if stream._unacked >= half and not stream.remote_fin and stream.reset_status is None:
            updates.append(WindowUpdate(stream.id, stream._unacked))
            stream._unacked = 0
        if self._session_unacked >= half:
            updates.append(WindowUpdate(0, self._session_unacked))
            self._session_unacked = 0
        for u in updates:
            if not self.closed:
                await self._send(u)

    def _maybe_forget(self, stream: Stream) -> None:
        if stream.local_fin and stream.remote_fin and not stream._buf:
            self._streams.pop(stream.id, None)

    async def _handle(self, frame: Frame) -> None:
        if isinstance(frame, DataFrame):
            stream = self._streams.get(frame.stream_id)
            if stream is None or stream.remote_fin:
                status = INVALID_STREAM if stream is None else STREAM_ALREADY_CLOSED
                await self._send(RstStream(frame.stream_id, status))
                return
            stream._buf += frame.data
            stream.remote_fin = frame.fin
            stream._wake()
            if frame.fin and not stream._buf:
                self._maybe_forget(stream)
        elif isinstance(frame, SynStream):
            sid = frame.stream_id
            if self.goaway_received:
                await self._send(RstStream(sid, REFUSED_STREAM))
                return
            if sid % 2 == 0 or sid <= self._last_id:
                await self._send(RstStream(sid, PROTOCOL_ERROR))
                return
            self._last_id = sid
            stream = Stream(self, sid, frame.headers, remote_fin=frame.fin or frame.unidirectional,
                            send_window=self.initial_send_window)
            self._streams[sid] = stream
            assert self._nursery is not None
            self._nursery.start_soon(self._stream_task, stream)
        elif isinstance(frame, RstStream):
            stream = self._streams.pop(frame.stream_id, None)
            if stream is not None:
                stream.reset_status = frame.status
                stream._wake()
                self._window_changed()
        elif isinstance(frame, Ping):
            if frame.id % 2 == 1:  # the peer's ping (client ids are odd): echo it
                await self._send(frame)
        elif isinstance(frame, Settings):
            for sid, _flags, value in frame.entries:
                if sid == SETTINGS_INITIAL_WINDOW_SIZE:
                    self.peer_flow_control = True
                    delta = value - self.initial_send_window
                    self.initial_send_window = value
                    for stream in self._streams.values():
                        stream.send_window += delta
                    self._window_changed()
        elif isinstance(frame, WindowUpdate):
            self.peer_flow_control = True
            if frame.stream_id == 0:
                self.send_window += frame.delta
            elif (stream := self._streams.get(frame.stream_id)) is not None:
                stream.send_window += frame.delta
            self._window_changed()
        elif isinstance(frame, GoAway):
            self.goaway_received = True
        # SYN_REPLY / HEADERS for streams the peer opened carry nothing a server needs

    async def _stream_task(self, stream: Stream) -> None:
        try:
            await self._on_stream(stream)
        except StreamReset:
            pass
