"""The StatefulSet controller, as kube-controller-manager's ``statefulset-controller``
(pkg/controller/statefulset, v1.3x).

Design
======

A sync of one StatefulSet follows upstream's ``updateStatefulSet``:

1. revisions: the ControllerRevision of the current template (``<set>-<hash>``,
   data = the template patch, ``revision`` = max + 1, an equal older one is
   re-numbered instead of duplicated) is the *update revision*;
   ``status.currentRevision`` names the *current* one; old unused revisions
   beyond ``revisionHistoryLimit`` are deleted;
2. slots: every ordinal in ``[start, start + replicas)`` (``spec.ordinals.start``)
   wants a pod ``<set>-<ordinal>``; pods with other ordinals are *condemned*;
   a missing pod gets the current revision below the RollingUpdate partition
   and the update revision otherwise (:func:`new_stateful_pod`);
3. in ordinal order: replace failed/succeeded pods, create missing ones
   (PersistentVolumeClaims ``<claim>-<set>-<ordinal>`` first; a claim still
   being deleted fails the create, ``pvc <name> is being deleted``, and the sync
   is retried with back-off; under ``whenScaled: Delete`` a claim still owned by
   an earlier pod of that name is *stale* and the pod waits), re-create the
   missing claims of a ``Pending`` pod (upstream's
   ``createMissingPersistentVolumeClaims``, since 1.27: a claim deleted while
   the pod used it is made again for its replacement), and — under
   ``OrderedReady`` — stop at the first pod that is not yet Running and Ready
   (and available for ``minReadySeconds``); ``Parallel`` goes on;
4. condemned pods are deleted from the highest ordinal down (one at a time,
   waiting for each, under ``OrderedReady``); ``whenScaled: Delete`` first
   makes the pod own its claims so they go with it;
5. ``RollingUpdate``: from the highest ordinal down to the partition, delete
   one pod of an old revision at a time, waiting until the replacement is
   healthy; ``OnDelete`` leaves that to the user;
6. status: replicas, readyReplicas, availableReplicas, currentReplicas,
   updatedReplicas, currentRevision / updateRevision (the update becomes
   current once every pod is updated and ready), observedGeneration.

The per-pod decisions are pure helpers; the controller class reads the caches
and makes the API calls.
"""

from __future__ import annotations

import re
from typing import Any

from ..api import errors
from ..api.meta import copy_object
from ..api.pods import is_pod_ready
from ..api.selectors import selector_from_label_selector
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import CONTROLLER_UID_INDEX, EventHandler, controller_uid_index, meta_namespace_key
from .controller_utils import (REVISION_HASH_LABEL, compute_hash, is_pod_available, new_controller_ref,
                               new_controller_revision)

__all__ = [
    "StatefulSetController",
    "new_stateful_pod",
    "claim_name",
    "pod_ordinal",
    "POD_NAME_LABEL",
    "POD_INDEX_LABEL",
    "REVISION_HASH_LABEL",
]

Obj = dict[str, Any]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _meta(o: Obj) -> Obj:
    return o.get("metadata") or {}


def pod_ordinal(set_name: str, pod: Obj) -> int:
    """The ordinal of ``<set>-<ordinal>``, or -1 for a name of another shape."""
    m = re.fullmatch(rf"{re.escape(set_name)}-(\d+)", _meta(pod).get("name", ""))
    return int(m.group(1)) if m else -1


def claim_name(claim: str, set_name: str, ordinal: int) -> str:
    """``<claim>-<set>-<ordinal>``, the PVC a pod of ``set_name`` mounts."""
    return f"{claim}-{set_name}-{ordinal}"


def _phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase") or ""


def _running_and_ready(pod: Obj) -> bool:
    return _phase(pod) == "Running" and is_pod_ready(pod)


def _terminating(pod: Obj) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def _healthy(pod: Obj) -> bool:
    return _running_and_ready(pod) and not _terminating(pod)


def _revision_of(pod: Obj) -> str | None:
    return (_meta(pod).get("labels") or {}).get(REVISION_HASH_LABEL)


def _revision_data(sts: Obj) -> Obj:
    tmpl = copy_object(((sts.get("spec") or {}).get("template")) or {})
    tmpl["$patch"] = "replace"
    return {"spec": {"template": tmpl}}


