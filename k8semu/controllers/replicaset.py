"""The ReplicaSet and ReplicationController controllers, as upstream's
``pkg/controller/replicaset`` (the ReplicationManager is the same controller
over ``v1`` ReplicationControllers, whose ``spec.selector`` is a plain map).

Design
======

Wiring (:class:`ReplicaSetController`): a ReplicaSet informer and a Pod
informer whose handlers only enqueue ``namespace/name`` keys and count
expectations (a pod ADDED lowers the owner's pending creations, a pod deleted
or marked for deletion lowers its pending deletions). :meth:`sync` is
upstream's ``syncReplicaSet``:

1. claim pods (adopt matching orphans, release owned pods that stopped
   matching; :func:`~.controller_utils.claim_objects`);
2. if the expectations are satisfied and the set is not being deleted,
   ``manageReplicas``: create ``replicas - active`` pods from the template in
   slow-start batches (``generateName: <name>-``, events ``SuccessfulCreate``
   / ``FailedCreate``) or delete the surplus, most deletable first
   (:func:`pods_to_delete`; events ``SuccessfulDelete`` / ``FailedDelete``),
   at most 500 per sync;
3. write the status (:func:`calculate_status`) and, when pods are ready but
   not yet available, requeue for when ``minReadySeconds`` will have passed.

The decisions are pure functions of cached objects and the virtual time
(:func:`calculate_status`, :func:`pods_to_delete`, :func:`pod_from_template`),
so tests can drive them without Trio.

Deviation: the availability requeue is computed from each pod's ready time
(plus a millisecond) instead of a flat ``minReadySeconds``, because virtual
time makes upstream's equal-timestamp race systematic.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..api import errors
from ..api.meta import DEFAULT_EPOCH, controller_of, copy_object
from ..api.pods import is_pod_ready
from ..api.selectors import LabelSelector, selector_from_label_selector, selector_from_set
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import (CONTROLLER_UID_INDEX, LABELS_INDEX, EventHandler, controller_uid_index, label_index,
                               meta_namespace_key)
from .controller_utils import (
    BURST_REPLICAS,
    SLOW_START_INITIAL_BATCH_SIZE,
    ControllerExpectations,
    claim_objects,
    filter_active_pods,
    is_pod_active,
    is_pod_available,
    namespace_terminating,
    new_controller_ref,
    pod_key,
    pod_ready_time,
    rank_pods_for_deletion,
    slow_start_batch,
)

__all__ = [
    "ReplicaSetController",
    "ReplicationManager",
    "ReplicationControllerController",
    "calculate_status",
    "pods_to_delete",
    "pod_from_template",
    "next_availability_check",
    "CONTROLLER_UID_INDEX",
]

Obj = dict[str, Any]

def _replicas(obj: Obj) -> int:
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def _label_selector(obj: Obj) -> LabelSelector:
    """The set's selector: a LabelSelector for apps/v1, a map for v1 ReplicationControllers."""
    sel = (obj.get("spec") or {}).get("selector")
    if obj.get("kind") == "ReplicationController":
        return selector_from_set(sel)
    return selector_from_label_selector(sel)


# --------------------------------------------------------------------------- pure decisions


