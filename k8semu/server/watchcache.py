"""Shared watch streams: one watch of the API server, encoded once, for every client watching alike.

kube-apiserver serves every watcher of a resource from one etcd watch (its watch
cache, the *cacher*): an event is filtered and serialised once per distinct
watch and appended to each watcher's buffer. Here a :class:`SharedWatch` is one
:meth:`~k8semu.api.apiserver.APIServer.watch` (one resource, namespace,
selectors and bookmark choice) whose events it keeps as encoded JSON lines, and
every client that asks for the same watch from a resourceVersion it still holds
reads them with a cursor of its own: 1,000 clients of one watch cost one filter
and one encoding per event, plus one socket write per client per flush period,
instead of a filter, an encoding step and a channel hop per event per client.

A client more than :data:`MAX_LAG` events behind is dropped (its stream ends, and
its client lists and watches again), as the cacher ends a watcher whose buffer
stays full; what every client has read is dropped from memory.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, AsyncIterator, Callable

import trio

__all__ = ["SharedWatch", "WatchClient", "MAX_LAG"]

#: events a client may fall behind the newest before it is dropped
MAX_LAG = 20_000
#: events kept beyond what every client has read before the list is trimmed
_TRIM_SLACK = 1024


class WatchClient:
    """One client's cursor in a :class:`SharedWatch` (an absolute position in its event list)."""

    __slots__ = ("pos", "dropped")

    def __init__(self, pos: int) -> None:
        self.pos = pos
        self.dropped = False


class SharedWatch:
    """The encoded events of one watch, after revision :attr:`after`, for any number of clients.

    Attributes:
        key: what clients must ask for to share it (resource, namespace, selectors, bookmarks).
        after: every event after this revision is held (it grows as events are trimmed).
        done: the source ended (an ERROR event, such as 410 Expired, was its last line).
    """

    def __init__(self, key: tuple[Any, ...], after: int) -> None:
        self.key = key
        self.after = after
        self.done = False
        self.clients: list[WatchClient] = []
        self._revs: list[int] = []
        self._lines: list[bytes] = []
        self._base = 0  # absolute position of _lines[0]
        self._changed = trio.Event()
        self.cancel_scope = trio.CancelScope()

    # ------------------------------------------------------------------ the source side
    async def pump(self, events: AsyncIterator[Any], encode: Callable[[Any], bytes]) -> None:
        """Append every event of ``events`` (an :meth:`APIServer.watch` iterator), encoded,
        until it ends or :attr:`cancel_scope` is cancelled."""
        with self.cancel_scope:
            try:
                async for ev in events:
                    rev = ev.revision or (self._revs[-1] if self._revs else self.after)
                    self._revs.append(rev)
                    self._lines.append(encode(ev))
                    self._wake()
                    if len(self._lines) > 2 * _TRIM_SLACK:
                        self._trim()
            finally:
                self.done = True
                self._wake()
                with trio.CancelScope(shield=True):
                    await events.aclose()  # type: ignore[attr-defined]

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def _trim(self) -> None:
        """Drop what every client has read (keeping some slack for clients that join late);
        drop clients more than :data:`MAX_LAG` behind."""
        end = self._base + len(self._lines)
        for c in self.clients:
            if end - c.pos > MAX_LAG:
                c.dropped = True
        self.clients = [c for c in self.clients if not c.dropped]
        low = min((c.pos for c in self.clients), default=end)
        n = min(low - self._base, len(self._lines) - _TRIM_SLACK)
        if n > 0:
            self.after = self._revs[n - 1]
            del self._revs[:n]
            del self._lines[:n]
            self._base += n
        self._wake()  # dropped clients notice

    # ------------------------------------------------------------------ the client side
    def covers(self, revision: int) -> bool:
        """Whether a client watching from ``revision`` gets every later event here."""
        return not self.done and revision >= self.after

    def join(self, revision: int) -> WatchClient:
        """A cursor at the first event after ``revision`` (which :meth:`covers` must accept)."""
        client = WatchClient(self._base + bisect_right(self._revs, revision))
        self.clients.append(client)
        return client

    def leave(self, client: WatchClient) -> None:
        if client in self.clients:
            self.clients.remove(client)

    async def next_chunk(self, client: WatchClient) -> bytes | None:
        """Every event the client has not had yet, as one chunk, once there is one;
        None when the stream ends (the source is done and all of it was read, or the
        client was dropped)."""
        while True:
            if client.dropped:
                return None
            i = client.pos - self._base
            if i < len(self._lines):
                chunk = b"".join(self._lines[i:])
                client.pos = self._base + len(self._lines)
                return chunk
            if self.done:
                return None
            await self._changed.wait()
