"""The event log: k8semu's etcd, an append-only revisioned history of every write.

Semantics mirror etcd v3's MVCC store as kube-apiserver uses it:

- every write gets the next global revision (from 1);
- per key, ``create_revision``, ``mod_revision`` and ``version``;
- reads (``get``, ``range``) at the head or at any retained revision;
- writes are compare-and-swap on ``mod_revision`` and create-if-absent;
- watches from any retained revision see every later event exactly once, in
  revision order (see :mod:`k8semu.store.watch`);
- ``compact(rev)`` drops history older than ``rev`` but keeps the state at ``rev``.

Revisions here use Kubernetes' resourceVersion meaning: reading "at revision
R" sees every write with revision ≤ R, and watching "from R" delivers the
writes after R.

The log is in memory; with a path it is also a file (:mod:`.logfile`), each
append written before the write returns, and :meth:`EventLog.open` rebuilds
the exact same state from it.

Writes are synchronous (no ``await``): the order of writes is the order in
which callers make them, so determinism is the caller's (the runtime's) concern.
"""

from __future__ import annotations

import gc
import os
from bisect import bisect_right
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable, Iterable

from sortedcontainers import SortedDict

from .logfile import LogFormatError, LogReader, LogWriter
from .record import ADDED, DELETED, MODIFIED, Record

__all__ = [
    "EventLog",
    "StoreError",
    "KeyExists",
    "KeyNotFound",
    "RevisionMismatch",
    "Compacted",
    "FutureRevision",
    "resource_of",
]


class StoreError(Exception):
    """Base class of the store's own errors (mapped to API errors by the apiserver)."""


class KeyExists(StoreError):
    """create-if-absent failed: the key exists (API: 409 AlreadyExists)."""


class KeyNotFound(StoreError):
    """update/delete of a key that does not exist (API: 404 NotFound)."""


class RevisionMismatch(StoreError):
    """compare-and-swap failed: the key's mod_revision differs (API: 409 Conflict).

    Attributes:
        current: the key's current record.
    """

    def __init__(self, key: str, expected: int, current: Record) -> None:
        super().__init__(f"{key}: expected mod_revision {expected}, is {current.revision}")
        self.current = current


class Compacted(StoreError):
    """A read or watch at a revision older than the compacted one (API: 410 Expired).

    Attributes:
        requested: the revision asked for.
        compacted: the store's compact revision (the oldest still readable).
    """

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"too old resource version: {requested} ({compacted})")
        self.requested = requested
        self.compacted = compacted


