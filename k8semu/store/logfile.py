"""The event log's file format (version 1), and reading it back.

A log file is UTF-8 text, one JSON object per line (see ``docs/log-format.md``)::

    {"format":"k8semu-log","version":1,"seed":7,"cluster":{...}}
    {"rev":1,"t":0.0,"type":"ADDED","key":"/registry/namespaces/default","actor":"kube-apiserver","obj":{...}}
    {"rev":2,"t":0.0,"type":"MODIFIED","key":"...","actor":"...","obj":{...}}
    {"type":"COMPACT","rev":1200}
    {"type":"SESSION","event":"start","rev":1200,"t":12.5,"argv":["apply","-f","web.yaml"],...}

Records carry ``obj`` last, so the object's bytes can be kept without
re-encoding. Every append is written before the write is acknowledged;
``sync`` chooses how hard: ``"none"`` (buffered, flushed on close),
``"flush"`` (to the OS on every append: survives a crash of the process) or
``"fsync"`` (to the disk on every append: survives a power cut).

Reading checks every line. A last line without its newline or that does not
parse is a torn append (the process died mid-write): it is reported in
:attr:`LogReader.torn` and cut off when the file is opened for appending.
Any other damage raises :class:`LogFormatError` naming the line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import orjson

from .record import ADDED, DELETED, MODIFIED, ObjectSource, Record

__all__ = ["FORMAT", "FORMAT_VERSION", "LogFormatError", "LogWriter", "LogReader", "encode_record"]

FORMAT = "k8semu-log"
FORMAT_VERSION = 1
_OBJ_SEP = b',"obj":'
_TYPES = (ADDED, MODIFIED, DELETED)
_BLOCK = 32 << 20  # bytes read at a time


class LogFormatError(Exception):
    """A log file that cannot be read: ``PATH:LINE: what is wrong``."""

    def __init__(self, path: str | os.PathLike[str], line: int, what: str) -> None:
        super().__init__(f"{path}:{line}: {what}")
        self.path = str(path)
        self.line = line
        self.what = what


def _record_head(rec: Record) -> bytes:
    """A record line up to its object: ``{"rev":…,"actor":"…","obj":``."""
    head = orjson.dumps(
        {"rev": rec.revision, "t": rec.time, "type": rec.type, "key": rec.key, "actor": rec.actor}
    )
    return head[:-1] + _OBJ_SEP


def encode_record(rec: Record) -> bytes:
    """One record as its log line (with the trailing newline)."""
    return _record_head(rec) + rec.raw() + b"}\n"


class LogWriter:
    """Appends lines to a log file.

    Args:
        path: the file; created with ``header`` if it does not exist or is empty.
        header: the header dict (``seed``, ``cluster``); ``format``/``version`` are added.
        sync: ``"none"``, ``"flush"`` or ``"fsync"`` (see the module docstring).
        truncate_to: byte offset to cut the file to first (drops a torn last line).
        source: the :class:`~k8semu.store.record.ObjectSource` of this file's records
            (a reader's, when appending to a file just read); a new one by default.

    Each appended record is located in the file (:meth:`Record.locate`), so the
    log can drop its bytes and read them back.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: dict[str, Any] | None = None,
        sync: str = "flush",
        truncate_to: int | None = None,
        source: ObjectSource | None = None,
    ) -> None:
        if sync not in ("none", "flush", "fsync"):
            raise ValueError(f"sync must be none, flush or fsync, not {sync!r}")
        self.path = Path(path)
        self.sync = sync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: BinaryIO = open(self.path, "ab")
        if truncate_to is not None:
            self._f.truncate(truncate_to)
        self._pos = os.fstat(self._f.fileno()).st_size  # where the next line starts (O_APPEND)
        #: where this writer's first line starts (its own header's, when it created the file)
        self.start = self._pos
        #: whether this writer started the file (it was empty): then all of it was written here
        self.created = self._pos == 0
        if self._pos == 0:
            hdr = {"format": FORMAT, "version": FORMAT_VERSION, **(header or {})}
            line = orjson.dumps(hdr) + b"\n"
            self._f.write(line)
            self._pos += len(line)
            self._commit()
        self.source = source if source is not None else ObjectSource(self.path)
        if sync == "none":  # appended bytes may still be in the buffer when a record reads them back
            self.source.before_read = self._f.flush

    def _commit(self) -> None:
        if self.sync == "none":
            return
        self._f.flush()
        if self.sync == "fsync":
            os.fsync(self._f.fileno())

    def append(self, rec: Record) -> None:
        """Write one record and locate it in the file; returns once it is as durable as ``sync`` asks."""
        head, raw = _record_head(rec), rec.raw()
        line = head + raw + b"}\n"
        self._f.write(line)
        self._commit()
        rec.locate(self.source, self._pos + len(head), len(raw))
        self._pos += len(line)

    def append_line(self, entry: dict[str, Any]) -> None:
        """Write a non-record line (e.g. ``{"type":"COMPACT","rev":N}``)."""
        line = orjson.dumps(entry) + b"\n"
        self._f.write(line)
        self._pos += len(line)
        self._commit()

    def flush(self) -> None:
        self._f.flush()

    @property
    def size(self) -> int:
        """The file's length in bytes once everything appended is flushed (where the next line starts)."""
        return self._pos

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (a length it had earlier) and append from there."""
        self._f.flush()
        self._f.truncate(size)
        self._pos = size
        self._commit()

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            if self.sync == "fsync":
                os.fsync(self._f.fileno())
            self._f.close()


def _why(error: Exception) -> str:
    """What is wrong with a line that did not parse, in words (not the JSON parser's internals)."""
    if isinstance(error, orjson.JSONDecodeError):
        if "UTF-8" in error.msg:
            return "not UTF-8 text"
        return f"not JSON ({error.msg.split(':')[0]} at column {error.colno})"
    if isinstance(error, KeyError):
        return f"no {error.args[0]!r} field"
    return str(error)


class LogReader:
    """Reads and checks a log file.

    After construction, :attr:`header` holds the header dict; iterate
    :meth:`entries` for ``("record", Record)``, ``("compact", rev)`` and
    ``("session", mark)`` (a ``{"type":"SESSION",…}`` dict, see ``docs/replay.md``).
    With ``verify=False`` each record's object is checked only for its
    framing (``{…}``) and kept as bytes, to be decoded when read; with
    ``verify=True`` (default) every object is decoded at once.
    :attr:`torn` is ``(line_number, byte_offset)`` of a torn last line, or
    None; :attr:`good_size` is the byte size of the file without it.

    Raises:
        FileNotFoundError: no such file.
        LogFormatError: an empty file, a bad header, a newer format version,
            or a damaged line that is not the last.
    """

    def __init__(self, path: str | os.PathLike[str], *, verify: bool = True) -> None:
        self.path = Path(path)
        self.verify = verify
        with open(self.path, "rb") as f:
            self.size = os.fstat(f.fileno()).st_size  # what is read: appends after this are not
            first = f.readline()
        self.torn: tuple[int, int] | None = None
        self.good_size = self.size
        #: where the records read their objects back from (see :class:`ObjectSource`)
        self.source = ObjectSource(self.path)
        if not first:
            raise LogFormatError(self.path, 1, "empty file: not a k8semu log")
        if not first.endswith(b"\n"):
            raise LogFormatError(self.path, 1, "header line is incomplete")
        try:
            header = orjson.loads(first)
        except orjson.JSONDecodeError as e:
            raise LogFormatError(self.path, 1, f"header is not JSON ({e})") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise LogFormatError(self.path, 1, "not a k8semu log (no \"format\": \"k8semu-log\" header)")
        version = header.get("version")
        if not isinstance(version, int) or version < 1:
            raise LogFormatError(self.path, 1, f"bad format version {version!r}")
        if version > FORMAT_VERSION:
            raise LogFormatError(
                self.path, 1,
                f"log format version {version} is newer than this k8semu reads ({FORMAT_VERSION}); upgrade k8semu",
            )
        self.header: dict[str, Any] = header
        self._body_start = len(first)
        #: the header line's length in bytes (where the first record starts)
        self.header_len = len(first)
        self.line = 1  # the line :meth:`entries` last yielded
        self._start_line = 1  # the line before the first one :meth:`entries` reads
        self._last_rev = 0  # the revision of the last record before it
        self._compact_after: list[int] = []  # last record revision before each COMPACT/SESSION line

    def resume(self, offset: int, line: int, last_rev: int, compact_after: list[int]) -> None:
        """Make :meth:`entries` start at byte ``offset`` (the start of line ``line + 1``), a
        prefix of the file that was read before (a snapshot's, :mod:`.snapshot`): ``last_rev``
        is the revision of its last record (0: none) and ``compact_after`` what
        :meth:`line_of` needs of it (the revision before each of its non-record lines).

        Raises:
            ValueError: ``offset`` is not inside the file as read, past the header.
        """
        if not self.header_len <= offset <= self.size:
            raise ValueError(f"offset {offset} is outside {self.path} ({self.header_len}..{self.size})")
        self._body_start = offset
        self.line = self._start_line = line
        self._last_rev = last_rev
        self._compact_after = list(compact_after)

    def line_of(self, revision: int) -> int:
        """The file line of a record (header = line 1, COMPACT lines counted)."""
        from bisect import bisect_left

        return revision + 1 + bisect_left(self._compact_after, revision)

    def entries(self) -> Iterator[tuple[str, Any]]:
        """Yield ``("record", Record)`` / ``("compact", int)`` / ``("session", dict)`` in file order.

        The file is read in blocks (a long log never sits in memory whole); each
        record is located in the file (:meth:`Record.locate`). ``create_revision``
        and ``version`` of each record are filled in by the caller (they depend on
        the key's history), here they are 0.
        """
        line_no = self._start_line
        last_rev = self._last_rev
        size = self.size
        with open(self.path, "rb") as f:
            f.seek(self._body_start)
            base = self._body_start  # file offset of buf[0]
            buf = b""
            left = size - base
            while left > 0:
                chunk = f.read(min(_BLOCK, left))
                if not chunk:
                    break
                left -= len(chunk)
                buf += chunk
                i = 0
                while True:
                    nl = buf.find(b"\n", i)
                    if nl < 0:
                        break
                    line_no += 1
                    start = base + i
                    line = buf[i:nl]
                    i = nl + 1
                    try:
                        entry = self._parse(line, self.verify, self.source, start)
                    except (ValueError, KeyError, TypeError) as e:
                        # a whole line (its newline, the last byte an append writes, is there)
                        # that does not parse was damaged or edited, wherever it is: only a
                        # last line without its newline is a torn append
                        raise LogFormatError(self.path, line_no, f"damaged line: {_why(e)}") from None
                    kind, value = entry
                    if kind == "record":
                        if value.revision != last_rev + 1 and last_rev != 0:
                            raise LogFormatError(
                                self.path, line_no,
                                f"revision {value.revision} does not follow {last_rev}",
                            )
                        if last_rev == 0 and value.revision < 1:
                            raise LogFormatError(self.path, line_no, f"bad revision {value.revision}")
                        last_rev = value.revision
                    else:
                        self._compact_after.append(last_rev)
                    self.line = line_no
                    yield entry
                buf = buf[i:]
                base += i
            if buf:
                # No newline: the append was cut short.
                self._torn(line_no + 1, base)

    def _torn(self, line_no: int, offset: int) -> None:
        self.torn = (line_no, offset)
        self.good_size = offset

    @staticmethod
    def _parse(line: bytes, verify: bool = True, source: ObjectSource | None = None,
               offset: int = 0) -> tuple[str, Any]:
        if not line:
            raise ValueError("empty line")
        i = line.find(_OBJ_SEP)
        if i < 0:
            entry = orjson.loads(line)
            if not isinstance(entry, dict):
                raise ValueError("not a JSON object")
            if entry.get("type") == "COMPACT":
                return "compact", int(entry["rev"])
            if entry.get("type") == "SESSION":
                if not isinstance(entry.get("rev"), int):
                    raise ValueError("SESSION mark without an integer rev")
                return "session", entry
            raise ValueError(f"unknown line type {entry.get('type')!r}")
        head = orjson.loads(line[:i] + b"}")
        if line[-1:] != b"}":
            raise ValueError("record does not end with '}'")
        raw = line[i + len(_OBJ_SEP):-1]
        if verify:
            obj = orjson.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("obj is not a JSON object")
        else:
            obj = None
            if raw[:1] != b"{" or raw[-1:] != b"}":
                raise ValueError("obj is not a JSON object")
        typ = head["type"]
        if typ not in _TYPES:
            raise ValueError(f"unknown record type {typ!r}")
        rev = head["rev"]
        if not isinstance(rev, int):
            raise ValueError("rev is not an integer")
        key = head["key"]
        if not isinstance(key, str) or not key.startswith("/"):
            raise ValueError(f"bad key {key!r}")
        rec = Record(rev, float(head["t"]), typ, key, str(head["actor"]), 0, 0, obj, raw)
        if source is not None:
            rec.locate(source, offset + i + len(_OBJ_SEP), len(raw))
        return "record", rec
