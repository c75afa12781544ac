"""``k8semu bisect``: the first revision at which a condition over the cluster state holds.

The condition language (one object per condition; ``docs/replay.md``)::

    CONDITION := TYPE/NAME PREDICATE
    PREDICATE := available OP (N | spec)     Deployment/ReplicaSet/StatefulSet status.availableReplicas
               | ready OP (N | spec)         status.readyReplicas
               | replicas OP (N | spec)      status.replicas
               | updated OP (N | spec)       status.updatedReplicas
               | pending OP DURATION         a Pod Pending for longer than DURATION (since creation)
               | notready | ready          a Node's (or Pod's) Ready condition is not True / is True
               | absent | exists           the object does not / does exist
               | phase (= | == | !=) PHASE   status.phase (Pod, Node, Namespace, PV, PVC)
               | .FIELD.PATH OP VALUE        any field (numbers compare as numbers)
    OP := < | <= | > | >= | = | == | !=
    PATH := a field path; list items by index or by name/type/key, as readable diffs spell them:
            .status.conditions[0].status, .status.conditions[Ready].status,
            .spec.template.spec.containers[nginx].image, .metadata.labels['app.kubernetes.io/name']

``spec`` stands for the object's own ``spec.replicas``. A missing status
number counts as 0. ``-n NAMESPACE`` chooses the namespace (default
``default``). ``<``, ``<=``, ``>``, ``>=`` compare numbers; a value in quotes is
a string. A boolean field compares with ``true`` / ``false``.

Bad conditions are one-line :class:`ConditionError`\\ s, found when the
condition is parsed: an unknown type, a malformed predicate, a field path
that the kind's schema does not have (``.spec.replcas``), a path that goes
through a list without an index, a non-number compared with ``<``/``>``, a
number compared with a field that is not a number, a predicate the kind does
not have (``pending`` of a Deployment, ``available`` of a Pod), an unknown
phase. "Never holds" is left for well-formed conditions that really never
hold.

Search: like ``git bisect``, between a revision where the condition is
false (``--from``, default revision 0, the empty cluster before the first
record) and one where it is true (``--to``, default the head):
``⌈log2(n)⌉`` state reconstructions, each a
:func:`~k8semu.timeline.view.state_at` read of one object (microseconds),
not a replay. The start is checked first: a condition that already holds
there (``absent`` of an object created later holds at revision 0) is
answered with the start (:attr:`BisectResult.at_start`). If the condition
flips more than once in between, the binary search's answer is *a* revision
where it turned true, not necessarily the first.

``--linear``, and the search when the condition does not hold at the end
(an incident that healed), check the *candidates* in order: the revisions
where the condition can change. For a state condition those are the
object's own writes; for a time condition (``pending>60s``) also, for each
version of the object, the first revisions written after the moment the
condition's truth changes by the mere passing of time (the pod's creation +
60 s). So both modes answer a time condition with the first revision at
which it holds.
"""

from __future__ import annotations

import difflib
import operator
import re
import typing
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable

from ..api.meta import DEFAULT_EPOCH
from ..api.resources import ResourceInfo
from ..store import EventLog
from ..store.record import DELETED
from .history import format_value, object_key
from .view import revision_at_time, time_of

__all__ = ["Condition", "parse_condition", "bisect_log", "BisectResult", "ConditionError", "candidates"]


class ConditionError(ValueError):
    """A condition that does not parse, or cannot hold as written (one line, naming what was expected)."""


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt, "=": operator.eq,
}
_ORDERING = ("<", "<=", ">", ">=")
_OP_RE = r"(<=|>=|==|!=|<|>|=)"
_COUNTERS = {"available": "availableReplicas", "ready": "readyReplicas", "replicas": "replicas",
             "updated": "updatedReplicas"}
_PHASES = {
    "Pod": ("Pending", "Running", "Succeeded", "Failed", "Unknown"),
    "Node": ("Pending", "Running", "Terminated"),
    "Namespace": ("Active", "Terminating"),
    "PersistentVolume": ("Pending", "Available", "Bound", "Released", "Failed"),
    "PersistentVolumeClaim": ("Pending", "Bound", "Lost"),
}
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")

