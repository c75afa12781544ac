"""``k8semu trace pod/NAME``: the pod's path through the components, step by step.

The 12 steps of pod creation (request, stored, scheduled, kubelet, sandbox
and IP, pull, create, start, Running, Ready, endpoints, kube-proxy) as they
happened: virtual time, actor and revision of each
(:func:`k8semu.timeline.trace_pod`). A step not reached is shown as ``—``.

When several pods had the name over time (deleted and created again: a
StatefulSet's ``web-0``, a pod recreated by hand), the latest is traced and
a header lists them all (uid, creation and deletion revision and time), the
traced one marked ``*``; ``--uid UID`` (or a unique prefix of it) or ``--at
POINT`` (the pod that existed then, else the last one created before it)
chooses another.
"""

from __future__ import annotations

import argparse

from ..output import die
from ..session import open_cluster
from ..durations import point_time


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("trace", help="a pod's creation flow through the components, as it happened")
    t.add_argument("pod", metavar="pod/NAME")
    t.add_argument("-n", "--namespace", default="default")
    t.add_argument("--uid", help="trace the pod of this name with this uid (or uid prefix)")
    t.add_argument("--at", metavar="REVISION|DURATION",
                   help="trace the pod of this name that existed at this point")
    t.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import resolve_point, trace_pod
    from ...timeline.history import incarnations, pick_incarnation

    kind, _, name = args.pod.partition("/")
    if not name:
        kind, name = "pod", kind
    if kind.lower() not in ("pod", "pods", "po"):
        return die(f'trace follows pods, not "{kind}"')
    if args.uid is not None and not args.uid.strip():
        return die("--uid is empty: expected a pod's uid (or the start of one)")
    if args.uid is not None and args.at is not None:
        return die("--uid and --at both choose which pod to trace: give one")
    cluster = open_cluster(args, read_only=True)
    try:
        log = cluster.log
        at = resolve_point(log, args.at, strict=True, flag="--at")[0] if args.at is not None else None
        steps = trace_pod(log, args.namespace, name, uid=args.uid, at=at)
        incs = incarnations(log, f"/registry/pods/{args.namespace}/{name}")
        chosen = pick_incarnation(incs, uid=args.uid, at=at)
    finally:
        cluster.close()
    if len(incs) > 1:
        which = "the latest" if chosen is incs[-1] else f"the one created at revision {chosen.created}"
        print(f"pod {args.namespace}/{name} had {len(incs)} incarnations (deleted and created again); "
              f"tracing {which} (choose with --uid UID or --at POINT):")
        for inc in incs:
            gone = (f", deleted at revision {inc.deleted} (t={point_time(inc.deleted_time or 0.0)})"
                    if inc.deleted is not None else "")
            print(f"  {'*' if inc is chosen else ' '} uid {inc.uid}  created at revision {inc.created} "
                  f"(t={point_time(inc.time)}){gone}")
    for s in steps:
        if s.revision is None:
            print(f"{s.number:>2}. {s.title:<52} —")
            continue
        print(f"{s.number:>2}. {s.title:<52} t={point_time(s.time or 0.0):<10} rev {s.revision:<7} {s.actor}")
        if s.detail:
            print(f"    {s.detail}")
    return 0
