"""``k8semu explain-scheduling POD``: why the scheduler put a pod where it did.

The scheduler keeps its explanations in memory only and a CLI process is
short-lived, so the decision is re-derived: the log is read at the revision
just before the pod's ``Binding`` write by ``default-scheduler``; a scheduler
cache is rebuilt from the nodes, assigned pods and other objects the
scheduler watches as they were then; and the profile's framework
(:func:`k8semu.scheduler.new_frameworks`) runs ``schedule_one`` on that
snapshot. A Pending pod is explained on the current state. Printed: each
node's Filter verdict (with the rejecting plugin and reasons), each Score
plugin's raw -> normalised x weight = weighted score and the total, then the
chosen node. Tie-breaking among equal totals uses a fresh seeded RNG, so when
several nodes tie the line names the node actually bound.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

from ...api import errors
from ..output import server_error
from ..session import open_cluster_at

_OBJECT_KINDS = ("namespaces", "persistentvolumeclaims", "persistentvolumes", "storageclasses",
                 "poddisruptionbudgets", "services", "replicationcontrollers", "replicasets", "statefulsets")


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("explain-scheduling", help="re-derive the scheduler's decision for a pod")
    e.add_argument("pod")
    e.add_argument("-n", "--namespace", default="default")
    from ...timeline.view import add_at_argument

    add_at_argument(e)
    e.set_defaults(func=run)


def binding_revision(log: Any, key: str) -> tuple[int, str] | None:
    """The revision and node of the write by ``default-scheduler`` that set the pod's ``spec.nodeName``."""
    out = None
    prev_node = None
    for rec in log.history(key):
        node = (rec.object.get("spec") or {}).get("nodeName") if rec.type != "DELETED" else None
        if node and not prev_node and rec.actor == "default-scheduler":
            out = (rec.revision, node)
        prev_node = node
    return out


def rebuild_cache(api: Any, revision: int | None) -> Any:
    """The scheduler's cache as its informers would have filled it at ``revision`` (None: now)."""
    from ...scheduler import Cache

    rv = str(revision) if revision else None
    cache = Cache()
    nodes = api.list("nodes", resource_version=rv)["items"]
    for node in nodes:  # key order, as the informer's initial list adds them
        cache.add_node(node)
    for plural in _OBJECT_KINDS:
        try:
            for obj in api.list(plural, resource_version=rv)["items"]:
                cache.upsert_object({**obj, "kind": obj.get("kind") or plural})
        except errors.StatusError:
            continue
    for pod in api.list("pods", resource_version=rv)["items"]:
        if (pod.get("spec") or {}).get("nodeName"):
            cache.add_pod(pod)
    return cache


def run(args: argparse.Namespace) -> int:
    from ...scheduler import new_frameworks

    cluster = open_cluster_at(args)
    api = cluster.api
    try:
        pod = api.get("pods", args.pod, namespace=args.namespace)
    except errors.StatusError as e:
        print(server_error(e), file=sys.stderr)
        return 1
    key = f"/registry/pods/{args.namespace}/{args.pod}"
    bound = binding_revision(cluster.log, key)
    if bound is not None:
        revision = bound[0] - 1
        try:
            pod_then = api.get("pods", args.pod, namespace=args.namespace, resource_version=str(revision))
        except errors.StatusError:
            pod_then = pod
        where = f"bound to {bound[1]} at revision {bound[0]}; re-run on the cluster at revision {revision}"
    elif (pod.get("spec") or {}).get("nodeName"):
        print(f"pod {args.namespace}/{args.pod} was not scheduled by default-scheduler "
              f"(spec.nodeName={pod['spec']['nodeName']})")
        cluster.close()
        return 0
    else:
        revision, pod_then = None, pod
        where = f"pending; run on the current cluster (revision {cluster.log.revision})"
    cache = rebuild_cache(api, revision)
    frameworks = new_frameworks(None)
    fw = frameworks.get((pod_then.get("spec") or {}).get("schedulerName") or "default-scheduler")
    if fw is None:
        print(f'pod {args.namespace}/{args.pod} uses scheduler "{pod_then["spec"]["schedulerName"]}", '
              "not one of this cluster's profiles")
        cluster.close()
        return 1
    rng = random.Random(f"{cluster.seed}:{revision or cluster.log.revision}")
    result = fw.schedule_one(pod_then, cache.snapshot(), rng)
    exp = result.explanation()
    print(f"pod {args.namespace}/{args.pod}: {where}")
    for line in exp.lines()[1:-1]:
        print(line)
    if exp.chosen:
        tie = f" ({exp.tied} tied)" if exp.tied > 1 else ""
        actual = f"; actually bound to {bound[1]}" if bound is not None and bound[1] != exp.chosen else ""
        print(f"chosen: {exp.chosen}{tie}{actual}")
    else:
        print(f"unschedulable: {exp.message}")
    cluster.close()
    return 0
