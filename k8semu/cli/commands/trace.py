"""``k8semu trace pod/NAME``: the pod's path through the components, step by step.

The 12 steps of pod creation (request, stored, scheduled, kubelet, sandbox
and IP, pull, create, start, Running, Ready, endpoints, kube-proxy) as they
happened: virtual time, actor and revision of each
(:func:`k8semu.timeline.trace_pod`). A step not reached is shown as ``—``.
"""

from __future__ import annotations

import argparse

from ..output import die
from ..session import open_cluster
from ..durations import go_duration


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("trace", help="a pod's creation flow through the components, as it happened")
    t.add_argument("pod", metavar="pod/NAME")
    t.add_argument("-n", "--namespace", default="default")
    t.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import trace_pod

    kind, _, name = args.pod.partition("/")
    if not name:
        kind, name = "pod", kind
    if kind.lower() not in ("pod", "pods", "po"):
        return die(f'trace follows pods, not "{kind}"')
    cluster = open_cluster(args, read_only=True)
    try:
        steps = trace_pod(cluster.log, args.namespace, name)
    finally:
        cluster.close()
    for s in steps:
        if s.revision is None:
            print(f"{s.number:>2}. {s.title:<52} —")
            continue
        print(f"{s.number:>2}. {s.title:<52} t={go_duration(s.time or 0.0):<10} rev {s.revision:<7} {s.actor}")
        if s.detail:
            print(f"    {s.detail}")
    return 0