def pod_from_template(template: Obj, owner: Obj) -> Obj:
    """``GetPodFromTemplate``: the pod to create for ``owner`` (a ReplicaSet or
    ReplicationController) — the template's labels, annotations, finalizers and
    spec, ``generateName: <owner>-`` and a controller ownerReference."""
    tmeta = template.get("metadata") or {}
    meta: Obj = {"generateName": f"{owner['metadata']['name']}-"}
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    meta["ownerReferences"] = [new_controller_ref(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy_object(template.get("spec") or {}),
    }


def pods_to_delete(active: list[Obj], related: list[Obj], diff: int, now: float,
                   epoch: datetime = DEFAULT_EPOCH) -> list[Obj]:
    """``getPodsToDelete``: the ``diff`` pods to delete, most deletable first.

    Args:
        active: the set's active pods.
        related: pods of every set with the same controller (co-location ranking).
        diff: how many to delete (``<= len(active)``).
        now: virtual seconds.
    """
    if diff < len(active):
        on_node: dict[str, int] = {}
        for p in related:
            if is_pod_active(p):
                n = (p.get("spec") or {}).get("nodeName") or ""
                on_node[n] = on_node.get(n, 0) + 1
        ranks = [on_node.get((p.get("spec") or {}).get("nodeName") or "", 0) for p in active]
        active = rank_pods_for_deletion(active, ranks, now, epoch)
    return active[:diff]


def calculate_status(rs: Obj, active: list[Obj], manage_err: Exception | None, now: float,
                     epoch: datetime = DEFAULT_EPOCH) -> Obj:
    """The set's new ``status`` (wire form, zero counts omitted as Go's
    ``omitempty``; ``replicas`` always present), as upstream's ``calculateStatus``.

    A failed ``manageReplicas`` adds a ``ReplicaFailure`` condition (reason
    ``FailedCreate`` when pods were missing, ``FailedDelete`` when in
    surplus, message the error's); a successful one removes it.
    ``observedGeneration`` is carried over (the caller sets it when writing).
    """
    old = rs.get("status") or {}
    tlabels = ((rs.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    tsel = selector_from_set(tlabels)
    min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
    fully = ready = available = 0
    for p in active:
        if tsel.matches((p.get("metadata") or {}).get("labels") or {}):
            fully += 1
        if is_pod_ready(p):
            ready += 1
            if is_pod_available(p, min_ready, now, epoch):
                available += 1
    conditions = list(old.get("conditions") or ())
    failure = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
    if manage_err is not None and failure is None:
        diff = len(active) - _replicas(rs)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        message = getattr(manage_err, "message", None) or str(manage_err)
        conditions.append({
            "type": "ReplicaFailure",
            "status": "True",
            "lastTransitionTime": _fmt(now, epoch),
            "reason": reason,
            "message": message,
        })
    elif manage_err is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    status: Obj = {"replicas": len(active)}
    if fully:
        status["fullyLabeledReplicas"] = fully
    if ready:
        status["readyReplicas"] = ready
    if available:
        status["availableReplicas"] = available
    if old.get("observedGeneration"):
        status["observedGeneration"] = old["observedGeneration"]
    if conditions:
        status["conditions"] = conditions
    return status


def next_availability_check(rs: Obj, active: list[Obj], now: float,
                            epoch: datetime = DEFAULT_EPOCH) -> float | None:
    """Seconds until the earliest ready-but-not-available pod becomes available
    (plus 1 ms, availability being strictly after), or None."""
    min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
    if min_ready <= 0:
        return None
    times = []
    for p in active:
        if is_pod_ready(p) and not is_pod_available(p, min_ready, now, epoch):
            t = pod_ready_time(p, epoch)
            times.append((t if t is not None else now) + min_ready)
    if not times:
        return None
    return max(0.0, min(times) - now) + 0.001


def _fmt(now: float, epoch: datetime) -> str:
    from ..api.meta import format_time

    return format_time(epoch, now)


def _status_equal(a: Obj, b: Obj) -> bool:
    keys = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")
    return all((a.get(k) or 0) == (b.get(k) or 0) for k in keys) and \
        (a.get("conditions") or []) == (b.get("conditions") or [])


# --------------------------------------------------------------------------- the controller


class ReplicaSetController(Component):
    """kube-controller-manager's ReplicaSet controller (``replicaset-controller``).

    Args:
        api: the API server.
        burst_replicas: most pods created or deleted per sync (upstream 500).
    """

    name = "replicaset-controller"
    resource = "replicasets"
    kind = "ReplicaSet"

    def __init__(self, api: Any, name: str | None = None, *, burst_replicas: int = BURST_REPLICAS) -> None:
        super().__init__(api, name)
        self.burst_replicas = burst_replicas
        self.expectations = ControllerExpectations()
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self.rs_informer = self.informer(self.resource, indexers={CONTROLLER_UID_INDEX: controller_uid_index})
        self.pod_informer = self.informer("pods", indexers={LABELS_INDEX: label_index,
                                                            CONTROLLER_UID_INDEX: controller_uid_index})
        self.q = self.queue()
        self.rs_informer.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=self._update_rs, on_delete=self._delete_rs))
        self.pod_informer.add_event_handler(EventHandler(
            on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    # ------------------------------------------------------------------ handlers
    def _enqueue(self, rs: Obj) -> None:
        self.q.add(meta_namespace_key(rs))

    def _update_rs(self, old: Obj, cur: Obj) -> None:
        self._enqueue(cur)

    def _delete_rs(self, rs: Obj) -> None:
        self.expectations.delete(meta_namespace_key(rs))
        self._enqueue(rs)

    def _resolve(self, namespace: str, ref: Obj | None) -> Obj | None:
        if ref is None or ref.get("kind") != self.kind:
            return None
        rs = self.rs_informer.indexer.get_by(namespace, ref.get("name", ""))
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        return rs

    def _sets_for_pod(self, pod: Obj) -> list[Obj]:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        out = []
        if not labels:
            return out
        for rs in self.rs_informer.indexer.by_index("namespace", meta.get("namespace") or ""):
            try:
                sel = _label_selector(rs)
            except ValueError:
                continue
            if not sel.empty and sel.matches(labels):
                out.append(rs)
        return out

    def _add_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            self._delete_pod(pod)
            return
        ref = controller_of(pod)
        if ref is not None:
            rs = self._resolve(meta.get("namespace"), ref)
            if rs is not None:
                key = meta_namespace_key(rs)
                self.expectations.creation_observed(key)
                self.q.add(key)
            return
        for rs in self._sets_for_pod(pod):
            self._enqueue(rs)

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        om, cm = old["metadata"], cur["metadata"]
        if om.get("resourceVersion") == cm.get("resourceVersion"):
            return
        label_changed = om.get("labels") != cm.get("labels")
        if cm.get("deletionTimestamp"):
            self._delete_pod(cur)
            if label_changed:
                self._delete_pod(old)
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            rs = self._resolve(om.get("namespace"), old_ref)
            if rs is not None:
                self._enqueue(rs)
        if cur_ref is not None:
            rs = self._resolve(cm.get("namespace"), cur_ref)
            if rs is not None:
                self._enqueue(rs)
                min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
                if not is_pod_ready(old) and is_pod_ready(cur) and min_ready > 0:
                    self.q.add_after(meta_namespace_key(rs), min_ready + 1.0)
            return
        if label_changed or ref_changed:
            for rs in self._sets_for_pod(cur):
                self._enqueue(rs)

    def _delete_pod(self, pod: Obj) -> None:
        ref = controller_of(pod)
        rs = self._resolve(pod["metadata"].get("namespace"), ref)
        if rs is None:
            return
        key = meta_namespace_key(rs)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.q.add(key)

    # ------------------------------------------------------------------ sync
    def sync(self, key: str) -> None:
        """``syncReplicaSet`` for one ``namespace/name`` key (see module docstring).

        Raises:
            StatusError: a failed write; the key is retried with back-off.
        """
        rs = self.rs_informer.indexer.get(key)
        if rs is None:
            self.expectations.delete(key)
            return
        now = self.api.now
        needs_sync = self.expectations.satisfied(key, now)
        try:
            selector = _label_selector(rs)
        except ValueError:
            return
        ns = rs["metadata"]["namespace"]
        # what claiming can touch: the pods the selector matches and the pods this one controls
        # (upstream lists the whole namespace; the rest are neither adopted nor released)
        indexer = self.pod_informer.indexer
        candidates = {meta_namespace_key(p): p for p in indexer.select(ns, selector)}
        for p in indexer.by_index(CONTROLLER_UID_INDEX, rs["metadata"]["uid"]):
            candidates.setdefault(meta_namespace_key(p), p)
        pods = filter_active_pods(candidates[k] for k in sorted(candidates))

        def can_adopt() -> None:
            fresh = self.api.get(self.resource, rs["metadata"]["name"], namespace=ns, ctx=self.ctx)
            if fresh["metadata"].get("uid") != rs["metadata"]["uid"]:
                raise errors.Conflict(f"original {self.kind} {key} is gone: got uid {fresh['metadata'].get('uid')}, "
                                      f"wanted {rs['metadata']['uid']}")
            if fresh["metadata"].get("deletionTimestamp"):
                raise errors.Conflict(f"{self.kind} {key} has just been deleted at "
                                      f"{fresh['metadata']['deletionTimestamp']}")

        pods = claim_objects(self.api, self.ctx, "pods", rs, pods,
                             lambda p: selector.matches((p.get("metadata") or {}).get("labels") or {}),
                             can_adopt)
        manage_err: Exception | None = None
        if needs_sync and not rs["metadata"].get("deletionTimestamp"):
            manage_err = self.manage_replicas(pods, rs)
        status = calculate_status(rs, pods, manage_err, self.api.now, self.api.epoch)
        updated = self._write_status(rs, status)
        if manage_err is not None:
            raise manage_err
        delay = next_availability_check(updated, pods, self.api.now, self.api.epoch)
        if delay is not None:
            self.q.add_after(key, delay)

    def _write_status(self, rs: Obj, status: Obj) -> Obj:
        gen = rs["metadata"].get("generation") or 0
        old = rs.get("status") or {}
        if _status_equal(old, status) and (old.get("observedGeneration") or 0) == gen:
            return rs
        if gen:
            status = {**status, "observedGeneration": gen}
        cur = rs
        for attempt in range(2):  # statusUpdateRetries = 1
            try:
                return self.api.update(self.resource, {**cur, "status": status},
                                       subresource="status", ctx=self.ctx)
            except errors.Conflict:
                if attempt:
                    raise
                cur = self.api.get(self.resource, rs["metadata"]["name"],
                                   namespace=rs["metadata"]["namespace"], ctx=self.ctx)
        return cur  # pragma: no cover

    def manage_replicas(self, active: list[Obj], rs: Obj) -> Exception | None:
        """``manageReplicas``: create or delete pods toward ``spec.replicas``;
        returns the first error (or None)."""
        key = meta_namespace_key(rs)
        ns = rs["metadata"]["namespace"]
        diff = len(active) - _replicas(rs)
        if diff < 0:
            diff = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, diff, self.api.now)
            template = (rs.get("spec") or {}).get("template") or {}

            def create() -> None:
                pod = pod_from_template(template, rs)
                if not (pod["metadata"].get("labels")):
                    raise errors.InternalError("unable to create pods, no labels")
                try:
                    created = self.api.create("pods", pod, namespace=ns, ctx=self.ctx)
                except errors.StatusError as exc:
                    if namespace_terminating(exc):
                        return
                    self.recorder.event(rs, WARNING, "FailedCreate", f"Error creating: {exc.message}")
                    raise
                self.recorder.event(rs, NORMAL, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

            ok, err = slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, create)
            for _ in range(diff - ok):
                self.expectations.creation_observed(key)
            return err
        if diff > 0:
            diff = min(diff, self.burst_replicas)
            doomed = pods_to_delete(active, self._related_pods(rs), diff, self.api.now, self.api.epoch)
            self.expectations.expect_deletions(key, [pod_key(p) for p in doomed], self.api.now)
            first: Exception | None = None
            for pod in doomed:
                name = pod["metadata"]["name"]
                try:
                    self.api.delete("pods", name, namespace=ns, ctx=self.ctx)
                except errors.StatusError as exc:
                    self.expectations.deletion_observed(key, pod_key(pod))
                    if not isinstance(exc, errors.NotFound):
                        self.recorder.event(rs, WARNING, "FailedDelete", f"Error deleting: {exc.message}")
                        first = first or exc
                    continue
                self.recorder.event(rs, NORMAL, "SuccessfulDelete", f"Deleted pod: {name}")
            return first
        return None

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """``getIndirectlyRelatedPods``: pods selected by any set with the same controller."""
        ref = controller_of(rs)
        if ref is None:
            return []
        seen: dict[str, None] = {}
        out: list[Obj] = []
        ns = rs["metadata"]["namespace"]
        pods = self.pod_informer.indexer.by_index("namespace", ns)
        for other in self.rs_informer.indexer.by_index(CONTROLLER_UID_INDEX, ref["uid"]):
            try:
                sel = _label_selector(other)
            except ValueError:
                continue
            for p in pods:
                uid = p["metadata"].get("uid")
                if uid not in seen and sel.matches(p["metadata"].get("labels") or {}):
                    seen[uid] = None
                    out.append(p)
        return out


class ReplicationManager(ReplicaSetController):
    """The ReplicationController manager: the ReplicaSet controller over
    ``v1`` ReplicationControllers (events from ``replication-controller``)."""

    name = "replication-controller"
    resource = "replicationcontrollers"
    kind = "ReplicationController"


#: The name the controller conventions here expect.
ReplicationControllerController = ReplicationManager
