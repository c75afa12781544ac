"""The Deployment controller's wiring, after upstream's
``pkg/controller/deployment/deployment_controller.go``.

Informers over Deployments, ReplicaSets and Pods enqueue deployment keys
(a ReplicaSet event wakes its controlling deployment, or for an orphan every
deployment whose selector matches it; a deleted pod wakes a Recreate
deployment whose pods are all gone). :meth:`DeploymentController.sync` is
``syncDeployment``: claim ReplicaSets (adopt / release), group pods by
ReplicaSet, then hand over to the pure logic in :mod:`.sync`,
:mod:`.rolling`, :mod:`.recreate` and :mod:`.progress` through
:class:`ApiClient`, the :class:`~.sync.DeploymentClient` over the API server.

Deviation: the emulated API server keeps metadata unchanged on a status
update (upstream's Deployment status strategy lets annotations through), so
the revision annotation is written by a merge patch of the main resource
just before the status update that carries the rest.
"""

from __future__ import annotations

from typing import Any

from ...api import errors
from ...api.apiserver import MERGE_PATCH
from ...api.meta import controller_of, copy_object
from ...api.selectors import selector_from_label_selector
from ...client.component import Component
from ...client.events import EventRecorder
from ...client.informer import (CONTROLLER_UID_INDEX, LABELS_INDEX, EventHandler, controller_uid_index, label_index,
                               meta_namespace_key)
from ..controller_utils import claim_objects
from . import sync as sync_mod
from .recreate import rollout_recreate
from .rolling import rollout_rolling

__all__ = ["DeploymentController", "ApiClient"]

Obj = dict[str, Any]


class ApiClient:
    """:class:`~.sync.DeploymentClient` over the API server for one controller."""

    def __init__(self, controller: "DeploymentController") -> None:
        self.dc = controller
        self.api = controller.api
        self.ctx = controller.ctx
        self._annotations: dict[str, Obj] = {}

    @property
    def now(self) -> float:
        return self.api.now

    @property
    def epoch(self) -> Any:
        return self.api.epoch

    def begin(self, d: Obj) -> None:
        """Remember the stored annotations of ``d`` (start of a sync)."""
        self._annotations[meta_namespace_key(d)] = dict((d["metadata"].get("annotations") or {}))

    def create_replica_set(self, rs: Obj) -> Obj:
        return self.api.create("replicasets", rs, namespace=rs["metadata"]["namespace"], ctx=self.ctx)

    def get_replica_set(self, namespace: str, name: str) -> Obj | None:
        return self.dc.rs_informer.indexer.get_by(namespace, name)

    def update_replica_set(self, rs: Obj) -> Obj:
        return self.api.update("replicasets", rs, ctx=self.ctx)

    def delete_replica_set(self, rs: Obj) -> None:
        self.api.delete("replicasets", rs["metadata"]["name"], namespace=rs["metadata"]["namespace"], ctx=self.ctx)

    def update_deployment_status(self, d: Obj) -> Obj:
        key = meta_namespace_key(d)
        meta = d["metadata"]
        stored = self._annotations.get(key, {})
        want = meta.get("annotations") or {}
        if want != stored:
            diff: Obj = {k: want[k] for k in sorted(want) if stored.get(k) != want[k]}
            diff.update({k: None for k in sorted(stored) if k not in want})
            patched = self.api.patch("deployments", meta["name"],
                                     {"metadata": {"annotations": diff, "resourceVersion": meta.get("resourceVersion")}},
                                     MERGE_PATCH, namespace=meta["namespace"], ctx=self.ctx)
            self._annotations[key] = dict(want)
            d = {**d, "metadata": {**meta, "resourceVersion": patched["metadata"]["resourceVersion"]}}
        return self.api.update("deployments", d, subresource="status", ctx=self.ctx)

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.dc.recorder.event(obj, type_, reason, message)

    def enqueue_after(self, d: Obj, seconds: float) -> None:
        self.dc.q.add_after(meta_namespace_key(d), seconds)

    def enqueue_rate_limited(self, d: Obj) -> None:
        self.dc.q.add_rate_limited(meta_namespace_key(d))


