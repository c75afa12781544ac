"""``k8semu bisect LOG --until 'CONDITION'``: the first revision at which a condition holds.

Conditions (:mod:`k8semu.timeline.bisect`): ``deployment/web available<2``,
``deployment/web available<spec``, ``pod/x pending>60s``,
``node/node-1 notready``, ``pod/x phase=Running``, ``svc/web absent``,
``deploy/web .spec.replicas>=4``, ``pod/x .status.conditions[Ready].status=True``.
Prints the revision, its time and the write that made it true (for a
condition that time alone made true, such as ``pending>60s``, the first
write after that moment); exit 0.

Exit 1 with one ``error:`` line when there is no revision in the range at
which the condition *became* true: a malformed or impossible condition
(unknown type, unknown field, a string compared with ``>``…), one that
never holds, or one that already holds where the search starts — at
``--from``, or at the start of the log (``absent`` of an object created
later holds at revision 0); in that last case, when it stops holding and
holds again later, that later revision is the answer (exit 0), the start
being reported on the line before.

Points (``--from``, ``--to``) follow :func:`k8semu.timeline.view.resolve_point`'s
rule (an empty one, or one after the end of the log, is an error); ``--from
0`` is revision 0, the empty cluster before the first record (the default).
"""

from __future__ import annotations

import argparse

from ..output import die
from ..durations import point_time


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bisect", help="the first revision at which a condition over the cluster holds")
    b.add_argument("log", metavar="LOG")
    b.add_argument("--until", dest="condition", required=True, metavar="CONDITION",
                   help="e.g. 'deployment/web available<2', 'pod/x pending>60s', 'node/node-1 notready'")
    b.add_argument("-n", "--namespace", default="default")
    b.add_argument("--from", dest="start", metavar="REVISION|DURATION", help="a point where it does not hold")
    b.add_argument("--to", dest="end", metavar="REVISION|DURATION", help="a point where it holds (default head)")
    b.add_argument("--linear", action="store_true",
                   help="check every revision where the condition can change, in order, instead")
    b.set_defaults(func=run)


def point(log, text: str, flag: str) -> int:
    """A revision for ``--from``/``--to``: :func:`resolve_point`, strictly; ``0`` is revision 0."""
    from ...timeline import resolve_point

    if isinstance(text, str) and text.strip() == "0":
        return 0
    return resolve_point(log, text, strict=True, flag=flag)[0]


def run(args: argparse.Namespace) -> int:
    from ...timeline import describe_key
    from ...timeline.bisect import bisect_log, candidates, parse_condition
    from ..session import open_log_file

    cond = parse_condition(args.condition, args.namespace)
    log = open_log_file(args.log)
    lo = point(log, args.start, "--from") if args.start is not None else None
    hi = point(log, args.end, "--to") if args.end is not None else None
    if lo is not None and hi is not None and lo > hi:
        return die(f"--from (revision {lo}) is after --to (revision {hi})")
    res = bisect_log(log, cond, lo, hi, linear=args.linear)
    c = args.condition
    what = describe_key(cond.key) + (f" (namespace {args.namespace})" if cond.resource and cond.resource.namespaced
                                     else "")

    def at(r: int) -> str:
        return f"revision {r}, t={point_time(log.record(r).time if r else 0.0)}"

    def never_exists() -> str:
        return "" if log.history(cond.key) else f"; {what} never exists in this log"

    if res.revision is None:
        return die(f'"{c}" does not hold at any revision from {res.start} to {res.end} '
                   f"({res.checks} checks){never_exists()}")
    checks = res.checks
    if res.at_start:
        if lo is not None:
            return die(f'"{c}" already holds at --from ({at(lo)}): it became true at or '
                       f"before then; bisect from an earlier point")
        start = f"the start of the log (revision {res.start}{', before the first record' if not res.start else ''})"
        stop = next((r for r in candidates(log, cond, res.start, res.end) if not cond.holds(log, r)), None)
        if stop is None:
            return die(f'"{c}" holds from {start} to revision {res.end}: it never became true in '
                       f"between{never_exists()}")
        rec = log.record(stop)
        made = f"; {rec.type} {describe_key(rec.key)} by {rec.actor}" if rec.key == cond.key else ""
        until = f"until revision {stop} (t={point_time(rec.time)}{made})"
        again = bisect_log(log, cond, stop, res.end, linear=args.linear)
        if again.revision is None:
            return die(f'"{c}" holds from {start} {until}, and does not hold again '
                       f"up to revision {res.end} ({checks + again.checks} checks)")
        print(f'"{c}" holds from {start} {until}')
        res, checks = again, checks + again.checks
        first = "holds again from"
    else:
        first = "first holds at"
    rec = log.record(res.revision) if res.revision else None
    print(f'"{c}" {first} revision {res.revision} '
          f"(t={point_time(rec.time if rec else 0.0)}; {checks} checks)")
    if rec is not None:
        late = "" if rec.key == cond.key else " (time passing made it true: the first write since)"
        print(f"  {rec.type} {describe_key(rec.key)} by {rec.actor}{late}")
    return 0
