"""``k8semu node stop NODE`` / ``node start NODE``: a machine dies, or comes back.

A stopped node's kubelet and kube-proxy do not run: no heartbeats, no
status, no container work. Because each ``k8semu`` command is its own
session and every session starts the cluster's components afresh, the
fact must live in the log: ``node stop`` lists the machine as stopped in the
ConfigMap ``kube-system/k8semu-machines`` (``data: {NODE: "stopped"}``,
written by the user, so the log shows who pulled the plug and when) and
``node start`` removes it (:func:`~k8semu.sim.components.set_machine_stopped`).
The ConfigMap, not the Node, holds it because the machine outlives its Node
object: a stopped machine whose Node is deleted stays stopped, and ``node
start`` boots it again. The write itself stops or starts the node's
components in the running session
(:class:`~k8semu.sim.components.MachineSupervisor`, which a replay runs
too), and :func:`~k8semu.sim.components.default_factories` leaves stopped
machines out of every later session. A started machine runs a fresh kubelet
(it lists, then watches, and registers its Node, creating it if it was
deleted), as a rebooted one.

NODE is a machine of the cluster configuration (``k8semu cluster info``),
whether or not its Node object exists; another name is an error as kubectl
reports a missing node (``Error from server (NotFound): nodes "x" not
found``, exit 1). A machine already in the asked state is left alone
(``node/NODE already stopped``, like ``kubectl cordon`` on a cordoned node).

After ``stop`` the cluster runs ``--for`` (default 0: the command returns at
once; the consequences — NotReady after 40 s, NoExecute evictions after 5 min
— unfold over the following commands, e.g. ``advance 6m``). After ``start``
it settles, as every write command does (the kubelet registers, the node
lifecycle controller lifts the ``unreachable`` taints, evicted pods' replacements
become Ready), unless ``--for`` is given.
Prints ``node/node-1 stopped`` / ``node/node-1 started``.
"""

from __future__ import annotations

import argparse
import sys

from ...api import errors
from ...api.apiserver import MERGE_PATCH
from ..durations import parse_duration
from ..output import server_error
from ...sim.components import STOPPED_ANNOTATION, set_machine_stopped
from ..session import open_cluster, run_session

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    n = sub.add_parser("node", help="stop or start a node's machine (its kubelet and kube-proxy)")
    n.add_argument("action", choices=["stop", "start"])
    n.add_argument("node", metavar="NODE")
    n.add_argument("--for", dest="run_for", metavar="DURATION",
                   help="let this much virtual time pass afterwards (default: 0 after stop; "
                        "after start, until the cluster settles)")
    n.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    stop = args.action == "stop"
    run_for = parse_duration(args.run_for) if args.run_for is not None else (0.0 if stop else None)
    cluster = open_cluster(args)
    failed: list[str] = []

    async def body(rt) -> None:
        api = cluster.api
        if args.node not in {n.name for n in cluster.nodes.nodes}:
            failed.append(server_error(errors.NotFound.of("nodes", "", args.node)))
            return
        changed = set_machine_stopped(api, args.node, stop)
        if not stop:
            # a mark left by k8semu versions that kept the stopped state on the Node
            try:
                node = api.get("nodes", args.node)
            except errors.NotFound:
                node = None
            if node is not None and STOPPED_ANNOTATION in (node["metadata"].get("annotations") or {}):
                api.patch("nodes", args.node, {"metadata": {"annotations": {STOPPED_ANNOTATION: None}}},
                          MERGE_PATCH)
        state = "stopped" if stop else "started"
        print(f"node/{args.node} {state}" if changed else f"node/{args.node} already {state}")

    try:
        run_session(cluster, body, settle=run_for is None, run_for=run_for, failed=lambda: bool(failed))
    finally:
        cluster.close()
    if failed:
        print(failed[0], file=sys.stderr)
        return 1
    return 0