def _set_from_revision(sts: Obj, revision: Obj | None) -> Obj:
    """The StatefulSet as it was at ``revision`` (its template replaced)."""
    if revision is None:
        return sts
    tmpl = copy_object(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    tmpl.pop("$patch", None)
    return {**sts, "spec": {**(sts.get("spec") or {}), "template": tmpl}}


def new_stateful_pod(sts: Obj, ordinal: int, revision_name: str) -> Obj:
    """The pod ``<set>-<ordinal>`` of ``sts`` (at the revision whose name is given):
    template labels plus ``statefulset.kubernetes.io/pod-name``,
    ``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``; hostname
    = pod name, subdomain = ``serviceName``; a volume per claim template
    pointing at ``<claim>-<set>-<ordinal>``; a controller reference."""
    spec = sts.get("spec") or {}
    name = f"{_meta(sts)['name']}-{ordinal}"
    tmpl = copy_object(spec.get("template") or {})
    tmeta = tmpl.get("metadata") or {}
    pspec = tmpl.get("spec") or {}
    labels = dict(tmeta.get("labels") or {})
    labels[POD_NAME_LABEL] = name
    labels[POD_INDEX_LABEL] = str(ordinal)
    labels[REVISION_HASH_LABEL] = revision_name
    pspec["hostname"] = name
    if spec.get("serviceName"):
        pspec["subdomain"] = spec["serviceName"]
    volumes = [v for v in pspec.get("volumes") or []]
    for claim in spec.get("volumeClaimTemplates") or ():
        cname = _meta(claim).get("name")
        vol = {"name": cname, "persistentVolumeClaim": {"claimName": claim_name(cname, _meta(sts)["name"], ordinal)}}
        volumes = [v for v in volumes if v.get("name") != cname] + [vol]
    if volumes:
        pspec["volumes"] = volumes
    meta: Obj = {"name": name, "namespace": _meta(sts).get("namespace"), "labels": labels,
                 "ownerReferences": [new_controller_ref(sts)]}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec}


def _claims_for(sts: Obj, ordinal: int) -> list[Obj]:
    spec = sts.get("spec") or {}
    match = ((spec.get("selector") or {}).get("matchLabels")) or {}
    out = []
    for claim in spec.get("volumeClaimTemplates") or ():
        c = copy_object(claim)
        cmeta = c.get("metadata") or {}
        c = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": c.get("spec") or {},
             "metadata": {**cmeta, "name": claim_name(cmeta.get("name"), _meta(sts)["name"], ordinal),
                          "namespace": _meta(sts).get("namespace"),
                          "labels": {**(cmeta.get("labels") or {}), **match}}}
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenDeleted") == "Delete":
            c["metadata"]["ownerReferences"] = [_owner_ref(sts)]
        out.append(c)
    return out


def _owner_ref(obj: Obj) -> Obj:
    m = _meta(obj)
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": m["name"], "uid": m["uid"]}


class _AggregateError(Exception):
    """``utilerrors.NewAggregate``: one error's message, or ``[a, b]`` for several."""

    def __init__(self, msgs: list[str]) -> None:
        self.msgs = msgs
        super().__init__(msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]")


def _has_stale_owner_ref(claim: Obj, pod_name: str, pod_uid: str) -> bool:
    """Upstream ``hasStaleOwnerRef``: the claim names a pod ``pod_name`` with another uid."""
    return any(r.get("name") == pod_name and r.get("uid") != pod_uid and r.get("apiVersion") == "v1"
               and r.get("kind") == "Pod" for r in _meta(claim).get("ownerReferences") or ())


