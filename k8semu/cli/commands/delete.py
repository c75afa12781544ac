"""``k8semu delete``: kubectl delete, then the deletion unfolds in virtual time.

As kubectl 1.3x: each object gets one DELETE with ``propagationPolicy``
from ``--cascade`` (Background by default) and ``gracePeriodSeconds`` from
``--grace-period`` / ``--now`` / ``--force``; the line ``deployment.apps "web"
deleted`` is printed as each DELETE succeeds (``force deleted`` with a zero
grace period). Errors are collected and printed at the end, each as the
server's ``Error from server (NotFound): …`` (``error when deleting "FILE":``
for ``-f``); ``--ignore-not-found`` (implied by ``--all`` / ``-l``) skips
NotFound.

With ``--wait`` (the default) the command then runs the cluster until every
deleted object is gone (same UID no longer present) — graceful pod
termination, finalizers, garbage collection — or ``--timeout`` passes
(kubectl's ``timed out waiting for the condition on pods/NAME``), and then
lets the cluster settle (or run ``--for``) as every write does; with
``--wait=false`` it does not wait for the objects (nor time out), it only lets
the cluster settle, so what the deletion sets off (a replacement pod, a
graceful termination) unfolds as after any write. The wait is recorded in the
log (:class:`~k8semu.timeline.rerun.ClientWaits`) so that ``k8semu replay``
waits the same way.
"""

from __future__ import annotations

import argparse
import sys

from ...api import errors
from ...timeline.rerun import ClientWaits
from ..durations import parse_duration
from ..output import add_dry_run_flag, die, dry_run_strategy, dry_run_suffix, server_error
from ..session import WAIT_LIMIT
from ..targets import Target, add_run_flags, add_target_flags, resolve_args, run_write

_CASCADE = {"background": "Background", "foreground": "Foreground", "orphan": "Orphan",
            "true": "Background", "false": "Orphan"}

IMMEDIATE_WARNING = ("Warning: Immediate deletion does not wait for confirmation that the running resource "
                     "has been terminated. The resource may continue to run on the cluster indefinitely.")


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "t"):
        return True
    if text.lower() in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f'invalid argument "{text}": strconv.ParseBool: parsing "{text}": invalid syntax')


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("delete", help="delete objects (as kubectl delete), then let the deletion unfold")
    add_target_flags(d, all_namespaces=True, field_selector=True)
    d.add_argument("--cascade", default="background", help="background (default), foreground or orphan")
    d.add_argument("--grace-period", type=int, default=-1, help="seconds given to pods to stop (-1: their own)")
    d.add_argument("--now", action="store_true", help="grace period 1 (immediate shutdown)")
    d.add_argument("--force", action="store_true", help="with --grace-period=0: remove at once")
    d.add_argument("--ignore-not-found", type=_bool, nargs="?", const=True, default=None)
    d.add_argument("--wait", type=_bool, nargs="?", const=True, default=True,
                   help="wait until the objects are gone (default true)")
    d.add_argument("--timeout", default="0s", help="how long to wait for the objects to be gone in virtual time (0: 1h)")
    d.add_argument("-o", "--output", default="", help="name: print resource/name instead of the line")
    d.add_argument("--raw", default="", metavar="URI",
                   help="send DELETE to this URI of the API server (-f: the body) and print the answer as it is")
    add_dry_run_flag(d)
    add_run_flags(d)
    d.set_defaults(func=run)


def grace_period(args: argparse.Namespace) -> int:
    """kubectl's effective grace period (-1 = the object's own), from ``--grace-period``,
    ``--now`` and ``--force``.

    Raises:
        ValueError: ``--now and --grace-period cannot be specified together``.
    """
    grace = args.grace_period
    if args.now:
        if grace != -1:
            raise ValueError("--now and --grace-period cannot be specified together")
        grace = 1
    if grace == 0 and not args.force:
        grace = 1  # kubectl keeps --grace-period=0 without --force from losing data
    if args.force and grace < 0:
        grace = 0
    return grace


