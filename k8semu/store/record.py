"""One entry of the event log: a revisioned write, as an etcd MVCC key-value.

A :class:`Record` is immutable once appended. Its object is the full API object
after the write (for ``DELETED``, the object's last state), with
``metadata.resourceVersion`` equal to the record's revision, exactly as a
kube-apiserver watch event would carry it.

Memory: a record read from (or written to) a log file keeps the object's JSON
bytes; the decoded dict is kept only while the record is the key's live
version. Superseded records decode on demand, so a long history costs about
its file size in memory, not several times that.
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any

import orjson

__all__ = ["Record", "ADDED", "MODIFIED", "DELETED", "collector_paused"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


_RECENT_SIZE = 4096
#: superseded records decoded lately (keyed by the record itself, which the entry keeps alive);
#: an OrderedDict because dropping a plain dict's oldest entry (``next(iter(d))``) skips the
#: holes earlier deletions left, which made each insertion cost ~4 µs at this size
_RECENT: OrderedDict["Record", dict[str, Any]] = OrderedDict()


@contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector for a bulk decode (a LIST at an old
    revision decodes thousands of superseded objects: acyclic dicts and lists that
    would otherwise set off several collections, doubling the time per object)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Record:
    """A write in the log.

    Attributes:
        revision: global revision (int, strictly increasing from 1).
        time: virtual seconds since the cluster started when the write happened.
        type: ``ADDED`` / ``MODIFIED`` / ``DELETED``.
        key: ``/registry/<resource>/<namespace>/<name>`` or ``/registry/<resource>/<name>``.
        actor: who wrote it (``user:admin``, ``kube-scheduler``, ``kubelet/node-1``, …).
        create_revision: revision at which the key was (last) created.
        version: number of writes to the key since it was created (1 on create).
    """

    __slots__ = ("revision", "time", "type", "key", "actor", "create_revision", "version", "_obj", "_raw")

    def __init__(
        self,
        revision: int,
        time: float,
        type: str,
        key: str,
        actor: str,
        create_revision: int,
        version: int,
        obj: dict[str, Any] | None = None,
        raw: bytes | None = None,
    ) -> None:
        self.revision = revision
        self.time = time
        self.type = type
        self.key = key
        self.actor = actor
        self.create_revision = create_revision
        self.version = version
        self._obj = obj
        self._raw = raw

    @property
    def object(self) -> dict[str, Any]:
        """The API object (a dict to be treated as immutable)."""
        obj = self._obj
        if obj is None:
            obj = _RECENT.get(self)
            if obj is None:
                try:
                    obj = orjson.loads(self._raw)  # type: ignore[arg-type]
                except orjson.JSONDecodeError as e:
                    raise ValueError(
                        f"event log revision {self.revision} ({self.key}): damaged object: {e}") from None
                # many watchers read the same superseded version (to tell ADDED / MODIFIED /
                # DELETED apart under a selector): decode it once for all of them
                _RECENT[self] = obj
                if len(_RECENT) > _RECENT_SIZE:
                    _RECENT.popitem(last=False)
        return obj

    @property
    def mod_revision(self) -> int:
        """etcd's mod_revision: the revision of this write."""
        return self.revision

    def raw(self) -> bytes:
        """The object as compact JSON bytes."""
        if self._raw is None:
            self._raw = orjson.dumps(self._obj)
        return self._raw

    def release(self) -> None:
        """Drop the decoded object if the bytes can restore it (called once superseded)."""
        if self._raw is not None:
            self._obj = None

    def __repr__(self) -> str:
        return f"Record(rev={self.revision}, {self.type} {self.key} by {self.actor} at t={self.time})"
