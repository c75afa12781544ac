"""Watches on the event log: every later write exactly once, in revision order.

Design: the log keeps every record since its compact revision in one list (and
the same records split per resource). A :class:`Watch` is only a cursor — the
last revision it delivered — plus a small buffer; nothing is copied per
watcher, so fanning one write out to a thousand watchers costs a thousand
cursor moves, not a thousand object copies. Writers wake parked watchers
through one :class:`trio.lowlevel.ParkingLot`.

A watcher that falls behind the compact revision gets :class:`Compacted`
(kube-apiserver's 410 ``Expired``), as etcd does.

Bookmarks (``bookmarks=True``): whenever :meth:`Watch.request_bookmark` has
been called and the watch has delivered everything up to the head, the next
item is a :class:`Bookmark` carrying the head revision, as kube-apiserver's
``BOOKMARK`` events let a client resume from a recent resourceVersion.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Union

import trio

from .log import Compacted
from .record import Record

if TYPE_CHECKING:
    from .log import EventLog

__all__ = ["Watch", "Bookmark", "WatchHub"]


class Bookmark:
    """A progress notification: the watch has seen every write up to ``revision``."""

    __slots__ = ("revision",)
    type = "BOOKMARK"

    def __init__(self, revision: int) -> None:
        self.revision = revision

    def __repr__(self) -> str:
        return f"Bookmark({self.revision})"


class WatchHub:
    """Wakes the watches of one log when it changes.

    Watches on one resource (``/registry/pods/…``) park in that resource's
    lot, so a write wakes only the watches that can see it (and the watches
    on everything).
    """

    def __init__(self, log: "EventLog") -> None:
        self.log = log
        self._lots: dict[str | None, trio.lowlevel.ParkingLot] = {}
        self.closed = False

    def lot(self, resource: str | None) -> trio.lowlevel.ParkingLot:
        """The parking lot of one resource's watches (None: watches on every resource)."""
        lot = self._lots.get(resource)
        if lot is None:
            lot = self._lots[resource] = trio.lowlevel.ParkingLot()
        return lot

    def notify(self, key: str | None = None) -> None:
        """Wake the watches that may see a write to ``key`` (every watch when None)."""
        if key is None:
            for lot in self._lots.values():
                if lot:
                    lot.unpark_all()
            return
        lot = self._lots.get(key.split("/", 3)[2])
        if lot:
            lot.unpark_all()
        lot = self._lots.get(None)
        if lot:
            lot.unpark_all()

    def watch(self, prefix: str, after: int, bookmarks: bool) -> "Watch":
        if after < self.log.compact_revision:
            raise Compacted(after, self.log.compact_revision)
        return Watch(self, prefix, after, bookmarks)

    def close(self) -> None:
        self.closed = True
        self.notify()


def _resource_of_prefix(prefix: str) -> str | None:
    """``/registry/pods/`` or ``/registry/pods/ns/`` -> ``pods``; anything wider -> None."""
    parts = prefix.split("/", 3)
    if len(parts) == 4 and parts[1] == "registry" and parts[2]:
        return parts[2]
    return None


class Watch:
    """An async iterator of :class:`Record` (and :class:`Bookmark` if asked for).

    Iteration ends when :meth:`stop` is called or the log is closed.

    Raises (from ``__anext__``):
        Compacted: the log was compacted past what this watch has delivered.
    """

    def __init__(self, hub: WatchHub, prefix: str, after: int, bookmarks: bool) -> None:
        self._hub = hub
        self.prefix = prefix
        self._last = after
        self._buf: deque[Record] = deque()
        self._bookmarks = bookmarks
        self._want_bookmark = False
        self._stopped = False
        self._lot = hub.lot(_resource_of_prefix(prefix))

    @property
    def progress(self) -> int:
        """Every write up to this revision under the prefix has been delivered or buffered."""
        return self._last

    def _fill(self) -> bool:
        log = self._hub.log
        if log.revision > self._last:
            if self._last < log.compact_revision:
                raise Compacted(self._last, log.compact_revision)
            self._buf.extend(log.records(self._last, self.prefix))
            self._last = log.revision
            return True
        return False

    def poll(self) -> list[Record]:
        """Take whatever is ready now, without waiting (for synchronous consumers)."""
        self._fill()
        out = list(self._buf)
        self._buf.clear()
        return out

    def request_bookmark(self) -> None:
        """Ask for a :class:`Bookmark` once this watch is caught up (no-op without bookmarks)."""
        if self._bookmarks:
            self._want_bookmark = True
            self._lot.unpark_all()

    def stop(self) -> None:
        """End the iteration (a parked ``__anext__`` returns StopAsyncIteration)."""
        self._stopped = True
        self._lot.unpark_all()

    def __aiter__(self) -> "Watch":
        return self

    async def __anext__(self) -> Union[Record, Bookmark]:
        woke = False  # parking was this call's scheduling point
        while True:
            if self._stopped or self._hub.closed:
                raise StopAsyncIteration
            if self._buf:
                return self._buf.popleft()
            if self._fill():
                if not woke:
                    await trio.lowlevel.checkpoint()
                if self._buf:
                    return self._buf.popleft()
                continue
            if self._want_bookmark:
                self._want_bookmark = False
                return Bookmark(self._last)
            await self._lot.park()
            woke = True

    async def __aenter__(self) -> "Watch":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
