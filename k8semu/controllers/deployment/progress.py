"""Rollout progress and the Progressing condition, after upstream's
``pkg/controller/deployment/progress.go``.

``syncRolloutStatus`` computes the status and, while a rollout is under way
and ``progressDeadlineSeconds`` is set, moves the Progressing condition:
``NewReplicaSetAvailable`` once complete, ``ReplicaSetUpdated`` (refreshing
lastUpdateTime) whenever replicas were updated, became ready or available, or
old ones went away, ``ProgressDeadlineExceeded`` when nothing has happened
for the deadline. A ReplicaSet's ``ReplicaFailure`` condition is mirrored.
When the status is unchanged and the rollout is stuck, the deployment is
requeued for the moment its deadline passes, so the timeout fires in virtual
time without a resync.
"""

from __future__ import annotations

from typing import Any

from ..controller_utils import to_seconds
from . import util
from .sync import DeploymentClient, _stamp, _write_status, calculate_status

__all__ = ["sync_rollout_status", "replica_failures", "requeue_stuck_deployment"]

Obj = dict[str, Any]


def replica_failures(all_rss: list[Obj | None], new_rs: Obj | None) -> list[Obj]:
    """``getReplicaFailures``: the new set's ReplicaFailure conditions (else the
    old sets'), as deployment conditions."""
    def convert(c: Obj) -> Obj:
        return {"type": c.get("type"), "status": c.get("status"),
                "lastUpdateTime": c.get("lastTransitionTime"),
                "lastTransitionTime": c.get("lastTransitionTime"),
                "reason": c.get("reason"), "message": c.get("message")}

    out: list[Obj] = []
    if new_rs is not None:
        out = [convert(c) for c in (new_rs.get("status") or {}).get("conditions") or ()
               if c.get("type") == "ReplicaFailure"]
    if out:
        return out
    for rs in all_rss:
        if rs is None:
            continue
        out += [convert(c) for c in (rs.get("status") or {}).get("conditions") or ()
                if c.get("type") == "ReplicaFailure"]
    return out


def sync_rollout_status(c: DeploymentClient, all_rss: list[Obj | None], new_rs: Obj | None, d: Obj) -> None:
    """``syncRolloutStatus`` (see module docstring)."""
    status = calculate_status(all_rss, new_rs, d, _stamp(c))
    if not util.has_progress_deadline(d):
        util.remove_condition(status, "Progressing")
    cur = util.get_condition(d.get("status"), "Progressing")
    complete_already = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                        and cur is not None and cur.get("reason") == util.NEW_RS_AVAILABLE_REASON)
    if util.has_progress_deadline(d) and not complete_already:
        if util.deployment_complete(d, status):
            msg = (f'ReplicaSet "{new_rs["metadata"]["name"]}" has successfully progressed.' if new_rs is not None
                   else f'Deployment "{d["metadata"]["name"]}" has successfully progressed.')
            util.set_condition(status, util.new_condition(
                "Progressing", "True", util.NEW_RS_AVAILABLE_REASON, msg, _stamp(c)))
        elif util.deployment_progressing(d, status):
            msg = (f'ReplicaSet "{new_rs["metadata"]["name"]}" is progressing.' if new_rs is not None
                   else f'Deployment "{d["metadata"]["name"]}" is progressing.')
            cond = util.new_condition("Progressing", "True", util.RS_UPDATED_REASON, msg, _stamp(c))
            if cur is not None:
                if cur.get("status") == "True":
                    cond["lastTransitionTime"] = cur.get("lastTransitionTime")
                util.remove_condition(status, "Progressing")
            util.set_condition(status, cond)
        elif util.deployment_timed_out(d, status, c.now, c.epoch):
            msg = (f'ReplicaSet "{new_rs["metadata"]["name"]}" has timed out progressing.' if new_rs is not None
                   else f'Deployment "{d["metadata"]["name"]}" has timed out progressing.')
            util.set_condition(status, util.new_condition(
                "Progressing", "False", util.TIMED_OUT_REASON, msg, _stamp(c)))
    failures = replica_failures(all_rss, new_rs)
    if failures:
        util.set_condition(status, failures[0])
    else:
        util.remove_condition(status, "ReplicaFailure")
    if status == (d.get("status") or {}):
        requeue_stuck_deployment(c, d, status)
        return
    d["status"] = status
    _write_status(c, d)


def requeue_stuck_deployment(c: DeploymentClient, d: Obj, status: Obj) -> float:
    """``requeueStuckDeployment``: seconds until the deadline is checked again
    (the deployment is requeued just after), 0 for a rate-limited requeue now,
    -1 when no check is needed."""
    cur = util.get_condition(d.get("status"), "Progressing")
    if not util.has_progress_deadline(d) or cur is None:
        return -1.0
    if util.deployment_complete(d, status) or cur.get("reason") == util.TIMED_OUT_REASON:
        return -1.0
    since = to_seconds(cur.get("lastUpdateTime"), c.epoch)
    if since is None:
        return -1.0
    after = since + int(d["spec"]["progressDeadlineSeconds"]) - c.now
    if after <= 0:
        c.enqueue_rate_limited(d)
        return 0.0
    # upstream rate-limits when less than a second is left; in virtual time we
    # requeue for just past the deadline (timing out is strictly after it)
    c.enqueue_after(d, after + 0.001)
    return after
