"""``k8semu node stop NODE`` / ``node start NODE``: a machine dies, or comes back.

A stopped node's kubelet and kube-proxy do not run: no heartbeats, no
status, no container work. Because each ``k8semu`` command is its own
session and every session starts the cluster's components afresh, the
fact must live in the log: ``node stop`` writes the annotation
``k8semu.io/stopped: "true"`` on the Node (a merge patch by the user, so
the log shows who pulled the plug and when) and stops the node's
components in the running session; :func:`~k8semu.sim.components.stopped_nodes` reads the
annotations back, and :func:`k8semu.sim.components.default_factories` leaves
those nodes' components out of every later session. ``node start`` removes
the annotation and starts fresh components (they list, then watch, as a
rebooted kubelet).

After the change the cluster runs ``--for`` (default 0: the command returns
at once; the consequences — NotReady after 40 s, NoExecute evictions after
5 min — unfold over the following commands, e.g. ``advance 6m``).
Prints ``node/node-1 stopped`` / ``node/node-1 started``.
"""

from __future__ import annotations

import argparse
import sys

from ...api import errors
from ...api.apiserver import MERGE_PATCH
from ..durations import parse_duration
from ..output import server_error
from ...sim.components import STOPPED_ANNOTATION, node_components
from ..session import open_cluster, run_session

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    n = sub.add_parser("node", help="stop or start a node's machine (its kubelet and kube-proxy)")
    n.add_argument("action", choices=["stop", "start"])
    n.add_argument("node", metavar="NODE")
    n.add_argument("--for", dest="run_for", metavar="DURATION", default="0s",
                   help="let this much virtual time pass afterwards (default 0)")
    n.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ...sim.components import default_factories

    run_for = parse_duration(args.run_for)
    stop = args.action == "stop"
    cluster = open_cluster(args)
    failed: list[str] = []

    async def body(rt) -> None:
        api = cluster.api
        try:
            node = api.get("nodes", args.node)
        except errors.StatusError as e:
            failed.append(server_error(e))
            return
        was_stopped = (node["metadata"].get("annotations") or {}).get(STOPPED_ANNOTATION) == "true"
        if was_stopped != stop:
            api.patch("nodes", args.node, {"metadata": {"annotations": {STOPPED_ANNOTATION: "true" if stop else None}}},
                      MERGE_PATCH)
        names = node_components(args.node)
        if stop:
            for name in names:
                if name in rt.components:
                    rt.stop(name)
        else:
            factories = default_factories(cluster)
            for name in names:
                if name in rt.components:
                    continue  # running already (the session started it)
                if name in rt.stopped:
                    await rt.start(name)
                elif name in factories:
                    rt.add(name, factories[name])
        print(f"node/{args.node} {'stopped' if stop else 'started'}")

    try:
        run_session(cluster, body, settle=False, run_for=run_for)
    finally:
        cluster.close()
    if failed:
        print(failed[0], file=sys.stderr)
        return 1
    return 0
