"""Scaling, new-ReplicaSet creation, history cleanup and status, after
upstream's ``pkg/controller/deployment/sync.go``.

Every function takes a :class:`DeploymentClient` ``c`` — the few API
operations the logic needs — so the same code runs in the controller (over
the API server) and in tests (over an in-memory fake). ``d`` is always the
controller's own deep copy of the Deployment and is updated in place (its
annotations, status and resourceVersion), as upstream works on its
``DeepCopy``; ReplicaSets are copied before they are changed.
"""

from __future__ import annotations

from typing import Any, Protocol

from ...api import errors
from ...api.meta import controller_of, copy_object
from ..controller_utils import compute_hash, namespace_terminating, new_controller_ref
from . import util

__all__ = [
    "DeploymentClient",
    "get_all_replica_sets_and_sync_revision",
    "get_new_replica_set",
    "scale",
    "scale_replica_set_and_record_event",
    "scale_replica_set",
    "cleanup_deployment",
    "calculate_status",
    "sync_deployment_status",
    "is_scaling_event",
    "check_paused_conditions",
    "sync",
    "sync_status_only",
]

Obj = dict[str, Any]


class DeploymentClient(Protocol):
    """What the deployment logic needs from the outside world.

    ``now`` is virtual seconds and ``epoch`` the API server's epoch; writes
    return the stored object and raise :class:`~k8semu.api.errors.StatusError`.
    """

    now: float
    epoch: Any

    def create_replica_set(self, rs: Obj) -> Obj: ...
    def get_replica_set(self, namespace: str, name: str) -> Obj | None: ...
    def update_replica_set(self, rs: Obj) -> Obj: ...
    def delete_replica_set(self, rs: Obj) -> None: ...
    def update_deployment_status(self, d: Obj) -> Obj: ...
    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None: ...
    def enqueue_after(self, d: Obj, seconds: float) -> None: ...
    def enqueue_rate_limited(self, d: Obj) -> None: ...


def _stamp(c: DeploymentClient) -> str:
    return util.stamp(c.now, c.epoch)


def _write_status(c: DeploymentClient, d: Obj) -> Obj:
    """UpdateStatus; keeps ``d``'s resourceVersion current for later writes of this sync."""
    out = c.update_deployment_status(d)
    d["metadata"]["resourceVersion"] = out["metadata"].get("resourceVersion")
    return out


def _rs_status(rs: Obj) -> Obj:
    return rs.get("status") or {}


# --------------------------------------------------------------------------- the new replica set


def get_all_replica_sets_and_sync_revision(c: DeploymentClient, d: Obj, rs_list: list[Obj],
                                           create: bool) -> tuple[Obj | None, list[Obj]]:
    """(new ReplicaSet or None, all old ReplicaSets); the new one is created when
    ``create`` and missing, and its revision annotations are synced."""
    _, all_old = util.find_old_replica_sets(d, rs_list)
    new_rs = get_new_replica_set(c, d, rs_list, all_old, create)
    return new_rs, all_old


def _selector_with_hash(selector: Obj | None, h: str) -> Obj:
    sel = copy_object(selector or {})
    sel["matchLabels"] = {**(sel.get("matchLabels") or {}), util.DEFAULT_UNIQUE_LABEL_KEY: h}
    return sel


