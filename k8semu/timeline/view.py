"""Reading the past: a read-only event log, points in it, and the cluster as it was then.

A *point* is a revision (``"1234"``) or a virtual time since the cluster
started (``"2m30s"``, ``"90s"``, ``"1.5h"``): :func:`resolve_point` turns either
into the revision that was current then (for a time: the last record written
at or before it). It is the one rule of every command's points (``--at``,
``--from``/``--to`` of diff, history and bisect, trace's ``--at``): an empty
point is an error, and so is one after the end of the log — a revision
(``revision 900 is outside the log (1..812)``) or, for the CLI (``strict``), a
time (``--to 1h: the log ends at revision 812 (virtual time 3m20s)``).

:class:`LogView` is an :class:`~k8semu.store.EventLog` seen at one revision:
its head *is* that revision, so an :class:`~k8semu.api.apiserver.APIServer`
built over it (:func:`state_at`) answers every read exactly as the real one
did then. Nothing is copied or scanned: a read at revision R is a ``bisect``
in each key's history (the store's per-key index), so building a view is
O(1) and a read costs what an MVCC read of the store costs. Writes raise.

:func:`open_cluster_at` is what the read commands' ``--at`` uses: the cluster
file opened read-only, and, with ``--at``, a :class:`PastCluster` (the same
attributes the commands read: ``api``, ``log``, ``time``, ``seed``) in
place of the live one.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from ..api.meta import DEFAULT_EPOCH
from ..store import EventLog, FutureRevision, Record
from ..store.record import DELETED

__all__ = ["open_log", "resolve_point", "check_point_text", "revision_at_time", "time_of", "LogView",
           "state_at", "PastCluster", "open_cluster_at", "add_at_argument", "PointError"]


class PointError(ValueError):
    """A revision or time outside the log, or text that is neither (one line, for the CLI)."""


def open_log(path: str | Path, *, verify: bool = False) -> EventLog:
    """Open a log file read-only (nothing is ever written to it).

    Raises:
        FileNotFoundError: no such file.
        LogFormatError: a damaged file (``PATH:LINE: what``), or a newer format version.
    """
    return EventLog.open(path, read_only=True, verify=verify)


def time_of(log: EventLog, revision: int) -> float:
    """Virtual time (seconds) of the record at ``revision`` (0.0 for revision 0)."""
    if revision <= 0:
        return 0.0
    return log.record(revision).time


def revision_at_time(log: EventLog, t: float) -> int:
    """The last revision written at virtual time ≤ ``t`` (0 if none): binary search, O(log n)."""
    lo, hi = max(log.compact_revision, 0), log.revision  # answer in [lo, hi]
    # (the compact revision's own record may be gone: its state is the oldest readable)
    if hi <= lo or log.record(lo + 1).time > t:
        return lo
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if log.record(mid).time <= t:
            lo = mid
        else:
            hi = mid - 1
    return lo


def check_point_text(text: str | int | None, flag: str | None = None) -> None:
    """The checks of a point's text that need no log: it must not be empty (or blank).

    Every command that takes a point runs this before anything else uses it
    (:func:`resolve_point` does; ``--at`` does it while the command line is
    parsed, see :func:`add_at_argument`), so ``--at ''`` is an error everywhere
    instead of meaning "now" in one command and "the start" in another.

    Raises:
        PointError: ``--at is empty: expected a revision or a duration (e.g. 1234 or 2m30s)``.
    """
    if text is None or (isinstance(text, str) and not text.strip()):
        raise PointError(f"{flag or 'the point'} is empty: expected a revision or a duration (e.g. 1234 or 2m30s)")


def resolve_point(log: EventLog, text: str | int, *, strict: bool = False,
                  flag: str | None = None) -> tuple[int, float]:
    """``"1234"`` (a revision) or ``"2m30s"`` (virtual time) -> ``(revision, time)``.

    For a revision, ``time`` is its record's time; for a time, the revision is
    the last one written at or before it and ``time`` is the time asked for.
    ``"head"`` / ``"now"`` is the last revision.

    The one rule every command's points follow (the CLI passes ``strict=True``
    and the flag's name, ``flag="--to"``, for the messages):

    - an empty (or blank) text is an error (:func:`check_point_text`), never
      "now" nor "the start";
    - a revision after the head (or before the compact revision) is an error:
      ``revision 9 is outside the log (1..8)``;
    - with ``strict``, a time after the log's last record is an error naming
      the end: ``--to 1h: the log ends at revision 8 (virtual time 4m12s)``
      (etcd refuses a read at a future revision alike). Without it, such a
      time answers the head (what a Python caller asking "as of 1h" wants);
    - a negative time, or text that is neither, is an error.

    Raises:
        PointError: as above (one line, for the CLI).
    """
    from ..cli.durations import go_duration, parse_duration

    check_point_text(text, flag)
    head = log.revision
    if isinstance(text, int) or (isinstance(text, str) and text.strip().isdigit()):
        rev = int(text)
        if rev > head or rev < max(log.compact_revision, 1 if head else 0):
            raise PointError(f"revision {rev} is outside the log ({max(log.compact_revision, 1)}..{head})")
        return rev, time_of(log, rev)
    s = str(text).strip()
    if s in ("head", "now"):
        return head, time_of(log, head)
    try:
        t = parse_duration(s)
    except ValueError:
        raise PointError(f'"{text}" is neither a revision nor a duration (e.g. 1234 or 2m30s)') from None
    if t < 0:
        raise PointError(f'"{text}": time must not be negative')
    if strict:
        end = time_of(log, head)
        if t > end + 1e-9:
            raise PointError(f"{flag + ' ' if flag else ''}{s}: the log ends at revision {head} "
                             f"(virtual time {go_duration(end)})")
    return revision_at_time(log, t), t


class LogView:
    """An :class:`EventLog` frozen at ``revision``: reads see exactly the writes up to it.

    Provides the read side of the store's interface (``get``, ``range``,
    ``history``, ``records``, ``record``, ``count``, ``keys``, ``last_change``, ``revision``,
    ``compact_revision``, ``header``, ``clock``); ``add_listener`` and
    ``add_watch_index`` are no-ops
    (nothing is ever written) and the write methods raise ``PermissionError``.
    """

    def __init__(self, log: EventLog, revision: int, time: float | None = None) -> None:
        if revision > log.revision or revision < log.compact_revision:
            raise PointError(f"revision {revision} is outside the log ({max(log.compact_revision, 1)}..{log.revision})")
        self.base = log
        self._rev = revision
        self.time = time_of(log, revision) if time is None else time
        self.header = log.header
        self.marks = [m for m in getattr(log, "marks", []) if m.get("rev", 0) <= revision]
        self.torn_line = None
        self.path = None
        self.clock: Callable[[], float] = lambda: self.time

    @property
    def revision(self) -> int:
        return self._rev

    @property
    def compact_revision(self) -> int:
        return self.base.compact_revision

    def _rev_of(self, revision: int | None) -> int:
        if revision is None:
            return self._rev
        if revision > self._rev:
            raise FutureRevision(revision, self._rev)
        return revision

    def get(self, key: str, revision: int | None = None) -> Record | None:
        return self.base.get(key, self._rev_of(revision))

    def range(self, prefix: str, revision: int | None = None, *, start_after: str | None = None,
              limit: int | None = None) -> list[Record]:
        return self.base.range(prefix, self._rev_of(revision), start_after=start_after, limit=limit)

    def count(self, prefix: str) -> int:
        return len(self.range(prefix))

    def last_change(self, resource: str) -> int:
        """``EventLog.last_change`` as of the view: the base's answer when it is not after the
        view's revision, else the view's revision (nothing changes in a view, so that bound is
        as good a cache stamp)."""
        return min(self.base.last_change(resource), self._rev)

    def keys(self, prefix: str = "/") -> Iterable[str]:
        return [r.key for r in self.range(prefix)]

    def history(self, key: str) -> list[Record]:
        return [r for r in self.base.history(key) if r.revision <= self._rev]

    def record(self, revision: int) -> Record:
        return self.base.record(self._rev_of(revision))

    def records(self, after: int = 0, prefix: str = "/") -> list[Record]:
        return [r for r in self.base.records(after, prefix) if r.revision <= self._rev]

    def add_listener(self, fn: Any) -> None:  # nothing is written, so nothing to hear
        pass

    def add_watch_index(self, resource: str, field: str, fn: Any) -> None:  # no watches, no index
        pass

    def remove_listener(self, fn: Any) -> None:
        pass

    def _read_only(self, *_: Any, **__: Any) -> Any:
        raise PermissionError(f"the cluster at revision {self._rev} is read-only (a view of the past)")

    create = update = delete = compact = watch = mark = _read_only

    def close(self) -> None:
        pass

    def __len__(self) -> int:
        return self.count("/")


def _epoch(header: dict[str, Any]) -> datetime:
    text = (header.get("cluster") or {}).get("epoch") or DEFAULT_EPOCH.isoformat()
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _seed(header: dict[str, Any]) -> int:
    seed = header.get("seed", 0)
    return seed if isinstance(seed, int) else 0  # logs written by other tools (benchmarks) may not have one


def state_at(log: EventLog, revision: int, time: float | None = None):
    """A read-only :class:`~k8semu.api.apiserver.APIServer` over the cluster as it was at ``revision``.

    Its ``now`` is the virtual time of that revision (or ``time``); its RNG is
    the one a session opened at that revision would use. Reads mirror the live
    server's (RBAC, selectors, paging); writes raise ``PermissionError``.

    Raises:
        PointError: ``revision`` outside the log.
    """
    from ..api.apiserver import APIServer

    view = LogView(log, revision, time)
    seed = _seed(log.header)
    return APIServer(view, rng=random.Random(f"{seed}:{revision}"), epoch=_epoch(log.header))  # type: ignore[arg-type]


class PastCluster:
    """What a read command needs of a :class:`~k8semu.sim.cluster.Cluster`, at a past revision.

    Attributes: ``log`` (a :class:`LogView`), ``api`` (:func:`state_at`), ``seed``,
    ``config``, ``nodes``, ``time`` (virtual seconds at that point), ``revision``.
    """

    def __init__(self, log: EventLog, revision: int, time: float | None = None) -> None:
        from ..sim.config import ClusterConfig

        self.base = log
        self.api = state_at(log, revision, time)
        self.log = self.api.log
        self.revision = revision
        self.time = self.log.time
        self.seed = _seed(log.header)
        self.config = dict(log.header.get("cluster") or {})
        self.nodes = ClusterConfig.from_header(self.config)

    def close(self) -> None:
        self.base.close()


class _AtAction(argparse.Action):
    """Stores ``--at``'s value, refusing an empty one in one line while the command line is parsed
    (the commands' own "was --at given?" tests would otherwise take ``--at ''`` for "now")."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            check_point_text(values, option_string or "--at")
        except PointError as e:
            parser.exit(1, f"error: {e}\n")
        setattr(namespace, self.dest, values)


def add_at_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--at REVISION|DURATION`` (show the cluster as it was then) to a read command.

    An empty value is refused at once (``error: --at is empty: …``, exit 1);
    the rest of :func:`resolve_point`'s rule applies when the log is read.
    """
    parser.add_argument("--at", metavar="REVISION|DURATION", action=_AtAction,
                        help="show the cluster as it was at this revision or virtual time (e.g. 120, 2m30s)")


def open_cluster_at(args: argparse.Namespace):
    """The cluster file opened read-only; with ``args.at``, a :class:`PastCluster` at that point.

    The point follows :func:`resolve_point`'s rule, strictly (a time after the
    log's end is an error, ``--at ''`` too).

    Raises:
        FileNotFoundError, LogFormatError: as :func:`k8semu.cli.session.open_cluster`.
        PointError (a ValueError): ``--at`` empty, or outside the log.
    """
    from ..cli.session import open_cluster

    cluster = open_cluster(args, read_only=True)
    at = getattr(args, "at", None)
    if at is None:
        return cluster
    try:
        rev, t = resolve_point(cluster.log, at, strict=True, flag="--at")
    except BaseException:
        cluster.close()
        raise
    return PastCluster(cluster.log, rev, t)


def live_key_at(log: EventLog, key: str, revision: int) -> Record | None:
    """The key's record at ``revision`` (None if absent or deleted then)."""
    rec = log.get(key, revision)
    return None if rec is None or rec.type == DELETED else rec
