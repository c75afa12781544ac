"""``k8semu cordon NODE`` / ``uncordon NODE``: mark nodes (un)schedulable, as kubectl.

kubectl's cordon helper: read the node; if ``spec.unschedulable`` already
has the wanted value print ``node/node-1 already cordoned`` (``already
uncordoned``); otherwise send the strategic merge patch
``{"spec":{"unschedulable":true}}`` (uncordon: ``null``, which removes the
field) and print ``node/node-1 cordoned`` (``uncordoned``). Nodes by name
(``node-1`` or ``node/node-1``) or ``-l SELECTOR``. Then the cluster
settles (or runs ``--for``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...api import errors
from ...api.apiserver import STRATEGIC_MERGE_PATCH
from ..output import add_dry_run_flag, dry_run_strategy, dry_run_suffix, server_error
from ..targets import Target, TargetError, add_run_flags, resolve, resource_type, run_write

__all__ = ["register", "cordon", "node_targets"]


def register(sub: argparse._SubParsersAction) -> None:
    for verb, help in (("cordon", "mark nodes unschedulable"), ("uncordon", "mark nodes schedulable")):
        p = sub.add_parser(verb, help=f"{help} (as kubectl {verb})")
        p.add_argument("nodes", nargs="*", metavar="NODE")
        p.add_argument("-l", "--selector", help="label selector of the nodes")
        add_dry_run_flag(p)
        add_run_flags(p)
        p.set_defaults(func=lambda args, v=verb: run(args, v == "cordon"))


def node_targets(api: Any, names: list[str], selector: str | None) -> list[Target]:
    """Nodes named (``node-1``, ``node/node-1``, ``nodes/node-1``) or selected by label.

    Raises:
        TargetError: nothing named, or a name of another type.
    """
    if not names and not selector:
        raise TargetError("USAGE: cordon NODE [flags]\nSee 'kubectl cordon -h' for help and examples")
    nodes = resource_type("nodes")
    out = []
    for n in names:
        if "/" in n:
            kind, _, n = n.partition("/")
            if resource_type(kind) != nodes:
                raise TargetError(f"invalid resource type {kind}, only node types are supported")
        out.append(Target(nodes, None, n))
    if selector:
        out.extend(resolve(api, ["nodes"], selector=selector))
    return out


def cordon(api: Any, name: str, desired: bool, *, dry_run: str = "none") -> str:
    """Cordon (``desired=True``) or uncordon one node as kubectl's cordon helper does.

    Returns:
        The printed line: ``node/NAME cordoned`` / ``already cordoned`` / ``uncordoned`` / …

    Raises:
        StatusError: the node cannot be read or patched.
    """
    node = api.get("nodes", name)
    word = "cordoned" if desired else "uncordoned"
    suffix = dry_run_suffix(dry_run)
    if bool((node.get("spec") or {}).get("unschedulable")) == desired:
        return f"node/{name} already {word}{suffix}"
    if dry_run != "client":
        api.patch("nodes", name, {"spec": {"unschedulable": True if desired else None}}, STRATEGIC_MERGE_PATCH,
                  dry_run=dry_run == "server")
    return f"node/{name} {word}{suffix}"


def run(args: argparse.Namespace, desired: bool) -> int:
    failures: list[str] = []
    dry = dry_run_strategy(args.dry_run)

    async def body(cluster, rt) -> None:
        api = cluster.api
        for t in node_targets(api, args.nodes, args.selector):
            try:
                print(cordon(api, t.name, desired, dry_run=dry))
            except errors.StatusError as e:
                failures.append(server_error(e))

    run_write(args, body, dry_run=dry != "none", failures=failures)
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
