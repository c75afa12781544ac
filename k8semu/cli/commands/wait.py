"""``k8semu wait``: kubectl wait, in virtual time.

``wait --for=condition=Available deployment/web --timeout=60s``,
``--for=condition=Ready=false``, ``--for=create``, ``--for=delete``, ``--for=jsonpath='{.status.phase}'=Running``;
targets ``TYPE/NAME …`` or ``TYPE -l SELECTOR``. The cluster's components run
until every target meets the condition (``deployment.apps/web condition met``)
or ``--timeout`` of virtual time passes (default 30s, kubectl's):
``error: timed out waiting for the condition on deployments/web``, exit 1 (several that timed out:
one such line each, without ``error:``, as kubectl prints an aggregate of errors).
A named object that does not exist is the server's ``Error from server
(NotFound): pods "nope" not found``, exit 1, without waiting (after the
objects named before it, as kubectl waits for them in turn); with
``--for=delete`` it is met at once, silently, as kubectl ignores that NotFound.
The wait is recorded in the log (:class:`~k8semu.timeline.rerun.ClientWaits`),
so ``k8semu replay`` runs the cluster exactly as long.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...timeline.rerun import ClientWaits
from ..durations import parse_duration
from ..output import add_output_flag, die, display_name, server_error
from ..printing import ObjectPrinter
from ...api.jsonpath import JSONPathError, jsonpath_text
from ..session import open_cluster, run_session
from ..targets import TargetError, add_filename_flags, intermixed, resolve
from .get import UnknownType, parse_targets


def register(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("wait", help="wait for a condition on resources (as kubectl wait)")
    intermixed(w)
    w.add_argument("resources", nargs="*", metavar="TYPE/NAME | TYPE")
    w.add_argument("--for", dest="condition", required=True,
                   help="condition=NAME[=VALUE], create, delete, or jsonpath={EXPR}=VALUE")
    w.add_argument("-n", "--namespace", default="default")
    w.add_argument("-A", "--all-namespaces", action="store_true", help="list the objects of -l/--all in every namespace")
    add_filename_flags(w, "the resources to wait for")
    w.add_argument("-l", "--selector")
    w.add_argument("--field-selector", help="field selector, e.g. metadata.name=web")
    w.add_argument("--all", dest="select_all", action="store_true", help="every object of the types")
    w.add_argument("--timeout", default="30s")
    add_output_flag(w)
    w.set_defaults(func=run)


def _checker(spec: str):
    """(kind, predicate(obj or None) -> bool) for a ``--for`` value.

    Raises:
        ValueError: an unrecognised condition (kubectl's message).
    """
    if spec == "delete":
        return lambda obj: obj is None
    if spec == "create":  # kubectl >= 1.31
        return lambda obj: obj is not None
    if spec.startswith("condition="):
        rest = spec[len("condition="):]
        name, _, value = rest.partition("=")
        want = (value or "true").lower()

        def cond(obj: Any) -> bool:
            if obj is None:
                return False
            for c in (obj.get("status") or {}).get("conditions") or ():
                if str(c.get("type", "")).lower() == name.lower():
                    return str(c.get("status", "")).lower() == want
            return False
        return cond
    if spec.startswith("jsonpath="):
        rest = spec[len("jsonpath="):]
        close = rest.rfind("}")
        if not rest.startswith("{") or close < 0:
            raise ValueError(f"unrecognized condition: \"{spec}\"")
        expr, value = rest[:close + 1], rest[close + 1:]
        value = value[1:] if value.startswith("=") else None

        def jp(obj: Any) -> bool:
            if obj is None:
                return False
            try:
                got = jsonpath_text(expr, obj)
            except JSONPathError:
                return False
            return got != "" if value is None else got == value
        return jp
    raise ValueError(f'unrecognized condition: "{spec}"')


def run(args: argparse.Namespace) -> int:
    """kubectl wait: the objects named (``TYPE NAME…``, ``TYPE/NAME…``, ``-f``) or listed
    (``-l``, ``--field-selector``, ``--all``; ``-A``: every namespace), each printed as
    ``condition met`` (``-o``: the object) once it meets ``--for``."""
    try:
        check = _checker(args.condition)
        if args.resources:
            parse_targets(args.resources)  # an unknown type is an error before the cluster is read
        timeout = parse_duration(args.timeout, allow_negative=False)
        printer = ObjectPrinter.from_args(args)
    except UnknownType as e:
        return die(str(e))
    for_delete = args.condition == "delete"
    for_create = args.condition == "create"
    cluster = open_cluster(args)
    api = cluster.api
    try:
        targets = resolve(api, list(args.resources), filenames=args.filename, recursive=args.recursive,
                          selector=args.selector, select_all=args.select_all and not args.selector
                          and not args.field_selector, namespace=args.namespace,
                          all_namespaces=args.all_namespaces, field_selector=args.field_selector)
    except TargetError as e:
        cluster.close()
        return die(str(e))
    keys: list[tuple[Any, str | None, str]] = [(t.info, t.namespace, t.name) for t in targets]
    # kubectl waits for the objects one by one: the first that does not exist ends its visit with
    # the server's NotFound, after the wait for those before it (an error --for=delete ignores)
    missing: errors.NotFound | None = None
    for i, (info, ns, name) in enumerate(keys):
        if for_create:
            break  # not there yet is what --for=create waits out
        try:
            api.get(info, name, namespace=ns)
        except errors.NotFound as e:
            missing, keys = e, keys[:i]
            break
    if not (keys or missing or for_delete):
        cluster.close()
        return die("no matching resources found")

    seen: dict[tuple[Any, str | None, str], Any] = {}

    def current(info: Any, ns: str | None, name: str) -> Any:
        try:
            obj = api.get(info, name, namespace=ns)
        except errors.NotFound:
            return None
        seen[(info, ns, name)] = obj
        return obj

    met: list[tuple[Any, str | None, str]] = []
    pending = list(keys)

    def progress() -> bool:
        for k in list(pending):
            if check(current(*k)):
                pending.remove(k)
                met.append(k)
                printer.print(seen.get(k) or {"apiVersion": k[0].api_version, "kind": k[0].kind,
                                               "metadata": {"name": k[2]}},
                              f"{display_name(k[0], k[2])} condition met")
                sys.stdout.flush()
        return not pending

    async def body(rt: Any) -> bool:
        if progress():
            return True
        return await ClientWaits(rt).until(progress, limit=timeout)

    if keys:  # else nothing runs and nothing is written
        run_session(cluster, body, settle=False)
    cluster.close()
    if pending:
        # one line per object that timed out; with several, kubectl prints its aggregate of
        # errors one per line without the "error: " prefix
        lines = ["timed out waiting for the condition" if for_create else
                 f"timed out waiting for the condition on {info.plural}/{name}" for info, _, name in pending]
        if len(lines) == 1:
            return die(lines[0])
        for line in lines:
            print(line, file=sys.stderr)
        return 1
    if missing and not for_delete:
        print(server_error(missing), file=sys.stderr)
        return 1
    return 0