#: Test of one object version at one time: ``(object or None, virtual time, epoch) -> holds``.
Test = Callable[[dict[str, Any] | None, float, datetime], bool]


@dataclass
class Condition:
    """A parsed condition: ``holds(log, revision) -> bool``; ``text`` is what was written.

    ``flips(obj, epoch)``: for a condition that time alone can change (``pending>60s``),
    the virtual times (seconds since the cluster started) at which its truth
    changes while ``obj`` stays as it is; None for a state condition.
    ``resource``: the object's resource.
    """

    text: str
    key: str
    test: Test
    flips: Callable[[dict[str, Any], datetime], list[float]] | None = None
    resource: ResourceInfo | None = None

    def holds(self, log: EventLog, revision: int) -> bool:
        rec = log.get(self.key, revision) if revision else None
        obj = None if rec is None else rec.object
        return self.test(obj, time_of(log, revision), _epoch(log))


def _epoch(log: EventLog) -> datetime:
    text = (log.header.get("cluster") or {}).get("epoch") or DEFAULT_EPOCH.isoformat()
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


def _num(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) or v is None:
        return v or 0
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


# ------------------------------------------------------------------------ field paths
_SEGMENT = re.compile(r"""\.([^.\[\]'"]+)|\[(?:'([^']*)'|"([^"]*)"|([^\]'"]+))\]""")


def parse_path(path: str) -> list[str | int]:
    """``.status.conditions[0].status`` -> ``["status", "conditions", 0, "status"]``.

    A map key is a word after a dot, or any text in quotes between brackets
    (``.metadata.labels['app.kubernetes.io/name']``); an integer between brackets
    is a list index (``[-1]`` the last item); other text between brackets names
    a list item by its ``name``, ``type`` or ``key`` (``[Ready]``, ``[nginx]``).

    Raises:
        ValueError: what is wrong, e.g. ``unexpected "]" at character 19``.
    """
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if not m:
            raise ValueError(f'unexpected "{path[pos]}" at character {pos + 1} of "{path}"')
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None or m.group(3) is not None:
            out.append(m.group(2) if m.group(2) is not None else m.group(3))
        else:
            item = m.group(4).strip()
            out.append(int(item) if re.fullmatch(r"-?\d+", item) else _Item(item))
        pos = m.end()
    if not out or not isinstance(out[0], str) or isinstance(out[0], _Item):
        raise ValueError(f'"{path}" does not start with a field (e.g. .spec.replicas)')
    return out


class _Item(str):
    """A list item named by its ``name`` / ``type`` / ``key`` (``[Ready]``)."""


def path_value(obj: Any, path: list[str | int]) -> Any:
    """The value at ``path`` in ``obj`` (None when any step is missing)."""
    cur = obj
    for part in path:
        if isinstance(part, _Item):
            if not isinstance(cur, list):
                return None
            cur = next((i for i in cur if isinstance(i, dict) and part in
                        (i.get("name"), i.get("type"), i.get("key"))), None)
        elif isinstance(part, int):
            if not isinstance(cur, list) or not -len(cur) <= part < len(cur):
                return None
            cur = cur[part]
        else:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(part)
    return cur