class FutureRevision(StoreError):
    """A read at a revision the store has not reached yet (API: 504 / "Too large resource version")."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"Too large resource version: {requested}, current: {current}")
        self.requested = requested
        self.current = current


#: Resources whose live objects a log keeps only in its file (as JSON bytes without one), reading
#: and decoding them when read:
#: Events, which no controller watches and which outnumber every other object (a pod leaves ~6;
#: 1,000 nodes x 30,000 pods left 192,000 of them live: 228 MiB of JSON, 1.3 GiB decoded; their
#: bytes alone were ~8 KB per pod). The API server skips most of them under a field selector
#: without decoding (``describe``'s query): a read of ~1 KB from the file each.
#: kube-apiserver, too, can keep Events apart (``--etcd-servers-overrides=/events#...``).
COLD_RESOURCES = ("events", "events.events.k8s.io")
_COLD_PREFIXES = tuple(f"/registry/{r}/" for r in COLD_RESOURCES)

#: see :attr:`EventLog.snapshot_min_records`: at ~10-20 µs a line, the tail an open reads after a
#: snapshot stays under ~0.4 s, and a command that writes little does not rewrite the snapshot
SNAPSHOT_MIN_RECORDS = 20_000
SNAPSHOT_MIN_BYTES = 32 << 20
#: see :attr:`EventLog.snapshot_every_records`: a command killed outright (no close) leaves at most
#: this many records (or a quarter of a longer log) for the next open to parse; a write costs
#: ~3.5 µs a record of the whole log, so ~1 % of a run's time at 1.4 M records
SNAPSHOT_EVERY_RECORDS = 100_000


def resource_of(key: str) -> str:
    """``/registry/pods/default/x`` -> ``pods`` (the second path segment)."""
    return key.split("/", 3)[2]


class _Damage(ValueError):
    """A record that cannot be folded into the store (reported as a LogFormatError)."""

    def __init__(self, revision: int, what: str, key: str | None = None) -> None:
        super().__init__(f"damaged line: {what}")
        self.revision = revision
        self.key = key  # for a write of a key that does not exist, or an ADDED of one that does


def _decode_object(rec: Record) -> dict[str, Any]:
    import orjson

    try:
        obj = orjson.loads(rec._raw)
    except orjson.JSONDecodeError as e:
        raise _Damage(rec.revision, f"object of {rec.key} is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise _Damage(rec.revision, f"object of {rec.key} is not a JSON object")
    return obj


def _damage_of(rec: Record, error: ValueError) -> str:
    """What a full open says of ``rec``'s live object that failed to load from the file
    (``error``), so that an open from a snapshot reports the same damage the same way."""
    try:
        raw = rec._src.read(rec.revision, rec.location)
    except ValueError:
        return "damaged line: obj is not a JSON object"  # as the reader's framing check says it
    except OSError:
        return f"damaged line: {error}"
    try:
        _decode_object(Record(rec.revision, rec.time, rec.type, rec.key, rec.actor, 0, 0, None, raw))
    except _Damage as e:
        return str(e)
    return f"damaged line: {error}"


def _edited_key(records: list[Record], damage: _Damage) -> _Damage:
    """The damage that really explains ``damage`` when it is a write of a key that does
    not exist (or an ADDED of one that does): an earlier record whose key was edited —
    a byte changed, so that the object was filed under a neighbouring key and the
    record that later updates it finds nothing. Returns that record's damage (``damaged
    line: key K is not its object's key (pod default/web-…)``), or ``damage`` itself.

    Only on the error path: each earlier key of the same length that differs from the
    missing one in at most two characters, and whose object's name and namespace are
    the missing key's, is a culprit; the latest one is reported.
    """
    key = damage.key
    if key is None:
        return damage
    parts = key.split("/")
    name, ns = parts[-1], (parts[-2] if len(parts) == 5 else None)
    for rec in reversed(records):
        other = rec.key
        if other == key or len(other) != len(key) or sum(a != b for a, b in zip(other, key)) > 2:
            continue
        try:
            meta = rec.read_once().get("metadata") or {}
        except (ValueError, OSError):
            continue
        if meta.get("name") == name and meta.get("namespace") == ns:
            kind = str(rec.read_once().get("kind") or "object").lower()
            return _Damage(rec.revision, f"key {other} is not its object's key "
                                         f"({kind} {ns + '/' if ns else ''}{name})")
    return damage


def _prefix_end(prefix: str) -> str:
    return prefix + "\U0010ffff"


#: a record's revision, as a C-level key for ``bisect`` and sorts: a Python function costs
#: a frame per probe, ~15 % of a LIST's range at an old revision
_REVISION = attrgetter("revision")


def _version_at(hist: list[Record], rev: int) -> Record | None:
    """The last of one key's records (oldest first) with revision <= ``rev``, or None."""
    i = bisect_right(hist, rev, key=_REVISION)
    return hist[i - 1] if i else None


