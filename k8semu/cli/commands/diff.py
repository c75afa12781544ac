"""``k8semu diff --from A --to B``: what changed in the whole cluster between two points.

``A``/``B`` are revisions or virtual times (``2m30s``); ``--to`` defaults to
the head, ``--from`` to revision 0 (the empty cluster before the first
record). Objects created (``+``), deleted (``-``), changed (``~``, with their
field changes unless ``--brief``) and replaced (``-/+``: deleted and created
again with the same name, so another object with another uid, with its field
changes), grouped by resource. Points follow
:func:`k8semu.timeline.view.resolve_point`'s rule: an empty one, or one after
the end of the log, is an error.

``--against OTHER.log`` compares two logs instead (e.g. a fork written by
``replay --fork-at`` against its original): this cluster's state against
OTHER.log's, at the same point ``--to`` (default: each log's head) resolved
in each log — a virtual time (``--to 5m``: each log as it was 5 minutes in)
or a revision number (the same revision of each; after a fork point, the
revisions of two logs hold different writes, so a time is usually what is
meant). ``+`` is an object only OTHER.log has, ``-`` one only this log has.
``--from`` has no meaning there (there is one point, not a window) and is
refused.
"""

from __future__ import annotations

import argparse

from ..output import die
from ..session import open_cluster, open_log_file


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("diff", help="objects created, deleted and changed between two revisions or times")
    d.add_argument("--from", dest="start", metavar="REVISION|DURATION",
                   help="from this point (default 0: before the first record)")
    d.add_argument("--to", dest="end", metavar="REVISION|DURATION", help="to this point (default the head)")
    d.add_argument("--against", metavar="OTHER.log",
                   help="compare with another log (e.g. a fork) at the same --to point")
    d.add_argument("--brief", action="store_true", help="object names only, no field changes")
    d.set_defaults(func=run)


def _point(log, text: str, flag: str) -> int:
    from ...timeline import resolve_point

    if isinstance(text, str) and text.strip() == "0":
        return 0
    return resolve_point(log, text, strict=True, flag=flag)[0]


def run(args: argparse.Namespace) -> int:
    from ...timeline import cluster_diff
    from ...timeline.history import logs_diff
    from ...timeline.view import PointError, time_of
    from ..durations import point_time

    if args.against is not None and args.start is not None:
        return die("--from cannot be used with --against: two logs are compared at one point, "
                   "given by --to (default: each log's head)")
    cluster = open_cluster(args, read_only=True)
    try:
        log = cluster.log
        if args.against is None:
            a = _point(log, args.start, "--from") if args.start is not None else 0
            b = _point(log, args.end, "--to") if args.end is not None else log.revision
            diff = cluster_diff(log, a, b)
            header = f"revision {a} → {b}"
        else:
            other = open_log_file(args.against, f"--against {args.against}")
            try:
                a = _point(log, args.end, "--to") if args.end is not None else log.revision
                try:
                    b = _point(other, args.end, "--to") if args.end is not None else other.revision
                except PointError as e:
                    raise PointError(f"{args.against}: {e}") from None
                diff = logs_diff(log, a, other, b)
                header = (f"revision {a} (t={point_time(time_of(log, a))}) → {args.against} revision {b} "
                          f"(t={point_time(time_of(other, b))})")
            finally:
                other.close()
    finally:
        cluster.close()
    print_diff(diff, header, brief=args.brief)
    return 0


def print_diff(diff, header: str, *, brief: bool = False) -> None:
    """The diff as the command prints it: a header, then per resource its counts and objects."""
    from ...timeline import describe_key

    print(header)
    if diff.empty:
        print("no changes")
        return
    for res in diff.resources():
        created, deleted = diff.created.get(res, []), diff.deleted.get(res, [])
        changed, replaced = diff.changed.get(res, {}), diff.replaced.get(res, {})
        counts = f"{res}: {len(created)} created, {len(deleted)} deleted, {len(changed)} changed"
        print(counts + (f", {len(replaced)} replaced" if replaced else ""))
        for key in created:
            print(f"  + {_name(key, describe_key)}")
        for key in deleted:
            print(f"  - {_name(key, describe_key)}")
        for key, changes in changed.items():
            print(f"  ~ {_name(key, describe_key)}")
            if not brief:
                for c in changes:
                    print(f"      {c}")
        for key, changes in replaced.items():
            print(f"  -/+ {_name(key, describe_key)}  replaced (deleted and created again: another uid)")
            if not brief:
                for c in changes:
                    print(f"      {c}")


def _name(key: str, describe_key) -> str:
    parts = key.split("/")
    return f"{parts[3]}/{describe_key(key)}" if len(parts) == 5 else describe_key(key)