def _spell(path: list[str | int]) -> str:
    out = ""
    for p in path:
        if isinstance(p, _Item) or isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[^.\[\]'\"]+", p):
            out += f".{p}"
        else:
            out += f"['{p}']"
    return out


def _schema_class(info: ResourceInfo) -> Any:
    from ..api.schema import KINDS

    return KINDS.get(f"{info.api_version}/{info.kind}")


def _leaf_type(info: ResourceInfo, path: list[str | int]) -> Any:
    """The schema type at ``path`` of ``info``'s kind (``typing.Any`` past a free-form value,
    None when the kind has no schema).

    Raises:
        ConditionError-worded ValueError: a field the schema does not have, a list stepped into
            without an index, an index into something that is not a list.
    """
    import attrs

    from ..api.schema.convert import _is_loose, _is_map, _is_seq, _strip_optional, _wire_table
    from ..api.schema.fields import RawJSON

    cls = _schema_class(info)
    if cls is None:
        return None
    tp: Any = cls
    for i, part in enumerate(path):
        here = _spell(path[:i]) or "the object"
        tp = _strip_optional(tp)
        if tp is typing.Any or tp is RawJSON or _is_loose(tp) or tp in (dict, list, object):
            return typing.Any
        if _is_seq(tp):
            if isinstance(part, (int, _Item)):
                tp = typing.get_args(tp)[0]
                continue
            raise ValueError(f"{here} is a list: pick an item, e.g. {here}[0] or {here}[NAME]")
        if isinstance(part, (int, _Item)):
            raise ValueError(f"{here} is not a list: it cannot be indexed with [{part}]")
        if _is_map(tp):
            tp = typing.get_args(tp)[1]
            continue
        if attrs.has(tp):
            table = _wire_table(tp)
            if part not in table:
                close = difflib.get_close_matches(str(part), list(table), n=1)
                hint = (f"did you mean {_spell([*path[:i], close[0]])}?" if close else
                        f"{here} has {', '.join(sorted(table))}")
                raise ValueError(f"{info.kind} has no field {_spell(path[:i + 1])} ({hint})")
            tp = table[part][0]
            continue
        raise ValueError(f"{here} is a {_type_word(tp)}: it has no field {part}")
    return _strip_optional(tp)


def _type_word(tp: Any) -> str:
    from ..api.schema.fields import Int32, Int64, IntOrString, Quantity, Time, MicroTime

    if tp in (Int32, Int64, int, float):
        return "number"
    if tp is bool:
        return "boolean"
    if tp in (Time, MicroTime):
        return "timestamp"
    if tp in (Quantity, IntOrString):
        return "number or string"
    if tp is str:
        return "string"
    return "value"


def _is_numeric_type(tp: Any) -> bool:
    from ..api.schema.fields import Int32, Int64, IntOrString, Quantity, RawJSON

    return tp is None or tp is typing.Any or tp in (Int32, Int64, int, float, Quantity, IntOrString, RawJSON)


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) is tuple


def _is_structure(tp: Any) -> bool:
    import attrs

    return attrs.has(tp) or typing.get_origin(tp) in (tuple, dict)


