"""Watches on the event log: every later write exactly once, in revision order.

Design: the log keeps every record since its compact revision in one list (and
the same records split per resource). A :class:`Watch` is only a cursor — the
last revision it delivered — plus a small buffer; nothing is copied per
watcher, so fanning one write out to a thousand watchers costs a thousand
cursor moves, not a thousand object copies. Writers wake parked watchers
through one :class:`trio.lowlevel.ParkingLot`.

A watcher that falls behind the compact revision gets :class:`Compacted`
(kube-apiserver's 410 ``Expired``), as etcd does.

Indexed watches: a watch that only wants the records whose object has one
value of an indexed field (a kubelet's ``spec.nodeName=node-7`` on pods, as
kube-apiserver's watch cache indexes pods by node name through its trigger
functions) is not a cursor but a queue: the writer pushes each record into the
watches registered under the record's new value and under the value of the
version it replaced, and wakes only those. A write to one node's pod then
costs that node's watch, not one cursor move per node in the cluster.
Register an index with :meth:`EventLog.add_watch_index`.

Bookmarks (``bookmarks=True``): whenever :meth:`Watch.request_bookmark` has
been called and the watch has delivered everything up to the head, the next
item is a :class:`Bookmark` carrying the head revision, as kube-apiserver's
``BOOKMARK`` events let a client resume from a recent resourceVersion.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable, Union

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
        # resource -> field -> value of a record's object (see EventLog.add_watch_index)
        self._indexers: dict[str, dict[str, Callable[[Record], str]]] = {}
        # (resource, field, value) -> the indexed watches on it, in creation order
        self._indexed: dict[tuple[str, str, str], list["Watch"]] = {}
        self.closed = False

    def add_index(self, resource: str, field: str, fn: Callable[[Record], str]) -> None:
        """Let watches on ``resource`` ask only for records whose ``fn(record)`` has one value."""
        self._indexers.setdefault(resource, {})[field] = fn

    def indexer(self, resource: str, field: str) -> Callable[[Record], str]:
        """The index function of ``field`` on ``resource`` (KeyError: no such index)."""
        return self._indexers[resource][field]

    def index_values(self, rec: Record | None) -> dict[str, str] | None:
        """``{field: value}`` of one record under its resource's indexes (None: no indexes)."""
        if rec is None:
            return None
        fields = self._indexers.get(rec.key.split("/", 3)[2])
        if not fields:
            return None
        return {f: fn(rec) for f, fn in fields.items()}

    def push(self, rec: Record, prev_values: dict[str, str] | None, values: dict[str, str] | None) -> None:
        """Hand a new record to the indexed watches on its new or previous value
        (``values``, ``prev_values``: :meth:`index_values` of the record and of the one it replaced)."""
        if values is None or not self._indexed:
            return
        resource = rec.key.split("/", 3)[2]
        for field, value in values.items():
            self._push_to((resource, field, value), rec)
            if prev_values is not None:
                old = prev_values[field]
                if old != value:
                    self._push_to((resource, field, old), rec)

    def _push_to(self, slot: tuple[str, str, str], rec: Record) -> None:
        watches = self._indexed.get(slot)
        if watches:
            for w in watches:
                if rec.key.startswith(w.prefix) and not w._stopped:
                    w._buf.append(rec)
                    w._lot.unpark_all()

    def _register(self, w: "Watch", slot: tuple[str, str, str]) -> None:
        self._indexed.setdefault(slot, []).append(w)

    def _unregister(self, w: "Watch", slot: tuple[str, str, str]) -> None:
        watches = self._indexed.get(slot)
        if watches and w in watches:
            watches.remove(w)
            if not watches:
                del self._indexed[slot]

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

    def watch(self, prefix: str, after: int, bookmarks: bool,
              index: tuple[str, str] | None = None) -> "Watch":
        if after < self.log.compact_revision:
            raise Compacted(after, self.log.compact_revision)
        resource = _resource_of_prefix(prefix)
        if index is not None and resource is not None and index[0] in self._indexers.get(resource, {}):
            return Watch(self, prefix, after, bookmarks, slot=(resource, index[0], index[1]))
        return Watch(self, prefix, after, bookmarks)

    def close(self) -> None:
        self.closed = True
        self.notify()
        for watches in list(self._indexed.values()):
            for w in watches:
                w._lot.unpark_all()


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

    def __init__(self, hub: WatchHub, prefix: str, after: int, bookmarks: bool,
                 slot: tuple[str, str, str] | None = None) -> None:
        self._hub = hub
        self.prefix = prefix
        self._last = after
        self._buf: deque[Record] = deque()
        self._bookmarks = bookmarks
        self._want_bookmark = False
        self._stopped = False
        self._slot = slot
        if slot is None:
            self._lot = hub.lot(_resource_of_prefix(prefix))
        else:
            # indexed: catch up from history now, then the writer pushes (see WatchHub.push)
            self._lot = trio.lowlevel.ParkingLot()
            self._buf.extend(self._history(after))
            self._last = hub.log.revision
            hub._register(self, slot)

    def _history(self, after: int) -> list[Record]:
        """Records after ``after`` whose new or previous version has this watch's value."""
        _, field, value = self._slot  # type: ignore[misc]
        log, hub = self._hub.log, self._hub
        out = []
        for rec in log.records(after, self.prefix):
            vals = hub.index_values(rec)
            if vals is not None and vals[field] == value:
                out.append(rec)
            elif rec.type != "ADDED":
                prev = log.get(rec.key, rec.revision - 1)
                pv = hub.index_values(prev)
                if pv is not None and pv[field] == value:
                    out.append(rec)
        return out

    @property
    def progress(self) -> int:
        """Every write up to this revision under the prefix has been delivered or buffered."""
        return self._last

    def _fill(self) -> bool:
        log = self._hub.log
        if self._slot is not None:  # pushed by the writer: nothing to scan
            self._last = log.revision
            return bool(self._buf)
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
        if self._slot is not None:
            self._hub._unregister(self, self._slot)
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
