"""Resource-quota accounting: what an object charges against a namespace's quotas.

Shared by the ResourceQuota admission plugin (refusing a create) and the
resource-quota controller (keeping ``status.used`` current). Mirrors
upstream's quota evaluators: object counts (``pods``, ``services``,
``configmaps``, ``secrets``, ``persistentvolumeclaims``, ``replicationcontrollers``,
``resourcequotas``, ``services.nodeports``, ``services.loadbalancers``, and the generic
``count/<resource>.<group>``), and compute for non-terminal pods
(``requests.cpu``, ``requests.memory``, ``limits.cpu``, ``limits.memory``, and
bare ``cpu`` / ``memory`` meaning requests; a terminal pod still counts in
``count/pods``). A pod's compute is the larger of
the sum of its containers and its largest init container, as the scheduler counts it.

Also, as upstream's evaluators (``pkg/quota/v1/evaluator/core/pods.go``):

- :func:`pod_constraints` (the pod evaluator's ``Constraints``): a quota that
  limits ``cpu``, ``memory``, ``requests.*`` or ``limits.*`` of those requires
  every container (and init container) to set them, else ``must specify
  limits.memory for: web; requests.cpu for: web`` — missing resources sorted,
  each with the sorted names of the containers that lack it;
- :func:`scopes_match` (``generic.Matches``' scope half): a quota's
  ``spec.scopes`` and ``spec.scopeSelector`` must all match the object
  (``Terminating`` / ``NotTerminating`` on ``activeDeadlineSeconds``,
  ``BestEffort`` / ``NotBestEffort`` on the QoS class, ``PriorityClass``,
  ``CrossNamespacePodAffinity``); only pods can match a scoped quota;
- :func:`quota_usage`: a quota's usage, counting only what matches its scopes.
"""

from __future__ import annotations

from typing import Any

from ..store import EventLog
from .pods import is_terminal, qos_class
from .quantity import Quantity, parse_quantity
from .resources import RESOURCES, ResourceInfo

__all__ = ["usage_delta", "namespace_usage", "quota_usage", "pod_constraints", "scopes_match",
           "VALIDATION_SET"]

#: Quota resources that, when a quota limits them, every container of a new pod must
#: set (upstream's ``validationSet``, kept for backward compatibility there).
VALIDATION_SET = frozenset(
    ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"))

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
            # upstream's PodUsageFunc: the object count always, ``pods`` and compute only while it runs
            return {f"count/{info.qualified}": one}
        out.update(_pod_compute(obj))
    elif info.kind == "Service":
        t = (obj.get("spec") or {}).get("type")
        if t in ("NodePort", "LoadBalancer"):
            out["services.nodeports"] = parse_quantity(len((obj.get("spec") or {}).get("ports") or ()))
        if t == "LoadBalancer":
            out["services.loadbalancers"] = one
    return out


def namespace_usage(log: EventLog, namespace: str, quota: dict[str, Any] | None = None) -> dict[str, Quantity]:
    """Current usage in ``namespace`` for every quota resource name (sums of :func:`usage_delta`);
    with ``quota``, of the objects that match its scopes only (:func:`scopes_match`)."""
    used: dict[str, Quantity] = {}
    scoped = quota is not None and bool(_scope_selectors(quota))
    for info in RESOURCES:
        if not info.namespaced or (info.group == "events.k8s.io"):
            continue
        if scoped and info.kind != "Pod":
            continue
        for rec in log.range(info.prefix(namespace)):
            if scoped and not scopes_match(quota, info, rec.object):
                continue
            for r, q in usage_delta(info, rec.object).items():
                used[r] = used[r] + q if r in used else q
    return used


def quota_usage(log: EventLog, namespace: str, quota: dict[str, Any],
                unscoped: dict[str, Quantity] | None = None) -> dict[str, Quantity]:
    """What ``quota`` counts in ``namespace``: :func:`namespace_usage` restricted to its scopes
    (``unscoped``: the namespace's whole usage, when already computed, for a quota with no scopes)."""
    if not _scope_selectors(quota) and unscoped is not None:
        return unscoped
    return namespace_usage(log, namespace, quota)


# --------------------------------------------------------------------------- constraints


def _container_usage_names(c: dict[str, Any]) -> set[str]:
    """The quota resources a container's own requests/limits name (``podComputeUsageHelper``)."""
    res = c.get("resources") or {}
    req = res.get("requests") or {}
    lim = res.get("limits") or {}
    names = {"pods"}
    for r in ("cpu", "memory"):
        if r in req:
            names.update((r, f"requests.{r}"))
        if r in lim:
            names.add(f"limits.{r}")
    return names


def pod_constraints(hard: Any, pod: dict[str, Any]) -> str | None:
    """The pod evaluator's ``Constraints`` for a quota limiting ``hard`` (resource names):
    None when every container sets what the quota requires, else upstream's error text,
    e.g. ``must specify limits.memory for: p1; requests.cpu for: p1``."""
    required = VALIDATION_SET.intersection(hard)
    if not required:
        return None
    spec = pod.get("spec") or {}
    missing: dict[str, set[str]] = {}
    for field in ("containers", "initContainers"):
        for c in spec.get(field) or ():
            for r in required - _container_usage_names(c):
                missing.setdefault(r, set()).add(str(c.get("name") or ""))
    if not missing:
        return None
    return "must specify " + "; ".join(
        f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))


# --------------------------------------------------------------------------- scopes


def _scope_selectors(quota: dict[str, Any]) -> list[dict[str, Any]]:
    """``getScopeSelectorsFromQuota``: each of ``spec.scopes`` as an ``Exists`` requirement,
    then ``spec.scopeSelector.matchExpressions``."""
    spec = quota.get("spec") or {}
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    out.extend((spec.get("scopeSelector") or {}).get("matchExpressions") or ())
    return out


def _cross_namespace_affinity(pod: dict[str, Any]) -> bool:
    aff = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = aff.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
        terms += [(w or {}).get("podAffinityTerm") or {}
                  for w in a.get("preferredDuringSchedulingIgnoredDuringExecution") or ()]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _pod_matches_scope(sel: dict[str, Any], pod: dict[str, Any]) -> bool:
    """``podMatchesScopeFunc``."""
    spec = pod.get("spec") or {}
    scope = sel.get("scopeName")
    if scope in ("Terminating", "NotTerminating"):
        ads = spec.get("activeDeadlineSeconds")
        terminating = ads is not None and int(ads) >= 0
        return terminating if scope == "Terminating" else not terminating
    if scope in ("BestEffort", "NotBestEffort"):
        best = qos_class(pod) == "BestEffort"
        return best if scope == "BestEffort" else not best
    if scope == "PriorityClass":
        pc = spec.get("priorityClassName") or ""
        op, values = sel.get("operator"), sel.get("values") or ()
        if op == "Exists":
            return bool(pc)
        if op == "DoesNotExist":
            return not pc
        if op == "In":
            return bool(pc) and pc in values
        if op == "NotIn":
            return not pc or pc not in values
        return False
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


def scopes_match(quota: dict[str, Any], info: ResourceInfo, obj: dict[str, Any]) -> bool:
    """Whether ``obj`` is in every scope of ``quota`` (true when it has none). Only pods
    can be (every other evaluator matches no scope: ``MatchesNoScopeFunc``)."""
    selectors = _scope_selectors(quota)
    if not selectors:
        return True
    if info.kind != "Pod":
        return False
    return all(_pod_matches_scope(sel, obj) for sel in selectors)
