"""``k8semu bisect LOG --until 'CONDITION'``: the first revision at which a condition holds.

Conditions (:mod:`k8semu.timeline.bisect`): ``deployment/web available<2``,
``deployment/web available<spec``, ``pod/x pending>60s``,
``node/node-1 notready``, ``pod/x phase=Running``, ``svc/web absent``,
``deploy/web .spec.replicas>=4``. Prints the revision, its time and the
write that made it true; exit 1 if the condition never holds.
"""

from __future__ import annotations

import argparse

from ..output import die
from ..durations import go_duration


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bisect", help="the first revision at which a condition over the cluster holds")
    b.add_argument("log", metavar="LOG")
    b.add_argument("--until", dest="condition", required=True, metavar="CONDITION",
                   help="e.g. 'deployment/web available<2', 'pod/x pending>60s', 'node/node-1 notready'")
    b.add_argument("-n", "--namespace", default="default")
    b.add_argument("--from", dest="start", metavar="REVISION|DURATION", help="a point where it does not hold")
    b.add_argument("--to", dest="end", metavar="REVISION|DURATION", help="a point where it holds (default head)")
    b.add_argument("--linear", action="store_true", help="check every write of the object instead")
    b.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import describe_key, open_log, resolve_point
    from ...timeline.bisect import bisect_log, parse_condition

    cond = parse_condition(args.condition, args.namespace)
    log = open_log(args.log)
    lo = resolve_point(log, args.start)[0] if args.start else None
    hi = resolve_point(log, args.end)[0] if args.end else None
    res = bisect_log(log, cond, lo, hi, linear=args.linear)
    if res.revision is None:
        return die(f'"{args.condition}" does not hold at revision {hi if hi is not None else log.revision} '
                   f"({res.checks} checks)")
    if lo is not None and res.revision == lo and not args.linear:
        t = go_duration(log.record(lo).time if lo else 0.0)
        return die(f'"{args.condition}" already holds at --from (revision {lo}, t={t}): it became true at or '
                   f"before then; bisect from an earlier point")
    rec = log.record(res.revision) if res.revision else None
    print(f'"{args.condition}" first holds at revision {res.revision} '
          f"(t={go_duration(rec.time if rec else 0.0)}; {res.checks} checks)")
    if rec is not None:
        print(f"  {rec.type} {describe_key(rec.key)} by {rec.actor}")
    return 0
