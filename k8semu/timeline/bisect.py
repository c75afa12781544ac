"""``k8semu bisect``: the first revision at which a condition over the cluster state holds.

The condition language (one object per condition; ``docs/replay.md``)::

    CONDITION := TYPE/NAME PREDICATE
    PREDICATE := available OP (N | spec)     Deployment/ReplicaSet/StatefulSet status.availableReplicas
               | ready OP (N | spec)         status.readyReplicas
               | replicas OP (N | spec)      status.replicas
               | pending OP DURATION         a Pod Pending for longer than DURATION (since creation)
               | notready | ready          a Node's (or Pod's) Ready condition is not True / is True
               | absent | exists           the object does not / does exist
               | phase=PHASE                 status.phase
               | .FIELD.PATH OP VALUE        any field (numbers compare as numbers)
    OP := < | <= | > | >= | = | == | !=

``spec`` stands for the object's own ``spec.replicas``. A missing status
number counts as 0. ``-n NAMESPACE`` chooses the namespace (default
``default``).

Search: like ``git bisect``, between a revision where the condition is
false (``--from``, default the first) and one where it is true (``--to``,
default the head): ``⌈log2(n)⌉`` state reconstructions, each a
:func:`~k8semu.timeline.view.state_at` read of one object (microseconds),
not a replay. If the condition flips more than once in between, the answer
is *a* revision where it turned true, not necessarily the first; ``--linear``
checks every revision that wrote the object instead. When the condition does
not hold at the end (an incident that healed), the object's own writes are
checked in order (a state condition can only flip at one of them; a
time-based one such as ``pending>60s`` is then seen at the object's next
write).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable

from ..api.meta import DEFAULT_EPOCH
from ..store import EventLog
from .history import object_key
from .view import time_of

__all__ = ["Condition", "parse_condition", "bisect_log", "BisectResult", "ConditionError"]


class ConditionError(ValueError):
    """A condition that does not parse (one line, naming what was expected)."""


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt, "=": operator.eq,
}
_OP_RE = r"(<=|>=|==|!=|<|>|=)"
_COUNTERS = {"available": "availableReplicas", "ready": "readyReplicas", "replicas": "replicas",
             "updated": "updatedReplicas"}


@dataclass
class Condition:
    """A parsed condition: ``holds(log, revision) -> bool``; ``text`` is what was written."""

    text: str
    key: str
    test: Callable[[dict[str, Any] | None, float, datetime], bool]

    def holds(self, log: EventLog, revision: int) -> bool:
        rec = log.get(self.key, revision) if revision else None
        obj = None if rec is None else rec.object
        epoch = _epoch(log)
        return self.test(obj, time_of(log, revision), epoch)


def _epoch(log: EventLog) -> datetime:
    text = (log.header.get("cluster") or {}).get("epoch") or DEFAULT_EPOCH.isoformat()
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _num(v: Any) -> Any:
    if isinstance(v, (int, float)) or v is None:
        return v or 0
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def _path(obj: dict[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _ready(obj: dict[str, Any]) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def parse_condition(text: str, namespace: str = "default") -> Condition:
    """Parse ``TYPE/NAME PREDICATE`` (see the module docstring).

    Raises:
        ConditionError: with what was expected.
    """
    from ..cli.durations import parse_duration

    parts = text.strip().split(None, 1)
    if len(parts) != 2:
        raise ConditionError(f'condition "{text}": expected TYPE/NAME PREDICATE, e.g. "deployment/web available<2"')
    try:
        _, key = object_key(parts[0], namespace)
    except ValueError as e:
        raise ConditionError(f'condition "{text}": {e}') from None
    pred = parts[1].replace(" ", "")
    low = pred.lower()
    if low in ("absent", "exists"):
        want = low == "exists"
        return Condition(text, key, lambda o, t, e: (o is not None) == want)
    if low in ("notready", "ready"):
        want = low == "ready"
        return Condition(text, key, lambda o, t, e: o is not None and _ready(o) == want)
    m = re.fullmatch(r"pending" + _OP_RE + r"(.+)", low)
    if m:
        op, limit = _OPS[m.group(1)], parse_duration(m.group(2))

        def pending(o: dict[str, Any] | None, t: float, epoch: datetime) -> bool:
            if o is None or (o.get("status") or {}).get("phase", "Pending") != "Pending":
                return False
            created = datetime.fromisoformat(o["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
            return op((epoch + timedelta(seconds=t) - created).total_seconds(), limit)

        return Condition(text, key, pending)
    m = re.fullmatch(r"(available|ready|replicas|updated)" + _OP_RE + r"(spec|-?\d+)", low)
    if m:
        field, op, rhs = _COUNTERS[m.group(1)], _OPS[m.group(2)], m.group(3)

        def counter(o: dict[str, Any] | None, t: float, e: datetime) -> bool:
            if o is None:
                return False
            want = (o.get("spec") or {}).get("replicas", 1) if rhs == "spec" else int(rhs)
            return op(_num((o.get("status") or {}).get(field)), want)

        return Condition(text, key, counter)
    m = re.fullmatch(r"phase" + _OP_RE + r"(\w+)", pred, flags=re.IGNORECASE)
    if m:
        op, phase = _OPS[m.group(1)], m.group(2)
        return Condition(text, key, lambda o, t, e: o is not None and op(
            (o.get("status") or {}).get("phase"), phase))
    m = re.fullmatch(r"(\.[\w.\-/]+)" + _OP_RE + r"(.*)", pred)
    if m:
        path, op, rhs = m.group(1), _OPS[m.group(2)], m.group(3)
        rv = _num(rhs) if m.group(2) in ("<", "<=", ">", ">=") or re.fullmatch(r"-?\d+(\.\d+)?", rhs) else rhs

        def field_test(o: dict[str, Any] | None, t: float, e: datetime) -> bool:
            if o is None:
                return False
            v = _path(o, path)
            v = _num(v) if isinstance(rv, (int, float)) else ("" if v is None else str(v))
            try:
                return bool(op(v, rv))
            except TypeError:
                return False

        return Condition(text, key, field_test)
    raise ConditionError(
        f'condition "{text}": unknown predicate "{parts[1]}" (expected available<N, ready<spec, pending>60s, '
        f"notready, absent, phase=Running or .field.path OP value)")


@dataclass
class BisectResult:
    """``revision``: the first revision where the condition holds (None: it never does);
    ``checks``: state reconstructions made; ``steps``: ``[(revision, holds)]`` in order."""

    revision: int | None
    checks: int
    steps: list[tuple[int, bool]]


def bisect_log(log: EventLog, cond: Condition, lo: int | None = None, hi: int | None = None,
               *, linear: bool = False) -> BisectResult:
    """Find the first revision in ``(lo, hi]`` at which ``cond`` holds (see the module docstring).

    ``lo`` defaults to the compact revision (0), ``hi`` to the head. If the
    condition already holds at ``lo``, ``lo`` is the answer.
    """
    lo = log.compact_revision if lo is None else lo
    hi = log.revision if hi is None else hi
    steps: list[tuple[int, bool]] = []

    def check(r: int) -> bool:
        h = cond.holds(log, r)
        steps.append((r, h))
        return h

    if linear:
        revs = [r.revision for r in log.history(cond.key) if lo <= r.revision <= hi]
        for r in revs:
            if check(r):
                return BisectResult(r, len(steps), steps)
        return BisectResult(None, len(steps), steps)
    if lo and check(lo):
        return BisectResult(lo, len(steps), steps)
    if not check(hi):
        # false at the end: it may still have held for a while (an incident that healed);
        # the object's own writes are the only points where a state condition can flip
        for r in (x.revision for x in log.history(cond.key) if lo < x.revision < hi):
            if check(r):
                return BisectResult(r, len(steps), steps)
        return BisectResult(None, len(steps), steps)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(mid):
            hi = mid
        else:
            lo = mid
    return BisectResult(hi, len(steps), steps)
