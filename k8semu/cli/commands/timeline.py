"""``k8semu timeline``: the log as a readable timeline, filtered.

One line per write: revision, virtual time, actor, event type, object
(``namespace/kind/name``), and for Events their reason and message.
Filters: ``--kind``, ``--name`` (``web*`` for a prefix), ``-n``, ``--actor``
(``user`` for every user, ``kubelet/*`` for a prefix), ``--since`` /
``--until`` (revisions or virtual times, following
:func:`k8semu.timeline.view.resolve_point`'s rule: an empty one, or one after
the end of the log, is an error; ``0`` is before the first record; a
``--since`` after ``--until`` is an error), ``--limit``.
"""

from __future__ import annotations

import argparse

from ..durations import point_time
from ..session import open_cluster


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("timeline", help="the event log as a readable, filterable timeline")
    t.add_argument("--kind", help="only this type (deploy, pods, …)")
    t.add_argument("--name", help="only objects of this name (NAME* for a prefix)")
    t.add_argument("-n", "--namespace", help="only this namespace")
    t.add_argument("--actor", help="only this actor (user, kubelet/*, default-scheduler, …)")
    t.add_argument("--since", metavar="REVISION|DURATION", help="from this point (exclusive)")
    t.add_argument("--until", metavar="REVISION|DURATION", help="up to this point (inclusive)")
    t.add_argument("--limit", type=int, help="at most this many lines")
    t.set_defaults(func=run)


def line(rec) -> str:
    """One timeline line for a record."""
    from ...timeline import describe_key

    parts = rec.key.split("/")
    what = (f"{parts[3]}/" if len(parts) == 5 else "") + describe_key(rec.key)
    extra = ""
    if parts[2] in ("events", "events.events.k8s.io") and rec.type != "DELETED":
        o = rec.object
        extra = f"  {o.get('reason', '')}: {(o.get('message') or o.get('note') or '').strip()}"
    return f"{rec.revision:>7}  {point_time(rec.time):>10}  {rec.actor:<28} {rec.type:<8} {what}{extra}"


def _point(log, text: str, flag: str) -> int:
    """A revision for ``--since``/``--until``: :func:`resolve_point`, strictly (an empty point,
    or one after the end of the log, is an error, as for every command); ``0`` is revision 0,
    before the first record."""
    from ...timeline import resolve_point

    if text.strip() == "0":
        return 0
    return resolve_point(log, text, strict=True, flag=flag)[0]


def run(args: argparse.Namespace) -> int:
    from ...timeline import timeline

    cluster = open_cluster(args, read_only=True)
    try:
        log = cluster.log
        after = _point(log, args.since, "--since") if args.since is not None else 0
        until = _point(log, args.until, "--until") if args.until is not None else None
        if until is not None and until < after:
            raise ValueError(f"--since {args.since} (revision {after}) is after --until {args.until} "
                             f"(revision {until})")
        n = 0
        for rec in timeline(log, after=after, until=until, kind=args.kind, name=args.name,
                            namespace=args.namespace, actor=args.actor):
            print(line(rec))
            n += 1
            if args.limit and n >= args.limit:
                break
    finally:
        cluster.close()
    return 0