def get_new_replica_set(c: DeploymentClient, d: Obj, rs_list: list[Obj], old_rss: list[Obj],
                        create: bool) -> Obj | None:
    """``getNewReplicaSet``: find the set matching the template (syncing its
    annotations and minReadySeconds, and the deployment's revision), or create
    ``<deployment>-<pod-template-hash>`` with as many replicas as the strategy
    allows now. A name taken by a different template bumps
    ``status.collisionCount`` and raises the AlreadyExists error (requeue).

    Raises:
        StatusError: a failed create (also reported as a ``ReplicaSetCreateError``
            Progressing condition and Warning event) or update.
    """
    existing = util.find_new_replica_set(d, rs_list)
    new_revision = str(util.max_revision(old_rss) + 1)
    spec = d["spec"]
    min_ready = int(spec.get("minReadySeconds") or 0)
    if existing is not None:
        rs = copy_object(existing)
        changed = util.set_new_replica_set_annotations(d, rs, new_revision, True)
        if changed or int(rs["spec"].get("minReadySeconds") or 0) != min_ready:
            if min_ready:
                rs["spec"]["minReadySeconds"] = min_ready
            else:
                rs["spec"].pop("minReadySeconds", None)
            return c.update_replica_set(rs)
        needs = util.set_deployment_revision(d, rs["metadata"]["annotations"].get(util.REVISION_ANNOTATION, ""))
        cond = util.get_condition(d.get("status"), "Progressing")
        if util.has_progress_deadline(d) and cond is None:
            util.set_condition(d.setdefault("status", {}), util.new_condition(
                "Progressing", "True", util.FOUND_NEW_RS_REASON,
                f'Found new replica set "{rs["metadata"]["name"]}"', _stamp(c)))
            needs = True
        if needs:
            _write_status(c, d)
        return rs
    if not create:
        return None

    template = copy_object(spec.get("template") or {})
    collisions = (d.get("status") or {}).get("collisionCount")
    h = compute_hash(template, collisions)
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), util.DEFAULT_UNIQUE_LABEL_KEY: h}
    name = f"{d['metadata']['name']}-{h}"
    new_rs: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": d["metadata"]["namespace"],
            "labels": dict(tmeta["labels"]),
            "ownerReferences": [new_controller_ref(d)],
        },
        "spec": {
            "replicas": 0,
            "selector": _selector_with_hash(spec.get("selector"), h),
            "template": template,
        },
    }
    if min_ready:
        new_rs["spec"]["minReadySeconds"] = min_ready
    count = util.new_rs_new_replicas(d, list(old_rss) + [new_rs], new_rs)
    new_rs["spec"]["replicas"] = count
    util.set_new_replica_set_annotations(d, new_rs, new_revision, False)
    already = False
    try:
        created = c.create_replica_set(new_rs)
    except errors.AlreadyExists:
        already = True
        found = c.get_replica_set(d["metadata"]["namespace"], name)
        if found is None:
            raise
        ref = controller_of(found)
        if ref is not None and ref.get("uid") == d["metadata"]["uid"] and util.equal_ignore_hash(
                spec.get("template"), (found.get("spec") or {}).get("template")):
            created = found
        else:
            status = d.setdefault("status", {})
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            try:
                _write_status(c, d)
            except errors.StatusError:
                pass
            raise
    except errors.StatusError as exc:
        if namespace_terminating(exc):
            raise
        msg = f'Failed to create new replica set "{name}": {exc.message}'
        if util.has_progress_deadline(d):
            util.set_condition(d.setdefault("status", {}), util.new_condition(
                "Progressing", "False", util.FAILED_RS_CREATE_REASON, msg, _stamp(c)))
            try:
                _write_status(c, d)
            except errors.StatusError:
                pass
        c.event(d, "Warning", util.FAILED_RS_CREATE_REASON, msg)
        raise
    if not already and count > 0:
        c.event(d, "Normal", "ScalingReplicaSet",
                f"Scaled up replica set {created['metadata']['name']} from 0 to {count}")
    needs = util.set_deployment_revision(d, new_revision)
    if not already and util.has_progress_deadline(d):
        util.set_condition(d.setdefault("status", {}), util.new_condition(
            "Progressing", "True", util.NEW_RS_REASON,
            f'Created new replica set "{created["metadata"]["name"]}"', _stamp(c)))
        needs = True
    if needs:
        _write_status(c, d)
    return created


# --------------------------------------------------------------------------- scaling


def scale_replica_set(c: DeploymentClient, rs: Obj, new_scale: int, d: Obj, operation: str) -> tuple[bool, Obj]:
    """``scaleReplicaSet``: write the size and the replicas annotations;
    a size change is reported as ``ScalingReplicaSet`` ``Scaled up replica set
    web-7c9f8 from 0 to 2``. Returns (scaled, the set as written)."""
    desired = util.replicas(d)
    max_total = desired + util.max_surge(d)
    size_changed = util.replicas(rs) != new_scale
    if not size_changed and not util.replicas_annotations_need_update(rs, desired, max_total):
        return False, rs
    old_scale = util.replicas(rs)
    cp = copy_object(rs)
    cp["spec"]["replicas"] = new_scale
    util.set_replicas_annotations(cp, desired, max_total)
    out = c.update_replica_set(cp)
    if size_changed:
        verb = {"up": "Scaled up", "down": "Scaled down"}.get(operation, "")
        c.event(d, "Normal", "ScalingReplicaSet",
                f"{verb} replica set {out['metadata']['name']} from {old_scale} to {new_scale}")
    return size_changed, out


