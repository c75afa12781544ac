"""``k8semu events``: ``kubectl events`` (read-only).

Columns ``LAST SEEN  TYPE  REASON  OBJECT  MESSAGE`` (``NAMESPACE`` first with
``-A``), oldest first; ``--for kind/name`` narrows to one object
(``involvedObject`` field selector: kind, apiVersion and name, as kubectl sends it),
``--types=Warning,Normal`` to some types.
Repeated events show ``5s (x4 over 2m)``, as kubectl's event printer.

``-o json|yaml|name|jsonpath=…|go-template=…`` print the ``EventList`` kubectl
builds (typed: Go's field order and zero values, ``eventTime: null``; managed
fields left out of JSON and YAML unless ``--show-managed-fields``); ``-o name`` of
a list prints nothing, as kubectl's. ``-w``/``--watch`` prints the events there
are, then runs the cluster's components for ``--watch-for`` of virtual time
(default 60s) and prints each new or updated event as it is written (rows lined
up with the ones before, as kubectl's tab writer does). ``--chunk-size`` is
accepted (the output does not depend on it).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any, Mapping

from ...api.humanize import parse_timestamp, translate_timestamp_since
from ..output import die
from ..parser import GoBool
from ..printing import RememberingTabWriter, strip_managed_fields, tabwrite, to_json, to_yaml, typed
from ..gosort import go_sort
from ..session import open_cluster_at
from .get import UnknownType, cluster_now, resolve_types


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("events", help="list events (as kubectl events)")
    e.add_argument("-n", "--namespace", default="default")
    e.add_argument("-A", "--all-namespaces", action="store_true")
    e.add_argument("--for", dest="for_object", metavar="KIND/NAME", help="only events about this object")
    e.add_argument("--types", help="comma-separated event types (Normal,Warning)")
    e.add_argument("--no-headers", action="store_true")
    e.add_argument("-o", "--output", default="",
                   help="json|yaml|name|jsonpath=TEMPLATE|jsonpath-file=FILE|jsonpath-as-json=TEMPLATE|"
                        "go-template=TEMPLATE|go-template-file=FILE")
    e.add_argument("--template", default="", help="the template (or its file) of -o go-template|jsonpath…")
    e.add_argument("--allow-missing-template-keys", nargs="?", const="true", default="true", metavar="BOOL",
                   help="a template's missing keys print nothing (default true; false: an error)")
    e.add_argument("--show-managed-fields", action=GoBool, default=False,
                   help="keep metadata.managedFields in -o json|yaml")
    e.add_argument("-w", "--watch", action="store_true", help="then print new events as they happen (runs the cluster)")
    e.add_argument("--watch-for", default="60s", metavar="DURATION",
                   help="with -w: how much virtual time to watch (default 60s)")
    e.add_argument("--chunk-size", type=int, default=500,
                   help="accepted as kubectl's (list in chunks of this size); the output is the same")
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
    """kubectl events' sort key (``eventTime``): the series' last observation, else
    ``lastTimestamp``, else ``eventTime``."""
    series = e.get("series") or {}
    t = (parse_timestamp(series.get("lastObservedTime")) if series else None) \
        or parse_timestamp(e.get("lastTimestamp")) or parse_timestamp(e.get("eventTime"))
    if t is None:
        return datetime.min
    return t.replace(tzinfo=None)


#: Event fields Go's ``corev1.Event`` always writes: the times (``null`` when unset) and the
#: reporting fields (no ``omitempty``); every other scalar is left out when empty.
_ALWAYS = {"firstTimestamp": None, "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
           "reportingInstance": ""}


def typed_event(e: Mapping[str, Any]) -> dict[str, Any]:
    """An event as kubectl prints one it decoded into ``corev1.Event``: Go's field order, empty
    ``omitempty`` fields left out, ``source`` always there, unset times ``null``."""
    out = typed({**e, "kind": e.get("kind") or "Event", "apiVersion": e.get("apiVersion") or "v1"})
    result: dict[str, Any] = {}
    for key, value in out.items():
        if key == "involvedObject" or key == "related":
            value = {k: v for k, v in (value or {}).items() if v not in (None, "")} if value is not None else None
            if value is None:
                continue
        elif key == "source":
            value = {k: v for k, v in (value or {}).items() if v not in (None, "")}
        elif key in _ALWAYS:
            value = _ALWAYS[key] if value in (None, "") and key not in ("firstTimestamp", "lastTimestamp",
                                                                          "eventTime") else value
        elif value in (None, "", 0) and key not in ("metadata",):
            continue
        result[key] = value
    for key, default in (("source", {}), *_ALWAYS.items()):
        result.setdefault(key, default)
    order = ("kind", "apiVersion", "metadata", "involvedObject", "reason", "message", "source", "firstTimestamp",
             "lastTimestamp", "count", "type", "eventTime", "series", "action", "related", "reportingComponent",
             "reportingInstance")
    return {k: result[k] for k in order if k in result} | {k: v for k, v in result.items() if k not in order}


def _print_structured(events: list[dict[str, Any]], args: argparse.Namespace, printer: str, template: str,
                      state: dict[str, int] | None = None) -> int:
    """``-o`` of the events (a typed ``EventList``; with ``state``, a watch's one event at a time)."""
    from .get import _parse_bool, print_template

    items = [typed_event(e) for e in events]
    if printer in ("json", "yaml") and not args.show_managed_fields:
        items = [strip_managed_fields(i) for i in items]
    data: Any = items[0] if state is not None else {"kind": "EventList", "apiVersion": "v1", "metadata": {},
                                                    "items": items}
    if printer == "name":
        if state is not None:  # one event; kubectl's name printer refuses a typed list (printing nothing)
            print(f"event/{(data.get('metadata') or {}).get('name', '')}")
        return 0
    if printer == "json":
        text = json.dumps(data, indent=4, ensure_ascii=False)
        sys.stdout.write(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") + "\n")
        return 0
    if printer == "yaml":
        from ..printing import _yaml_nulls

        count = state["documents"] if state is not None else 0
        sys.stdout.write(("---\n" if count else "") + to_yaml(_yaml_nulls(data)))
        if state is not None:
            state["documents"] = count + 1
        return 0
    allow = _parse_bool(str(args.allow_missing_template_keys))
    return print_template(printer, template, json.loads(json.dumps(data)), allow is not False)


def _resolve_printer(args: argparse.Namespace) -> tuple[str, str] | str:
    """The ``-o`` printer and template, or kubectl's error (events have no wide/custom-columns)."""
    from .get import OutputError, resolve_output

    fmt = args.output or ""
    allowed = ("go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,"
               "templatefile,yaml")
    name = fmt.split("=", 1)[0]
    if name in ("wide", "custom-columns", "custom-columns-file"):
        return (f'unable to match a printer suitable for the output format "{fmt}", allowed formats are: '
                f"{allowed}")
    try:
        printer, template = resolve_output(args)
    except OutputError as e:
        return str(e).replace("custom-columns,custom-columns-file,", "").replace(",wide,", ",")
    return printer, template


def run(args: argparse.Namespace) -> int:
    printer, template = "", ""
    if args.output:
        chosen = _resolve_printer(args)
        if isinstance(chosen, str):
            return die(chosen)
        printer, template = chosen
    selector = None
    if args.for_object:
        if "/" not in args.for_object:
            return die("--for must be in resource/name form")
        kind, name = args.for_object.split("/", 1)
        if "/" in name:
            return die("arguments in resource/name form may not have more than one slash")
        try:
            info = resolve_types(kind)[0]
        except UnknownType as e:  # kubectl's mapper error, printed without "error: "
            print(str(e), file=sys.stderr)
            return 1
        selector = (f"involvedObject.kind={info.kind},involvedObject.apiVersion={info.api_version},"
                    f"involvedObject.name={name}")
    types = {t.strip().lower() for t in args.types.split(",")} if args.types else None
    if types:
        bad = sorted(t for t in types if t not in ("normal", "warning"))
        if bad:
            return die("valid --types are Normal or Warning")
    if args.watch:
        return _watch(args, selector, types, printer, template)
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
    events = list(events)
    go_sort(events, lambda a, b: _last(a) < _last(b))  # kubectl's sort.Sort: its order of ties too
    if printer:
        return _print_structured(events, args, printer, template)
    lines = []
    if not args.no_headers:
        lines.append(("NAMESPACE\t" if args.all_namespaces else "") + "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
    for e in events:
        lines.append(_row(e, now, args.all_namespaces))
    sys.stdout.write(tabwrite("\n".join(lines) + "\n", minwidth=6, padding=3))
    return 0


def _row(e: Mapping[str, Any], now: datetime, all_namespaces: bool) -> str:
    """One event's line of kubectl's event printer, tab-separated."""
    inv = e.get("involvedObject") or {}
    ns_cell = f"{(e.get('metadata') or {}).get('namespace', '')}\t" if all_namespaces else ""
    return (f"{ns_cell}{interval(e, now)}\t{e.get('type', '')}\t{e.get('reason', '')}\t"
            f"{inv.get('kind', '')}/{inv.get('name', '')}\t{(e.get('message') or '').strip()}")


def _watch(args: argparse.Namespace, selector: str | None, types: set[str] | None, printer: str,
           template: str) -> int:
    """``events -w``: the events there are (in the server's order, as a watch's first ADDED
    events), then each event written while the cluster runs for ``--watch-for``, one at a time
    through the same printer (deleted events are not printed, as kubectl's)."""
    from datetime import timedelta

    from ...api import selectors
    from ..durations import parse_duration
    from ..session import open_cluster, run_session

    if getattr(args, "at", None):
        return die("--at shows the past; it cannot be combined with --watch")
    duration = parse_duration(args.watch_for, allow_negative=False)
    cluster = open_cluster(args)
    api = cluster.api
    ns = None if args.all_namespaces else args.namespace
    info = resolve_types("events")[0]
    field = selectors.parse_field_selector(selector) if selector else None
    writer = RememberingTabWriter()
    state = {"documents": 0, "headers": 0}

    def show(e: Mapping[str, Any], now: datetime) -> None:
        if types and (e.get("type") or "").lower() not in types:
            return
        if printer:
            _print_structured([dict(e)], args, printer, template, state)
        else:
            lines = []
            if not args.no_headers and not state["headers"]:
                lines.append((["NAMESPACE"] if args.all_namespaces else [])
                             + ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"])
                state["headers"] = 1
            lines.append(_row(e, now, args.all_namespaces).split("\t"))
            sys.stdout.write(writer.write(lines))
        sys.stdout.flush()

    now = cluster_now(cluster)
    for e in api.list("events", namespace=ns, field_selector=selector)["items"]:
        show(e, now)
    prefix = info.prefix(ns)

    def on_record(rec: Any) -> None:
        if not rec.key.startswith(prefix) or rec.type == "DELETED":
            return
        obj = rec.object
        if field is not None and not field.matches(selectors.field_set("events", obj)):
            return
        show(obj, api.epoch + timedelta(seconds=rec.time))

    async def body(rt: Any) -> None:
        cluster.log.add_listener(on_record)

    try:
        run_session(cluster, body, settle=False, run_for=duration)
    finally:
        cluster.log.remove_listener(on_record)
        cluster.close()
    return 0
