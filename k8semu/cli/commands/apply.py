"""``k8semu apply -f``: kubectl's apply, then the cluster converges in virtual time.

Client-side apply (default) works as kubectl's: each object carries the
``kubectl.kubernetes.io/last-applied-configuration`` annotation, byte for byte
the text kubectl writes (:func:`with_last_applied`: k8semu and kubectl can take
turns applying a manifest, each seeing ``unchanged``); an absent
object is created, a present one gets a three-way strategic merge patch
(last-applied, desired, live), and an empty patch is ``unchanged``.
``--server-side`` sends an apply patch with field manager ``kubectl``
instead. Documents that fail do not stop their siblings; the exit code is 1
when any failed.

``--validate=strict|warn|ignore`` (``true``/``false``) is kubectl's
(:mod:`k8semu.cli.validate`): strict by default (unknown fields refused by
the server), warn (a ``Warning: unknown field "…"`` line each, applied
anyway), ignore (no client-side check of ``apiVersion``/``kind``; unknown
fields not refused).

After applying, the cluster runs until it settles (or ``--for DURATION``)
and a short summary says what converged, what did not and why, the virtual
time it took and the wall time. Each line is marked ``ok``, ``!!`` (not
converged, and it will not by itself soon: a back-off, a failed scheduling)
or, when the cluster was still changing at the end (``--for`` shorter than
it needs, the settle limit reached, or an object that nothing has acted on
yet: :attr:`k8semu.cli.summary.Outcome.fresh`), ``..`` for what is still on
its way (``.. deployment.apps/web: 0/2 available (progressing)``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ...api import errors
from ...api.apiserver import APPLY_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, RequestContext
from ...api.manifest import ManifestError, resource_for
from ...api.patch import create_three_way_merge_patch
from ...api.resources import ResourceInfo
from ..durations import parse_duration
from ..output import add_dry_run_flag, die, display_name, dry_run_strategy, dry_run_suffix, print_warning, server_error
from ..parser import GoBool
from ..session import open_cluster, run_session
from ..summary import summarize
from ..validate import add_validate_flag, field_validation, load, unknown_field_warnings

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("apply", help="apply manifests (as kubectl apply -f), then let the cluster converge")
    a.add_argument("-f", "--filename", action="append", default=[], help="file, directory or - for stdin")
    a.add_argument("-R", "--recursive", action="store_true", help="process directories recursively")
    a.add_argument("-n", "--namespace", help="namespace for objects that do not name one")
    a.add_argument("--server-side", action="store_true", help="server-side apply (field manager kubectl)")
    a.add_argument("--force-conflicts", action="store_true", help="with --server-side: take over conflicting fields")
    add_dry_run_flag(a)
    a.add_argument("--for", dest="run_for", metavar="DURATION",
                   help="let this much virtual time pass instead of waiting to settle (e.g. 5m)")
    a.add_argument("-q", "--quiet", action="store_true", help="no convergence summary")
    a.add_argument("-l", "--selector", default="", help="apply only the objects whose labels match")
    a.add_argument("--field-manager", default=None,
                   help="field manager (default kubectl-client-side-apply; kubectl with --server-side)")
    a.add_argument("--overwrite", action=GoBool, default=True,
                   help="accepted as kubectl's (the default, true: the manifest's values win over the live ones)")
    a.add_argument("--openapi-patch", action=GoBool, default=True,
                   help="accepted as kubectl's (the default, true: strategic merge patches from the schema)")
    add_validate_flag(a)
    a.set_defaults(func=run)


def with_last_applied(obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """``obj`` as kubectl apply sends it: with ``namespace`` (a namespaced object's, set when the
    manifest names none) and kubectl's last-applied-configuration annotation, byte for byte the
    text kubectl writes (``GetModifiedConfiguration``): the object so far, any last-applied
    annotation of the manifest's own left out but ``metadata.annotations`` kept even when empty
    (``"annotations":{}``), as Go's JSON (:func:`_go_json`) plus a newline. So either tool's next
    apply of the same manifest is ``unchanged`` after the other's.
    """
    meta = dict(obj.get("metadata") or {})
    if namespace is not None:
        meta["namespace"] = namespace
    ann = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    text = _go_json({**obj, "metadata": {**meta, "annotations": ann}}) + "\n"
    return {**obj, "metadata": {**meta, "annotations": {**ann, LAST_APPLIED: text}}}


class ApplyError(errors.StatusError):
    """A step of :func:`apply_one` that the server refused: the server's error, plus which step.

    It is the server's :class:`~k8semu.api.errors.StatusError` (same ``code``,
    ``reason``, ``message``, ``details``; ``cause`` is the original) with
    ``step``: ``"retrieving"`` (the GET of the live object), ``"creating"``,
    ``"patching"`` (the three-way merge patch, ``patch`` its JSON) or
    ``"serverside"`` (the server-side apply patch).
    """

    def __init__(self, cause: errors.StatusError, step: str, info: Any, name: str, namespace: str | None,
                 patch: dict[str, Any] | None = None) -> None:
        super().__init__(cause.message, details=cause.details)
        self.code, self.reason = cause.code, cause.reason
        self.cause, self.step, self.patch = cause, step, patch
        self.info, self.name, self.namespace = info, name, namespace

    def context(self, source: str | None) -> str:
        """What kubectl apply puts before the server's message (``cmdutil.AddSourceToErr``).

        ``error when creating "web.yaml": ``; ``error when retrieving current
        configuration of:\\n<object>\\nfrom server for: "web.yaml": ``; ``error
        when applying patch:\\n<patch JSON>\\nto:\\n<object>\\nfor: "web.yaml": ``,
        where <object> is cli-runtime's ``Info.String()`` (``Resource: "apps/v1,
        Resource=deployments", GroupVersionKind: "apps/v1, Kind=Deployment"`` and
        ``Name: "web", Namespace: "default"`` on two lines). Nothing for a
        server-side apply (kubectl returns that error as it is) or without a source.
        """
        if not source or self.step == "serverside":
            return ""
        info = self.info
        gv = f"{info.group}/{info.version}"
        obj = (f'Resource: "{gv}, Resource={info.plural}", GroupVersionKind: "{gv}, Kind={info.kind}"\n'
               f'Name: "{self.name}", Namespace: "{self.namespace or ""}"')
        if self.step == "retrieving":
            return f'error when retrieving current configuration of:\n{obj}\nfrom server for: "{source}": '
        if self.step == "patching":
            return f'error when applying patch:\n{_go_json(self.patch)}\nto:\n{obj}\nfor: "{source}": '
        return f'error when creating "{source}": '


def _go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes kubectl's unstructured objects: compact, map keys
    sorted, ``<>&`` and U+2028/U+2029 escaped, other non-ASCII as it is; a whole number is an
    integer (``1.0`` is ``1``: Kubernetes decodes it as an int64), other floats, and integers
    beyond int64, as Go formats a float64 (``0.00001``, ``1e-7``, ``1e+21``)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(str(k))}:{_go_json(v)}"
                              for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    if isinstance(value, str):
        return _go_string(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        # beyond int64 Kubernetes decodes a number as a float64 (12345678901234567890 → 12345678901234567000)
        return str(value) if -2 ** 63 <= value < 2 ** 63 else _go_float(float(value))
    if isinstance(value, float):
        return _go_float(value)
    return _go_string(str(value))


def _go_string(text: str) -> str:
    """A JSON string as Go's encoder writes it (HTML-safe: ``<`` is ``\\u003c``)."""
    return (json.dumps(text, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _go_float(f: float) -> str:
    """A float as kubectl's JSON writes it (see :func:`_go_json`)."""
    import math
    from decimal import Decimal

    if math.isnan(f) or math.isinf(f):
        return json.dumps(f)  # Go refuses these; nothing better to write
    if f.is_integer() and abs(f) < 2 ** 63:
        return str(int(f))
    d = Decimal(repr(f))  # the shortest text that reads back as f, as Go's strconv picks
    if 1e-6 <= abs(f) < 1e21:
        return format(d, "f")
    sign, digits, exp = d.normalize().as_tuple()
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    e = exp + len(digits) - 1
    return f"{'-' if sign else ''}{mantissa}e{'-' if e < 0 else '+'}{abs(e) if e < 0 else f'{e:02d}'}"


def apply_one(api: Any, info: Any, obj: dict[str, Any], ns: str | None, *, server_side: bool,
              force: bool, dry: bool, validation: str = "Strict", field_manager: str | None = None,
              warnings: list[str] | None = None) -> str:
    """Apply one object; returns ``created`` / ``configured`` / ``unchanged`` / ``serverside-applied``.

    Client-side, as kubectl's ``applyOneObject``: GET the live object; if it is
    absent, create it (with the last-applied annotation); else send the
    three-way strategic merge patch, if any. ``validation`` is the requests'
    ``fieldValidation`` (``Strict``, ``Warn``, ``Ignore``); ``field_manager`` (``--field-manager``)
    replaces ``kubectl-client-side-apply`` (``kubectl`` server-side). The server's warnings
    (a ValidatingAdmissionPolicy's ``Warn``, a ratcheted CRD rule, unknown fields) are appended to
    ``warnings`` when given.

    Raises:
        ApplyError: the server refused a step (a StatusError: which step, for
            kubectl's message, see :meth:`ApplyError.context`).
    """
    name = (obj.get("metadata") or {}).get("name", "")
    ctx = RequestContext(warnings=warnings)
    if server_side:
        try:
            api.patch(info, name, obj, APPLY_PATCH, namespace=ns, field_manager=field_manager or "kubectl",
                      force=force, dry_run=dry, ctx=ctx)
        except errors.StatusError as e:
            raise ApplyError(e, "serverside", info, name, ns) from e
        return "serverside-applied"
    desired = with_last_applied(obj, ns)
    try:
        current = api.get(info, name, namespace=ns)
    except errors.NotFound:
        try:
            api.create(info, desired, namespace=ns, dry_run=dry, ctx=ctx,
                       field_manager=field_manager or "kubectl-client-side-apply", field_validation=validation)
        except errors.StatusError as e:
            raise ApplyError(e, "creating", info, name, ns) from e
        return "created"
    except errors.StatusError as e:
        raise ApplyError(e, "retrieving", info, name, ns) from e
    original_text = ((current.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    original = json.loads(original_text) if original_text else None
    patch = create_three_way_merge_patch(original, desired, current, f"{info.api_version}/{info.kind}")
    if not patch:
        return "unchanged"
    # a custom resource has no patch strategy to go by: kubectl sends a JSON merge patch
    ptype = MERGE_PATCH if getattr(info, "crd", "") else STRATEGIC_MERGE_PATCH
    try:
        api.patch(info, name, patch, ptype, namespace=ns, dry_run=dry, ctx=ctx,
                  field_manager=field_manager or "kubectl-client-side-apply", field_validation=validation)
    except errors.StatusError as e:
        raise ApplyError(e, "patching", info, name, ns, patch) from e
    return "configured"


def _nameless_error(obj: dict, info: ResourceInfo, ns: str | None, source: str, server_side: bool) -> str:
    """kubectl's refusal, before any request, of a document without ``metadata.name``: ``from
    PREFIX: cannot use generate name with apply`` for a ``generateName``; else, client-side, the
    failed GET of the current configuration (a three-line ``error when retrieving current
    configuration of:`` naming the resource), server-side ``resource name may not be empty``."""
    generate = (obj.get("metadata") or {}).get("generateName")
    if generate:
        return f"error: from {generate}: cannot use generate name with apply"
    if server_side:
        return "error: resource name may not be empty"
    gv = f"{info.group}/{info.version}"
    return (f"error: error when retrieving current configuration of:\n"
            f'Resource: "{gv}, Resource={info.plural}", GroupVersionKind: "{gv}, Kind={info.kind}"\n'
            f'Name: "", Namespace: "{ns or ""}"\n'
            f'from server for: "{source}": resource name may not be empty')


def _print_warnings(api: Any, warnings: list[str]) -> None:
    """The server's warnings on stderr as kubectl prints them (``Warning: …``), each text once."""
    for w in warnings:
        print_warning(api, w)


def _in_coming_namespace(e: ApplyError, ns: str | None, coming: set[str]) -> bool:
    """Whether ``e`` is only the dry run's ``namespaces "<ns>" not found`` for a Namespace
    that an earlier document of the same apply creates."""
    details = e.details or {}
    return (ns is not None and ns in coming and e.code == 404 and details.get("kind") == "namespaces"
            and details.get("name") == ns)


def _read_error(arg: str, e: OSError) -> str:
    """kubectl's words for a ``-f`` path it cannot read: ``open /x/web.yaml: permission denied`` (a
    file), ``error reading "/x": open /x/sub: permission denied`` (a directory it walks)."""
    import os

    from ..session import os_error_text

    if e.strerror is None or e.errno is None or e.filename is None:
        return os_error_text(e)
    name = os.fsdecode(e.filename)
    text = f"open {name}: {e.strerror[:1].lower()}{e.strerror[1:]}"
    if arg != "-" and os.path.isdir(name):
        return f"error reading {_go_json(arg)}: {text}"
    return text


def _defined_kinds(crd: dict[str, Any]) -> set[tuple[str, str]]:
    """The (apiVersion, kind) pairs a CRD manifest serves."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    kind = (spec.get("names") or {}).get("kind") if isinstance(spec.get("names"), dict) else None
    group = spec.get("group")
    return {(f"{group}/{v.get('name')}", kind) for v in spec.get("versions") or ()
            if isinstance(v, dict) and v.get("served") and kind and group}


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if not args.filename:
        return die("must specify one of -f and -k")  # kubectl's words (-k, kustomize, is not supported)
    run_for = parse_duration(args.run_for, allow_negative=False) if args.run_for else None
    validation = field_validation(args.validate)
    docs = []
    try:
        for f in args.filename:
            try:
                docs.extend(load(f, recursive=args.recursive, directive=validation))
            except OSError as e:
                return die(_read_error(f, e))
    except ManifestError as e:
        return die(str(e))
    if args.selector:  # kubectl's builder keeps the documents whose own labels match
        from ...api import selectors

        match = selectors.parse_label_selector(args.selector)
        docs = [d for d in docs if not isinstance(d.obj, dict)
                or match.matches(((d.obj or {}).get("metadata") or {}).get("labels") or {})]
    if not docs:
        return die("no objects passed to apply")
    mode = dry_run_strategy(args.dry_run)
    cluster = open_cluster(args, create=True)
    t0 = cluster.time
    dry = mode != "none"
    suffix = dry_run_suffix(mode)
    failed = 0
    applied: list[tuple[Any, str | None, str]] = []

    # First every document as a server-side dry run: what the server refuses is reported
    # without touching the log, and when nothing can be applied no session runs at all,
    # so bad input leaves the cluster file exactly as it was.
    todo: list[tuple[Any, Any, dict[str, Any], str | None]] = []
    coming: set[str] = set()  # Namespaces that documents before this one will create
    coming_kinds: set[tuple[str, str]] = set()  # (apiVersion, kind) that CRDs before this one define
    for doc in docs:
        try:
            info = resource_for(doc, cluster.api)
        except ManifestError as e:
            obj = doc.obj if isinstance(doc.obj, dict) else {}
            if doc.error is None and (obj.get("apiVersion"), obj.get("kind")) in coming_kinds:
                # a custom resource whose CRD an earlier document defines: resolved once that
                # CRD is in (kubectl would need a second apply; k8semu applies in order)
                todo.append((doc, None, obj, None))
                continue
            print(f"error: {e}", file=sys.stderr)
            if e.hint:
                print(e.hint, file=sys.stderr)
            failed += 1
            continue
        obj = doc.obj
        meta = obj.get("metadata") or {}
        ns = (meta.get("namespace") or args.namespace or "default") if info.namespaced else None
        if not meta.get("name"):
            print(_nameless_error(obj, info, ns, doc.source, args.server_side), file=sys.stderr)
            failed += 1
            continue
        try:
            apply_one(cluster.api, info, obj, ns, server_side=args.server_side,
                      force=args.force_conflicts, dry=True, validation=validation, field_manager=args.field_manager)
        except ApplyError as e:
            if not _in_coming_namespace(e, ns, coming):
                print(server_error(e, e.context(doc.source)), file=sys.stderr)
                failed += 1
                continue
            # kubectl applies in order: the Namespace an earlier document creates exists by
            # the time this one is sent (its real request still reports any other error)
        todo.append((doc, info, obj, ns))
        if info.kind == "Namespace" and not info.group:
            coming.add((obj.get("metadata") or {}).get("name") or "")
        if info.kind == "CustomResourceDefinition" and info.group == "apiextensions.k8s.io":
            coming_kinds.update(_defined_kinds(obj))
    if not todo:
        cluster.close()
        return 1


    async def body(rt):
        nonlocal failed
        api = cluster.api
        for doc, info, obj, ns in todo:
            name = (obj.get("metadata") or {}).get("name", "")
            if info is None:  # a custom resource of a CRD applied just before
                try:
                    info = resource_for(doc, api)
                except ManifestError as e:
                    print(f"error: {e}", file=sys.stderr)
                    if e.hint:
                        print(e.hint, file=sys.stderr)
                    failed += 1
                    continue
                meta = obj.get("metadata") or {}
                ns = (meta.get("namespace") or args.namespace or "default") if info.namespaced else None
            if info.deprecated:
                # a deprecated version's Warning header (a CRD's ``deprecated: true``), on the first
                # request for it; kubectl prints each warning text once
                print_warning(api, info.deprecated)
            if validation == "Warn":  # the server's warnings, which kubectl prints as they arrive
                for warning in unknown_field_warnings(obj, api):
                    print_warning(api, warning)
            server_warnings: list[str] = []
            try:
                verb = apply_one(api, info, obj, ns, server_side=args.server_side,
                                 force=args.force_conflicts, dry=dry, validation=validation,
                                 field_manager=args.field_manager, warnings=server_warnings)
            except ApplyError as e:
                _print_warnings(api, server_warnings)
                print(server_error(e, e.context(doc.source)), file=sys.stderr)
                failed += 1
                continue
            _print_warnings(api, server_warnings)
            print(f"{display_name(info, name)} {verb}{suffix}")
            applied.append((info, ns, name))

    _, settled = run_session(cluster, body, settle=not dry, run_for=run_for, discard=dry, failed=lambda: bool(failed))
    outcomes = summarize(cluster.api, applied) if not dry and applied else []
    if not args.quiet and outcomes:
        virtual = cluster.time - t0
        wall = time.perf_counter() - started
        # something nothing has acted on yet means the cluster was not settled, whatever the run said
        settled = settled and not any(o.fresh for o in outcomes)
        how = "settled" if settled else "still changing"
        print(f"\n{how} after {virtual:g}s of virtual time ({wall:.2f}s wall):")
        for o in outcomes:
            on_its_way = o.progressing and not settled
            mark = "ok " if o.ok else ".. " if on_its_way else "!! "
            print(f"  {mark}{o.name}: {o.text}{' (progressing)' if on_its_way else ''}")
    cluster.close()
    return 1 if failed else 0