# ------------------------------------------------------------------------ parsing
def _ready(obj: dict[str, Any]) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def parse_condition(text: str, namespace: str = "default") -> Condition:
    """Parse ``TYPE/NAME PREDICATE`` (see the module docstring).

    Raises:
        ConditionError: with what was expected, or why the condition cannot hold as written
            (``condition "deploy/web .spec.replcas>=4": Deployment has no field .spec.replcas (…)``).
    """
    from ..cli.durations import parse_duration

    def bad(why: str) -> ConditionError:
        return ConditionError(f'condition "{text}": {why}')

    parts = text.strip().split(None, 1)
    if len(parts) != 2:
        raise ConditionError(f'condition "{text}": expected TYPE/NAME PREDICATE, e.g. "deployment/web available<2"')
    try:
        info, key = object_key(parts[0], namespace)
    except ValueError as e:
        raise bad(str(e)) from None
    pred = parts[1].replace(" ", "")
    low = pred.lower()
    kind = info.kind
    if low in ("absent", "exists"):
        want = low == "exists"
        return Condition(text, key, lambda o, t, e: (o is not None) == want, resource=info)
    if low in ("notready", "ready"):
        if kind not in ("Node", "Pod"):
            try:
                _leaf_type(info, ["status", "readyReplicas"])
                hint = f"; for a {kind} use a counter, e.g. ready<spec"
            except ValueError:
                hint = ""
            raise bad(f"{low} is the Ready condition of a Node or a Pod, not of a {kind}{hint}")
        want = low == "ready"
        return Condition(text, key, lambda o, t, e: o is not None and _ready(o) == want, resource=info)
    m = re.fullmatch(r"pending" + _OP_RE + r"(.*)", low)
    if m:
        if kind != "Pod":
            raise bad(f"pending{m.group(1)}DURATION is about a Pod, not a {kind} (use phase=Pending for its phase)")
        try:
            limit = parse_duration(m.group(2))
        except ValueError as e:
            raise bad(f"{e} (expected e.g. pending>60s)") from None
        op = _OPS[m.group(1)]

        def created_at(o: dict[str, Any], epoch: datetime) -> float | None:
            ts = (o.get("metadata") or {}).get("creationTimestamp")
            if not ts:
                return None
            return (datetime.fromisoformat(ts.replace("Z", "+00:00")) - epoch).total_seconds()

        def pending(o: dict[str, Any] | None, t: float, epoch: datetime) -> bool:
            if o is None or (o.get("status") or {}).get("phase", "Pending") != "Pending":
                return False
            created = datetime.fromisoformat(o["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
            return op((epoch + timedelta(seconds=t) - created).total_seconds(), limit)

        def flips(o: dict[str, Any], epoch: datetime) -> list[float]:
            c = created_at(o, epoch)
            return [] if c is None else [c + limit]

        return Condition(text, key, pending, flips, resource=info)
    m = re.fullmatch(r"(available|ready|replicas|updated)" + _OP_RE + r"(.*)", low)
    if m:
        field_name, op, rhs = _COUNTERS[m.group(1)], _OPS[m.group(2)], m.group(3)
        if not re.fullmatch(r"spec|-?\d+", rhs):
            raise bad(f'{m.group(1)}{m.group(2)} compares with a whole number or "spec", not "{rhs}"')
        try:
            _leaf_type(info, ["status", field_name])
        except ValueError:
            raise bad(f"a {kind} has no status.{field_name}") from None

        def counter(o: dict[str, Any] | None, t: float, e: datetime) -> bool:
            if o is None:
                return False
            want = (o.get("spec") or {}).get("replicas", 1) if rhs == "spec" else int(rhs)
            return op(_num((o.get("status") or {}).get(field_name)), want)

        return Condition(text, key, counter, resource=info)
    m = re.fullmatch(r"phase" + _OP_RE + r"(.*)", pred, flags=re.IGNORECASE)
    if m:
        opname, phase = m.group(1), m.group(2).strip("'\"")
        if opname in _ORDERING:
            raise bad(f"a phase is compared with =, == or !=, not {opname}")
        phases = _PHASES.get(kind)
        if phases is None:
            raise bad(f"a {kind} has no status.phase")
        canon = next((p for p in phases if p.lower() == phase.lower()), None)
        if canon is None:
            raise bad(f'unknown {kind} phase "{phase}" (expected {", ".join(phases)})')
        op = _OPS[opname]
        return Condition(text, key, lambda o, t, e: o is not None and op(
            (o.get("status") or {}).get("phase"), canon), resource=info)
    m = re.fullmatch(r"(\.[^<>=!]*?)" + _OP_RE + r"(.*)", pred)
    if m:
        return _field_condition(text, key, info, m.group(1), m.group(2), m.group(3), bad)
    raise bad(f'unknown predicate "{parts[1]}" (expected available<N, ready<spec, pending>60s, '
              f"notready, absent, phase=Running or .field.path OP value)")


def _field_condition(text: str, key: str, info: ResourceInfo, path_text: str, opname: str, rhs: str,
                     bad: Callable[[str], ConditionError]) -> Condition:
    """``.FIELD.PATH OP VALUE``, checked against the kind's schema."""
    try:
        path = parse_path(path_text)
    except ValueError as e:
        raise bad(str(e)) from None
    try:
        leaf = _leaf_type(info, path)
    except ValueError as e:
        raise bad(str(e)) from None
    op = _OPS[opname]
    spelled = _spell(path)
    if leaf is not None and _is_structure(leaf):
        raise bad(f"{spelled} is {'a list' if _is_list(leaf) else 'an object'}: compare one of its fields")
    quoted = len(rhs) >= 2 and rhs[0] == rhs[-1] and rhs[0] in "'\""
    if quoted:
        rhs = rhs[1:-1]
    number = None if quoted or not _NUMBER.fullmatch(rhs) else float(rhs)
    if opname in _ORDERING:
        if number is None:
            raise bad(f'{opname} compares numbers, and "{rhs}" is not a number')
        if not _is_numeric_type(leaf):
            raise bad(f"{spelled} is a {_type_word(leaf)}, not a number: it cannot be compared with {opname}")
    elif number is not None and not _is_numeric_type(leaf):
        number = None  # a string that looks like a number (a label value "2"): compared as text

    def field_test(o: dict[str, Any] | None, t: float, e: datetime) -> bool:
        if o is None:
            return False
        v = path_value(o, path)
        if number is not None:
            n = _num(v)
            if isinstance(n, (int, float)) and not isinstance(n, bool):
                return bool(op(n, number))
            if opname in _ORDERING:
                name = (o.get("metadata") or {}).get("name", "")
                raise ConditionError(f'condition "{text}": {spelled} of {info.singular}/{name} is '
                                     f"{format_value(v)}, not a number")
        if isinstance(v, bool):
            return bool(op("true" if v else "false", rhs.lower()))
        return bool(op("" if v is None else v if isinstance(v, str) else format_value(v), rhs))

    return Condition(text, key, field_test, resource=info)


# ------------------------------------------------------------------------ search
@dataclass
class BisectResult:
    """``revision``: the first revision where the condition holds (None: it never does);
    ``checks``: state reconstructions made; ``steps``: ``[(revision, holds)]`` in order;
    ``at_start``: the answer is the start of the search (the condition already held there);
    ``start`` / ``end``: the range searched."""

    revision: int | None
    checks: int
    steps: list[tuple[int, bool]]
    at_start: bool = False
    start: int = 0
    end: int = 0


def candidates(log: EventLog, cond: Condition, lo: int, hi: int) -> list[int]:
    """The revisions in ``(lo, hi]`` at which ``cond`` can change, in order.

    The object's own writes; for a time condition (:attr:`Condition.flips`),
    also, for each version of the object, the first revisions written at or
    after each moment its truth changes with time alone (within that
    version's lifetime): binary searches by time, O(log n) each. Between two
    candidates the condition stays as it is.
    """
    hist = log.history(cond.key)
    out: set[int] = {r.revision for r in hist if lo < r.revision <= hi}
    if cond.flips is not None:
        epoch = _epoch(log)
        for i, rec in enumerate(hist):
            if rec.type == DELETED:
                continue
            start = max(rec.revision, lo + 1)
            stop = min(hist[i + 1].revision - 1 if i + 1 < len(hist) else log.revision, hi)
            if start > stop:
                continue
            for tau in cond.flips(rec.object, epoch):
                # the first revision written at or after tau, and the first after it (rounding aside)
                for t in (tau - 1e-6, tau - 1e-9, tau, tau + 1e-6):
                    r = revision_at_time(log, t) + 1
                    if start <= r <= stop:
                        out.add(r)
    return sorted(out)


def bisect_log(log: EventLog, cond: Condition, lo: int | None = None, hi: int | None = None,
               *, linear: bool = False) -> BisectResult:
    """Find the first revision in ``[lo, hi]`` at which ``cond`` holds (see the module docstring).

    ``lo`` defaults to the compact revision (0: the empty cluster before the
    first record), ``hi`` to the head. ``lo`` is checked first: if the
    condition already holds there, ``lo`` is the answer (``at_start``).
    Otherwise binary search when it holds at ``hi``; when it does not (or
    with ``linear``), the :func:`candidates` in order.

    Raises:
        ConditionError: a field compared with a number holds something else (``"Running", not a number``).
    """
    lo = log.compact_revision if lo is None else lo
    hi = log.revision if hi is None else hi
    start, end = lo, hi
    steps: list[tuple[int, bool]] = []

    def check(r: int) -> bool:
        h = cond.holds(log, r)
        steps.append((r, h))
        return h

    def result(r: int | None) -> BisectResult:
        return BisectResult(r, len(steps), steps, at_start=r == start, start=start, end=end)

    if check(lo):
        return result(lo)
    if lo >= hi:
        return result(None)
    if linear or not check(hi):
        # the condition can only change at a candidate: check them in order (hi is known false here
        # unless linear)
        for r in candidates(log, cond, lo, hi):
            if (r == hi and not linear) or not check(r):
                continue
            return result(r)
        return result(None)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(mid):
            hi = mid
        else:
            lo = mid
    return result(hi)
