"""``k8semu diff --from A --to B``: what changed in the whole cluster between two points.

``A``/``B`` are revisions or virtual times (``2m30s``); ``--to`` defaults to
the head, ``--from`` to the start. Objects created (``+``), deleted (``-``)
and changed (``~``, with their field changes unless ``--brief``), grouped by
resource. ``--against OTHER.log`` compares this log at ``--to`` with another
log (e.g. a fork) at its own ``--to``.
"""

from __future__ import annotations

import argparse

from ..session import open_cluster


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("diff", help="objects created, deleted and changed between two revisions or times")
    d.add_argument("--from", dest="start", default="0", metavar="REVISION|DURATION")
    d.add_argument("--to", dest="end", default="head", metavar="REVISION|DURATION")
    d.add_argument("--brief", action="store_true", help="object names only, no field changes")
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...timeline import cluster_diff, describe_key, resolve_point

    cluster = open_cluster(args, read_only=True)
    log = cluster.log
    a = 0 if args.start in ("0", "") else resolve_point(log, args.start)[0]
    b = resolve_point(log, args.end)[0]
    diff = cluster_diff(log, a, b)
    cluster.close()
    print(f"revision {a} → {b}")
    if diff.empty:
        print("no changes")
        return 0
    for res in diff.resources():
        created, deleted, changed = diff.created.get(res, []), diff.deleted.get(res, []), diff.changed.get(res, {})
        print(f"{res}: {len(created)} created, {len(deleted)} deleted, {len(changed)} changed")
        for key in created:
            print(f"  + {_name(key, describe_key)}")
        for key in deleted:
            print(f"  - {_name(key, describe_key)}")
        for key, changes in changed.items():
            print(f"  ~ {_name(key, describe_key)}")
            if not args.brief:
                for c in changes:
                    print(f"      {c}")
    return 0


def _name(key: str, describe_key) -> str:
    parts = key.split("/")
    return f"{parts[3]}/{describe_key(key)}" if len(parts) == 5 else describe_key(key)
