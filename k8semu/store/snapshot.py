"""Snapshots of an event log: a sidecar file that opens a long log without reading it.

Opening a log parses every line of it (``EventLog.open``). A snapshot,
``<log>.snap`` beside the log (``cluster.log.snap``), holds what that parse
yields for a prefix of the file — per record its revision, time, type, key,
actor, ``create_revision``, ``version`` and where its object is in the log
(offset and length), which records are live, and the session and compaction
marks — so an open loads it and parses only the lines after the prefix (the
*tail*). It holds no objects: a live object it restores is read from the log
and decoded on first use (:meth:`Record.pending`), so it is what decoding the
log gives by construction. (Decoding or unmarshalling every live object is
what made an open slow: 150,000 live pods took 4-10 s to materialize from
marshal, pickle or JSON alike.) See ``docs/log-format.md`` ("Snapshots").

The log stays the source of truth: a snapshot is used only when it was
written by this snapshot version on a machine of the same byte order and
its fingerprint of the covered prefix (its length, the header line, and
sampled blocks of the prefix including its end: all of it for a prefix up
to 8 MiB) matches the file; otherwise, or when anything in it does not check out (a section's
CRC-32, its framing), it is ignored and the open reads the whole log, as
without one. It is written atomically (a temporary file, then a rename) and
never touches the log.

File layout: :data:`MAGIC`, then sections, each ``<u64 length><u32 crc32>``
(little-endian) and a payload of that length:

0. meta, JSON: ``{"format": "k8semu-snapshot", "version": 2, "byteorder":
   "little", "itemsizes": {…}, "log_format": 1, "size": <bytes covered>,
   "header_len": …, "fingerprint": <40 hex digits>, "lines": <lines
   covered>, "revision": <last revision covered>, "records": <entries in the
   record table>}``;
1. tables, JSON: ``[keys, actors, marks, mark_revs, compact]``;
2. to 11. the record table, one section per column, the array's bytes in the
   machine's order: ``revs`` q, ``times`` d, ``types`` B, ``keys`` I,
   ``actors`` I, ``create_revisions`` q, ``versions`` q, ``offsets`` q and
   ``lengths`` I (where the object is in the log), then the live
   records' indexes into it (``live`` I, in key order).

Its bytes are a function of the log alone: no wall clock, nothing of the
process that wrote it.
"""

from __future__ import annotations

import gc
import hashlib
import os
import stat
import struct
import sys
import zlib
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import and_, attrgetter, lshift, or_, rshift
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

import orjson

from .logfile import FORMAT_VERSION, LogReader
from .record import _LEN_BITS, _LEN_MASK, ADDED, DELETED, MODIFIED, Record

__all__ = ["SUFFIX", "MAGIC", "VERSION", "SnapshotData", "SnapshotStart", "snapshot_path", "write", "load"]

SUFFIX = ".snap"
MAGIC = b"k8semu-snapshot\n"
VERSION = 2  # 2: object offsets and lengths in two columns (offset << 32 overflowed beyond 2 GiB)
_SECTION = struct.Struct("<QI")  # payload length, crc32 of the payload
_TYPES = (ADDED, MODIFIED, DELETED)
_TYPE_CODE = {t: i for i, t in enumerate(_TYPES)}
_COLUMNS = (("revs", "q"), ("times", "d"), ("types", "B"), ("keys", "I"), ("actors", "I"),
            ("create_revisions", "q"), ("versions", "q"), ("offsets", "q"), ("lengths", "I"), ("live", "I"))
_ITEMSIZES = {code: array(code).itemsize for _, code in _COLUMNS}
#: a prefix up to this size is fingerprinted whole; a longer one by samples
_FULL_CHECK = 8 << 20
_SAMPLES = 64  # blocks of a longer prefix, evenly spread
_SAMPLE = 64 << 10
_END = 1 << 20  # the end of a longer prefix, fingerprinted whole


