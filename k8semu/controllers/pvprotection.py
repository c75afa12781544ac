"""The storage-object-in-use protection controllers of kube-controller-manager
(``persistentvolumeclaim-protection-controller``, pkg/controller/volume/pvcprotection, and
``persistentvolume-protection-controller``, pkg/controller/volume/pvprotection; v1.33).

Every claim carries the finalizer ``kubernetes.io/pvc-protection`` and every
PV ``kubernetes.io/pv-protection`` (upstream's ``StorageObjectInUseProtection``
admission plugin adds them at creation; in k8semu that plugin is not enabled
yet, so these controllers add them, as upstream's do for an object that lacks
one: one more write just after the create). Deleting one only marks it
(``deletionTimestamp``; ``kubectl get`` shows ``Terminating``) until its
controller lets it go:

* **pvc-protection** (``processPVC``): a claim being deleted loses the
  finalizer once no pod uses it (``isBeingUsed``): a pod *uses* a claim when it
  is scheduled (``spec.nodeName`` set: the kubelet refuses to start a pod
  whose claim is being deleted) and has a ``persistentVolumeClaim`` volume
  naming it, or, not yet shut down (``Succeeded``/``Failed``), the generic
  ephemeral volume whose claim it is (``<pod>-<volume>``, owned by the pod).
  Upstream asks its informer, then the API server with a live list; here the
  pod informer (which the API server's writes reach at the same virtual
  instant) answers, and a live list confirms a "not used". A claim not being
  deleted and without the finalizer (made before the admission plugin ran)
  gets it (``addFinalizer``). Pod events (added, changed, deleted) queue the
  claims the pod names, so a claim is released the moment its last pod is
  gone.
* **pv-protection** (``processPV``): a PV being deleted loses the finalizer
  once it is not ``Bound`` (``isBeingUsed``: ``status.phase == Bound``), i.e.
  after its claim is gone and the PV controller released it; a PV without the
  finalizer gets it.

Neither records events (upstream logs only). Both write as the admin
(upstream: their service accounts).
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.meta import copy_object
from ..client.component import Component
from ..client.informer import EventHandler, meta_namespace_key

__all__ = ["PVCProtectionController", "PVProtectionController", "PVC_PROTECTION_FINALIZER",
           "PV_PROTECTION_FINALIZER"]

Obj = dict[str, Any]

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


def _meta(o: Obj | None) -> Obj:
    return (o or {}).get("metadata") or {}


def _finalizers(o: Obj) -> list[str]:
    return list(_meta(o).get("finalizers") or ())


def _is_deletion_candidate(o: Obj, finalizer: str) -> bool:
    """``IsDeletionCandidate``: being deleted and still holding the finalizer."""
    return bool(_meta(o).get("deletionTimestamp")) and finalizer in _finalizers(o)


def _need_to_add_finalizer(o: Obj, finalizer: str) -> bool:
    """``NeedToAddFinalizer``: not being deleted and without the finalizer."""
    return not _meta(o).get("deletionTimestamp") and finalizer not in _finalizers(o)


def _with_finalizers(o: Obj, finalizers: list[str]) -> Obj:
    body = copy_object(o)
    if finalizers:
        body["metadata"]["finalizers"] = finalizers
    else:
        body["metadata"].pop("finalizers", None)
    return body


def _pod_shut_down(pod: Obj) -> bool:
    return ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed")


def _pod_claim_names(pod: Obj) -> list[str]:
    """The claims a pod names (``persistentVolumeClaim`` volumes, then ephemeral ``<pod>-<volume>``)."""
    name = _meta(pod).get("name") or ""
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if v.get("persistentVolumeClaim") is not None:
            out.append((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
        elif v.get("ephemeral") is not None:
            out.append(f"{name}-{v.get('name') or ''}")
    return out


def _pod_pvc_index(pod: Obj) -> list[str]:
    """``PodPVCIndexFunc``: ``namespace/claim`` for each claim the pod names."""
    ns = _meta(pod).get("namespace") or ""
    return sorted({f"{ns}/{c}" for c in _pod_claim_names(pod)})


def pod_uses_pvc(pod: Obj, pvc: Obj) -> bool:
    """``podUsesPVC``: see the module docstring."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False
    if _meta(pod).get("namespace") != _meta(pvc).get("namespace"):
        return False
    name = _meta(pvc).get("name")
    pod_name = _meta(pod).get("name") or ""
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if v.get("persistentVolumeClaim") is not None and (v["persistentVolumeClaim"] or {}).get("claimName") == name:
            return True
        if (v.get("ephemeral") is not None and not _pod_shut_down(pod) and f"{pod_name}-{v.get('name')}" == name
                and any(r.get("uid") == _meta(pod).get("uid") and r.get("controller")
                        for r in _meta(pvc).get("ownerReferences") or ())):
            return True
    return False


