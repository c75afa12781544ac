"""``k8semu taint nodes NODE key=value:Effect key:Effect-``: kubectl taint.

Specs as kubectl parses them: ``key=value:Effect`` / ``key:Effect`` add;
``key=value:Effect-``, ``key:Effect-`` and ``key-`` remove (the last: every
effect of the key). Effects: NoSchedule, PreferNoSchedule, NoExecute.

As kubectl's ``reorganizeTaints``: the new list is the added taints, then
the node's other taints (same key and effect = the same taint); without
``--overwrite`` a taint whose key and effect exist is ``error: node node-1
already has k taint(s) with same effect(s) and --overwrite
is false``; removing one that is not there is ``error: taint "k:NoSchedule"
not found``. The change is a strategic merge patch (field manager
``kubectl-taint``) and the line ``node/node-1 tainted`` / ``untainted`` /
``modified``. Then the cluster settles (or runs ``--for``) — NoExecute
taints evict pods that do not tolerate them.

``--dry-run=client`` sends nothing, ``--dry-run=server`` sends the patch with
``dryRun=All``; either way the log is left as it was and the line is the same
``node/node-1 tainted`` — kubectl's taint adds no ``(dry run)`` to it. ``-o
yaml|json|name`` prints the node instead, as each node's own printer
(:class:`~k8semu.cli.commands.create.ObjectPrinter`): for client dry run the
node with the new taints, as kubectl's typed node patched and then held
unstructured (JSON keys sorted), else the server's answer (typed).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import STRATEGIC_MERGE_PATCH
from ...api.patch import create_two_way_merge_patch
from ..output import add_dry_run_flag, add_output_flag, dry_run_strategy, server_error
from ..targets import TargetError, add_run_flags, intermixed, resolve, resource_type, run_write
from ..printing import ObjectPrinter, typed
from .label import split_resources_and_pairs

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
FIELD_MANAGER = "kubectl-taint"


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("taint", help="add or remove node taints (as kubectl taint)")
    intermixed(t)
    t.add_argument("resources", nargs="*", metavar="nodes NODE KEY=VAL:EFFECT")
    t.add_argument("-l", "--selector", help="label selector of the nodes")
    t.add_argument("--all", dest="select_all", action="store_true", help="every node")
    t.add_argument("--overwrite", action="store_true", help="replace taints with the same key and effect")
    add_dry_run_flag(t)
    t.add_argument("--field-manager", default=FIELD_MANAGER, help=f"field manager (default {FIELD_MANAGER})")
    add_output_flag(t)
    add_run_flags(t)
    t.set_defaults(func=run)


def taint_string(t: dict[str, Any]) -> str:
    """kubectl's ``Taint.ToString``: ``key=value:Effect``, ``key:Effect``, ``key=value`` or ``key``."""
    s = t["key"]
    if t.get("value"):
        s += f"={t['value']}"
    if t.get("effect"):
        s += f":{t['effect']}"
    return s


