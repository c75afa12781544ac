"""Resource-quota accounting: what an object charges against a namespace's quotas.

Shared by the ResourceQuota admission plugin (refusing a create) and the
resource-quota controller (keeping ``status.used`` current). Mirrors
upstream's quota evaluators: object counts (``pods``, ``services``,
``configmaps``, ``secrets``, ``persistentvolumeclaims``, ``replicationcontrollers``,
``resourcequotas``, ``services.nodeports``, ``services.loadbalancers``, and the generic
``count/<resource>.<group>``), and compute for non-terminal pods
(``requests.cpu``, ``requests.memory``, ``limits.cpu``, ``limits.memory``, and
bare ``cpu`` / ``memory`` meaning requests). A pod's compute is the larger of
the sum of its containers and its largest init container, as the scheduler counts it.
"""

from __future__ import annotations

from typing import Any

from ..store import EventLog
from .pods import is_terminal
from .quantity import Quantity, parse_quantity
from .resources import RESOURCES, ResourceInfo

__all__ = ["usage_delta", "namespace_usage"]

_LEGACY_COUNTS = {
    "pods", "services", "configmaps", "secrets", "persistentvolumeclaims",
    "replicationcontrollers", "resourcequotas",
}


def _pod_compute(pod: dict[str, Any]) -> dict[str, Quantity]:
    spec = pod.get("spec") or {}
    out: dict[str, Quantity] = {}
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            total = parse_quantity(0)
            for c in spec.get("containers") or ():
                v = ((c.get("resources") or {}).get(kind) or {}).get(r)
                if v is not None:
                    total = total + parse_quantity(v)
            for c in spec.get("initContainers") or ():
                v = ((c.get("resources") or {}).get(kind) or {}).get(r)
                if v is not None and parse_quantity(v) > total:
                    total = parse_quantity(v)
            if total > parse_quantity(0):
                out[f"{kind}.{r}"] = total
                if kind == "requests":
                    out[r] = total
    return out


def usage_delta(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Quantity]:
    """What creating ``obj`` adds to its namespace's usage, by quota resource name."""
    one = parse_quantity(1)
    out: dict[str, Quantity] = {f"count/{info.qualified}": one}
    if info.group == "" and info.plural in _LEGACY_COUNTS:
        out[info.plural] = one
    if info.kind == "Pod":
        if is_terminal(obj):
            return {}
        out.update(_pod_compute(obj))
    elif info.kind == "Service":
        t = (obj.get("spec") or {}).get("type")
        if t in ("NodePort", "LoadBalancer"):
            out["services.nodeports"] = parse_quantity(len((obj.get("spec") or {}).get("ports") or ()))
        if t == "LoadBalancer":
            out["services.loadbalancers"] = one
    return out


def namespace_usage(log: EventLog, namespace: str) -> dict[str, Quantity]:
    """Current usage in ``namespace`` for every quota resource name (sums of :func:`usage_delta`)."""
    used: dict[str, Quantity] = {}
    for info in RESOURCES:
        if not info.namespaced or (info.group == "events.k8s.io"):
            continue
        for rec in log.range(info.prefix(namespace)):
            for r, q in usage_delta(info, rec.object).items():
                used[r] = used[r] + q if r in used else q
    return used