def _selector(d: Obj):
    return selector_from_label_selector((d.get("spec") or {}).get("selector"))


class DeploymentController(Component):
    """kube-controller-manager's Deployment controller (``deployment-controller``)."""

    name = "deployment-controller"

    def __init__(self, api: Any, name: str | None = None) -> None:
        super().__init__(api, name)
        self.recorder = EventRecorder(api, self.ctx, self.name)
        self.client = ApiClient(self)
        self.d_informer = self.informer("deployments.apps")
        self.rs_informer = self.informer("replicasets.apps", indexers={
            LABELS_INDEX: label_index, CONTROLLER_UID_INDEX: controller_uid_index})
        self.pod_informer = self.informer("pods", indexers={LABELS_INDEX: label_index})
        self.q = self.queue()
        self.d_informer.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda old, cur: self._enqueue(cur), on_delete=self._enqueue))
        self.rs_informer.add_event_handler(EventHandler(
            on_add=self._add_rs, on_update=self._update_rs, on_delete=self._delete_rs))
        self.pod_informer.add_event_handler(EventHandler(on_delete=self._delete_pod))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def on_sync_error(self, key: Any, exc: Exception) -> None:
        """Failed syncs (API errors, unusable specs) are retried with back-off."""
        if not isinstance(exc, (errors.StatusError, ValueError)):
            raise exc

    # ------------------------------------------------------------------ handlers
    def _enqueue(self, d: Obj) -> None:
        self.q.add(meta_namespace_key(d))

    def _resolve(self, namespace: str, ref: Obj | None) -> Obj | None:
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self.d_informer.indexer.get_by(namespace, ref.get("name", ""))
        if d is None or d["metadata"].get("uid") != ref.get("uid"):
            return None
        return d

    def _deployments_for_rs(self, rs: Obj) -> list[Obj]:
        labels = rs["metadata"].get("labels") or {}
        out = []
        if not labels:
            return out
        for d in self.d_informer.indexer.by_index("namespace", rs["metadata"].get("namespace") or ""):
            try:
                sel = _selector(d)
            except ValueError:
                continue
            if not sel.empty and sel.matches(labels):
                out.append(d)
        return out

    def _add_rs(self, rs: Obj) -> None:
        if rs["metadata"].get("deletionTimestamp"):
            self._delete_rs(rs)
            return
        ref = controller_of(rs)
        if ref is not None:
            d = self._resolve(rs["metadata"].get("namespace"), ref)
            if d is not None:
                self._enqueue(d)
            return
        for d in self._deployments_for_rs(rs):
            self._enqueue(d)

    def _update_rs(self, old: Obj, cur: Obj) -> None:
        if old["metadata"].get("resourceVersion") == cur["metadata"].get("resourceVersion"):
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        ns = cur["metadata"].get("namespace")
        if ref_changed and old_ref is not None:
            d = self._resolve(ns, old_ref)
            if d is not None:
                self._enqueue(d)
        if cur_ref is not None:
            d = self._resolve(ns, cur_ref)
            if d is not None:
                self._enqueue(d)
            return
        if ref_changed or old["metadata"].get("labels") != cur["metadata"].get("labels"):
            for d in self._deployments_for_rs(cur):
                self._enqueue(d)

    def _delete_rs(self, rs: Obj) -> None:
        d = self._resolve(rs["metadata"].get("namespace"), controller_of(rs))
        if d is not None:
            self._enqueue(d)

    def _delete_pod(self, pod: Obj) -> None:
        ns = pod["metadata"].get("namespace")
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rs_informer.indexer.get_by(ns, ref.get("name", ""))
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return
        d = self._resolve(ns, controller_of(rs))
        if d is None or ((d["spec"].get("strategy") or {}).get("type")) != "Recreate":
            return
        rs_list = self.rs_informer.indexer.by_index(CONTROLLER_UID_INDEX, d["metadata"]["uid"])
        if not any(self.pod_map(d, rs_list).values()):
            self._enqueue(d)

    # ------------------------------------------------------------------ sync
    def replica_sets_for(self, d: Obj) -> list[Obj]:
        """``getReplicaSetsForDeployment``: claim the namespace's ReplicaSets."""
        ns, name = d["metadata"]["namespace"], d["metadata"]["name"]
        sel = _selector(d)

        def can_adopt() -> None:
            fresh = self.api.get("deployments.apps", name, namespace=ns, ctx=self.ctx)
            if fresh["metadata"].get("uid") != d["metadata"]["uid"]:
                raise errors.Conflict(f"original Deployment {ns}/{name} is gone: got uid "
                                      f"{fresh['metadata'].get('uid')}, wanted {d['metadata']['uid']}")
            if fresh["metadata"].get("deletionTimestamp"):
                raise errors.Conflict(f"Deployment {ns}/{name} has just been deleted at "
                                      f"{fresh['metadata']['deletionTimestamp']}")

        # Upstream lists every ReplicaSet of the namespace; only those this Deployment controls
        # and the ones its selector matches can be claimed, so the indexes give the same answer.
        idx = self.rs_informer.indexer
        candidates = {meta_namespace_key(rs): rs for rs in idx.by_index(CONTROLLER_UID_INDEX, d["metadata"]["uid"])}
        candidates.update((meta_namespace_key(rs), rs) for rs in idx.select(ns, sel))
        return claim_objects(self.api, self.ctx, "replicasets.apps", d,
                             [candidates[k] for k in sorted(candidates)],
                             lambda rs: sel.matches(rs["metadata"].get("labels") or {}), can_adopt)

    def pod_map(self, d: Obj, rs_list: list[Obj]) -> dict[str, list[Obj]]:
        """``getPodMapForDeployment``: ReplicaSet uid -> its pods matching the selector."""
        sel = _selector(d)
        out: dict[str, list[Obj]] = {rs["metadata"]["uid"]: [] for rs in rs_list}
        for pod in self.pod_informer.indexer.select(d["metadata"]["namespace"], sel):
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") in out:
                out[ref["uid"]].append(pod)
        return out

    def sync(self, key: str) -> None:
        """``syncDeployment`` for one ``namespace/name`` key (see module docstring).

        Raises:
            StatusError: a failed write (retried with back-off).
        """
        cached = self.d_informer.indexer.get(key)
        if cached is None:
            return
        d = copy_object(cached)
        self.client.begin(cached)
        c = self.client
        sel = (d.get("spec") or {}).get("selector")
        if sel is not None and not (sel.get("matchLabels") or sel.get("matchExpressions")):
            c.event(d, "Warning", "SelectingAll",
                    "This deployment is selecting all pods. A non-empty selector is required.")
            gen = int(d["metadata"].get("generation") or 0)
            if int((d.get("status") or {}).get("observedGeneration") or 0) < gen:
                d.setdefault("status", {})["observedGeneration"] = gen
                c.update_deployment_status(d)
            return
        rs_list = self.replica_sets_for(d)
        pod_map = self.pod_map(d, rs_list)
        if d["metadata"].get("deletionTimestamp"):
            sync_mod.sync_status_only(c, d, rs_list)
            return
        sync_mod.check_paused_conditions(c, d)
        if d["spec"].get("paused"):
            sync_mod.sync(c, d, rs_list)
            return
        if sync_mod.is_scaling_event(c, d, rs_list):
            sync_mod.sync(c, d, rs_list)
            return
        typ = (d["spec"].get("strategy") or {}).get("type", "RollingUpdate")
        if typ == "Recreate":
            rollout_recreate(c, d, rs_list, pod_map)
        elif typ == "RollingUpdate":
            rollout_rolling(c, d, rs_list)
        else:
            raise ValueError(f"unexpected deployment strategy type: {typ}")
