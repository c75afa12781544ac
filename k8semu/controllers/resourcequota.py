"""The resource quota controller: keeps ``status.hard`` and ``status.used`` current.

As upstream's ``pkg/controller/resourcequota`` (actor
``resourcequota-controller``): ``status.hard`` mirrors ``spec.hard`` and
``status.used`` holds, for every resource named in ``hard``, what the
namespace uses now (:mod:`k8semu.api.quota`, shared with the ResourceQuota
admission plugin); a quota with ``scopes`` or a ``scopeSelector`` counts only
the pods in its scopes. A quota is recomputed when it changes and when an object it
counts changes in its namespace.
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
    """``{"hard": spec.hard, "used": {r: usage or 0}}`` for the resources the quota names."""
    hard = dict((quota.get("spec") or {}).get("hard") or {})
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