class PVCProtectionController(Component):
    """``persistentvolumeclaim-protection-controller`` (see the module docstring)."""

    name = "persistentvolumeclaim-protection-controller"

    def __init__(self, api: Any, name: str | None = None, user: Any = None) -> None:
        super().__init__(api, name, user)
        self.pvcs = self.informer("persistentvolumeclaims")
        self.pods = self.informer("pods")
        self.pods.indexer.add_indexer("pvc", _pod_pvc_index)
        self.q = self.queue()
        self.pvcs.add_event_handler(EventHandler(on_add=self._pvc_event, on_update=lambda o, n: self._pvc_event(n)))
        self.pods.add_event_handler(EventHandler(on_add=self._pod_event, on_update=self._pod_update,
                                                 on_delete=self._pod_event))

    def _pvc_event(self, pvc: Obj) -> None:
        if _need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER) or \
                _is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER):
            self.q.add(meta_namespace_key(pvc))

    def _pod_update(self, old: Obj, new: Obj) -> None:
        self._pod_event(new, old)

    def _pod_event(self, pod: Obj, old: Obj | None = None) -> None:
        """``podAddedDeletedUpdated``: queue the claims the pod (and its old version) name."""
        keys = set(_pod_pvc_index(pod)) | set(_pod_pvc_index(old) if old is not None else ())
        for key in sorted(keys):
            self.q.add(key)

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync, coalesce=True)

    def sync(self, key: str) -> None:
        """``processPVC``."""
        ns, name = key.split("/", 1)
        pvc = self.pvcs.indexer.get_by(ns, name)
        if pvc is None:
            return
        try:
            if _is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER):
                if not self._is_being_used(pvc):
                    self._set_finalizers(pvc, [f for f in _finalizers(pvc) if f != PVC_PROTECTION_FINALIZER])
                return
            if _need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER):
                self._set_finalizers(pvc, _finalizers(pvc) + [PVC_PROTECTION_FINALIZER])
        except (errors.NotFound, errors.Conflict):
            pass  # gone, or changed: its event queues it again

    def _is_being_used(self, pvc: Obj) -> bool:
        """``isBeingUsed``: the informer first, then a live list of the namespace's pods."""
        m = _meta(pvc)
        if any(pod_uses_pvc(p, pvc) for p in self.pods.indexer.by_index("pvc", f"{m.get('namespace')}/{m.get('name')}")):
            return True
        pods = self.api.list("pods", namespace=m.get("namespace"), ctx=self.ctx).get("items") or []
        return any(pod_uses_pvc(p, pvc) for p in pods)

    def _set_finalizers(self, pvc: Obj, finalizers: list[str]) -> None:
        self.api.update("persistentvolumeclaims", _with_finalizers(pvc, finalizers),
                        namespace=_meta(pvc).get("namespace"), ctx=self.ctx, field_validation="Ignore")


class PVProtectionController(Component):
    """``persistentvolume-protection-controller`` (see the module docstring)."""

    name = "persistentvolume-protection-controller"

    def __init__(self, api: Any, name: str | None = None, user: Any = None) -> None:
        super().__init__(api, name, user)
        self.pvs = self.informer("persistentvolumes")
        self.q = self.queue()
        self.pvs.add_event_handler(EventHandler(on_add=self._pv_event, on_update=lambda o, n: self._pv_event(n)))

    def _pv_event(self, pv: Obj) -> None:
        if _need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER) or _is_deletion_candidate(pv, PV_PROTECTION_FINALIZER):
            self.q.add(_meta(pv).get("name") or "")

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync, coalesce=True)

    def sync(self, name: str) -> None:
        """``processPV``."""
        pv = self.pvs.indexer.get(name)
        if pv is None:
            return
        try:
            if _is_deletion_candidate(pv, PV_PROTECTION_FINALIZER):
                if (pv.get("status") or {}).get("phase") != "Bound":
                    self._set_finalizers(pv, [f for f in _finalizers(pv) if f != PV_PROTECTION_FINALIZER])
                return
            if _need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER):
                self._set_finalizers(pv, _finalizers(pv) + [PV_PROTECTION_FINALIZER])
        except (errors.NotFound, errors.Conflict):
            pass  # gone, or changed: its event queues it again

    def _set_finalizers(self, pv: Obj, finalizers: list[str]) -> None:
        self.api.update("persistentvolumes", _with_finalizers(pv, finalizers), ctx=self.ctx,
                        field_validation="Ignore")
