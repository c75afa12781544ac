"""``k8semu get``: kubectl get, on the cluster as it is (read-only; ``-w`` runs it).

Resource arguments as kubectl takes them: ``get pods``, ``get deploy,svc``,
``get deployment.apps web other``, ``get pod/a svc/b``, ``get all`` (pods,
replicationcontrollers, services, daemonsets, deployments, replicasets,
statefulsets, horizontalpodautoscalers, cronjobs, jobs — kubectl's ``all``
category, in a real kube-apiserver's discovery order — then the custom resources
whose CRD lists ``categories: [all]``). A deprecated version's warning (a CRD's
``deprecated: true``) is printed as kubectl prints the server's ``Warning``
header: ``Warning: …`` on stderr. Tables are the server's
(:func:`~k8semu.api.tables.table_for`) printed as kubectl prints them: one
table per kind, blank-line separated, ``kind/name`` names when several kinds;
``-L a,b`` (or ``-L a -L b``) adds a column per label key.

``-o`` takes kubectl's formats: ``yaml``, ``json``, ``name``, ``wide``,
``jsonpath=``/``jsonpath-file=``/``jsonpath-as-json=`` (client-go's JSONPath,
:mod:`k8semu.cli.printing`), ``go-template=``/``go-template-file=`` (also
``template=``/``templatefile=``, and ``--template`` alone; Go's
``text/template``, :mod:`k8semu.cli.gotemplate`), ``custom-columns=`` /
``custom-columns-file=``; ``--allow-missing-template-keys=false`` makes a
template's missing key an error. The errors are kubectl's, word for word:
``error parsing jsonpath {.items[}, unterminated array``, ``error parsing
template {{.x, template: output:1: unclosed action``, the ``Printing more
information for debugging the template`` dumps of a template that fails.

``-w``/``--watch`` prints the table, then runs the cluster's components in
virtual time for ``--for`` (default 60s) and prints one row per change to a
matching object as it is written (each row padded on its own, as kubectl's
watch output is).

The shared helpers here (:func:`resolve_types`, :func:`cluster_now`,
:func:`parse_targets`) are used by the other read commands.
"""

from __future__ import annotations

import argparse
import csv
import errno
import os
import sys
from datetime import datetime, timedelta
from typing import Any, Mapping, Sequence

from ...api import errors
from ...api.resources import ResourceInfo, lookup
from ...api.tables import render_table, table_for
from ..durations import parse_duration
from ..output import die, server_error
from ...api.gofmt import go_json, go_quote, go_v
from ...api.jsonpath import JSONPathError, JSONPathParseError, jsonpath_exec_error, parse_jsonpath
from ..printing import custom_columns, list_object, name_of, sort_by, strip_managed_fields, to_json, to_yaml
from ..session import open_cluster, run_session
from ..targets import intermixed

__all__ = ["register", "resolve_types", "parse_targets", "parse_targets_with_crds", "cluster_now", "no_resources_message",
           "ALL_CATEGORY", "UnknownType"]

#: kubectl's ``all`` category, in a real kube-apiserver's discovery order, which kubectl keeps:
#: the groups by their priority (core, then apps, autoscaling, batch), each group's resources
#: sorted by name (the apiserver sorts its paths).
ALL_CATEGORY = ("pods", "replicationcontrollers", "services", "daemonsets.apps", "deployments.apps",
                "replicasets.apps", "statefulsets.apps", "horizontalpodautoscalers.autoscaling",
                "cronjobs.batch", "jobs.batch")


class UnknownType(LookupError):
    """``error: the server doesn't have a resource type "x"``."""

    def __init__(self, name: str) -> None:
        super().__init__(f'the server doesn\'t have a resource type "{name}"')


def cluster_now(cluster: Any) -> datetime:
    """The cluster's current virtual time as an aware datetime (what ages are measured to)."""
    return cluster.api.epoch + timedelta(seconds=cluster.time)