class EventLog:
    """An etcd-like MVCC store whose history is the event log.

    Args:
        clock: returns the virtual time (seconds) stamped on each record.
        path: optional log file; records are appended to it as they are written.
        header: written as the file's header when the file is new (seed, cluster config).
        sync: durability of each append: ``"none"``, ``"flush"`` (default) or ``"fsync"``.

    Use :meth:`open` to load an existing file.
    """

    def __init__(
        self,
        clock: Callable[[], float] | None = None,
        path: str | os.PathLike[str] | None = None,
        header: dict[str, Any] | None = None,
        sync: str = "flush",
        *,
        _truncate_to: int | None = None,
    ) -> None:
        self.clock: Callable[[], float] = clock or (lambda: 0.0)
        self.header: dict[str, Any] = dict(header or {})
        self._revision = 0
        self._compacted = 0
        # key -> list of its records in revision order (tombstones included); None until
        # first needed after an open (see _indexes)
        self._history: SortedDict | None = SortedDict()
        # key -> live record (absent once deleted)
        self._live: SortedDict = SortedDict()
        # every record since the compact revision, and the same split per resource
        self._records: list[Record] = []
        self._by_resource: dict[str, list[Record]] | None = {}
        self._listeners: list[Callable[[Record], None]] = []
        # (resource, field) -> value -> live keys (see live_keys); built on first use
        self._live_index: dict[tuple[str, str], dict[str, set[str]]] = {}
        # resource -> revision of its latest write (see last_change); None until first needed
        # after an open
        self._last_change: dict[str, int] | None = {}
        self._writer: LogWriter | None = None
        self.torn_line: int | None = None
        #: session marks (``{"type":"SESSION",…}`` lines) in file order; see :meth:`mark`
        self.marks: list[dict[str, Any]] = []
        #: the revision the snapshot this log was opened from covers (None: opened without one)
        self.snapshot_revision: int | None = None
        #: :meth:`close` writes a snapshot when at least this many records, or this many bytes,
        #: of the file are not covered by the one it was opened from (see :meth:`write_snapshot`)
        self.snapshot_min_records = SNAPSHOT_MIN_RECORDS
        self.snapshot_min_bytes = SNAPSHOT_MIN_BYTES
        #: while writing, a snapshot is also written whenever this many records (or a quarter
        #: of the log, if more) are not covered, so a process killed outright leaves one too
        self.snapshot_every_records = SNAPSHOT_EVERY_RECORDS
        self._next_snapshot_check = 0  # the revision at which to look again (see _append)
        # whether memory is what a full open of the file gives (a snapshot can be taken of it)
        self._snapshot_ok = False
        self._covered = (0, 0)  # (revision, bytes) of the file a snapshot covers
        #: a read-only open's file: (path, bytes read, its ObjectSource); see snapshot_on_close
        self._read: tuple[Path, int, Any] | None = None
        #: a read-only log writes a snapshot at close too (when due), if set: the CLI's read
        #: commands do, so reading a long log that no writer left a snapshot for (a ``serve``
        #: that compacted its memory) pays the full parse once, not every time
        self.snapshot_on_close = False
        self._mark_revs: list[int] = []  # the revision before each non-record line of the file
        self._lines = 1  # lines in the file (the header's included)
        if path is not None:
            self._writer = LogWriter(path, self.header, sync=sync, truncate_to=_truncate_to)
            self._snapshot_ok = self._writer.created  # else the file holds what memory does not
        from .watch import WatchHub  # local import: watch depends on this module

        self._hub = WatchHub(self)

    # ------------------------------------------------------------------ open / close
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        clock: Callable[[], float] | None = None,
        sync: str = "flush",
        read_only: bool = False,
        verify: bool = False,
        on_decode: Callable[[dict[str, Any]], None] | None = None,
        snapshot: bool = True,
    ) -> "EventLog":
        """Rebuild a log from its file; later writes append to the same file.

        Every line's framing, header fields and revision sequence are checked,
        and every live object is decoded. With ``verify`` every superseded
        object is decoded too; without it (the default, several times faster
        on a long history) a superseded object is decoded when first read, and
        damage inside one is reported then, naming its revision.

        A torn last line is dropped (and cut from the file unless ``read_only``);
        its line number is in :attr:`torn_line`. ``on_decode(obj)`` sees each live
        object decoded here before anyone else does (the API layer shares equal
        parts of objects through it).

        With ``snapshot`` (the default, unless ``verify``), a snapshot of the file
        (``<file>.snap``, :mod:`.snapshot`) that matches it stands for the prefix it
        covers: only the lines after it are read, and the log is the same as a full
        open's, except that a live object of that prefix is read from the file and
        decoded (and given to ``on_decode``) when first used, so damage inside one
        is reported then, as for a superseded one. A snapshot that does not match
        the file is ignored. :attr:`snapshot_revision` says which revision it
        covered. Reading never writes one; :meth:`close` does (see
        :meth:`write_snapshot`), also for a read-only open whose
        :attr:`snapshot_on_close` was set.

        Raises:
            FileNotFoundError: no such file.
            LogFormatError: the file is damaged other than a torn last line.
        """
        reader = LogReader(path, verify=verify)
        log = cls(clock, None, reader.header)
        start = None
        if snapshot and not verify:
            from . import snapshot as snapshots

            reader.source.on_decode = on_decode  # for the live objects it leaves in the file
            start = snapshots.load(reader, _COLD_PREFIXES)
        try:
            log._replay(reader.entries(), on_decode, start)
        except _Damage as e:
            e = _edited_key(log._records, e)
            line = reader.line_of(e.revision) if e.revision else reader.line
            raise LogFormatError(reader.path, line, str(e)) from None
        if reader.torn is not None:
            log.torn_line = reader.torn[0]
        log._mark_revs = reader._compact_after
        log._lines = reader.line
        if start is not None:
            log.snapshot_revision = start.revision
            log._covered = (start.revision, start.size)
            if not read_only:
                log._load_live(reader)
        if not read_only:
            log._writer = LogWriter(
                path, sync=sync, truncate_to=reader.good_size if reader.torn else None, source=reader.source
            )
        else:
            log._read = (Path(reader.path), reader.good_size, reader.source)
        log._snapshot_ok = True
        return log

    def _replay(self, entries, on_decode: Callable[[dict[str, Any]], None] | None = None, start=None) -> None:
        """Fold a file's entries into an empty log: the same state as :meth:`_apply`
        one by one, built with plain dicts and the garbage collector paused; the
        history indexes are left to :meth:`_indexes`. ``start`` (a
        :class:`~.snapshot.SnapshotStart`) is the state after the lines before
        ``entries``: they continue it."""
        live: dict[str, Record] = {}
        actors: dict[str, str] = {}
        records = self._records
        compact = 0
        base_revision = 0
        if start is not None:
            live = start.live
            actors = {a: a for a in start.actors}
            records = self._records = start.records
            compact = start.compact
            base_revision = start.revision
            self.marks = start.marks
        enabled = gc.isenabled()
        gc.disable()
        try:
            for kind, rec in entries:
                if kind != "record":
                    if kind == "session":
                        self.marks.append(rec)
                    else:
                        compact = max(compact, rec)
                    continue
                key = rec.key
                prev = live.get(key)
                rec.actor = actors.setdefault(rec.actor, rec.actor)  # one string per actor, not per record
                if rec.type == ADDED:
                    if prev is not None:
                        raise _Damage(rec.revision, f"ADDED {key}, which exists", key)
                    rec.create_revision, rec.version = rec.revision, 1
                    live[key] = rec
                else:
                    if prev is None:
                        raise _Damage(rec.revision, f"{rec.type} {key}, which does not exist", key)
                    rec.create_revision, rec.version = prev.create_revision, prev.version + 1
                    rec.key = prev.key  # one string per key
                    prev.release()
                    if rec.type == DELETED:
                        del live[key]
                    else:
                        live[key] = rec
                records.append(rec)
            for rec in live.values():
                if rec.key.startswith(_COLD_PREFIXES):
                    rec.release()  # in the file only, see COLD_RESOURCES
                    continue
                if rec._obj is None:
                    rec._obj = _decode_object(rec)
                    if on_decode is not None:
                        on_decode(rec._obj)
                rec.drop_bytes()  # the file has them
        finally:
            # the folded log lives as long as the process: keep the collector from walking
            # its millions of objects again on every later full collection (a LIST at an
            # old revision decoding 10,000 objects took 4x longer through those walks)
            gc.freeze()
            if enabled:
                gc.enable()
        # the per-key history and per-resource lists are built when first needed (time
        # travel, watches): opening a long log only folds the live state
        self._history = None
        self._by_resource = None
        self._last_change = None
        self._live = SortedDict(live)
        # (with a snapshot whose last records were compacted away, the list can end before it)
        self._revision = max(base_revision, records[-1].revision if records else 0)
        if compact:
            self._compact_memory(compact)

    def _load_live(self, reader: LogReader) -> None:
        """Decode every live object a snapshot left in the file (not the cold ones, which a
        full open does not decode either). A command that writes runs the components, which
        read them all at once anyway; reading them here reports damage in one as a full open
        does (:class:`LogFormatError` with its line), before the command writes anything.
        """
        for rec in self._live.values():
            if rec.decoded or rec.key.startswith(_COLD_PREFIXES):
                continue
            try:
                rec.object
            except ValueError as e:
                raise LogFormatError(reader.path, reader.line_of(rec.revision), _damage_of(rec, e)) from None

    def _indexes(self) -> tuple[SortedDict, dict[str, list[Record]]]:
        """The per-key history and per-resource record lists, built from the records
        on first use after an open (both derive from :attr:`_records` until a compaction)."""
        if self._history is None or self._by_resource is None:
            history: dict[str, list[Record]] = {}
            by_resource: dict[str, list[Record]] = {}
            for rec in self._records:
                key = rec.key
                hist = history.get(key)
                if hist is None:
                    history[key] = [rec]
                else:
                    hist.append(rec)
                res = key.split("/", 3)[2]
                lst = by_resource.get(res)
                if lst is None:
                    by_resource[res] = [rec]
                else:
                    lst.append(rec)
            self._history = SortedDict(history)
            self._by_resource = by_resource
            gc.freeze()  # long-lived, like the records (see _replay)
        return self._history, self._by_resource

    def close(self) -> None:
        """Flush and close the file (if any). Watches end.

        A read-write log whose file has at least :attr:`snapshot_min_records` records
        or :attr:`snapshot_min_bytes` bytes that the snapshot it was opened from
        does not cover writes a new snapshot first (:meth:`write_snapshot`), unless its
        file name ends in ``.tmp`` (a temporary file that is renamed once written); one
        that cannot be written is skipped (it is only a cache)."""
        if self._read is not None and self.snapshot_on_close and self._snapshot_due():
            try:
                self.write_snapshot()
            except (OSError, ValueError, TypeError, OverflowError):
                pass  # only a cache
        self._read = None
        if self._writer is not None:
            try:
                if self._snapshot_due():
                    try:
                        self.write_snapshot()
                    except (OSError, ValueError, TypeError, OverflowError):
                        pass  # the log is whole without it; the next open reads it all
            finally:
                self._writer.close()
                self._writer = None
        self._hub.close()

    def savepoint(self) -> int | None:
        """Where the file ends now (bytes, once flushed): what :meth:`rollback` cuts back to.
        None without a file."""
        return self._writer.size if self._writer is not None else None

    def rollback(self, savepoint: int) -> None:
        """Cut the file back to ``savepoint`` (from :meth:`savepoint`) and close the log.

        For a command that changed nothing (it failed before any request of its own
        succeeded, or was a dry run): whatever the components wrote meanwhile goes too, so
        the file is byte for byte what it was. Memory is not rolled back, so the log is
        closed (no snapshot of it is written; one written since the savepoint is removed:
        it covers bytes that are gone).

        Raises:
            ValueError: a savepoint outside what this log's writer wrote.
        """
        from . import snapshot as snapshots

        w = self._writer
        if w is None:
            self._hub.close()
            return
        if not w.start <= savepoint <= w.size:
            raise ValueError(f"savepoint {savepoint} is not in this log's writes ({w.start}..{w.size})")
        try:
            if self._covered[1] > savepoint:
                snapshots.snapshot_path(w.path).unlink(missing_ok=True)
            w.truncate(savepoint)
        finally:
            w.close()
            self._writer = None
            self._hub.close()

    def _file(self) -> tuple[Path, int, Any] | None:
        """(path, bytes this log holds of it, ObjectSource) of the file: the writer's, else a
        read-only open's; None without one."""
        w = self._writer
        if w is not None:
            return w.path, w.size, w.source
        return self._read

    def _snapshot_possible(self) -> bool:
        file = self._file()
        if file is None or not self._snapshot_ok:
            return False
        # a temporary file, renamed once written (replay --out, import): no sidecar left
        return not file[0].name.endswith(".tmp")

    def _snapshot_due(self) -> bool:
        if not self._snapshot_possible():
            return False
        rev, size = self._covered
        return (self._revision - rev >= self.snapshot_min_records
                or self._file()[1] - size >= self.snapshot_min_bytes)

    def write_snapshot(self) -> Path | None:
        """Write the snapshot of the whole file now (``<file>.snap``, atomically; see
        :mod:`.snapshot` and ``docs/log-format.md``), from memory: the records'
        metadata and places in the file, which are live, and the marks (no objects:
        an open from it reads each live object from the file when first used).
        Costs about one pass over the records (~1 s a million).

        Returns the snapshot's path, or None when this log cannot have one: no file,
        a file that held lines this log did not read, a compaction kept
        in memory only (``compact(persist=False)``), or a file whose length is not
        what this log appended or read (a read-only log's file grew or has a torn
        last line).

        Raises:
            OSError: the snapshot cannot be written (the log is unaffected).
        """
        import orjson

        from . import snapshot as snapshots

        w = self._writer
        file = self._file()
        if file is None or not self._snapshot_ok:
            return None
        if w is not None:
            w.flush()
        path, size, source = file
        if os.stat(path).st_size != size:
            return None  # (read-only: a writer appended meanwhile, or a torn last line)
        compact = self._compacted
        records = self._records
        if compact:
            extras = [h[0] for h in self._indexes()[0].values() if h and h[0].revision <= compact]
            if extras:
                extras.sort(key=_REVISION)
                records = extras + records
        if records and set(map(attrgetter("_src"), records)) != {source}:
            return None  # a record this log cannot locate in its file
        data = snapshots.SnapshotData(
            size=size, header_len=self._header_len(path), lines=self._lines,
            revision=self._revision, records=records, live=list(self._live.values()),
            marks=orjson.loads(orjson.dumps(self.marks)), mark_revs=self._mark_revs, compact=compact,
        )
        out = snapshots.write(path, data, fsync=w is not None and w.sync == "fsync")
        self._covered = (self._revision, size)
        return out

    @staticmethod
    def _header_len(path: Path) -> int:
        with open(path, "rb") as f:
            return len(f.readline())

    @property
    def path(self) -> Path | None:
        return self._writer.path if self._writer else None

    @property
    def file_path(self) -> Path | None:
        """The file the log was read from (a read-only open) or writes to; None in memory."""
        if self._writer:
            return self._writer.path
        return self._read[0] if self._read else None

    # ------------------------------------------------------------------ state
    @property
    def revision(self) -> int:
        """The store's current revision (0 when empty)."""
        return self._revision

    @property
    def compact_revision(self) -> int:
        """The oldest revision still readable (0 if never compacted)."""
        return self._compacted

    def _check_read_revision(self, revision: int | None) -> int:
        if revision is None or revision == self._revision:
            return self._revision
        if revision < self._compacted:
            raise Compacted(revision, self._compacted)
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        return revision

    def get(self, key: str, revision: int | None = None) -> Record | None:
        """The key's record as of ``revision`` (default: head); None if absent or deleted then.

        Raises:
            Compacted: ``revision`` is older than the compact revision.
            FutureRevision: ``revision`` is newer than the store's.
        """
        rev = self._check_read_revision(revision)
        if rev == self._revision:
            return self._live.get(key)
        hist = self._indexes()[0].get(key)
        if not hist:
            return None
        rec = _version_at(hist, rev)
        return None if rec is None or rec.type == DELETED else rec

    def range(
        self,
        prefix: str,
        revision: int | None = None,
        *,
        start_after: str | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Live records whose key starts with ``prefix``, in key order, as of ``revision``.

        ``start_after`` (exclusive) and ``limit`` page through a large range.
        """
        rev = self._check_read_revision(revision)
        lo = prefix if start_after is None else start_after
        inclusive = (start_after is None, True)
        out: list[Record] = []
        if rev == self._revision:
            for k in self._live.irange(lo, _prefix_end(prefix), inclusive=inclusive):
                out.append(self._live[k])
                if limit is not None and len(out) >= limit:
                    break
            return out
        history = self._indexes()[0]
        for k in history.irange(lo, _prefix_end(prefix), inclusive=inclusive):
            hist = history[k]
            # (_version_at inlined: one call less per key of a LIST at an old revision)
            i = bisect_right(hist, rev, key=_REVISION)
            if i:
                rec = hist[i - 1]
                if rec.type != DELETED:
                    out.append(rec)
                    if limit is not None and len(out) >= limit:
                        break
        return out

    def live_keys(self, resource: str, field: str, value: str) -> list[str]:
        """The live keys of ``resource`` whose ``field`` (a watch index, see
        :meth:`add_watch_index`) is ``value``, in key order: the LIST of one node's
        pods without a look at the other nodes' (kube-apiserver's watch cache serves
        ``spec.nodeName`` LISTs from an index too). The index is built on first use.

        Raises:
            KeyError: no such index.
        """
        slot = (resource, field)
        index = self._live_index.get(slot)
        if index is None:
            fn = self._hub.indexer(resource, field)
            index = {}
            prefix = f"/registry/{resource}/"
            for key in self._live.irange(prefix, _prefix_end(prefix)):
                index.setdefault(fn(self._live[key]), set()).add(key)
            self._live_index[slot] = index
        return sorted(index.get(value, ()))

    def last_change(self, resource: str) -> int:
        """The revision of the latest write (create, update or delete) to ``resource``
        (``services``, ``pods``, ``deployments.apps``…), 0 when there was none: a cache
        of something derived from that resource at the head is valid while this is unchanged.
        (A write compacted away counts as 0: no revision that can still be read differs.)"""
        if self._last_change is None:  # after an open: one pass over the records
            self._last_change = {}
            for rec in self._records:
                self._last_change[resource_of(rec.key)] = rec.revision
        return self._last_change.get(resource, 0)

    def count(self, prefix: str) -> int:
        """Number of live keys under ``prefix`` (at the head)."""
        return sum(1 for _ in self._live.irange(prefix, _prefix_end(prefix)))

    def history(self, key: str) -> list[Record]:
        """Every retained record of one key, oldest first (tombstones included)."""
        return list(self._indexes()[0].get(key, ()))

    def records(self, after: int = 0, prefix: str = "/") -> list[Record]:
        """Records with revision > ``after`` under ``prefix``, in revision order.

        Raises:
            Compacted: ``after`` is older than the compact revision.
        """
        if after < self._compacted:
            raise Compacted(after, self._compacted)
        src = self._source(prefix)
        i = bisect_right(src, after, key=_REVISION)
        if prefix in ("", "/", "/registry/"):
            return src[i:]
        return [r for r in src[i:] if r.key.startswith(prefix)]

    def record(self, revision: int) -> Record:
        """The record written at ``revision`` (any key).

        Raises:
            Compacted: ``revision`` is at or before the compact revision.
            FutureRevision: ``revision`` is newer than the store's (or < 1).
        """
        if revision > self._revision or revision < 1:
            raise FutureRevision(revision, self._revision)
        if not self._records or revision < self._records[0].revision:
            raise Compacted(revision, self._compacted)
        return self._records[revision - self._records[0].revision]

    def _source(self, prefix: str) -> list[Record]:
        """The smallest record list that holds every record under ``prefix``."""
        parts = prefix.split("/", 3)
        if len(parts) >= 4 or (len(parts) == 3 and prefix.endswith("/")):
            # "/registry/<resource>/..." : one resource
            if len(parts) >= 3 and parts[2]:
                return self._indexes()[1].get(parts[2], [])
        return self._records

    # ------------------------------------------------------------------ writes
    def create(self, key: str, obj: dict[str, Any], actor: str) -> Record:
        """Create ``key`` if absent (etcd txn: create_revision == 0).

        ``obj`` gets ``metadata.resourceVersion`` set to the new revision.

        Raises:
            KeyExists: the key is live.
        """
        if key in self._live:
            raise KeyExists(key)
        return self._append(ADDED, key, obj, actor)

    def update(
        self, key: str, obj: dict[str, Any], actor: str, expect_revision: int | None = None
    ) -> Record:
        """Replace ``key``'s object; with ``expect_revision``, only if its mod_revision matches.

        Raises:
            KeyNotFound: the key is not live.
            RevisionMismatch: ``expect_revision`` is stale.
        """
        self._check_cas(key, expect_revision)
        return self._append(MODIFIED, key, obj, actor)

    def delete(
        self,
        key: str,
        actor: str,
        expect_revision: int | None = None,
        obj: dict[str, Any] | None = None,
    ) -> Record:
        """Delete ``key``; the record carries its last state (``obj`` if given, else the live one).

        Raises:
            KeyNotFound: the key is not live.
            RevisionMismatch: ``expect_revision`` is stale.
        """
        cur = self._check_cas(key, expect_revision)
        return self._append(DELETED, key, obj if obj is not None else cur.object, actor)

    def _check_cas(self, key: str, expect_revision: int | None) -> Record:
        cur = self._live.get(key)
        if cur is None:
            raise KeyNotFound(key)
        if expect_revision is not None and cur.revision != expect_revision:
            raise RevisionMismatch(key, expect_revision, cur)
        return cur

    def _append(self, type_: str, key: str, obj: dict[str, Any], actor: str) -> Record:
        rev = self._revision + 1
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            obj = {**obj, "metadata": {**meta, "resourceVersion": str(rev)}}
        rec = Record(rev, self.clock(), type_, key, actor, 0, 0, obj, None)
        if self._writer is not None:
            self._writer.append(rec)  # durable before anyone can observe it
            self._lines += 1
            rec.drop_bytes()  # the file has them
        self._apply(rec)
        if rev >= self._next_snapshot_check and self._writer is not None:
            self._snapshot_while_writing()
        return rec

    def _snapshot_while_writing(self) -> None:
        """Write a snapshot mid-run when :attr:`snapshot_every_records` records (or a quarter
        of the log) are not covered; a failed write is skipped, as at :meth:`close`."""
        def interval() -> int:
            return max(self.snapshot_every_records, self._covered[0] // 4, 1)

        if self._revision - self._covered[0] >= interval() and self._snapshot_possible():
            try:
                self.write_snapshot()
            except (OSError, ValueError, TypeError, OverflowError):
                pass  # only a cache: the next open reads what it does not cover
        self._next_snapshot_check = self._revision + interval()

    def _apply(self, rec: Record) -> None:
        """Fold one record just written into the in-memory state."""
        key = rec.key
        prev = self._live.get(key)
        prev_values = self._hub.index_values(prev)  # before prev's object is released
        if rec.type == ADDED:
            if prev is not None:
                raise ValueError(f"revision {rec.revision}: ADDED {key}, which exists")
            rec.create_revision, rec.version = rec.revision, 1
            self._live[key] = rec
        else:
            if prev is None:
                raise ValueError(f"revision {rec.revision}: {rec.type} {key}, which does not exist")
            rec.create_revision, rec.version = prev.create_revision, prev.version + 1
            # superseded, but watches under a selector read it right away (to tell ADDED,
            # MODIFIED and DELETED apart): kept among the recently decoded ones, else each
            # update of a pod cost its node's kubelet a read and decode of the old version
            prev.retire()
            if rec.type == DELETED:
                del self._live[key]
                rec.retire()
            else:
                self._live[key] = rec
        self._revision = rec.revision
        self._records.append(rec)
        res = resource_of(key)
        if self._last_change is not None:
            self._last_change[res] = rec.revision
        if self._history is not None and self._by_resource is not None:  # else built lazily from _records
            hist = self._history.get(key)
            if hist is None:
                self._history[key] = [rec]
            else:
                hist.append(rec)
            lst = self._by_resource.get(res)
            if lst is None:
                self._by_resource[res] = [rec]
            else:
                lst.append(rec)
        values = self._hub.index_values(rec)
        if self._live_index and values is not None:
            self._index_live(rec, prev_values, values)
        for fn in self._listeners:
            fn(rec)
        self._hub.push(rec, prev_values, values)
        self._hub.notify(rec.key)
        if rec.key.startswith(_COLD_PREFIXES):
            rec.retire()  # in the file only (see COLD_RESOURCES), but read back at once by its writer

    def _index_live(self, rec: Record, prev_values: dict[str, str] | None, values: dict[str, str]) -> None:
        resource = resource_of(rec.key)
        for (res, field), index in self._live_index.items():
            if res != resource:
                continue
            if prev_values is not None:
                keys = index.get(prev_values[field])
                if keys is not None:
                    keys.discard(rec.key)
            if rec.type != DELETED:
                index.setdefault(values[field], set()).add(rec.key)

    # ------------------------------------------------------------------ compaction
    def compact(self, revision: int, *, persist: bool = True) -> None:
        """Drop history older than ``revision``; the state at ``revision`` stays readable.

        With ``persist`` (the default) a ``COMPACT`` line goes to the file, so a
        later :meth:`open` drops the same history. ``persist=False`` frees only
        this process's memory (a long-running ``serve``, as kube-apiserver's
        periodic etcd compaction): reads and watches here before ``revision``
        get :class:`Compacted`, and the file keeps the whole history for time
        travel once reopened.

        Raises:
            Compacted: ``revision`` is older than the current compact revision.
            FutureRevision: ``revision`` is newer than the store's.
        """
        if revision < self._compacted:
            raise Compacted(revision, self._compacted)
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        self._compact_memory(revision)
        if persist and self._writer is not None:
            self._writer.append_line({"type": "COMPACT", "rev": revision})
            self._mark_revs.append(self._revision)
            self._lines += 1
        elif not persist:
            self._snapshot_ok = False  # memory no longer is what opening the file gives

    def _compact_memory(self, revision: int) -> None:
        self._indexes()  # built from the full records before they are cut
        self._compacted = revision
        i = bisect_right(self._records, revision, key=_REVISION)
        del self._records[:i]
        for lst in self._by_resource.values():
            del lst[: bisect_right(lst, revision, key=_REVISION)]
        dead = []
        for key, hist in self._history.items():
            j = bisect_right(hist, revision, key=_REVISION)
            if j == 0:
                continue
            # keep the version visible at `revision` unless it is a tombstone
            keep_from = j - 1 if hist[j - 1].type != DELETED else j
            if keep_from:
                del hist[:keep_from]
            if not hist:
                dead.append(key)
        for key in dead:
            del self._history[key]

    def mark(self, entry: dict[str, Any]) -> None:
        """Append a non-record line (a ``{"type":"SESSION",…}`` session mark) after the
        current revision; kept in :attr:`marks` and, with a file, written to it.
        ``entry`` must carry ``"type": "SESSION"`` and an integer ``"rev"``."""
        if entry.get("type") != "SESSION" or not isinstance(entry.get("rev"), int):
            raise ValueError(f"not a session mark: {entry!r}")
        self.marks.append(entry)
        if self._writer is not None:
            self._writer.append_line(entry)
            self._mark_revs.append(self._revision)
            self._lines += 1

    # ------------------------------------------------------------------ watch
    def watch(self, prefix: str, after: int | None = None, *, bookmarks: bool = False,
              index: tuple[str, str] | None = None):
        """Watch writes under ``prefix`` with revision > ``after`` (default: the head).

        Returns a :class:`k8semu.store.watch.Watch`, an async iterator of records.
        ``index=(field, value)`` on a resource with that watch index (see
        :meth:`add_watch_index`) delivers only the records whose new or
        previous version has ``value`` — a superset of what a selector on the
        field matches, at a cost independent of the other watches.

        Raises:
            Compacted: ``after`` is older than the compact revision.
        """
        return self._hub.watch(prefix, self._revision if after is None else after, bookmarks, index)

    def add_watch_index(self, resource: str, field: str, fn: Callable[[Record], str]) -> None:
        """Index watches on ``resource`` (``"pods"``) by ``field``, whose value ``fn(record)`` gives.

        ``fn`` must be cheap and pure (it runs on every write to the resource,
        and on the replaced version before its object is released).
        """
        self._hub.add_index(resource, field, fn)

    def add_listener(self, fn: Callable[[Record], None]) -> None:
        """Call ``fn(record)`` synchronously after each record is applied."""
        self._listeners.append(fn)

    def remove_listener(self, fn: Callable[[Record], None]) -> None:
        self._listeners.remove(fn)

    # ------------------------------------------------------------------ misc
    def keys(self, prefix: str = "/") -> Iterable[str]:
        """Live keys under ``prefix`` in order."""
        return self._live.irange(prefix, _prefix_end(prefix))

    def __len__(self) -> int:
        return len(self._live)
