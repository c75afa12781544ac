"""``k8semu events``: ``kubectl events`` (read-only).

Columns ``LAST SEEN  TYPE  REASON  OBJECT  MESSAGE`` (``NAMESPACE`` first with
``-A``), oldest first; ``--for kind/name`` narrows to one object
(``involvedObject`` field selector), ``--types=Warning,Normal`` to some types.
Repeated events show ``5s (x4 over 2m)``, as kubectl's event printer.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any, Mapping

from ...api.humanize import parse_timestamp, translate_timestamp_since
from ..output import die
from ..printing import tabwrite
from ..session import open_cluster_at
from .get import UnknownType, cluster_now, resolve_types


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("events", help="list events (as kubectl events)")
    e.add_argument("-n", "--namespace", default="default")
    e.add_argument("-A", "--all-namespaces", action="store_true")
    e.add_argument("--for", dest="for_object", metavar="KIND/NAME", help="only events about this object")
    e.add_argument("--types", help="comma-separated event types (Normal,Warning)")
    e.add_argument("--no-headers", action="store_true")
    from ...timeline.view import add_at_argument

    add_at_argument(e)
    e.set_defaults(func=run)


def interval(e: Mapping[str, Any], now: datetime) -> str:
    """kubectl's event interval: ``30s``, or ``5s (x4 over 2m)`` for a repeated event."""
    first = e.get("eventTime") or e.get("firstTimestamp")
    first_since = translate_timestamp_since(first, now) if first else "<unknown>"
    series = e.get("series")
    if series:
        return f"{translate_timestamp_since(series.get('lastObservedTime'), now)} (x{series.get('count')} over {first_since})"
    if (e.get("count") or 0) > 1:
        return f"{translate_timestamp_since(e.get('lastTimestamp'), now)} (x{e['count']} over {first_since})"
    return first_since


def _last(e: Mapping[str, Any]) -> datetime:
    t = parse_timestamp(e.get("eventTime")) or parse_timestamp(e.get("lastTimestamp"))
    if t is None:
        return datetime.min
    return t.replace(tzinfo=None)


def run(args: argparse.Namespace) -> int:
    selector = None
    if args.for_object:
        if "/" not in args.for_object:
            return die("--for must be in resource/name form")
        kind, name = args.for_object.split("/", 1)
        try:
            info = resolve_types(kind)[0]
        except UnknownType as e:
            return die(str(e))
        selector = f"involvedObject.kind={info.kind},involvedObject.name={name}"
    types = {t.strip().lower() for t in args.types.split(",")} if args.types else None
    if types:
        bad = sorted(t for t in types if t not in ("normal", "warning"))
        if bad:
            return die("valid --types are Normal or Warning")
    cluster = open_cluster_at(args)
    now = cluster_now(cluster)
    ns = None if args.all_namespaces else args.namespace
    events = cluster.api.list("events", namespace=ns, field_selector=selector)["items"]
    if types:
        events = [e for e in events if (e.get("type") or "").lower() in types]
    cluster.close()
    if not events:
        print("No events found." if args.all_namespaces else f"No events found in {args.namespace} namespace.",
              file=sys.stderr)
        return 0
    events = sorted(events, key=_last)
    lines = []
    if not args.no_headers:
        lines.append(("NAMESPACE\t" if args.all_namespaces else "") + "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
    for e in events:
        inv = e.get("involvedObject") or {}
        ns_cell = f"{(e.get('metadata') or {}).get('namespace', '')}\t" if args.all_namespaces else ""
        lines.append(f"{ns_cell}{interval(e, now)}\t{e.get('type', '')}\t{e.get('reason', '')}\t"
                     f"{inv.get('kind', '')}/{inv.get('name', '')}\t{(e.get('message') or '').strip()}")
    sys.stdout.write(tabwrite("\n".join(lines) + "\n", minwidth=6, padding=3))
    return 0