def resolve_types(text: str, api: Any = None) -> list[ResourceInfo]:
    """``po``, ``deploy,svc``, ``deployment.apps``, ``all`` -> resources, in order, without repeats.

    With ``api`` (an APIServer), the custom resources of its CRDs are known too (``ct``,
    ``crontabs.stable.example.com``).

    Raises:
        UnknownType: a name the server does not serve.
    """
    out: list[ResourceInfo] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.lower() == "all":
            # then the custom resources whose CRD lists ``categories: [all]``, as kubectl expands
            # the category from discovery (the CRD groups come after the built-in ones)
            infos = [lookup(n)[0] for n in ALL_CATEGORY]
            if api is not None:
                infos += api.custom.in_category("all")
        else:
            found = lookup(part) or (api.custom.lookup(part) if api is not None else [])
            if not found:
                raise UnknownType(part)
            infos = found[:1]
        for info in infos:
            if info not in out:
                out.append(info)
    return out


def parse_targets(args: Sequence[str], api: Any = None) -> list[tuple[ResourceInfo, list[str]]]:
    """kubectl's resource arguments: ``TYPE[,TYPE…] [NAME…]`` or ``TYPE/NAME …``.

    Returns:
        ``[(resource, names)]``; empty names means "list them".

    Raises:
        UnknownType: an unknown type.
        ValueError: mixing the two forms (kubectl's message).
    """
    if not args:
        return []
    if any("/" in a for a in args):
        if not all("/" in a for a in args):
            raise ValueError("there is no need to specify a resource type as a separate argument when "
                             "passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' "
                             "instead of 'kubectl get resource resource/<resource_name>'")
        out: list[tuple[ResourceInfo, list[str]]] = []
        for a in args:
            kind, name = a.split("/", 1)
            info = resolve_types(kind, api)[0]
            for existing, names in out:
                if existing == info:
                    names.append(name)
                    break
            else:
                out.append((info, [name]))
        return out
    infos = resolve_types(args[0], api)
    return [(info, list(args[1:])) for info in infos]


def parse_targets_with_crds(args: argparse.Namespace) -> list[tuple[ResourceInfo, list[str]]] | None:
    """:func:`parse_targets` with the custom resources of the cluster's CRDs (None: no cluster)
    — as they were at ``--at``, when given (a CRD deleted since still names its kind then).

    Raises:
        UnknownType, ValueError: as :func:`parse_targets`.
    """
    from ...store import LogFormatError
    from ..session import PathError, open_cluster_at

    try:
        cluster = open_cluster_at(args) if getattr(args, "at", None) is not None else open_cluster(args, read_only=True)
    except (OSError, PathError, LogFormatError, ValueError):
        return None  # the type error comes first, as before the cluster is looked at
    try:
        return parse_targets(args.resources, cluster.api)
    finally:
        cluster.close()


def _kind_label(info: ResourceInfo) -> str:
    """What ``--show-kind`` prefixes names with: the resource, or a custom one's ``kind.group``."""
    return f"{info.kind}.{info.group}" if getattr(info, "crd", "") else info.qualified


def no_resources_message(namespace: str | None, all_namespaces: bool, namespaced: bool = True) -> str:
    """``No resources found in default namespace.`` / ``No resources found``."""
    if all_namespaces or not namespaced or not namespace:
        return "No resources found"
    return f"No resources found in {namespace} namespace."


