"""``k8semu history TYPE/NAME``: every revision of one object, with a readable diff of each.

One block per write: revision, virtual time, actor and event type, then the
fields changed (``~ spec.replicas: 2 → 4``), added (``+ …``) and removed
(``- …``) against the version before (:func:`k8semu.timeline.object_history`).
An ``ADDED`` line names the new object's uid: when the name was deleted and
created again (a StatefulSet's pod), each object's writes start there.
``--from`` / ``--to`` keep the writes in ``(FROM, TO]`` (points as
:func:`k8semu.timeline.view.resolve_point` reads them: an empty one, or one
after the end of the log, is an error; ``--from 0`` is before the first record).
"""

from __future__ import annotations

import argparse

from ..durations import point_time
from ..output import die
from ..session import open_cluster


def register(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser("history", help="every revision of one object, with readable diffs")
    h.add_argument("object", metavar="TYPE/NAME")
    h.add_argument("-n", "--namespace", default="default")
    h.add_argument("--no-diff", action="store_true", help="only the revision lines")
    h.add_argument("--from", dest="start", metavar="REVISION|DURATION", help="only writes after this point")
    h.add_argument("--to", dest="end", metavar="REVISION|DURATION", help="only writes up to this point")
    h.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import object_history, object_key, resolve_point

    try:
        info, key = object_key(args.object, args.namespace)
        cluster = open_cluster(args, read_only=True)
    except ValueError:  # perhaps a custom resource: its CRD is in the cluster
        cluster = open_cluster(args, read_only=True)
        try:
            info, key = object_key(args.object, args.namespace, cluster.api, cluster.log)
        except ValueError:
            cluster.close()
            raise
    try:
        log = cluster.log

        def point(text: str | None, flag: str, default: int) -> int:
            if text is None:
                return default
            if text.strip() == "0":
                return 0
            return resolve_point(log, text, strict=True, flag=flag)[0]

        lo, hi = point(args.start, "--from", 0), point(args.end, "--to", log.revision)
        versions = object_history(log, key)
    finally:
        cluster.close()
    name = key.rsplit("/", 1)[1]
    if not versions:
        return die(f'{info.qualified} "{name}" has no history in this log')
    shown = [v for v in versions if lo < v.revision <= hi]
    if not shown:
        return die(f'{info.qualified} "{name}" has no writes between revision {lo} and {hi} '
                   f"(its writes: revision {versions[0].revision} to {versions[-1].revision})")
    for v in shown:
        uid = (v.object.get("metadata") or {}).get("uid") if v.type == "ADDED" else None
        print(f"revision {v.revision}  t={point_time(v.time)}  {v.actor}  {v.type}" + (f"  uid {uid}" if uid else ""))
        if not args.no_diff:
            for c in v.changes:
                print(f"  {c}")
    return 0
