"""``k8semu replace -f FILE``: kubectl replace — a PUT of each manifest object.

The object replaces the stored one whole (no ``resourceVersion`` in the
manifest means an unconditional update; one given must match, else the
server's 409). Prints ``deployment.apps/web replaced``; a failure is printed
as ``Error from server (NotFound): error when replacing "web.yaml":
deployments.apps "web" not found`` and the other documents go on.
``--force`` deletes each object, waits until it is gone (a wait recorded
for ``k8semu replay``, :class:`~k8semu.timeline.rerun.ClientWaits`), and
creates it again (``deployment.apps "web" deleted`` then
``deployment.apps/web replaced``), as kubectl. ``--validate=strict|warn|ignore`` as ``apply``'s
(:mod:`k8semu.cli.validate`). Then the cluster settles (or runs ``--for``).

``--dry-run=client|server`` as kubectl's: client sends nothing and prints
``deployment.apps/web replaced (dry run)`` (``-o``: the manifest's object with
its namespace), server sends the PUT with ``dryRun=All`` and prints ``…
replaced (server dry run)`` (``-o``: the server's answer); the log is left as
it was. With ``--force`` it is kubectl's ``error: --dry-run can not be used
when --force is set``. ``-o yaml|json|name`` prints the objects instead of the
lines (:class:`~k8semu.cli.commands.create.ObjectPrinter`).

As kubectl's ``CreateOrUpdateAnnotation``, an object that already has a
``kubectl.kubernetes.io/last-applied-configuration`` annotation (one read
back with ``get -o yaml`` after ``apply``) has it written anew, as
``--save-config`` would: the object as sent, without the annotation (so
with its ``resourceVersion``, ``uid``, ``status`` …). Replacing such an
object unchanged so still changes it: the annotation's new value, owned by
the ``--field-manager``, and a new ``resourceVersion``. An object without
it, replaced unchanged, is not written at all (as kube-apiserver: no new
``resourceVersion``, no managedFields entry for the manager).
"""

from __future__ import annotations

import argparse
import sys

import attrs

from ...api import errors
from ...timeline.rerun import ClientWaits
from ..output import (add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, dry_run_suffix,
                      print_warning, server_error)
from ..targets import add_run_flags, resolve_args, run_write
from ..validate import add_validate_flag, field_validation, unknown_field_warnings
from ..parser import GoBool, GoDuration
from ..printing import ObjectPrinter

FIELD_MANAGER = "kubectl-replace"


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("replace", help="replace objects by manifest (as kubectl replace -f)")
    r.add_argument("-f", "--filename", action="append", default=[], help="manifest file, directory or -")
    r.add_argument("-R", "--recursive", action="store_true")
    r.add_argument("-n", "--namespace")
    r.add_argument("--force", action="store_true", help="delete and re-create the objects")
    r.add_argument("--grace-period", type=int, default=-1)
    r.add_argument("--cascade", default="background", help="with --force: background (default), foreground or orphan")
    r.add_argument("--wait", action=GoBool, default=False,
                   help="accepted as kubectl's: with --force, the objects are always gone before they are created")
    r.add_argument("--timeout", action=GoDuration, default=0.0, metavar="DURATION",
                   help="with --force: how long to wait for the objects to be gone in virtual time (0: 1h)")
    r.add_argument("--subresource", default="", metavar="status|scale", help="replace this subresource of the objects")
    r.add_argument("--save-config", action=GoBool, default=False,
                   help="write the kubectl.kubernetes.io/last-applied-configuration annotation, as apply does")
    r.add_argument("--field-manager", default=FIELD_MANAGER, help=f"field manager (default {FIELD_MANAGER})")
    r.add_argument("--raw", default="", metavar="URI",
                   help="PUT the -f file as it is to this URI of the API server and print the answer")
    add_dry_run_flag(r)
    add_output_flag(r)
    add_run_flags(r)
    add_validate_flag(r)
    r.set_defaults(func=run, resources=[])


def _has_last_applied(obj: dict | None) -> bool:
    """Whether ``obj`` carries a non-empty last-applied-configuration annotation: kubectl's
    ``CreateOrUpdateAnnotation`` then writes it anew (``UpdateApplyAnnotation``) even without
    ``--save-config``."""
    from .apply import LAST_APPLIED

    return bool((((obj or {}).get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED))


def run(args: argparse.Namespace) -> int:
    if args.raw:
        from .create import _run_raw

        return _run_raw(args, "PUT")
    if not args.filename:
        return die("must specify --filename to replace")
    from .delete import _CASCADE

    cascade = _CASCADE.get(args.cascade.lower())
    if cascade is None:
        return die(f'invalid cascade value ({args.cascade}). Must be "background", "foreground", or "orphan"')
    dry = dry_run_strategy(args.dry_run)
    if dry != "none" and args.force:
        return die("--dry-run can not be used when --force is set")
    try:
        printer = ObjectPrinter.from_args(args)
    except ValueError as e:
        return die(str(e))
    suffix = dry_run_suffix(dry)
    failures: list[str] = []
    validation = field_validation(args.validate)

    async def body(cluster, rt) -> None:
        api = cluster.api
        for t in resolve_args(api, args):
            if args.save_config or _has_last_applied(t.obj):
                from .apply import with_last_applied

                t = attrs.evolve(t, obj=with_last_applied(t.obj or {}, t.namespace))
            context = f'error when replacing "{t.source}": '
            if validation == "Warn":
                for warning in unknown_field_warnings(t.obj, api):
                    print_warning(api, warning)
            try:
                if args.force:
                    kind = t.info.kind.lower() + (f".{t.info.group}" if t.info.group else "")
                    try:
                        old = api.delete(t.info, t.name, namespace=t.namespace, propagation_policy=cascade,
                                         grace_period_seconds=args.grace_period if args.grace_period >= 0 else None)
                        print(f'{kind} "{t.name}" deleted')
                        uid = old["metadata"].get("uid")

                        def gone() -> bool:
                            try:
                                return api.get(t.info, t.name, namespace=t.namespace)["metadata"].get("uid") != uid
                            except errors.NotFound:
                                return True

                        await ClientWaits(rt).until(gone, limit=args.timeout or 600.0)
                    except errors.NotFound:
                        pass
                    out = api.create(t.info, t.obj, namespace=t.namespace, field_manager=args.field_manager,
                                     field_validation=validation)
                elif dry == "client":
                    out = t.obj if t.namespace is None else {
                        **t.obj, "metadata": {**t.obj.get("metadata", {}), "namespace": t.namespace}}
                elif args.subresource == "scale":
                    replicas = ((t.obj or {}).get("spec") or {}).get("replicas", 0)
                    out = api.update_scale(t.info, t.name, replicas, namespace=t.namespace,
                                           field_manager=args.field_manager, dry_run=dry == "server")
                elif args.subresource and args.subresource not in t.info.subresources:
                    err = errors.NotFound("the server could not find the requested resource")
                    err.details = {}
                    raise err
                else:
                    out = api.update(t.info, t.obj, namespace=t.namespace, field_manager=args.field_manager,
                                     field_validation=validation, dry_run=dry == "server",
                                     **({"subresource": args.subresource} if args.subresource else {}))
            except errors.StatusError as e:
                failures.append(server_error(e, context))
                continue
            printer.print(out, f"{display_name(t.info, t.name)} replaced{suffix}")

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
