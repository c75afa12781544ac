"""The Recreate strategy, after upstream's ``pkg/controller/deployment/recreate.go``.

Scale every old ReplicaSet to 0; wait until none of their pods is left (a
terminating pod still counts); only then create the new ReplicaSet (if it
does not exist yet) and scale it to ``spec.replicas``. Old and new pods never
run at the same time.
"""

from __future__ import annotations

from typing import Any

from . import util
from .progress import sync_rollout_status
from .sync import DeploymentClient, cleanup_deployment, get_all_replica_sets_and_sync_revision, \
    scale_replica_set_and_record_event

__all__ = ["rollout_recreate", "old_pods_running"]

Obj = dict[str, Any]


def old_pods_running(new_rs: Obj | None, old_rss: list[Obj], pod_map: dict[str, list[Obj]]) -> bool:
    """``oldPodsRunning``: an old set reports replicas, or a pod of a set other
    than the new one is not Succeeded/Failed.

    Args:
        pod_map: ReplicaSet uid -> its pods (any state, terminating included).
    """
    if util.actual_replica_count(old_rss) > 0:
        return True
    new_uid = new_rs["metadata"].get("uid") if new_rs is not None else None
    for uid in sorted(pod_map):
        if new_uid is not None and uid == new_uid:
            continue
        for pod in pod_map[uid]:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                return True
    return False


def rollout_recreate(c: DeploymentClient, d: Obj, rs_list: list[Obj], pod_map: dict[str, list[Obj]]) -> None:
    """``rolloutRecreate``: one Recreate step (see module docstring)."""
    new_rs, old_rss = get_all_replica_sets_and_sync_revision(c, d, rs_list, False)
    all_rss = list(old_rss) + [new_rs]
    scaled = False
    for rs in util.filter_active_replica_sets(old_rss):
        if scale_replica_set_and_record_event(c, rs, 0, d)[0]:
            scaled = True
    if scaled:
        sync_rollout_status(c, all_rss, new_rs, d)
        return
    if old_pods_running(new_rs, old_rss, pod_map):
        sync_rollout_status(c, all_rss, new_rs, d)
        return
    if new_rs is None:
        new_rs, old_rss = get_all_replica_sets_and_sync_revision(c, d, rs_list, True)
        all_rss = list(old_rss) + [new_rs]
    assert new_rs is not None
    scale_replica_set_and_record_event(c, new_rs, util.replicas(d), d)
    if util.deployment_complete(d, d.get("status") or {}):
        cleanup_deployment(c, old_rss, d)
    sync_rollout_status(c, all_rss, new_rs, d)