def register(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("get", help="display one or many resources (as kubectl get)")
    intermixed(g)
    g.add_argument("resources", nargs="*", metavar="TYPE[/NAME] [NAME]")
    g.add_argument("-n", "--namespace", default="default")
    g.add_argument("-A", "--all-namespaces", action="store_true")
    g.add_argument("-l", "--selector", help="label selector, e.g. app=web")
    g.add_argument("--field-selector", help="field selector, e.g. status.phase=Running")
    g.add_argument("-o", "--output", default="",
                   help="yaml|json|name|wide|jsonpath=TEMPLATE|jsonpath-file=FILE|jsonpath-as-json=TEMPLATE|"
                        "go-template=TEMPLATE|go-template-file=FILE|custom-columns=SPEC|custom-columns-file=FILE")
    g.add_argument("--template", default="",
                   help="the template (or its file) of -o go-template|jsonpath…; alone, a go-template")
    g.add_argument("--allow-missing-template-keys", nargs="?", const="true", default="true", metavar="BOOL",
                   help="a template's missing keys print nothing (default true; false: an error)")
    g.add_argument("--show-labels", action="store_true")
    g.add_argument("-L", "--label-columns", action="append", default=[])
    g.add_argument("--no-headers", action="store_true")
    g.add_argument("--sort-by", help="JSONPath to sort by, e.g. .metadata.name")
    g.add_argument("--show-kind", action="store_true")
    g.add_argument("--show-managed-fields", action="store_true")
    g.add_argument("--ignore-not-found", action="store_true")
    g.add_argument("-w", "--watch", action="store_true", help="print changes as they happen (runs the cluster)")
    g.add_argument("--for", dest="run_for", default="60s", metavar="DURATION",
                   help="with -w: how much virtual time to watch (default 60s)")
    from ...timeline.view import add_at_argument

    add_at_argument(g)
    g.set_defaults(func=run)


def label_column_keys(values: Sequence[str]) -> list[str]:
    """The label keys of ``-L``/``--label-columns``, a pflag string slice: each value is read as
    one CSV record, so ``-L a,b`` and ``-L a -L b`` both give ``["a", "b"]`` (two columns, ``A``
    and ``B``), ``-L a,,b`` an empty key between them (a column with an empty header), as
    kubectl's."""
    keys: list[str] = []
    for value in values:
        if value == "":
            continue  # pflag: an empty value adds nothing
        try:
            keys.extend(next(csv.reader([value])))
        except (csv.Error, StopIteration):
            keys.append(value)
    return keys


def _fetch(api: Any, info: ResourceInfo, names: list[str], args: argparse.Namespace,
           failed: list[int]) -> list[dict[str, Any]]:
    ns = None if (args.all_namespaces and not names) else args.namespace
    if names:
        out = []
        for name in names:
            try:
                out.append(api.get(info, name, namespace=ns if info.namespaced else None))
            except errors.NotFound as e:
                if not args.ignore_not_found:
                    print(server_error(e), file=sys.stderr)
                    failed.append(1)
        return out
    lst = api.list(info, namespace=ns if info.namespaced else None, label_selector=args.selector,
                   field_selector=args.field_selector)
    return list(lst["items"])


#: kubectl's template printers: each ``-o`` name -> the printer it selects.
TEMPLATE_PRINTERS = {"go-template": "go-template", "go-template-file": "go-template", "template": "go-template",
                     "templatefile": "go-template", "jsonpath": "jsonpath", "jsonpath-file": "jsonpath",
                     "jsonpath-as-json": "jsonpath-as-json", "custom-columns": "custom-columns",
                     "custom-columns-file": "custom-columns"}
_FILE_FORMATS = ("go-template-file", "templatefile", "jsonpath-file", "custom-columns-file")


class OutputError(ValueError):
    """An ``-o`` kubectl has no printer for, or a template it cannot have (kubectl's message)."""


def _go_os_error(op: str, path: str, err: OSError) -> str:
    """Go's ``*PathError`` text: ``open /x: no such file or directory``, ``read /tmp: is a directory``."""
    if err.errno == errno.EISDIR:
        op = "read"
    return f"{op} {path}: {os.strerror(err.errno).lower() if err.errno else err}"


def output_format_error(fmt: str) -> str | None:
    """kubectl's error for an ``-o`` format it has no printer for, else None."""
    name = fmt.split("=", 1)[0]
    if fmt in ("", "wide", "yaml", "json", "name") or ("=" in fmt and name in TEMPLATE_PRINTERS) \
            or fmt in TEMPLATE_PRINTERS:
        return None
    return (f'unable to match a printer suitable for the output format "{fmt}", allowed formats are: '
            "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,"
            "jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml")


def resolve_output(args: argparse.Namespace) -> tuple[str, str]:
    """The printer ``-o``/``--template`` select and its template, as kubectl's print flags pick them.

    Returns ``(printer, template)``: printer one of ``""``, ``wide``, ``yaml``, ``json``, ``name``,
    ``go-template``, ``jsonpath``, ``jsonpath-as-json``, ``custom-columns``; the template text
    (read from the file for the ``-file`` formats). ``--template`` alone means ``-o go-template``;
    ``-o jsonpath --template=T`` takes ``T``.

    Raises:
        OutputError: an unknown format; ``template format specified but no template given``;
            ``custom-columns format specified but no custom columns given``; ``error reading
            --template F, open F: no such file or directory``.
    """
    fmt = args.output or ""
    template_flag = getattr(args, "template", "") or ""
    if not fmt and template_flag:
        fmt = "go-template"
    bad = output_format_error(fmt)
    if bad:
        raise OutputError(bad)
    name, _, value = fmt.partition("=")
    if name not in TEMPLATE_PRINTERS:
        return name, ""
    template = value or template_flag
    printer = TEMPLATE_PRINTERS[name]
    if not template:
        if printer == "custom-columns":
            raise OutputError("custom-columns format specified but no custom columns given")
        raise OutputError("template format specified but no template given")
    if name in _FILE_FORMATS:
        try:
            with open(template, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as e:
            where = "template" if printer == "custom-columns" else "--template"
            raise OutputError(f"error reading {where} {template}, {_go_os_error('open', template, e)}") from None
        if printer == "custom-columns":
            text = _columns_from_file(text)
        template = text
    return printer, template


def _columns_from_file(text: str) -> str:
    """``custom-columns-file``: a line of headers and a line of paths (whitespace-separated) as a
    ``HEADER:PATH,…`` spec.

    Raises:
        OutputError: kubectl's ``invalid template, missing spec line. …`` and friends.
    """
    lines = text.splitlines()
    expected = "Expected format is one line of space separated headers, one line of space separated column specs."
    if not lines:
        raise OutputError(f"invalid template, missing header line. {expected}")
    if len(lines) < 2:
        raise OutputError(f"invalid template, missing spec line. {expected}")
    headers, specs = lines[0].split(), lines[1].split()
    if len(headers) != len(specs):
        raise OutputError(f"number of headers ({len(headers)}) and field specifications ({len(specs)}) don't match")
    return ",".join(f"{h}:{p}" for h, p in zip(headers, specs))


def _parse_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool`` (None for what it refuses)."""
    return {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}.get(text)


def print_template(printer: str, template: str, data: Any, allow_missing: bool) -> int:
    """Print ``data`` (one object, or kubectl's ``List``) with a JSONPath or Go template, with
    kubectl's output and errors; returns the exit code.

    JSONPath: ``error: error parsing jsonpath T, MSG``; a failure on the data prints
    ``error: error executing jsonpath "T": Error executing template: MSG. Printing more
    information for debugging the template:`` and a dump of the object (Go's ``%#v``).
    ``jsonpath-as-json``: each expression's results as one indented JSON array.
    go-template: ``error: error parsing template T, template: output:1: MSG``; a failure on
    the data keeps what was written, adds kubectl's debugging text on stdout (``Error executing
    template: …``, the template, the raw JSON, ``%+v`` of the object) and says ``error: error
    executing template "T": MSG`` on stderr.
    """
    if printer in ("jsonpath", "jsonpath-as-json"):
        try:
            jp = parse_jsonpath(template, allow_missing_keys=allow_missing)
        except JSONPathParseError as e:
            return die(f"error parsing jsonpath {template}, {e}")
        try:
            if printer == "jsonpath":
                text = jp.execute(data)
            else:
                text = "".join(to_json([None if v is None else v for v in vals])
                               for vals in jp.find_results(data))
        except JSONPathError as e:
            sys.stderr.write("error: " + jsonpath_exec_error(template, e, data))
            return 1
        sys.stdout.write(text)
        return 0
    from ..gotemplate import TemplateError, TemplateParseError, parse_template

    try:
        tmpl = parse_template(template, missing_key_error=not allow_missing)
    except TemplateParseError as e:
        return die(f"error parsing template {template}, {e}")
    out: list[str] = []
    try:
        tmpl.execute(data, out)
    except TemplateError as e:
        sys.stdout.write("".join(out))
        sys.stdout.write(f"Error executing template: {e}. Printing more information for debugging the template:\n"
                         f"\ttemplate was:\n\t\t{template}\n"
                         f"\traw data was:\n\t\t{go_json(data)}\n"
                         f"\tobject given to template engine was:\n\t\t{go_v(data)}\n\n")
        sys.stdout.flush()
        return die(f"error executing template {go_quote(template)}: {e}")
    sys.stdout.write("".join(out))
    return 0


def _with_type(obj: Mapping[str, Any], info: ResourceInfo) -> dict[str, Any]:
    """Items of a list carry ``apiVersion``/``kind`` in kubectl's output."""
    return {"apiVersion": info.api_version, "kind": info.kind, **obj}


def print_objects(groups: list[tuple[ResourceInfo, list[dict[str, Any]]]], args: argparse.Namespace,
                  now: datetime, single: bool) -> int:
    """Print what ``get`` fetched in the ``-o`` format; returns 1 on a printing error (or an unknown format).

    As kubectl's, only ``-o yaml|json`` leave out ``metadata.managedFields`` (unless
    ``--show-managed-fields``): templates and custom columns see the whole object.
    """
    try:
        fmt, template = resolve_output(args)
    except OutputError as e:
        return die(str(e))
    allow_missing = _parse_bool(str(getattr(args, "allow_missing_template_keys", "true")))
    if allow_missing is None:
        value = args.allow_missing_template_keys
        return die(f'invalid argument "{value}" for "--allow-missing-template-keys" flag: '
                   f'strconv.ParseBool: parsing "{value}": invalid syntax')
    objs = [_with_type(o, info) for info, items in groups for o in items]
    if fmt in ("yaml", "json") and not args.show_managed_fields:
        objs = [strip_managed_fields(o) for o in objs]
    if args.sort_by and fmt not in ("", "wide"):
        try:
            objs = sort_by(objs, args.sort_by)
        except JSONPathError as e:
            return die(f"couldn't find any field with path \"{args.sort_by}\" in the list of objects: {e}")
    data: Any = objs[0] if single and len(objs) == 1 else list_object(objs)
    if fmt == "yaml":
        sys.stdout.write(to_yaml(data))
    elif fmt == "json":
        sys.stdout.write(to_json(data))
    elif fmt == "name":
        for o in objs:
            print(name_of(o))
    elif fmt in ("jsonpath", "jsonpath-as-json", "go-template"):
        if getattr(args, "watch", False):  # kubectl's watch prints each object on its own
            for o in objs:
                if print_template(fmt, template, o, allow_missing):
                    return 1
            return 0
        return print_template(fmt, template, data, allow_missing)
    elif fmt == "custom-columns":
        try:
            sys.stdout.write(custom_columns(objs, template, no_headers=args.no_headers))
        except JSONPathError as e:
            sys.stdout.write(getattr(e, "partial", ""))
            return die(str(e))
    else:  # "" or "wide"
        several = len(groups) > 1  # kubectl: several types requested (resource.MultipleTypesRequested)
        first = True
        for info, items in groups:
            if not items:
                continue
            if args.sort_by:
                try:
                    items = list(sort_by([_with_type(o, info) for o in items], args.sort_by))
                except JSONPathError as e:
                    return die(str(e))
            table = table_for(items, info.kind, now, info=info)
            text = render_table(table, wide=fmt == "wide", show_labels=args.show_labels,
                                no_headers=args.no_headers, show_kind=several or args.show_kind,
                                with_namespace=args.all_namespaces and info.namespaced,
                                kind=_kind_label(info), label_columns=args.label_columns)
            if not first:
                sys.stdout.write("\n")
            sys.stdout.write(text)
            first = False
    return 0


def run(args: argparse.Namespace) -> int:
    if not args.resources:
        return die("You must specify the type of resource to get. Use \"k8semu get all\" for a list of "
                   "common resources.")
    try:
        targets = parse_targets(args.resources)
    except UnknownType as e:  # perhaps a custom resource: one of the cluster's CRDs defines it
        try:
            targets = parse_targets_with_crds(args)
        except (UnknownType, ValueError):
            return die(str(e))
        if targets is None:
            return die(str(e))
    single = len(targets) == 1 and len(targets[0][1]) == 1
    try:
        printer, _ = resolve_output(args)
        bad_format = ""
    except OutputError as e:
        printer, bad_format = "", str(e)
    if bad_format and not single:  # whatever is found; one named object's NotFound would come first
        return die(bad_format)
    args.label_columns = label_column_keys(args.label_columns)
    if args.at and args.watch:
        return die("--at shows the past; it cannot be combined with --watch")
    if args.at:
        from ..session import open_cluster_at

        cluster = open_cluster_at(args)
    else:
        cluster = open_cluster(args, read_only=not args.watch)
    api = cluster.api
    if any(part.strip().lower() == "all" for part in args.resources[0].split(",")) and "/" not in args.resources[0]:
        targets = parse_targets(args.resources, api)  # ``all`` takes in the CRDs of that category
    _deprecation_warnings(targets)
    failed: list[int] = []
    groups = [(info, _fetch(api, info, names, args, failed)) for info, names in targets]
    named = any(names for _, names in targets)
    code = 0
    found = any(items for _, items in groups)
    structured = printer in ("yaml", "json", "jsonpath", "jsonpath-as-json", "go-template")
    if found or (structured and not named):
        code = print_objects(groups, args, cluster_now(cluster), single)
    elif not named:
        print(no_resources_message(args.namespace, args.all_namespaces,
                                   any(i.namespaced for i, _ in targets)), file=sys.stderr)
    if args.watch and not bad_format:
        code = _watch(cluster, targets, args) or code
    cluster.close()
    return 1 if failed else code


def _deprecation_warnings(targets: list[tuple[ResourceInfo, list[str]]]) -> None:
    """The ``Warning`` header the server sends with each request to a deprecated version (a
    CRD's ``deprecated: true`` version: ``example.org/v1beta1 Widget is deprecated; use
    example.org/v1 Widget`` or its ``deprecationWarning``; ``v1 ComponentStatus is deprecated
    in v1.19+``), printed as kubectl prints it: ``Warning: …`` on stderr, each text once."""
    seen: set[str] = set()
    for info, _ in targets:
        if info.deprecated and info.deprecated not in seen:
            seen.add(info.deprecated)
            print(f"Warning: {info.deprecated}", file=sys.stderr)


def _watch(cluster: Any, targets: list[tuple[ResourceInfo, list[str]]], args: argparse.Namespace) -> int:
    from ...api import selectors

    duration = parse_duration(args.run_for, allow_negative=False)
    info, names = targets[0]
    ns = None if (args.all_namespaces or not info.namespaced) else args.namespace
    prefix = info.prefix(ns)
    label = selectors.parse_label_selector(args.selector) if args.selector else None
    field = None
    if args.field_selector:
        field = selectors.validate_field_selector(info.plural, selectors.parse_field_selector(args.field_selector),
                                                  group=info.group)

    def matches(obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if names and meta.get("name") not in names:
            return False
        if label is not None and not label.matches(meta.get("labels") or {}):
            return False
        if field is not None and not field.matches(selectors.field_set(info.plural, obj, group=info.group)):
            return False
        return True

    printer, template = resolve_output(args)  # checked before the watch starts

    def on_record(rec: Any) -> None:
        if not rec.key.startswith(prefix):
            return
        obj = rec.object
        if not matches(obj):
            return
        if getattr(info, "crd", ""):  # a custom object as read through the version asked for
            obj = cluster.api.custom.read(info, obj)
        now = cluster.api.epoch + timedelta(seconds=rec.time)
        fmt = args.output or ""
        if printer in ("jsonpath", "jsonpath-as-json", "go-template", "custom-columns"):
            o = _with_type(obj, info)
            if printer == "custom-columns":
                sys.stdout.write(custom_columns([o], template, no_headers=True))
            else:
                print_template(printer, template, o, _parse_bool(str(args.allow_missing_template_keys)) is not False)
        elif fmt == "name":
            print(name_of(_with_type(obj, info)))
        elif fmt in ("yaml", "json"):
            o = _with_type(obj, info)
            if not args.show_managed_fields:
                o = strip_managed_fields(o)
            sys.stdout.write(to_yaml(o) + "---\n" if fmt == "yaml" else to_json(o))
        else:
            sys.stdout.write(render_table(table_for([obj], info.kind, now, info=info), wide=fmt == "wide",
                                          show_labels=args.show_labels, no_headers=True,
                                          with_namespace=args.all_namespaces and info.namespaced,
                                          kind=_kind_label(info), label_columns=args.label_columns))
        sys.stdout.flush()

    async def body(rt: Any) -> None:
        cluster.log.add_listener(on_record)

    try:
        run_session(cluster, body, settle=False, run_for=duration)
    finally:
        cluster.log.remove_listener(on_record)
    return 0
