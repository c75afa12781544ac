"""One entry of the event log: a revisioned write, as an etcd MVCC key-value.

A :class:`Record` is immutable once appended. Its object is the full API object
after the write (for ``DELETED``, the object's last state), with
``metadata.resourceVersion`` equal to the record's revision, exactly as a
kube-apiserver watch event would carry it.

Memory: the decoded dict is kept only while the record is the key's live
version. A record of a log file knows where its object's bytes are in the
file (:class:`ObjectSource`): it keeps neither the bytes (once written) nor,
once superseded, the dict, and reads them back with one ``pread`` when asked.
A long history so costs a hundred-odd bytes per record in memory, not its
size on disk. A record of an in-memory log keeps its JSON bytes instead. The
live records of *cold* resources (Events) keep only their JSON bytes. A live
record restored from a snapshot (:mod:`.snapshot`) is *pending*: it reads its
object from the file on first use and keeps it from then on, as any live one.
"""

from __future__ import annotations

import gc
import os
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any

import orjson

__all__ = ["Record", "ObjectSource", "ADDED", "MODIFIED", "DELETED", "collector_paused", "json_bytes"]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


_loads = orjson.loads

_RECENT_SIZE = 4096
#: superseded records decoded lately (keyed by the record itself, which the entry keeps alive);
#: an OrderedDict because dropping a plain dict's oldest entry (``next(iter(d))``) skips the
#: holes earlier deletions left, which made each insertion cost ~4 µs at this size
_RECENT: OrderedDict["Record", dict[str, Any]] = OrderedDict()


def json_bytes(obj: Any) -> bytes:
    """``obj`` as compact JSON, in a bytes object of exactly its length, for bytes that are kept.

    ``orjson.dumps`` returns its growing buffer as it is: a 3 KB Pod holds an 8 KB
    allocation, which for every record of a long history is 2.5x its size in memory.
    Raises TypeError for what JSON cannot carry (as ``orjson.dumps``).
    """
    return memoryview(orjson.dumps(obj)).tobytes()


@contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector for a bulk decode (a LIST at an old
    revision decodes thousands of superseded objects: acyclic dicts and lists that
    would otherwise set off several collections, doubling the time per object).

    When the pause created more than :data:`_FREEZE_AFTER` tracked objects, they are
    frozen (``gc.freeze``) as the collector comes back on, as an open freezes the
    log it folds: else the first young collection walks every one of them (46 ms
    of a 130 ms LIST of 10,000 pods), and again as they age. Acyclic objects still
    go away when no longer referenced; the price is that cyclic garbage alive at
    that moment is never collected, as with every other freeze here.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_count()[0] > _FREEZE_AFTER:
                gc.freeze()
            gc.enable()


#: tracked objects created during a :func:`collector_paused` beyond which they are frozen
_FREEZE_AFTER = 20_000


class _Pending:
    """What a restored live record holds in place of its object until first read (see
    :meth:`Record.pending`)."""

    __slots__ = ("keep",)

    def __init__(self, keep: str) -> None:
        self.keep = keep  # "object": decode and keep the dict

    def __repr__(self) -> str:
        return f"<pending {self.keep}>"


_PENDING_OBJECT = _Pending("object")
#: pending objects loaded since the collector last froze what is alive (see Record._load_pending)
_loaded = 0
_FREEZE_EVERY = 256

#: a record's place in its file: ``offset << _LEN_BITS | length`` of the object's bytes
_LEN_BITS = 32
_LEN_MASK = (1 << _LEN_BITS) - 1