def parse_taints(specs: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(taints to add, taints to remove) from kubectl taint's specs.

    Raises:
        TargetError: ``invalid taint spec: X``, an unknown effect, or the same taint added and removed.
    """
    add: list[dict[str, Any]] = []
    remove: list[dict[str, Any]] = []
    for spec in specs:
        removing = spec.endswith("-")
        body = spec[:-1] if removing else spec
        key_value, _, effect = body.partition(":")
        key, eq, value = key_value.partition("=")
        if not key or (not removing and not effect) or (removing and eq and not effect):
            raise TargetError(f"invalid taint spec: {spec}")
        if effect and effect not in EFFECTS:
            raise TargetError(f"invalid taint effect: {effect}, unsupported taint effect")
        taint: dict[str, Any] = {"key": key}
        if value:
            taint["value"] = value
        if effect:
            taint["effect"] = effect
        (remove if removing else add).append(taint)
    for r in remove:
        if any(a["key"] == r["key"] and a.get("effect") == r.get("effect") for a in add):
            raise TargetError("can not both modify and remove the following taint(s) in the same command: "
                              + taint_string(r))
    return add, remove


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["key"] == b["key"] and a.get("effect") == b.get("effect")


def reorganize(node: dict[str, Any], to_add: list[dict[str, Any]], to_remove: list[dict[str, Any]],
               overwrite: bool) -> tuple[str, list[dict[str, Any]]]:
    """kubectl's ``updateTaints``: (operation, new taints).

    Raises:
        TargetError: a clash without ``--overwrite``, or a taint to remove that is not there.
    """
    old = list((node.get("spec") or {}).get("taints") or [])
    name = node["metadata"]["name"]
    if not overwrite:
        clash = [t for t in to_add if any(_same(t, o) for o in old)]
        if clash:
            shown = ",".join(t["key"] for t in clash)  # kubectl's CheckIfTaintsAlreadyExists: the keys
            raise TargetError(f"node {name} already has {shown} taint(s) with same effect(s) and "
                              "--overwrite is false")
    new = list(to_add) + [o for o in old if not any(_same(t, o) for t in to_add)]
    added = len(old) != len(new)
    deleted = False
    missing = []
    for r in to_remove:
        keep = [t for t in new if not (t["key"] == r["key"] and (not r.get("effect") or t.get("effect") == r["effect"]))]
        deleted = len(keep) != len(new)
        if not deleted:
            missing.append(f'taint "{taint_string(r)}" not found')
        new = keep
    if missing:
        raise TargetError(missing[0] if len(missing) == 1 else "[" + ", ".join(missing) + "]")
    if (added and deleted) or overwrite:
        return "modified", new
    return ("tainted" if added else "untainted"), new


def run(args: argparse.Namespace) -> int:
    positional, specs = split_resources_and_pairs(args.resources, "taint")
    # "key:NoSchedule" has neither "=" nor a trailing "-": kubectl also counts a ":" as a taint spec
    while positional and ":" in positional[-1] and "/" not in positional[-1]:
        specs.insert(0, positional.pop())
    if not specs:
        print("error: at least one taint update is required", file=sys.stderr)
        return 1
    to_add, to_remove = parse_taints(specs)
    dry = dry_run_strategy(args.dry_run)
    ObjectPrinter.from_args(args)  # (an unknown -o is an error before anything is sent)
    failures: list[str] = []

    async def body(cluster, rt) -> None:
        api = cluster.api
        nodes = resource_type("nodes")
        names: list[str] = []
        if positional:
            first = positional[0]
            kind = first.split("/", 1)[0]
            if resource_type(kind) != nodes:
                raise TargetError(f"invalid resource type {kind}, only node types are supported")
            names = [first.split("/", 1)[1]] if "/" in first else []
            names += [p.split("/", 1)[-1] for p in positional[1:]]
        if args.selector or args.select_all:
            names += [t.name for t in resolve(api, ["nodes"], selector=args.selector, select_all=args.select_all)]
        if not names:
            raise TargetError("resource(s) were provided, but no name was specified")
        for name in names:
            try:
                node = api.get(nodes, name)
                op, new = reorganize(node, to_add, to_remove, args.overwrite)
                spec = {**(node.get("spec") or {}), "taints": new}
                if not new:
                    spec.pop("taints")
                patched = {**node, "spec": spec}
                if dry == "client":  # kubectl patches its typed node's JSON, then holds it unstructured
                    patched = typed(patched)
                else:
                    patch = create_two_way_merge_patch(node, patched, "v1/Node")
                    patched = api.patch(nodes, name, patch, STRATEGIC_MERGE_PATCH, field_manager=args.field_manager,
                                        dry_run=dry == "server")
            except errors.StatusError as e:
                failures.append(server_error(e))
                continue
            except TargetError as e:
                failures.append(f"error: {e}")
                continue
            ObjectPrinter.from_args(args).print(patched, f"node/{name} {op}", go_struct=dry != "client")

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