def snapshot_path(log_path: str | os.PathLike[str]) -> Path:
    """The snapshot file of a log: ``cluster.log`` -> ``cluster.log.snap``; beside its target
    for a symlink (as its lock file, ``cli.session.lock_path``): one cache per log file, whatever
    name it is opened by, which ``cluster delete`` of the file removes with it."""
    real = Path(os.path.realpath(log_path))
    return real.with_name(real.name + SUFFIX)


def _spans(size: int, header_len: int) -> list[tuple[int, int]]:
    """The byte ranges ``[start, end)`` of a ``size``-byte prefix that its fingerprint covers."""
    if size <= _FULL_CHECK:
        return [(0, size)]
    spans = [(0, header_len)]
    step = size // _SAMPLES
    spans += [(i * step, min(i * step + _SAMPLE, size)) for i in range(_SAMPLES)]
    spans.append((size - _END, size))
    return spans


def fingerprint(fd: int, size: int, header_len: int) -> bytes | None:
    """A 20-byte BLAKE2b digest of the first ``size`` bytes of the file open as ``fd`` (the
    ranges :func:`_spans` names, with ``size`` and ``header_len``); None if the file is shorter
    or the prefix does not end a line. Reads at most ~6 MiB whatever ``size``."""
    h = hashlib.blake2b(digest_size=20)
    h.update(struct.pack("<QQ", size, header_len))
    for start, end in _spans(size, header_len):
        data = os.pread(fd, end - start, start)
        if len(data) != end - start:
            return None
        h.update(data)
    if size and os.pread(fd, 1, size - 1) != b"\n":
        return None
    return h.digest()


def _meta(size: int, header_len: int, digest: bytes, lines: int, revision: int, records: int) -> dict[str, Any]:
    return {
        "format": "k8semu-snapshot",
        "version": VERSION,
        "byteorder": sys.byteorder,
        "itemsizes": _ITEMSIZES,
        "log_format": FORMAT_VERSION,
        "size": size,
        "header_len": header_len,
        "fingerprint": digest.hex(),
        "lines": lines,
        "revision": revision,
        "records": records,
    }


@dataclass
class SnapshotData:
    """What a snapshot holds, as :func:`write` takes it.

    Attributes:
        size: bytes of the log covered (from its start; ends a line).
        header_len: bytes of the log's header line.
        lines: lines covered (header included).
        revision: revision of the last record covered (0: none).
        records: the records a full open keeps (``revision`` order): those after the compact
            revision, preceded by each key's version visible at it (if not a tombstone).
        live: the live records (key order).
        marks: the session marks (JSON-shaped dicts) in file order.
        mark_revs: for each non-record line (COMPACT or SESSION), the revision before it.
        compact: the highest COMPACT revision covered (0: none).
    """

    size: int
    header_len: int
    lines: int
    revision: int
    records: list[Record]
    live: list[Record]
    marks: list[dict[str, Any]]
    mark_revs: list[int]
    compact: int


@dataclass
class SnapshotStart:
    """A snapshot, loaded: the state a full open has after the covered prefix.

    Attributes:
        size, lines, revision, marks, mark_revs, compact: as in :class:`SnapshotData`.
        records: the restored records (located in the log, objects not loaded).
        live: key -> live record (its object pending: read from the log when first used).
        actors: the actor strings (one object per actor).
    """

    size: int
    lines: int
    revision: int
    records: list[Record]
    live: dict[str, Record]
    actors: list[str]
    marks: list[dict[str, Any]]
    mark_revs: list[int]
    compact: int


def _section(f: BinaryIO, payload: bytes) -> None:
    f.write(_SECTION.pack(len(payload), _crc(payload)))
    f.write(payload)


def _crc(data: bytes) -> int:
    return zlib.crc32(data)


