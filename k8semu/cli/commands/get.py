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

``-w``/``--watch`` prints the objects, then runs the cluster's components in
virtual time for ``--for`` (default 60s) and prints one row per change to a
matching object as it is written, through one printer as kubectl's watch: the
header once, each row laid out with the column widths so far (kubectl's tab
writer remembers them), ``-o yaml`` documents ``---``-separated.
``--watch-only`` prints the changes only; ``--output-watch-events`` prints each
as a watch event (an ``EVENT`` column ``ADDED``/``MODIFIED``/``DELETED``;
``{"type":…,"object":…}`` lines for ``-o json``). One type only (``you may only
specify a single resource type``); several names or ``-f`` objects are printed,
then refused, as kubectl's.

``-f FILE|DIR|- [-R]`` gets the objects the manifests name (in their own
namespace, else ``-n``'s), as kubectl's builder: tables one per run of
objects of one kind, names with their kinds when several kinds were found,
errors collected and printed after (``Error from server (NotFound): …``; one
as ``error: …``, several one a line), ``-l`` matching the live objects; one
object of a single file prints as itself, not a ``List``.
``--subresource=NAME`` gets that subresource of the named objects (``status``, ``resize``… print as the object; a
Scale prints as ``NAME AGE``); ``--raw URI`` prints the API server's answer as
it is (:mod:`k8semu.cli.rawhttp`); ``--server-print=false`` prints kubectl's own
``NAME AGE`` tables; ``--chunk-size`` is accepted (the output does not depend
on it).

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
from ...api.resources import OBJECT_SUBRESOURCES, ResourceInfo, lookup
from ...api.tables import render_table, table_for, table_lines
from ..durations import parse_duration
from ..output import die, list_error, server_error
from ...api.gofmt import go_json, go_quote, go_v
from ...api.jsonpath import (JSONPathError, JSONPathParseError, jsonpath_exec_error, parse_jsonpath,
                             relaxed_jsonpath)
from ..printing import (RememberingTabWriter, _yaml_nulls, custom_columns, list_object, name_of, sort_by,
                        strip_managed_fields, to_json, to_yaml)
from ..parser import GoBool
from ..session import open_cluster, run_session
from ..targets import TargetError, add_filename_flags, file_targets, intermixed, single_item_implied

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
    g.add_argument("-n", "--namespace", help="namespace (default: default)")
    g.add_argument("-A", "--all-namespaces", action="store_true")
    add_filename_flags(g, "the resources to get")
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
    g.add_argument("--subresource", default="", metavar="SUBRESOURCE",
                   help="get this subresource of the named objects (status, scale, resize, …)")
    g.add_argument("--server-print", action=GoBool, default=True,
                   help="the server's table columns (default true; false: NAME and AGE only)")
    g.add_argument("--chunk-size", type=int, default=500,
                   help="accepted as kubectl's (list in chunks of this size); the output is the same")
    g.add_argument("--raw", default="", metavar="URI",
                   help="GET this URI from the API server and print the response as it is")
    g.add_argument("-w", "--watch", action="store_true", help="print changes as they happen (runs the cluster)")
    g.add_argument("--watch-only", action=GoBool, default=False,
                   help="print the changes only, not the objects as they are first")
    g.add_argument("--output-watch-events", action=GoBool, default=False,
                   help="with -w/--watch-only: print each change as a watch event (ADDED, MODIFIED, DELETED)")
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
                out.append(get_subresource(api, info, name, ns if info.namespaced else None, args.subresource))
            except errors.StatusError as e:
                if not (args.ignore_not_found and isinstance(e, errors.NotFound)):
                    print(server_error(e), file=sys.stderr)
                    failed.append(1)
        return out
    try:
        lst = api.list(info, namespace=ns if info.namespaced else None, label_selector=args.selector,
                       field_selector=args.field_selector)
    except errors.StatusError as e:
        raise list_error(e, info, args.selector, args.field_selector) from None
    return list(lst["items"])


def get_subresource(api: Any, info: ResourceInfo, name: str, namespace: str | None,
                    subresource: str = "") -> dict[str, Any]:
    """GET ``name`` (``--subresource``) as the server answers it: the object itself for
    ``status``, ``approval``, ``ephemeralcontainers`` and ``resize``, an ``autoscaling/v1`` Scale
    for ``scale``; a subresource the
    kind does not have is the server's ``NotFound`` (``the server could not find the requested
    resource``), one it has but does not GET (``eviction``) its ``MethodNotAllowed``.

    Raises:
        StatusError: the server's error.
    """
    if subresource and subresource not in info.subresources:
        err = errors.NotFound("the server could not find the requested resource")
        err.details = {}
        raise err
    if subresource == "scale":
        return api.get_scale(info, name, namespace=namespace)
    if subresource not in OBJECT_SUBRESOURCES:
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    return api.get(info, name, namespace=namespace)


def print_errors(errs: Sequence[Any]) -> None:
    """Print what kubectl's builder collected (``ContinueOnError``), as ``cmdutil.CheckErr``
    does: one error as ``error: …`` (a server error as ``Error from server (…): …``); several,
    one line each without the ``error: `` prefix."""
    for e in errs:
        if isinstance(e, errors.StatusError):
            print(server_error(e), file=sys.stderr)
        elif len(errs) == 1:
            print(f"error: {e}", file=sys.stderr)
        else:
            print(e, file=sys.stderr)


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


def table_of(items: list[dict[str, Any]], info: ResourceInfo, now: datetime,
             args: argparse.Namespace) -> dict[str, Any]:
    """The server's Table of ``items`` (of ``info``) as ``get`` asks for it: a Scale's (``NAME``,
    ``DESIRED``, ``AVAILABLE``, ``AGE``) for ``--subresource=scale``, and ``NAME``, ``AGE`` for
    any kind with ``--server-print=false`` (kubectl's own default printer)."""
    if getattr(args, "subresource", "") == "scale":
        return table_for(items, "Scale", now)
    if not getattr(args, "server_print", True):
        return table_for(items, "", now)
    return table_for(items, info.kind, now, info=info)


def _sort_field_found(objs: Sequence[Mapping[str, Any]], expr: str) -> bool:
    """Whether ``--sort-by``'s path gives a value on at least one of ``objs`` (kubectl refuses to
    sort by a field none of them has); an expression that does not parse counts as found (its
    own error comes when sorting)."""
    try:
        jp = parse_jsonpath(relaxed_jsonpath(expr), allow_missing_keys=True)
        return any(r and r[0] for r in (jp.find_results(o) for o in objs))
    except JSONPathError:
        return True


def _no_sort_field(expr: str) -> str:
    return f'couldn\'t find any field with path "{relaxed_jsonpath(expr)}" in the list of objects'


def print_objects(groups: list[tuple[ResourceInfo, list[dict[str, Any]]]], args: argparse.Namespace,
                  now: datetime, single: bool, several: bool | None = None, infos: int | None = None) -> int:
    """Print what ``get`` fetched in the ``-o`` format; returns 1 on a printing error (or an unknown format).

    As kubectl's, only ``-o yaml|json`` leave out ``metadata.managedFields`` (unless
    ``--show-managed-fields``): templates and custom columns see the whole object.
    ``groups`` are printed as tables in order (one table per group); names carry their kind
    when ``several`` (by default: more than one group).

    ``--sort-by`` as kubectl's: a list whose objects all lack the field is its error
    (``couldn't find any field with path "{.x}" in the list of objects``); in tables, rows are
    sorted within one result, but ``infos`` (how many results kubectl's builder returned: one
    per listed type, one per named object) of two or more are sorted as results, which (being
    server-side Tables) lack the objects' fields: the same error, nothing printed; and a table
    of several rows none of which has the field prints nothing (then ``No resources found``).
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
    if args.sort_by and fmt not in ("", "wide") and not (single and len(objs) == 1):
        if objs and not _sort_field_found(objs, args.sort_by):
            return die(_no_sort_field(args.sort_by))
        try:
            objs = sort_by(objs, args.sort_by)
        except JSONPathError as e:
            return die(f"couldn't find any field with path \"{args.sort_by}\" in the list of objects: {e}")
    data: Any = objs[0] if single and len(objs) == 1 else list_object(objs)
    if fmt == "yaml":
        sys.stdout.write(to_yaml(_yaml_nulls(data)))  # a JSON null prints as null, as go-yaml writes it
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
        if several is None:
            several = len(groups) > 1  # kubectl: the infos are of several kinds (multipleGVKsRequested)
        if args.sort_by and (infos or 0) >= 2 and not _sort_field_found(
                [{"apiVersion": "meta.k8s.io/v1", "kind": "Table", "metadata": {}}], args.sort_by):
            return die(_no_sort_field(args.sort_by))
        first = True
        for info, items in groups:
            if not items:
                continue
            if args.sort_by and (infos or 0) < 2 and len(items) > 1 and not _sort_field_found(
                    [_with_type(o, info) for o in items], args.sort_by):
                # kubectl's sorting printer fails, and get does not look at a printer's error
                print(no_resources_message(args.namespace, args.all_namespaces, info.namespaced), file=sys.stderr)
                continue
            if args.sort_by:
                try:
                    items = list(sort_by([_with_type(o, info) for o in items], args.sort_by))
                except JSONPathError as e:
                    return die(str(e))
            table = table_of(items, info, now, args)
            text = render_table(table, wide=fmt == "wide", show_labels=args.show_labels,
                                no_headers=args.no_headers, show_kind=several or args.show_kind,
                                with_namespace=args.all_namespaces and info.namespaced,
                                kind=_kind_label(info), label_columns=args.label_columns)
            if not first and not args.no_headers:
                sys.stdout.write("\n")
            sys.stdout.write(text)
            first = False
    return 0


def _check_flags(args: argparse.Namespace) -> str | None:
    """kubectl get's ``Complete``/``Validate`` refusals of flag combinations (its message), else None."""
    if args.raw:
        if args.resources:
            return "arguments may not be passed when --raw is specified"
        if args.watch or args.watch_only or args.selector:
            return "--raw may not be specified with other flags that filter the server request or alter the output"
        if args.output:
            return "--raw and --output are mutually exclusive"
        return None
    if args.show_labels and args.output not in ("", "wide"):
        return f"--show-labels option cannot be used with {args.output} printer"
    if args.output_watch_events and not (args.watch or args.watch_only):
        return "--output-watch-events option can only be used with --watch or --watch-only"
    return None


def _open(args: argparse.Namespace, *, write: bool = False) -> Any:
    """The cluster ``get`` reads: as it was at ``--at``, else now (``write``: to run it, for ``-w``)."""
    if getattr(args, "at", None):
        from ..session import open_cluster_at

        return open_cluster_at(args)
    return open_cluster(args, read_only=not write)


def run(args: argparse.Namespace) -> int:
    explicit_ns = args.namespace is not None and not args.all_namespaces
    args.namespace = args.namespace or "default"
    watching = args.watch or args.watch_only
    bad = _check_flags(args)
    if bad:
        return die(bad)
    if args.raw:
        from ..rawhttp import RawError, check_raw_uri, print_raw

        try:
            check_raw_uri(args.raw)
        except RawError as e:
            return die(str(e))
        cluster = _open(args)
        try:
            return print_raw(cluster.api, "GET", args.raw)
        finally:
            cluster.close()
    if args.sort_by and watching:
        print("warning: --watch requested, --sort-by will be ignored for watch events received" if args.watch
              else "warning: --watch-only requested, --sort-by will be ignored", file=sys.stderr)
    if args.filename:
        if args.resources:
            return die("when paths, URLs, or stdin is provided as input, you may not specify resource "
                       "arguments as well")
        return _run_files(args, explicit_ns)
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
    if args.at and watching:
        return die("--at shows the past; it cannot be combined with --watch")
    named = any(names for _, names in targets)
    if args.all_namespaces and any(names and info.namespaced for info, names in targets):
        return die("a resource cannot be retrieved by name across all namespaces")
    if args.subresource and not all(names for _, names in targets):
        return die("subresource cannot be used when bulk resources are specified")
    if watching and len(targets) > 1:
        return die("you may only specify a single resource type")
    cluster = _open(args, write=watching)
    api = cluster.api
    if any(part.strip().lower() == "all" for part in args.resources[0].split(",")) and "/" not in args.resources[0]:
        targets = parse_targets(args.resources, api)  # ``all`` takes in the CRDs of that category
    _deprecation_warnings(targets)
    try:
        if watching:
            if bad_format:
                return die(bad_format)
            return _watch_targets(cluster, targets[0], args)
        failed: list[int] = []
        groups = [(info, _fetch(api, info, names, args, failed)) for info, names in targets]
        code = 0
        found = any(items for _, items in groups)
        structured = printer in ("yaml", "json", "name", "jsonpath", "jsonpath-as-json", "go-template",
                                 "custom-columns")
        # kubectl's builder returns one result per listed type and one per object found by name
        results = [(info, items) for (info, names), (_, items) in zip(targets, groups) if not names or items]
        if found or (structured and not named):
            code = print_objects(groups, args, cluster_now(cluster), single,
                                 several=len({info for info, _ in results}) > 1,
                                 infos=sum(len(items) if names else 1 for (_, names), (_, items) in zip(targets, groups)))
        elif not named:
            print(no_resources_message(args.namespace, args.all_namespaces,
                                       any(i.namespaced for i, _ in targets)), file=sys.stderr)
        return 1 if failed else code
    finally:
        cluster.close()


def _gvr(info: ResourceInfo) -> str:
    """apimachinery's ``GroupVersionResource.String()``: ``apps/v1, Resource=deployments``."""
    return f"{info.group}/{info.version}, Resource={info.plural}"


def _run_files(args: argparse.Namespace, explicit_ns: bool) -> int:
    """``get -f FILE|DIR|- [-R]``: each document's object as the server has it now, as kubectl's
    builder fetches them (``Latest``), errors collected (``ContinueOnError``).

    An object is looked up in its document's namespace, else ``-n``'s (``default``); with
    ``-A``, a namespaced document that names none is kubectl's ``no namespace set on resource
    apps/v1, Resource=deployments "web"``. ``-l`` keeps the objects whose live labels match;
    a document in another namespace than an explicit ``-n`` is kubectl's mismatch error.
    Tables are printed one per run of objects of the same kind, in document order, names
    prefixed with their kind when several kinds were found. ``-o yaml|json|name|…`` of the one
    object of a single file prints it (not a ``List``), and stops at an error.
    """
    from ...api import selectors

    try:
        printer, _ = resolve_output(args)
    except OutputError as e:
        return die(str(e))
    args.subresource = ""  # kubectl fetches a file's objects themselves, whatever --subresource says
    args.label_columns = label_column_keys(args.label_columns)
    watching = args.watch or args.watch_only
    if args.at and watching:
        return die("--at shows the past; it cannot be combined with --watch")
    cluster = _open(args, write=watching)
    try:
        api = cluster.api
        problems: list[tuple[int, str]] = []
        try:
            targets = file_targets(args.filename, recursive=args.recursive, validation="Ignore", api=api,
                                   namespace=args.namespace if explicit_ns else None, errors=problems,
                                   default_namespace="" if args.all_namespaces else args.namespace)
        except TargetError as e:
            return die(str(e))
        label = selectors.parse_label_selector(args.selector) if args.selector else None
        errs: list[Any] = []
        found: list[tuple[ResourceInfo, dict[str, Any]]] = []
        for i, t in enumerate(targets):
            errs.extend(text for at, text in problems if at == i)
            if not t.name:
                obj = t.obj or {}  # kubectl fetches nothing for a document without a name
            elif t.info.namespaced and not t.namespace:
                errs.append(f'no namespace set on resource {_gvr(t.info)} "{t.name}"')
                continue
            else:
                try:
                    obj = api.get(t.info, t.name, namespace=t.namespace)
                except errors.StatusError as e:
                    if not (args.ignore_not_found and isinstance(e, errors.NotFound)):
                        errs.append(e)
                    continue
            if label is not None and not label.matches((obj.get("metadata") or {}).get("labels") or {}):
                continue
            if t.problem:
                errs.append(t.problem)
                continue
            found.append((t.info, obj))
        errs.extend(text for at, text in problems if at >= len(targets))
        if watching:
            if errs:
                print_errors(errs[:1])
                return 1
            return _watch_found(cluster, found, args)
        single = single_item_implied(args.filename)
        if printer not in ("", "wide"):
            if errs and single:
                print_errors(errs)
                return 1
            if not found and args.ignore_not_found:
                print_errors(errs)
                return 1 if errs else 0
            groups = [(info, [obj]) for info, obj in found]
            code = print_objects(groups, args, cluster_now(cluster), single)
            print_errors(errs)
            return 1 if errs else code
        groups: list[tuple[ResourceInfo, list[dict[str, Any]]]] = []
        for info, obj in found:
            if groups and groups[-1][0] == info:
                groups[-1][1].append(obj)
            else:
                groups.append((info, [obj]))
        code = 0
        if found:
            code = print_objects(groups, args, cluster_now(cluster), single,
                                 several=len({info for info, _ in found}) > 1, infos=len(found))
        elif not errs and not args.ignore_not_found:
            print(no_resources_message(args.namespace, args.all_namespaces), file=sys.stderr)
        print_errors(errs)
        return 1 if errs else code
    finally:
        cluster.close()


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


#: kubectl's EVENT cells (``formatEventType``): the types padded to one width.
_EVENT_CELLS = {"ADDED": "ADDED   ", "MODIFIED": "MODIFIED", "DELETED": "DELETED ", "ERROR": "ERROR   "}


class _WatchPrinter:
    """kubectl's printer of ``get -w``/``--watch-only``: one printer for the objects as they are
    and every change after, so a table's header is printed once (with the first row printed)
    and ``-o yaml`` documents are ``---``-separated across all of them.

    With ``--output-watch-events`` each object is a watch event: a first ``EVENT`` column
    (``ADDED``, ``MODIFIED``, ``DELETED``) in tables; ``{"type":…,"object":…}`` on one line for
    ``-o json``, ``object:``/``type:`` for ``-o yaml`` (the object whole, managed fields
    included, as kubectl prints a ``WatchEvent``); templates and custom columns see the event.
    """

    def __init__(self, info: ResourceInfo, args: argparse.Namespace) -> None:
        self.info, self.args = info, args
        self.printer, self.template = resolve_output(args)
        self.allow_missing = _parse_bool(str(args.allow_missing_template_keys)) is not False
        self.headers_done = bool(args.no_headers)
        self.documents = 0
        self.writer = RememberingTabWriter()  # one for the whole watch: its columns only widen

    def print(self, items: list[tuple[str, dict[str, Any]]], now: datetime) -> None:
        """Print ``items`` (``(event type, object)``) together (one table flush), at ``now``."""
        if not items:
            return
        args, events = self.args, self.args.output_watch_events
        printer = self.printer
        if printer in ("", "wide"):
            sys.stdout.write(self._table(items, now))
        elif printer == "custom-columns":
            data = [{"type": t, "object": o} if events else _with_type(o, self.info) for t, o in items]
            sys.stdout.write(custom_columns(data, self.template, no_headers=self.headers_done, writer=self.writer))
            self.headers_done = True
        for etype, obj in items if printer not in ("", "wide", "custom-columns") else ():
            typed = _with_type(obj, self.info)
            if printer == "name":
                print(name_of(typed))
            elif printer in ("yaml", "json"):
                if events:
                    data = {"type": etype, "object": typed}
                else:
                    data = typed if args.show_managed_fields else strip_managed_fields(typed)
                if printer == "json":
                    sys.stdout.write('{"type":' + go_json(etype) + ',"object":' + go_json(typed) + "}\n"
                                     if events else to_json(data))
                else:
                    sys.stdout.write(("---\n" if self.documents else "") + to_yaml(_yaml_nulls(data)))
                self.documents += 1
            else:
                print_template(printer, self.template, {"type": etype, "object": typed} if events else typed,
                               self.allow_missing)
        sys.stdout.flush()

    def _table(self, items: list[tuple[str, dict[str, Any]]], now: datetime) -> str:
        args, info = self.args, self.info
        table = table_of([o for _, o in items], info, now, args)
        with_ns = args.all_namespaces and info.namespaced
        if args.output_watch_events:
            columns = list(table["columnDefinitions"])
            rows = [dict(r, cells=list(r["cells"])) for r in table["rows"]]
            if with_ns:  # kubectl's decoration puts NAMESPACE first, then prepends EVENT
                columns.insert(0, {"name": "Namespace", "type": "string", "format": "", "priority": 0})
                for row, (_, obj) in zip(rows, items):
                    row["cells"].insert(0, (obj.get("metadata") or {}).get("namespace", ""))
                with_ns = False
            columns.insert(0, {"name": "Event", "type": "string", "format": "", "priority": 0})
            for row, (etype, _) in zip(rows, items):
                row["cells"].insert(0, _EVENT_CELLS.get(etype, etype))
            table = {**table, "columnDefinitions": columns, "rows": rows}
        lines = table_lines(table, wide=self.printer == "wide", show_labels=args.show_labels,
                            no_headers=self.headers_done, with_namespace=with_ns, kind=_kind_label(info),
                            label_columns=args.label_columns)
        self.headers_done = True
        return self.writer.write(lines)


def _watch_targets(cluster: Any, target: tuple[ResourceInfo, list[str]], args: argparse.Namespace) -> int:
    """``get TYPE [NAME…] -w``: the objects (one GET each, the first error ends it; or the
    LIST), then the changes, as kubectl's ``watch``. Several names are printed, then refused:
    ``you may only watch a single resource or type of resource at a time``."""
    info, names = target
    api = cluster.api
    ns = None if (args.all_namespaces or not info.namespaced) else args.namespace
    if names:
        objs = []
        for name in names:
            try:
                objs.append(api.get(info, name, namespace=ns))
            except errors.StatusError as e:
                print(server_error(e), file=sys.stderr)
                return 1
        found = [(info, o) for o in objs]
        return _watch_found(cluster, found, args, ns=ns, names=names,
                            too_many="you may only watch a single resource or type of resource at a time")
    try:
        items = api.list(info, namespace=ns, label_selector=args.selector,
                         field_selector=args.field_selector)["items"]
    except errors.StatusError as e:
        print(server_error(list_error(e, info, args.selector, args.field_selector)), file=sys.stderr)
        return 1
    return _watch_found(cluster, [(info, o) for o in items], args, ns=ns, listed=info)


def _watch_found(cluster: Any, found: list[tuple[ResourceInfo, dict[str, Any]]], args: argparse.Namespace, *,
                 ns: str | None = None, names: list[str] | None = None, listed: ResourceInfo | None = None,
                 too_many: str | None = None) -> int:
    """Print ``found`` (unless ``--watch-only``), then every change to them (``listed``: to any
    object of that resource the selectors match) for ``--for`` of virtual time.

    ``-f`` objects are watched one at a time: several are printed, then refused
    (``watch is only supported on individual resources and resource collections - 2 resources
    were found``).
    """
    from ...api import selectors

    duration = parse_duration(args.run_for, allow_negative=False)
    if listed is None and not found:
        return 0
    info = listed or found[0][0]
    if names is None and listed is None:  # -f: the one object, in its own namespace
        meta = found[0][1].get("metadata") or {}
        ns, names = (meta.get("namespace") if info.namespaced else None), [meta.get("name", "")]
        if len(found) > 1:
            too_many = ("watch is only supported on individual resources and resource collections - "
                        f"{len(found)} resources were found")
    out = _WatchPrinter(info, args)
    if not args.watch_only:
        out.print([("ADDED", o) for _, o in found], cluster_now(cluster))
    if too_many and len(found) > 1:
        return die(too_many)
    prefix = info.prefix(ns)
    label = selectors.parse_label_selector(args.selector) if args.selector and listed else None
    field = None
    if args.field_selector and listed:
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

    def event_type(rec: Any, obj: Mapping[str, Any]) -> str | None:
        """The event a watch with these selectors sends for ``rec`` (None: none), as the
        server's watch cache: an object that starts or stops matching is ADDED or DELETED."""
        now = matches(obj)
        if rec.type in ("ADDED", "DELETED") or (label is None and field is None):
            return rec.type if now else None
        try:
            prev = cluster.log.get(rec.key, rec.revision - 1)
        except Exception:  # noqa: BLE001 - compacted away: as if it did not match before
            prev = None
        before = prev is not None and matches(prev.object)
        if now:
            return "MODIFIED" if before else "ADDED"
        return "DELETED" if before else None

    def on_record(rec: Any) -> None:
        if not rec.key.startswith(prefix):
            return
        obj = rec.object
        etype = event_type(rec, obj)
        if etype is None:
            return
        if getattr(info, "crd", ""):  # a custom object as read through the version asked for
            obj = cluster.api.custom.read(info, obj)
        out.print([(etype, obj)], cluster.api.epoch + timedelta(seconds=rec.time))

    async def body(rt: Any) -> None:
        cluster.log.add_listener(on_record)

    try:
        run_session(cluster, body, settle=False, run_for=duration)
    finally:
        cluster.log.remove_listener(on_record)
    return 0
