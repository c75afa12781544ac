"""``k8semu scale TYPE NAME --replicas=N``: kubectl scale through the ``scale`` subresource.

Deployments, ReplicaSets, StatefulSets and ReplicationControllers (any kind
with a ``scale`` subresource; others get the server's ``Error from server
(NotFound): the server could not find the requested resource``). As
kubectl, ``--current-replicas`` / ``--resource-version`` are preconditions
checked against the current Scale (``error: Expected replicas to be 3, was
2``). Prints ``deployment.apps/web scaled``; then the cluster settles (or
runs ``--for``) so the new pods appear or go.

As kubectl's: ``--replicas`` is a required flag (``error: required flag(s)
"replicas" not set``, before anything else); each named object is read first
and those that exist are scaled — when none does, ``error: no objects passed
to scale <why>`` (``deployments.apps "x" not found``; several reasons as
``[a, b]``), else each failure's ``Error from server (NotFound): …`` after
the ``scaled`` lines.
"""

from __future__ import annotations

import argparse
import sys

from ...api import errors
from ..output import add_dry_run_flag, add_output_flag, die, display_name, dry_run_strategy, dry_run_suffix, server_error
from ..parser import GoDuration
from ..printing import ObjectPrinter
from ..targets import add_run_flags, add_target_flags, resolve_args, run_write

FIELD_MANAGER = "kubectl-scale"


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scale", help="set the replicas of a workload (as kubectl scale)")
    add_target_flags(s, all_namespaces=True)
    # required, but checked in run() to say so in cobra's words
    s.add_argument("--replicas", type=int, default=None, help="the new number of replicas (required)")
    s.add_argument("--current-replicas", type=int, default=-1, help="precondition: the current replicas")
    s.add_argument("--resource-version", default="", help="precondition: the current resourceVersion")
    s.add_argument("--timeout", action=GoDuration, default=0.0, metavar="DURATION",
                   help="accepted as kubectl's (wait for the replicas): the cluster settles afterwards anyway")
    add_dry_run_flag(s)
    add_output_flag(s)
    add_run_flags(s)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.replicas is None:
        print('error: required flag(s) "replicas" not set', file=sys.stderr)
        return 1
    if args.replicas < 0:
        print("error: The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0",
              file=sys.stderr)
        return 1
    dry = dry_run_strategy(args.dry_run)
    suffix = dry_run_suffix(dry)
    try:
        printer = ObjectPrinter.from_args(args)
    except ValueError as e:
        return die(str(e))
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        targets = resolve_args(api, args)
        found, missing = [], []
        read: dict[int, dict] = {}
        for t in targets:  # kubectl's builder reads each object first
            try:
                read[id(t)] = api.get(t.info, t.name, namespace=t.namespace)
                found.append(t)
            except errors.StatusError as e:
                missing.append(e)
        if not found:
            why = ("" if not missing else f" {missing[0].message}" if len(missing) == 1
                   else f" [{', '.join(e.message for e in missing)}]")
            failures.append(f"error: no objects passed to scale{why}")
            return
        late = [server_error(e) for e in missing]  # kubectl returns them after scaling the rest
        for t in found:
            try:
                if args.current_replicas >= 0 or args.resource_version:
                    scale = api.get_scale(t.info, t.name, namespace=t.namespace)
                    have = scale["spec"].get("replicas", 0)
                    if args.current_replicas >= 0 and have != args.current_replicas:
                        failures.append(f"error: Expected replicas to be {args.current_replicas}, was {have}")
                        continue
                    rv = scale["metadata"].get("resourceVersion")
                    if args.resource_version and rv != args.resource_version:
                        failures.append(f"error: Expected resource version to be {args.resource_version}, was {rv}")
                        continue
                if dry != "client":
                    api.update_scale(t.info, t.name, args.replicas, namespace=t.namespace,
                                     field_manager=FIELD_MANAGER, dry_run=dry == "server")
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            # (-o: the object as it was read, before the scale, as kubectl prints it)
            if printer.print(read[id(t)], f"{display_name(t.info, t.name)} scaled{suffix}"):
                failures.append("")
        failures.extend(late)

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        if line:
            print(line, file=sys.stderr)
    return 1 if failures else 0
