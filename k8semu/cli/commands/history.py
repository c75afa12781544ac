"""``k8semu history TYPE/NAME``: every revision of one object, with a readable diff of each.

One block per write: revision, virtual time, actor and event type, then the
fields changed (``~ spec.replicas: 2 → 4``), added (``+ …``) and removed
(``- …``) against the version before (:func:`k8semu.timeline.object_history`).
"""

from __future__ import annotations

import argparse

from ..durations import go_duration
from ..output import die
from ..session import open_cluster


def register(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser("history", help="every revision of one object, with readable diffs")
    h.add_argument("object", metavar="TYPE/NAME")
    h.add_argument("-n", "--namespace", default="default")
    h.add_argument("--no-diff", action="store_true", help="only the revision lines")
    h.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import object_history, object_key

    info, key = object_key(args.object, args.namespace)
    cluster = open_cluster(args, read_only=True)
    versions = object_history(cluster.log, key)
    cluster.close()
    if not versions:
        return die(f'{info.qualified} "{key.rsplit("/", 1)[1]}" has no history in this log')
    for v in versions:
        print(f"revision {v.revision}  t={go_duration(v.time)}  {v.actor}  {v.type}")
        if not args.no_diff:
            for c in v.changes:
                print(f"  {c}")
    return 0