def write(log_path: str | os.PathLike[str], data: SnapshotData, *, fsync: bool = False) -> Path:
    """Write the snapshot of ``log_path`` (``<log>.snap``) atomically: to a temporary file
    beside it, renamed over the old one. The log's first ``data.size`` bytes must be what
    ``data`` describes (they are fingerprinted from the file here). ``fsync`` forces the
    snapshot to disk before the rename. Returns the snapshot's path.

    Raises:
        OSError: the file cannot be written (nothing is left behind).
        ValueError: the log is shorter than ``data.size`` (nothing is left behind).
        TypeError: ``data.marks`` hold what JSON cannot carry.
    """
    path = snapshot_path(log_path)
    fd = os.open(os.fspath(log_path), os.O_RDONLY)
    try:
        digest = fingerprint(fd, data.size, data.header_len)
    finally:
        os.close(fd)
    if digest is None:
        raise ValueError(f"{log_path} is shorter than the {data.size} bytes to snapshot")
    recs = data.records
    key_of, actor_of = attrgetter("key"), attrgetter("actor")
    keys = {k: i for i, k in enumerate(dict.fromkeys(map(key_of, recs)))}
    actors = dict.fromkeys(map(actor_of, recs))
    if all(type(a) is str for a in actors):
        actors = {a: i for i, a in enumerate(actors)}
        actor_ix = array("I", map(actors.__getitem__, map(actor_of, recs)))
    else:  # as the log file has them (a reader takes str() of what it finds)
        actors = {a: i for i, a in enumerate(dict.fromkeys(map(str, actors)))}
        actor_ix = array("I", map(actors.__getitem__, map(str, map(actor_of, recs))))
    revs = array("q", map(attrgetter("revision"), recs))
    columns = {
        "revs": revs,
        "times": array("d", map(attrgetter("time"), recs)),
        "types": array("B", map(_TYPE_CODE.__getitem__, map(attrgetter("type"), recs))),
        "keys": array("I", map(keys.__getitem__, map(key_of, recs))),
        "actors": actor_ix,
        "create_revisions": array("q", map(attrgetter("create_revision"), recs)),
        "versions": array("q", map(attrgetter("version"), recs)),
        **dict(zip(("offsets", "lengths"), location_columns(map(attrgetter("location"), recs)))),
        "live": array("I", _positions(revs, data.live)),
    }
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            _section(f, orjson.dumps(_meta(data.size, data.header_len, digest, data.lines, data.revision,
                                           len(recs))))
            _section(f, orjson.dumps([list(keys), list(actors), data.marks, list(data.mark_revs), data.compact]))
            for name, _ in _COLUMNS:
                _section(f, columns[name].tobytes())
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _remove_dead_temporaries(path)
    return path


def _remove_dead_temporaries(path: Path) -> None:
    """Remove the temporary snapshots (``<snap>.tmp<pid>``) that a writer killed outright left
    beside ``path`` (its process is gone): each is a whole snapshot's size of junk."""
    prefix = f"{path.name}.tmp"
    try:
        names = [n for n in os.listdir(path.parent) if n.startswith(prefix) and n[len(prefix):].isdigit()]
    except OSError:
        return
    for name in names:
        pid = int(name[len(prefix):])
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # alive (or not ours to signal): maybe writing it now
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        try:
            os.unlink(path.parent / name)
        except OSError:
            pass


def location_columns(locs: Iterable[int]) -> tuple[array, array]:
    """Records' locations (``offset << 32 | length``, :attr:`Record.location`) as the
    ``offsets`` (i64) and ``lengths`` (u32) columns: one column of locations overflows a
    64-bit integer for objects past 2 GiB of the log (a 150,000-pod log is 3.7 GB)."""
    locs = list(locs)
    return (array("q", map(rshift, locs, repeat(_LEN_BITS))),
            array("I", map(and_, locs, repeat(_LEN_MASK))))


def locations(offsets: Iterable[int], lengths: Iterable[int]) -> Iterator[int]:
    """The inverse of :func:`location_columns`: the records' locations, lazily."""
    return map(or_, map(lshift, offsets, repeat(_LEN_BITS)), lengths)


def _positions(revs: array, recs: list[Record]) -> list[int]:
    """The index in ``revs`` (increasing) of each record's revision.

    Raises:
        ValueError: a revision that is not in ``revs``."""
    from bisect import bisect_left

    if revs and revs[-1] - revs[0] == len(revs) - 1:  # consecutive: no bisect needed
        first = revs[0]
        out = [r - first for r in map(attrgetter("revision"), recs)]
        if out and (min(out) < 0 or max(out) >= len(revs)):
            raise ValueError("a live revision is not among the records")
        return out
    out = []
    for rec in recs:
        i = bisect_left(revs, rec.revision)
        if i == len(revs) or revs[i] != rec.revision:
            raise ValueError(f"live revision {rec.revision} is not among the records")
        out.append(i)
    return out