def scale_replica_set_and_record_event(c: DeploymentClient, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
    """``scaleReplicaSetAndRecordEvent``: no-op when the size is already ``new_scale``."""
    if util.replicas(rs) == new_scale:
        return False, rs
    op = "up" if util.replicas(rs) < new_scale else "down"
    return scale_replica_set(c, rs, new_scale, d, op)


def scale(c: DeploymentClient, d: Obj, new_rs: Obj | None, old_rss: list[Obj]) -> None:
    """``scale``: on a scaling event (or while paused) resize the sets: the only
    active one takes all replicas; a saturated new set scales the old ones to 0;
    otherwise (RollingUpdate) the difference to ``replicas + maxSurge`` is shared
    out in proportion to each set's size (leftovers to the largest)."""
    target = util.find_active_or_latest(new_rs, old_rss)
    if target is not None:
        if util.replicas(target) != util.replicas(d):
            scale_replica_set_and_record_event(c, target, util.replicas(d), d)
        return
    if util.is_saturated(d, new_rs):
        for old in util.filter_active_replica_sets(old_rss):
            scale_replica_set_and_record_event(c, old, 0, d)
        return
    if not util.is_rolling_update(d):
        return
    all_rss = util.filter_active_replica_sets(list(old_rss) + [new_rs])
    current = util.replica_count(all_rss)
    allowed = util.replicas(d) + util.max_surge(d) if util.replicas(d) > 0 else 0
    to_add = allowed - current
    operation = ""
    if to_add > 0:
        all_rss = util.by_size_newer(all_rss)
        operation = "up"
    elif to_add < 0:
        all_rss = util.by_size_older(all_rss)
        operation = "down"
    added = 0
    sizes: dict[str, int] = {}
    for rs in all_rss:
        name = rs["metadata"]["name"]
        if to_add != 0:
            p = util.get_proportion(rs, d, to_add, added)
            sizes[name] = util.replicas(rs) + p
            added += p
        else:
            sizes[name] = util.replicas(rs)
    for i, rs in enumerate(all_rss):
        name = rs["metadata"]["name"]
        if i == 0 and to_add != 0:
            sizes[name] = max(0, sizes[name] + to_add - added)
        scale_replica_set(c, rs, sizes[name], d, operation)


def is_scaling_event(c: DeploymentClient, d: Obj, rs_list: list[Obj]) -> bool:
    """``isScalingEvent``: an active set's ``desired-replicas`` annotation
    differs from ``spec.replicas``."""
    new_rs, old_rss = get_all_replica_sets_and_sync_revision(c, d, rs_list, False)
    for rs in util.filter_active_replica_sets(list(old_rss) + [new_rs]):
        v = ((rs.get("metadata") or {}).get("annotations") or {}).get(util.DESIRED_REPLICAS_ANNOTATION)
        try:
            desired = int(v) if v is not None else None
        except ValueError:
            desired = None
        if desired is not None and desired != util.replicas(d):
            return True
    return False


def cleanup_deployment(c: DeploymentClient, old_rss: list[Obj], d: Obj) -> None:
    """``cleanupDeployment``: delete the oldest (by revision) old sets beyond
    ``revisionHistoryLimit`` that have no replicas, desired or actual, and an
    observed generation."""
    if not util.has_revision_history_limit(d):
        return
    alive = [rs for rs in old_rss if rs is not None and not rs["metadata"].get("deletionTimestamp")]
    diff = len(alive) - int(d["spec"]["revisionHistoryLimit"])
    if diff <= 0:
        return
    for rs in util.by_revision(alive)[:diff]:
        st = _rs_status(rs)
        if (int(st.get("replicas") or 0) != 0 or util.replicas(rs) != 0
                or int(rs["metadata"].get("generation") or 0) > int(st.get("observedGeneration") or 0)):
            continue
        try:
            c.delete_replica_set(rs)
        except errors.NotFound:
            pass


# --------------------------------------------------------------------------- status


def calculate_status(all_rss: list[Obj | None], new_rs: Obj | None, d: Obj, stamp: str) -> Obj:
    """``calculateStatus``: counts over the sets, the kept conditions and the
    Available condition (``MinimumReplicasAvailable`` when at least
    ``replicas - maxUnavailable`` are available). Zero counts are omitted
    (Go ``omitempty``)."""
    available = util.available_replica_count(all_rss)
    total = util.replica_count(all_rss)
    status: Obj = {}
    fields = (
        ("observedGeneration", int(d["metadata"].get("generation") or 0)),
        ("replicas", util.actual_replica_count(all_rss)),
        ("updatedReplicas", util.actual_replica_count([new_rs])),
        ("readyReplicas", util.ready_replica_count(all_rss)),
        ("availableReplicas", available),
        ("unavailableReplicas", max(0, total - available)),
    )
    for k, v in fields:
        if v:
            status[k] = v
    old = d.get("status") or {}
    if old.get("conditions"):
        status["conditions"] = [dict(x) for x in old["conditions"]]
    if available >= util.replicas(d) - util.max_unavailable(d):
        cond = util.new_condition("Available", "True", util.MIN_AVAILABLE_REASON,
                                  "Deployment has minimum availability.", stamp)
    else:
        cond = util.new_condition("Available", "False", util.MIN_UNAVAILABLE_REASON,
                                  "Deployment does not have minimum availability.", stamp)
    util.set_condition(status, cond)
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    return status


def sync_deployment_status(c: DeploymentClient, all_rss: list[Obj | None], new_rs: Obj | None, d: Obj) -> None:
    """``syncDeploymentStatus``: write the calculated status if it changed."""
    status = calculate_status(all_rss, new_rs, d, _stamp(c))
    if status == (d.get("status") or {}):
        return
    d["status"] = status
    _write_status(c, d)


def check_paused_conditions(c: DeploymentClient, d: Obj) -> None:
    """``checkPausedConditions``: Progressing Unknown ``DeploymentPaused``
    ("Deployment is paused") on pause, ``DeploymentResumed`` ("Deployment is
    resumed") on resume — unless the rollout already timed out."""
    if not util.has_progress_deadline(d):
        return
    cond = util.get_condition(d.get("status"), "Progressing")
    if cond is not None and cond.get("reason") == util.TIMED_OUT_REASON:
        return
    paused_exists = cond is not None and cond.get("reason") == util.PAUSED_REASON
    paused = bool(d["spec"].get("paused"))
    if paused and not paused_exists:
        new = util.new_condition("Progressing", "Unknown", util.PAUSED_REASON, "Deployment is paused", _stamp(c))
    elif not paused and paused_exists:
        new = util.new_condition("Progressing", "Unknown", util.RESUMED_REASON, "Deployment is resumed", _stamp(c))
    else:
        return
    util.set_condition(d.setdefault("status", {}), new)
    _write_status(c, d)


def sync(c: DeploymentClient, d: Obj, rs_list: list[Obj]) -> None:
    """``sync``: scaling events and paused deployments — resize, clean up
    history while paused, write status; no rollout."""
    new_rs, old_rss = get_all_replica_sets_and_sync_revision(c, d, rs_list, False)
    scale(c, d, new_rs, old_rss)
    if d["spec"].get("paused"):
        cleanup_deployment(c, old_rss, d)
    sync_deployment_status(c, list(old_rss) + [new_rs], new_rs, d)


def sync_status_only(c: DeploymentClient, d: Obj, rs_list: list[Obj]) -> None:
    """``syncStatusOnly``: a deployment being deleted only gets its status updated."""
    new_rs, old_rss = get_all_replica_sets_and_sync_revision(c, d, rs_list, False)
    sync_deployment_status(c, list(old_rss) + [new_rs], new_rs, d)