class ObjectSource:
    """Where the records of one log file read their objects back: ``pread`` on the file.

    The file is opened on first read and stays open as long as a record refers to
    it (the log is append-only, so an offset, once written, stays valid; a file
    replaced or unlinked meanwhile is still the one read). ``before_read`` (the
    writer's flush) runs first, so bytes still in the writer's buffer are found.
    """

    __slots__ = ("path", "before_read", "on_decode", "_fd")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.before_read: Any = None
        #: sees each pending live object decoded (:meth:`Record.pending`) before anyone else does
        self.on_decode: Any = None
        self._fd: int | None = None

    def read(self, revision: int, loc: int) -> bytes:
        """The object bytes at ``loc``. Raises ValueError naming the revision if they are not there."""
        if self.before_read is not None:
            self.before_read()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        offset, length = loc >> _LEN_BITS, loc & _LEN_MASK
        data = os.pread(self._fd, length, offset)
        if len(data) != length or data[:1] != b"{" or data[-1:] != b"}":
            raise ValueError(f"event log revision {revision}: its object is no longer at byte {offset} of "
                             f"{self.path} (the file was changed while open)")
        return data

    def __del__(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass


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

    __slots__ = ("revision", "time", "type", "key", "actor", "create_revision", "version", "_obj", "_raw",
                 "_src", "_loc")

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
        src: ObjectSource | None = None,
        loc: int = 0,
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
        # where the object's bytes are in the log file (see locate): ``src`` and ``loc``, a
        # location as :meth:`location` gives it, let a snapshot restore a record in one call
        self._src: ObjectSource | None = src
        self._loc = loc

    @property
    def object(self) -> dict[str, Any]:
        """The API object (a dict to be treated as immutable).

        Raises:
            ValueError: its bytes in the log file are damaged or gone (naming the revision)."""
        obj = self._obj
        if obj is _PENDING_OBJECT:
            obj = self._load_pending()
        if obj is None:
            obj = _RECENT.get(self)
            if obj is None:
                obj = self._decode()
                # many watchers read the same superseded version (to tell ADDED / MODIFIED /
                # DELETED apart under a selector): decode it once for all of them
                _RECENT[self] = obj
                if len(_RECENT) > _RECENT_SIZE:
                    _RECENT.popitem(last=False)
        return obj

    def read_once(self) -> dict[str, Any]:
        """:attr:`object` for a bulk read (a LIST at an old revision): a version that is not
        at hand is decoded without taking a place among the recently decoded ones, which
        lagging watches need more than a LIST that goes over thousands of versions once."""
        obj = self._obj
        if obj is None:
            obj = _RECENT.get(self)
            if obj is None:
                # _decode and raw inlined: a LIST at an old revision comes here for each of
                # thousands of versions, where two more Python calls each cost ~7 % of its time
                raw = self._raw
                if raw is None:
                    src = self._src
                    raw = self.raw() if src is None else src.read(self.revision, self._loc)
                try:
                    obj = _loads(raw)
                except orjson.JSONDecodeError as e:
                    raise ValueError(f"{self._where()}: damaged object: {e}") from None
        elif obj is _PENDING_OBJECT:
            obj = self._load_pending()
        return obj

    def pending(self) -> None:
        """Mark a located live record restored without its object (a snapshot's): the first
        read loads it from the file and keeps the decoded object, as the log keeps a live
        one (given to the source's ``on_decode`` first)."""
        self._obj = _PENDING_OBJECT
        self._raw = None

    def _load_pending(self) -> dict[str, Any]:
        """Load a pending object (see :meth:`pending`) and keep it."""
        try:
            raw = self._src.read(self.revision, self._loc)
        except ValueError:  # not framed as an object: changed under the snapshot, or while open
            raise ValueError(f"{self._where()}: damaged object: no JSON object at byte "
                             f"{self._loc >> _LEN_BITS}") from None
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{self._where()}: damaged object: {e}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"{self._where()}: object is not a JSON object")
        if self._src.on_decode is not None:
            self._src.on_decode(obj)
        self._obj = obj
        # a live object lives long, as those an open decodes, which it hides from the cyclic
        # collector (gc.freeze); so is this one, a few hundred at a time: else every collection
        # walks them again (`k8semu get pods -A` of 150,000 pods restored from a snapshot took
        # 43 s instead of 13 s)
        global _loaded
        _loaded += 1
        if _loaded >= _FREEZE_EVERY:
            _loaded = 0
            gc.freeze()
        return obj

    def _decode(self) -> dict[str, Any]:
        try:
            return orjson.loads(self.raw())
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{self._where()}: damaged object: {e}") from None

    def _where(self) -> str:
        """``PATH: event log revision N (KEY)``: what an error about this record's object names
        (the file, when it has one: a read-only command reports it as its one-line error)."""
        what = f"event log revision {self.revision} ({self.key})"
        return what if self._src is None else f"{self._src.path}: {what}"

    @property
    def mod_revision(self) -> int:
        """etcd's mod_revision: the revision of this write."""
        return self.revision

    def raw(self) -> bytes:
        """The object as compact JSON bytes (read back from the file for a record that dropped them)."""
        raw = self._raw
        if raw is None:
            if self._src is not None:
                return self._src.read(self.revision, self._loc)
            raw = self._raw = json_bytes(self._obj)
        return raw

    def locate(self, source: ObjectSource, offset: int, length: int) -> None:
        """Note that the object's bytes are at ``offset`` (``length`` bytes) of ``source``'s file."""
        self._src = source
        self._loc = offset << _LEN_BITS | length

    @property
    def location(self) -> int:
        """Where the object's bytes are in the log file: ``offset << 32 | length`` (0 when not located)."""
        return self._loc

    def release(self) -> None:
        """Drop what can be restored (called once superseded): the decoded object if the
        bytes or the file give it back, and the bytes too if the file does."""
        if self._src is not None:
            self._obj = self._raw = None
        elif self._raw is not None:
            self._obj = None

    def retire(self) -> None:
        """:meth:`release`, keeping the decoded object among the recently decoded ones (a
        just-written record of a cold resource: its writer reads it back at once)."""
        obj = self._obj
        self.release()
        if obj is not None and self._obj is None and obj is not _PENDING_OBJECT:
            _RECENT[self] = obj
            if len(_RECENT) > _RECENT_SIZE:
                _RECENT.popitem(last=False)

    def drop_bytes(self) -> None:
        """Drop the JSON bytes if the file gives them back (the decoded object stays)."""
        if self._src is not None:
            self._raw = None

    @property
    def decoded(self) -> bool:
        """Whether :attr:`object` costs nothing (else it decodes, maybe after a read of the file)."""
        obj = self._obj
        return obj is not None and obj is not _PENDING_OBJECT

    def __repr__(self) -> str:
        return f"Record(rev={self.revision}, {self.type} {self.key} by {self.actor} at t={self.time})"