@contextmanager
def _collector_paused():
    """Pause the cyclic collector while millions of long-lived objects are made, and move them
    out of its sight after (``gc.freeze``, as :meth:`EventLog._replay` does): else the first
    collection once it is back walks all of them (0.7 s for a million records)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


class _Bad(Exception):
    """The snapshot does not check out (it is ignored)."""


def _read_section(f: BinaryIO) -> bytes:
    head = f.read(_SECTION.size)
    if len(head) != _SECTION.size:
        raise _Bad("truncated")
    length, crc = _SECTION.unpack(head)
    payload = f.read(length)
    if len(payload) != length or _crc(payload) != crc:
        raise _Bad("damaged section")
    return payload


def load(reader: LogReader, cold_prefixes: tuple[str, ...] = ()) -> SnapshotStart | None:
    """The snapshot of ``reader``'s log, if there is one that matches the file as the reader
    sees it (``reader.size`` bytes): then ``reader`` is set to read on after it
    (:meth:`LogReader.resume`). Live records whose key starts with one of ``cold_prefixes``
    keep their JSON bytes once read, the others their decoded object (:meth:`Record.pending`).
    None otherwise — no snapshot, another version, damaged, or not a prefix of this file —
    and ``reader`` is left as it was. Never raises for what is in the snapshot file; writes
    nothing.
    """
    path = snapshot_path(reader.path)
    try:
        # not blocking: a FIFO (or a device) in its place must not hang the open; only a
        # regular file can be a snapshot
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        f = open(fd, "rb")
    except OSError:
        os.close(fd)
        return None
    try:
        with f, _collector_paused():
            if f.read(len(MAGIC)) != MAGIC:
                return None
            meta = orjson.loads(_read_section(f))
            size = meta["size"]
            digest = bytes.fromhex(meta["fingerprint"])
            if meta != _meta(size, reader.header_len, digest, meta["lines"], meta["revision"], meta["records"]):
                return None  # another version, Python, platform or header length
            if not reader.header_len <= size <= reader.size:
                return None
            fd = os.open(reader.path, os.O_RDONLY)
            try:
                if fingerprint(fd, size, reader.header_len) != digest:
                    return None
                if reader.source._fd is None:  # the live objects are read from this very file later
                    reader.source._fd, fd = fd, None
            finally:
                if fd is not None:
                    os.close(fd)
            keys, actors, marks, mark_revs, compact = orjson.loads(_read_section(f))
            columns: dict[str, array] = {}
            for name, code in _COLUMNS:
                col = columns[name] = array(code)
                col.frombytes(_read_section(f))
            n = meta["records"]
            if any(len(columns[name]) != n for name, _ in _COLUMNS[:-1]):
                return None
            revs = columns["revs"]
            if (n and revs[-1] > meta["revision"]) or meta["lines"] < 1 + len(mark_revs):
                return None
            records = list(map(
                Record, revs, columns["times"], map(_TYPES.__getitem__, columns["types"]),
                map(keys.__getitem__, columns["keys"]), map(actors.__getitem__, columns["actors"]),
                columns["create_revisions"], columns["versions"], repeat(None), repeat(None),
                repeat(reader.source),
                locations(columns["offsets"], columns["lengths"]),
            ))
            live: dict[str, Record] = {}
            for i in columns["live"]:
                rec = records[i]
                if not rec.key.startswith(cold_prefixes):  # a cold one is read from the file each time
                    rec.pending()
                live[rec.key] = rec
            if len(live) != len(columns["live"]) or f.read(1):
                return None
    except (_Bad, OSError, ValueError, TypeError, KeyError, IndexError, OverflowError):
        return None
    reader.resume(size, meta["lines"], meta["revision"], mark_revs)
    return SnapshotStart(size, meta["lines"], meta["revision"], records, live, actors, marks, mark_revs, compact)
