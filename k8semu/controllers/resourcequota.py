"""The resource quota controller: keeps ``status.hard`` and ``status.used`` current.

As upstream's ``pkg/controller/resourcequota`` (actor
``resourcequota-controller``): ``status.hard`` mirrors ``spec.hard`` and
``status.used`` holds, for every resource named in ``hard``, what the
namespace uses now (:mod:`k8semu.api.quota`, shared with the ResourceQuota
admission plugin); a quota with ``scopes`` or a ``scopeSelector`` counts only
the pods in its scopes. A quota is recomputed when it changes and when an object it
counts changes in its namespace — for PersistentVolumeClaims also when a claim's
``spec.resources.requests.storage`` grows or its ``status.allocatedResources`` changes,
so ``requests.storage``, ``persistentvolumeclaims`` and their
``<class>.storageclass.storage.k8s.io/`` forms read e.g. ``{"persistentvolumeclaims": "2",
"requests.storage": "3Gi"}``. A claim held by its ``kubernetes.io/pvc-protection``
finalizer still counts until the finalizer is gone.

Quantities are written in canonical form (``status.hard`` too: ``1024Mi`` reads ``1Gi``),
as upstream's ResourceList serialization writes them; a sum keeps the format of the first
object that counts (``1Gi`` + ``500Mi`` is ``1524Mi``; objects in name order).
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import APIServer
from ..api.quantity import parse_quantity
from ..api.quota import namespace_usage, quota_usage
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = ["ResourceQuotaController", "quota_status"]

_COUNTED = ("pods", "services", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers")


def quota_status(quota: dict[str, Any], used: dict[str, Any]) -> dict[str, Any]:
    """``{"hard": spec.hard, "used": {r: usage or 0}}`` for the resources the quota names,
    every quantity in canonical form (``{"requests.storage": "10Gi"}``)."""
    spec_hard = (quota.get("spec") or {}).get("hard") or {}
    hard = {r: str(parse_quantity(spec_hard[r])) for r in sorted(spec_hard)}
    zero = parse_quantity(0)
    return {"hard": hard, "used": {r: str(used.get(r, zero)) for r in sorted(hard)}}


class ResourceQuotaController(Component):
    """Recomputes quota usage per namespace."""

    name = "resourcequota-controller"

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.quotas = self.informer("resourcequotas")
        self.q = self.queue()
        self.quotas.add_event_handler(EventHandler(
            on_add=lambda o: self.q.add(o["metadata"]["namespace"]),
            on_update=lambda o, n: self.q.add(n["metadata"]["namespace"]),
        ))
        for res in _COUNTED:
            inf = self.informer(res)
            inf.add_event_handler(EventHandler(
                on_add=self._changed, on_update=lambda o, n: self._changed(n), on_delete=self._changed))

    def _changed(self, obj: dict[str, Any]) -> None:
        ns = obj["metadata"].get("namespace")
        if ns and self.quotas.indexer.by_index("namespace", ns):
            self.q.add(ns)

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def sync(self, namespace: str) -> None:
        quotas = self.quotas.indexer.by_index("namespace", namespace)
        if not quotas:
            return
        used = namespace_usage(self.api.log, namespace)
        for quota in quotas:
            status = quota_status(quota, quota_usage(self.api.log, namespace, quota, used))
            if quota.get("status") == status:
                continue
            try:
                self.api.update("resourcequotas", {**quota, "status": status}, namespace=namespace,
                                subresource="status", ctx=self.ctx, field_validation="Ignore")
            except errors.Conflict:
                self.q.add(namespace)
