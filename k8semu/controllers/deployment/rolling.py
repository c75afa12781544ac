"""The RollingUpdate strategy, after upstream's ``pkg/controller/deployment/rolling.go``.

One step per sync: scale the new ReplicaSet up as far as ``maxSurge`` allows;
if nothing was scaled up, scale old ReplicaSets down as far as
``maxUnavailable`` allows — unhealthy (unavailable) old replicas first, since
removing them costs no availability; when the rollout is complete, clean up
old history; always finish with the rollout status (:mod:`.progress`).
"""

from __future__ import annotations

from typing import Any

from . import util
from .progress import sync_rollout_status
from .sync import DeploymentClient, cleanup_deployment, get_all_replica_sets_and_sync_revision, \
    scale_replica_set_and_record_event

__all__ = [
    "rollout_rolling",
    "reconcile_new_replica_set",
    "reconcile_old_replica_sets",
    "cleanup_unhealthy_replicas",
    "scale_down_old_replica_sets_for_rolling_update",
]

Obj = dict[str, Any]


def rollout_rolling(c: DeploymentClient, d: Obj, rs_list: list[Obj]) -> None:
    """``rolloutRolling``: one RollingUpdate step (see module docstring)."""
    new_rs, old_rss = get_all_replica_sets_and_sync_revision(c, d, rs_list, True)
    assert new_rs is not None
    all_rss = list(old_rss) + [new_rs]
    if reconcile_new_replica_set(c, all_rss, new_rs, d):
        sync_rollout_status(c, all_rss, new_rs, d)
        return
    if reconcile_old_replica_sets(c, all_rss, util.filter_active_replica_sets(old_rss), new_rs, d):
        sync_rollout_status(c, all_rss, new_rs, d)
        return
    if util.deployment_complete(d, d.get("status") or {}):
        cleanup_deployment(c, old_rss, d)
    sync_rollout_status(c, all_rss, new_rs, d)


def reconcile_new_replica_set(c: DeploymentClient, all_rss: list[Obj], new_rs: Obj, d: Obj) -> bool:
    """``reconcileNewReplicaSet``: scale the new set toward ``spec.replicas``
    within the surge budget (down at once if above it). True if it scaled."""
    want = util.replicas(d)
    if util.replicas(new_rs) == want:
        return False
    if util.replicas(new_rs) > want:
        return scale_replica_set_and_record_event(c, new_rs, want, d)[0]
    count = util.new_rs_new_replicas(d, all_rss, new_rs)
    return scale_replica_set_and_record_event(c, new_rs, count, d)[0]


def reconcile_old_replica_sets(c: DeploymentClient, all_rss: list[Obj], old_rss: list[Obj],
                               new_rs: Obj, d: Obj) -> bool:
    """``reconcileOldReplicaSets``: scale old sets down by at most
    ``all - (replicas - maxUnavailable) - unavailable new replicas``, unhealthy
    replicas first. True if anything was scaled down."""
    if util.replica_count(old_rss) == 0:
        return False
    all_count = util.replica_count(all_rss)
    min_available = util.replicas(d) - util.max_unavailable(d)
    new_unavailable = util.replicas(new_rs) - int((new_rs.get("status") or {}).get("availableReplicas") or 0)
    max_scaled_down = all_count - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    try:
        old_rss, cleaned = cleanup_unhealthy_replicas(c, old_rss, d, max_scaled_down)
    except ValueError:
        return False  # upstream gives up on this sync (the status was stale)
    scaled = scale_down_old_replica_sets_for_rolling_update(c, list(old_rss) + [new_rs], old_rss, d)
    return cleaned + scaled > 0


def cleanup_unhealthy_replicas(c: DeploymentClient, old_rss: list[Obj], d: Obj,
                               max_cleanup: int) -> tuple[list[Obj], int]:
    """``cleanupUnhealthyReplicas``: oldest first, scale each old set down by its
    unavailable replicas, at most ``max_cleanup`` in all. Returns (the old sets as
    now written, how many replicas were removed).

    Raises:
        ValueError: a set reports more available replicas than it wants (a stale
            status), which would make this a scale *up*.
    """
    olds = util.by_creation(old_rss)
    total = 0
    for i, rs in enumerate(olds):
        if total >= max_cleanup:
            break
        n = util.replicas(rs)
        avail = int((rs.get("status") or {}).get("availableReplicas") or 0)
        if n == 0 or n == avail:
            continue
        down = min(max_cleanup - total, n - avail)
        if n - down > n:
            ns, name = rs["metadata"].get("namespace"), rs["metadata"].get("name")
            raise ValueError(f"when cleaning up unhealthy replicas, got invalid request to scale down "
                             f"{ns}/{name} {n} -> {n - down}")
        _, olds[i] = scale_replica_set_and_record_event(c, rs, n - down, d)
        total += down
    return olds, total


def scale_down_old_replica_sets_for_rolling_update(c: DeploymentClient, all_rss: list[Obj],
                                                   old_rss: list[Obj], d: Obj) -> int:
    """``scaleDownOldReplicaSetsForRollingUpdate``: oldest first, remove
    available old replicas down to ``replicas - maxUnavailable`` available in all.
    Returns how many were removed."""
    min_available = util.replicas(d) - util.max_unavailable(d)
    available = util.available_replica_count(all_rss)
    if available <= min_available:
        return 0
    budget = available - min_available
    total = 0
    for rs in util.by_creation(old_rss):
        if total >= budget:
            break
        n = util.replicas(rs)
        if n == 0:
            continue
        down = min(n, budget - total)
        scale_replica_set_and_record_event(c, rs, n - down, d)
        total += down
    return total