def _label(t: Target) -> str:
    kind = t.info.kind.lower()
    return f"{kind}.{t.info.group}" if t.info.group else kind


def run(args: argparse.Namespace) -> int:
    cascade = _CASCADE.get(args.cascade.lower())
    if cascade is None:
        return die(f'invalid cascade value ({args.cascade}). Must be "background", "foreground", or "orphan".')
    if args.cascade.lower() in ("true", "false"):
        better = "background" if args.cascade.lower() == "true" else "orphan"
        print(f"warning: --cascade={args.cascade} is deprecated (boolean value) and can be replaced with "
              f"--cascade={better}.", file=sys.stderr)
    grace = grace_period(args)
    if args.output and args.output != "name":
        return die(f"unexpected -o output mode: {args.output}. We only support '-o name'")
    if args.force and grace > 0:
        return die("--force and --grace-period greater than 0 cannot be specified together")
    if args.raw:
        return _raw(args)
    timeout = parse_duration(args.timeout, allow_negative=False) or WAIT_LIMIT
    ignore_nf = args.ignore_not_found
    if ignore_nf is None:
        ignore_nf = bool(args.select_all or args.selector or args.field_selector)
    dry = dry_run_strategy(args.dry_run)
    suffix = dry_run_suffix(dry)
    verb = "force deleted" if grace == 0 else "deleted"
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        targets = resolve_args(api, args)
        if grace == 0 and args.force:
            print(IMMEDIATE_WARNING, file=sys.stderr)
        deleted: list[tuple[Target, str]] = []
        for t in targets:
            try:
                if dry == "client":
                    obj = api.get(t.info, t.name, namespace=t.namespace)
                else:
                    obj = api.delete(t.info, t.name, namespace=t.namespace, propagation_policy=cascade,
                                     grace_period_seconds=grace if grace >= 0 else None,
                                     dry_run=dry == "server")
            except errors.StatusError as e:
                if ignore_nf and isinstance(e, errors.NotFound):
                    continue
                context = f'error when deleting "{t.source}": ' if t.source else ""
                failures.append(server_error(e, context))
                continue
            print(f"{_label(t)}/{t.name}" if args.output == "name" else f'{_label(t)} "{t.name}" {verb}{suffix}')
            deleted.append((t, obj["metadata"].get("uid", "")))
        if not targets and (args.select_all or args.selector or args.field_selector):
            print("No resources found")
        if dry != "none" or not args.wait or not deleted:
            return

        def gone(item: tuple[Target, str]) -> bool:
            t, uid = item
            try:
                return api.get(t.info, t.name, namespace=t.namespace)["metadata"].get("uid") != uid
            except errors.NotFound:
                return True

        if not await ClientWaits(rt).until(lambda: all(gone(i) for i in deleted), limit=timeout):
            t = next(t for t, uid in deleted if not gone((t, uid)))
            failures.append(f"error: timed out waiting for the condition on {t.info.plural}/{t.name}")

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


def _raw(args: argparse.Namespace) -> int:
    """``delete --raw URI [-f FILE]``: one DELETE through the API server's HTTP front (the body
    from ``-f``), its answer printed as it is (:mod:`k8semu.cli.rawhttp`); then the cluster
    settles as after any write."""
    from ..rawhttp import print_raw_async, raw_flag_error

    error = raw_flag_error(args, file_required=False)
    if error is not None:
        return die(error)
    body = b""
    if args.filename:
        try:
            body = sys.stdin.buffer.read() if args.filename[0] == "-" else open(args.filename[0], "rb").read()
        except OSError as e:
            from .get import _go_os_error

            return die(_go_os_error("open", args.filename[0], e))
    codes: list[int] = []
    failures: list[str] = []

    async def run_raw(cluster, rt) -> None:
        codes.append(await print_raw_async(cluster.api, "DELETE", args.raw, body))
        if codes[-1]:
            failures.append(args.raw)  # refused: nothing changed

    run_write(args, run_raw, failures=failures)
    return codes[0] if codes else 1