class StatefulSetController(Component):
    """kube-controller-manager's StatefulSet controller (actor ``statefulset-controller``).

    Events on the set: ``SuccessfulCreate`` ``create Pod web-0 in StatefulSet
    web successful``, ``SuccessfulCreate`` ``create Claim www-web-0 Pod web-0
    in StatefulSet web success``, ``SuccessfulDelete`` ``delete Pod web-2 in
    StatefulSet web successful`` (``Failed…`` ``… failed error: <err>`` on errors).
    """

    name = "statefulset-controller"

    def __init__(self, api, name: str | None = None, user=None) -> None:
        super().__init__(api, name, user)
        self.sets = self.informer("statefulsets.apps")
        self.pods = self.informer("pods", indexers={CONTROLLER_UID_INDEX: controller_uid_index})
        self.claims = self.informer("persistentvolumeclaims")
        self.revisions = self.informer("controllerrevisions.apps", indexers={CONTROLLER_UID_INDEX: controller_uid_index})
        self.q = self.queue()
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self.sets.add_event_handler(EventHandler(on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n)))
        self.pods.add_event_handler(EventHandler(on_add=self._pod_changed, on_update=lambda o, n: self._pod_changed(n),
                                                 on_delete=self._pod_changed))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def on_sync_error(self, key, exc: Exception) -> None:
        if isinstance(exc, _AggregateError):
            return  # retried with back-off, as upstream's ``Error syncing StatefulSet``
        super().on_sync_error(key, exc)

    def _enqueue(self, sts: Obj) -> None:
        self.q.add(meta_namespace_key(sts))

    def _pod_changed(self, pod: Obj) -> None:
        for ref in _meta(pod).get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") == "StatefulSet":
                self.q.add(f"{_meta(pod).get('namespace')}/{ref.get('name')}")

    # ---- events
    def _pod_event(self, verb: str, sts: Obj, pod_name: str, err: Exception | None = None) -> None:
        set_name = _meta(sts)["name"]
        if err is None:
            self.recorder.event(sts, NORMAL, f"Successful{verb.title()}",
                                f"{verb} Pod {pod_name} in StatefulSet {set_name} successful")
        else:
            self.recorder.event(sts, WARNING, f"Failed{verb.title()}",
                                f"{verb} Pod {pod_name} in StatefulSet {set_name} failed error: {err}")

    # ---- sync
    def sync(self, key: str) -> None:
        """Reconcile one StatefulSet (``namespace/name``), as upstream's ``updateStatefulSet``."""
        ns, name = key.split("/", 1)
        sts = self.sets.indexer.get_by(ns, name)
        if sts is None or _meta(sts).get("deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        status = sts.get("status") or {}
        selector = selector_from_label_selector(spec.get("selector"))
        pods = [p for p in self.pods.indexer.by_index(CONTROLLER_UID_INDEX, _meta(sts).get("uid", ""))
                if selector.matches(_meta(p).get("labels") or {}) and pod_ordinal(name, p) >= 0]
        revisions = sorted(self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, _meta(sts).get("uid", "")),
                           key=lambda r: int(r.get("revision") or 0))
        update_rev = self._update_revision(sts, revisions)
        revisions = [r for r in revisions if _meta(r)["name"] != _meta(update_rev)["name"]] + [update_rev]
        current_rev = next((r for r in revisions if _meta(r)["name"] == status.get("currentRevision")), update_rev)
        current_set = _set_from_revision(sts, current_rev)
        update_set = sts
        min_ready = int(spec.get("minReadySeconds") or 0)
        self._update_pods(key, sts, pods, current_set, update_set, current_rev, update_rev)
        new_status = self._status(sts, pods, current_rev, update_rev)
        self._truncate_history(sts, pods, revisions, current_rev, update_rev)
        if new_status != status:
            try:
                self.api.update("statefulsets.apps", {**sts, "status": new_status}, subresource="status",
                                ctx=self.ctx, field_validation="Ignore")
            except errors.Conflict:
                self.q.add(key)
        if min_ready and new_status.get("readyReplicas", 0) != new_status.get("availableReplicas", 0):
            self.q.add_after(key, float(min_ready))

    def _update_revision(self, sts: Obj, revisions: list[Obj]) -> Obj:
        data = _revision_data(sts)
        cc = (sts.get("status") or {}).get("collisionCount")
        hash_ = compute_hash(data, cc)
        name = f"{_meta(sts)['name']}-{hash_}"
        top = max([int(r.get("revision") or 0) for r in revisions], default=0)
        for r in revisions:
            if r.get("data") == data:
                if int(r.get("revision") or 0) < top:
                    return self.api.update("controllerrevisions.apps", {**r, "revision": top + 1}, ctx=self.ctx,
                                           field_validation="Ignore")
                return r
        body = new_controller_revision(sts, name, name, data, top + 1)
        try:
            return self.api.create("controllerrevisions.apps", body, namespace=_meta(sts).get("namespace"),
                                   ctx=self.ctx, field_validation="Ignore")
        except errors.AlreadyExists:
            return self.api.get("controllerrevisions.apps", name, namespace=_meta(sts).get("namespace"),
                                ctx=self.ctx)

    def _truncate_history(self, sts: Obj, pods: list[Obj], revisions: list[Obj], current: Obj, update: Obj) -> None:
        live = {_revision_of(p) for p in pods} | {_meta(current)["name"], _meta(update)["name"]}
        old = [r for r in revisions if _meta(r)["name"] not in live]
        limit = int((sts.get("spec") or {}).get("revisionHistoryLimit") or 10)
        for r in old[:max(0, len(old) - limit)]:
            try:
                self.api.delete("controllerrevisions.apps", _meta(r)["name"], namespace=_meta(r).get("namespace"),
                                ctx=self.ctx)
            except errors.NotFound:
                pass

    def _status(self, sts: Obj, pods: list[Obj], current_rev: Obj, update_rev: Obj) -> Obj:
        now, epoch = self.api.now, self.api.epoch
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        cur_name, upd_name = _meta(current_rev)["name"], _meta(update_rev)["name"]
        replicas = ready = available = current = updated = 0
        for p in pods:
            replicas += 1
            if _running_and_ready(p):
                ready += 1
                if is_pod_available(p, min_ready, now, epoch):
                    available += 1
            if not _terminating(p):
                if _revision_of(p) == cur_name:
                    current += 1
                if _revision_of(p) == upd_name:
                    updated += 1
        st: Obj = {"observedGeneration": _meta(sts).get("generation"), "replicas": replicas}
        for k, v in (("readyReplicas", ready), ("currentReplicas", current), ("updatedReplicas", updated)):
            if v:
                st[k] = v
        st["currentRevision"] = cur_name
        st["updateRevision"] = upd_name
        st["collisionCount"] = int((sts.get("status") or {}).get("collisionCount") or 0)
        st["availableReplicas"] = available
        strategy = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("type")
        if strategy == "RollingUpdate" and updated == replicas and ready == replicas and cur_name != upd_name:
            st["currentRevision"] = upd_name
            if updated:
                st["currentReplicas"] = updated
        return st

    def _update_pods(self, key, sts, pods, current_set, update_set, current_rev, update_rev) -> None:
        """Create, replace, condemn and roll pods; returns early where ``OrderedReady`` waits."""
        api, ctx = self.api, self.ctx
        spec = sts.get("spec") or {}
        name = _meta(sts)["name"]
        ns = _meta(sts).get("namespace")
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        count = int(spec.get("replicas") or 0)
        ordered = spec.get("podManagementPolicy") != "Parallel"
        strategy = spec.get("updateStrategy") or {}
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0) \
            if strategy.get("type") == "RollingUpdate" else 0
        min_ready = int(spec.get("minReadySeconds") or 0)
        now, epoch = api.now, api.epoch
        slots: dict[int, Obj] = {}
        condemned: list[Obj] = []
        for p in pods:
            o = pod_ordinal(name, p)
            if start <= o < start + count:
                slots[o] = p
            else:
                condemned.append(p)
        condemned.sort(key=lambda p: -pod_ordinal(name, p))
        cur_name, upd_name = _meta(current_rev)["name"], _meta(update_rev)["name"]

        def fresh(o: int) -> Obj:
            if strategy.get("type") == "RollingUpdate" and o - start < partition:
                return new_stateful_pod(current_set, o, cur_name)
            return new_stateful_pod(update_set, o, upd_name)

        for o in range(start, start + count):
            pod = slots.get(o)
            if pod is not None and _phase(pod) in ("Failed", "Succeeded") and not _terminating(pod):
                self._delete_pod(key, sts, pod)
                if ordered:
                    return
                continue
            if pod is None:
                body = fresh(o)
                if self._claim_is_stale(sts, o):
                    # upstream PodClaimIsStale: no more work for this pod this round
                    if ordered:
                        return
                    continue
                try:
                    self._create_claims(sts, o)
                except _AggregateError as exc:
                    self._pod_event("create", sts, _meta(body)["name"], exc)
                    raise
                # a stale cache only costs an AlreadyExists: pod names are fixed
                try:
                    api.create("pods", body, namespace=ns, ctx=ctx, field_validation="Ignore")
                except errors.AlreadyExists:
                    pass
                except errors.StatusError as exc:
                    self._pod_event("create", sts, _meta(body)["name"], exc)
                    raise
                else:
                    self._pod_event("create", sts, _meta(body)["name"])
                if ordered:
                    return
                continue
            if _phase(pod) == "Pending":
                # upstream createMissingPersistentVolumeClaims: a claim deleted under a pod is made
                # again once it is gone; one still being deleted fails the sync (retried)
                self._create_claims(sts, o)
            if _terminating(pod):
                if ordered:
                    return
                continue
            if not _running_and_ready(pod) and ordered:
                return
            if ordered and not is_pod_available(pod, min_ready, now, epoch):
                self.q.add_after(key, float(min_ready))
                return
        unhealthy = [p for p in condemned if not _healthy(p)]
        first_unhealthy = min(unhealthy, key=lambda p: pod_ordinal(name, p)) if unhealthy else None
        for pod in condemned:
            if _terminating(pod):
                if ordered:
                    return
                continue
            if ordered and not _running_and_ready(pod) and pod is not first_unhealthy:
                return
            self._delete_pod(key, sts, pod, scaled_down=True)
            if ordered:
                return
        if strategy.get("type") != "RollingUpdate":
            return
        for o in range(start + count - 1, start + partition - 1, -1):
            pod = slots.get(o)
            if pod is None:
                continue
            if _revision_of(pod) != upd_name and not _terminating(pod):
                self._delete_pod(key, sts, pod)
                return
            if not _healthy(pod):
                return
        return

    def _claim_is_stale(self, sts: Obj, ordinal: int) -> bool:
        """Upstream ``PodClaimIsStale`` for a pod not yet created: under ``whenScaled: Delete``
        a claim of the slot still owned by a pod of that name (an earlier one, being collected)
        blocks the new pod."""
        policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenScaled", "Retain") == "Retain":
            return False
        ns = _meta(sts).get("namespace")
        pod_name = f"{_meta(sts)['name']}-{ordinal}"
        for claim in _claims_for(sts, ordinal):
            cur = self.claims.indexer.get_by(ns, _meta(claim)["name"])
            if cur is not None and _has_stale_owner_ref(cur, pod_name, ""):
                return True
        return False

    def _create_claims(self, sts: Obj, ordinal: int) -> None:
        """Upstream ``createPersistentVolumeClaims``: create each claim the cache lacks
        (``SuccessfulCreate`` ``create Claim data-db-0 Pod db-0 in StatefulSet db success``, or
        ``FailedCreate`` ``create Claim … for Pod … failed error: …``); a claim being deleted, a
        failed create (an ``AlreadyExists`` without an event) are errors, raised together."""
        ns = _meta(sts).get("namespace")
        set_name = _meta(sts)["name"]
        pod_name = f"{set_name}-{ordinal}"
        errs: list[str] = []
        for claim in _claims_for(sts, ordinal):
            cname = _meta(claim)["name"]
            cur = self.claims.indexer.get_by(ns, cname)
            if cur is not None:
                if _meta(cur).get("deletionTimestamp"):
                    errs.append(f"pvc {cname} is being deleted")
                continue
            try:
                self.api.create("persistentvolumeclaims", claim, namespace=ns, ctx=self.ctx, field_validation="Ignore")
            except errors.AlreadyExists as exc:
                errs.append(f"failed to create PVC {cname}: {exc}")
                continue
            except errors.StatusError as exc:
                errs.append(f"failed to create PVC {cname}: {exc}")
                self.recorder.event(sts, WARNING, "FailedCreate",
                                    f"create Claim {cname} for Pod {pod_name} in StatefulSet {set_name} "
                                    f"failed error: {exc}")
                continue
            self.recorder.event(sts, NORMAL, "SuccessfulCreate",
                                f"create Claim {cname} Pod {pod_name} in StatefulSet {set_name} success")
        if errs:
            raise _AggregateError(errs)

    def _delete_pod(self, key: str, sts: Obj, pod: Obj, scaled_down: bool = False) -> None:
        ns = _meta(pod).get("namespace")
        policy = ((sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {})
        if scaled_down and policy.get("whenScaled") == "Delete":
            # the condemned pod owns its claims, so they are collected with it
            for claim in _claims_for(sts, pod_ordinal(_meta(sts)["name"], pod)):
                cur = self.claims.indexer.get_by(ns, _meta(claim)["name"])
                if cur is None:
                    continue
                refs = list(_meta(cur).get("ownerReferences") or [])
                if any(r.get("uid") == _meta(pod).get("uid") for r in refs):
                    continue
                refs.append(_owner_ref(pod))
                self.api.patch("persistentvolumeclaims", _meta(cur)["name"],
                               {"metadata": {"ownerReferences": refs}}, "application/merge-patch+json",
                               namespace=ns, ctx=self.ctx)
        try:
            self.api.delete("pods", _meta(pod)["name"], namespace=ns, ctx=self.ctx)
        except errors.NotFound:
            return
        except errors.StatusError as exc:
            self._pod_event("delete", sts, _meta(pod)["name"], exc)
            raise
        self._pod_event("delete", sts, _meta(pod)["name"])


