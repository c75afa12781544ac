"""Resource-quota accounting: what an object charges against a namespace's quotas.

Shared by the ResourceQuota admission plugin (refusing a create) and the
resource-quota controller (keeping ``status.used`` current). Mirrors
upstream's quota evaluators: object counts (``pods``, ``services``,
``configmaps``, ``secrets``, ``persistentvolumeclaims``, ``replicationcontrollers``,
``resourcequotas``, ``services.nodeports``, ``services.loadbalancers``, and the generic
``count/<resource>.<group>``), compute for non-terminal pods
(``requests.cpu``, ``requests.memory``, ``requests.ephemeral-storage``, ``limits.cpu``,
``limits.memory``, ``limits.ephemeral-storage``, and bare ``cpu`` / ``memory`` /
``ephemeral-storage`` meaning requests; a terminal pod still counts in
``count/pods``), and storage for PersistentVolumeClaims (:func:`pvc_usage`). A pod's
compute is the larger of the sum of its containers and its largest init container, as
the scheduler counts it.

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
- :func:`quota_usage`: a quota's usage, counting only what matches its scopes;
- :func:`pvc_usage` (``pkg/quota/v1/evaluator/core/persistent_volume_claims.go``, v1.33):
  a claim charges ``persistentvolumeclaims`` and ``count/persistentvolumeclaims`` (1),
  ``requests.storage`` (its ``spec.resources.requests.storage``, or the larger
  ``status.allocatedResources.storage`` — RecoverVolumeExpansionFailure, on by default
  in 1.33 — rounded up to whole bytes), and the same two again under
  ``<class>.storageclass.storage.k8s.io/`` for its storage class (the beta annotation
  ``volume.beta.kubernetes.io/storage-class`` first, then ``spec.storageClassName``;
  nothing per class for a claim without one). The evaluator has no ``Constraints`` (a
  quota on ``requests.storage`` requires nothing of a claim) and matches no scope;
- :func:`admission_delta` (``CheckRequest``'s ``deltaUsage``): what a create charges, and
  for a claim's update (volume expansion) the growth over the old claim's usage.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..store import EventLog
from .pods import is_terminal, qos_class
from .quantity import Quantity, parse_quantity
from .resources import RESOURCES, ResourceInfo

__all__ = ["usage_delta", "admission_delta", "namespace_usage", "quota_usage", "pod_constraints",
           "scopes_match", "pvc_usage", "pvc_storage_class", "pvc_storage_usage", "VALIDATION_SET",
           "STORAGE_CLASS_SUFFIX", "BETA_STORAGE_CLASS_ANNOTATION"]

#: Quota resources that, when a quota limits them, every container of a new pod must
#: set (upstream's ``validationSet``, kept for backward compatibility there).
VALIDATION_SET = frozenset(
    ("cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"))

#: Upstream's ``storageClassSuffix``: a quota resource ``<class>.storageclass.storage.k8s.io/<r>``
#: limits ``<r>`` (``requests.storage`` or ``persistentvolumeclaims``) of one storage class.
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"

#: The beta storage-class annotation, read before ``spec.storageClassName``
#: (component-helpers' ``GetPersistentVolumeClaimClass``).
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"

#: The compute resources a pod's usage counts (upstream's ``podComputeUsageHelper``):
#: each request under ``requests.<r>`` and bare ``<r>``, each limit under ``limits.<r>``.
_POD_COMPUTE = ("cpu", "memory", "ephemeral-storage")

_LEGACY_COUNTS = {
    "pods", "services", "configmaps", "secrets", "persistentvolumeclaims",
    "replicationcontrollers", "resourcequotas",
}


def _pod_compute(pod: dict[str, Any]) -> dict[str, Quantity]:
    spec = pod.get("spec") or {}
    out: dict[str, Quantity] = {}
    for kind in ("requests", "limits"):
        for r in _POD_COMPUTE:
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
    """What creating ``obj`` adds to its namespace's usage, by quota resource name (a claim:
    :func:`pvc_usage`; a running pod: its compute; every object: its ``count/<resource>``)."""
    one = parse_quantity(1)
    out: dict[str, Quantity] = {f"count/{info.qualified}": one}
    if info.group == "" and info.plural in _LEGACY_COUNTS:
        out[info.plural] = one
    if info.kind == "Pod":
        if is_terminal(obj):
            # upstream's PodUsageFunc: the object count always, ``pods`` and compute only while it runs
            return {f"count/{info.qualified}": one}
        out.update(_pod_compute(obj))
    elif info.kind == "PersistentVolumeClaim" and info.group == "":
        out.update(pvc_usage(obj))
    elif info.kind == "Service":
        t = (obj.get("spec") or {}).get("type")
        if t in ("NodePort", "LoadBalancer"):
            out["services.nodeports"] = parse_quantity(len((obj.get("spec") or {}).get("ports") or ()))
        if t == "LoadBalancer":
            out["services.loadbalancers"] = one
    return out


def admission_delta(op: str, info: ResourceInfo, obj: dict[str, Any],
                    old: dict[str, Any] | None = None) -> dict[str, Quantity]:
    """What the ResourceQuota admission plugin charges for ``op`` on ``obj``, by quota resource
    name (upstream's ``CheckRequest``: the evaluator's usage, for an update less the old
    object's usage, resource by resource, never below zero; zero entries dropped).

    ``create`` charges :func:`usage_delta` for every kind. Only the PersistentVolumeClaim
    evaluator also ``Handles`` ``update``: growing ``spec.resources.requests.storage`` from
    ``1Gi`` to ``3Gi`` charges ``{"requests.storage": 2Gi, "<class>.storageclass.storage.k8s.io/
    requests.storage": 2Gi}``; an update that does not grow a claim charges nothing (``{}``),
    as does an update of any other kind.
    """
    if op == "create":
        new = usage_delta(info, obj)
    elif op == "update" and info.kind == "PersistentVolumeClaim" and info.group == "":
        new = usage_delta(info, obj)
        if old is not None:  # always the stored claim here: never a create-on-update
            prev = usage_delta(info, old)
            # quota.SubtractWithNonNegativeResult
            zero = parse_quantity(0)
            new = {r: (q - prev[r] if r in prev else q) for r, q in new.items()}
            new = {r: (q if q > zero else zero) for r, q in new.items()}
    else:
        return {}
    return {r: q for r, q in new.items() if not q.is_zero()}


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


# --------------------------------------------------------------------------- persistent volume claims


def pvc_storage_class(pvc: dict[str, Any]) -> str:
    """The claim's storage class name, ``""`` for none (``GetPersistentVolumeClaimClass``: the
    beta annotation ``volume.beta.kubernetes.io/storage-class`` when present, even empty, else
    ``spec.storageClassName``)."""
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION] or "")
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


def _round_up_bytes(q: Quantity) -> Quantity:
    """``Quantity.RoundUp(0)`` where it loses precision: storage is counted in whole bytes
    (``1.5`` counts as ``2``; upstream issue 94313). A whole quantity is kept as written."""
    if q.value.denominator == 1:
        return q
    return Quantity(Fraction(q.int_value()), q.format)


def pvc_storage_usage(pvc: dict[str, Any]) -> Quantity | None:
    """A claim's ``requests.storage`` usage, in bytes as a Quantity (its own format, e.g.
    ``5Gi``), or None when the claim requests no storage.

    ``getStorageUsage`` of v1.33: ``spec.resources.requests.storage``, unless
    ``status.allocatedResources.storage`` (what an expansion in flight has allocated) is
    larger (RecoverVolumeExpansionFailure, beta and on by default): the larger one, each
    rounded up to a whole byte. ``status.capacity`` is not looked at."""
    spec_req = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    if spec_req is None:
        return None
    result = _round_up_bytes(parse_quantity(spec_req))
    allocated = ((pvc.get("status") or {}).get("allocatedResources") or {}).get("storage")
    if allocated is not None:
        alloc = parse_quantity(allocated)
        if alloc > result:
            result = _round_up_bytes(alloc)
    return result


def pvc_usage(pvc: dict[str, Any]) -> dict[str, Quantity]:
    """The PersistentVolumeClaim evaluator's ``Usage``: ``persistentvolumeclaims`` and
    ``count/persistentvolumeclaims`` (1 each), ``requests.storage`` (:func:`pvc_storage_usage`,
    when the claim requests storage), and for a claim of class ``gold``
    ``gold.storageclass.storage.k8s.io/persistentvolumeclaims`` (1) and
    ``gold.storageclass.storage.k8s.io/requests.storage`` (the same bytes). A claim being
    deleted (held by its ``kubernetes.io/pvc-protection`` finalizer) still counts."""
    one = parse_quantity(1)
    out: dict[str, Quantity] = {"persistentvolumeclaims": one, "count/persistentvolumeclaims": one}
    cls = pvc_storage_class(pvc)
    if cls:
        out[f"{cls}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = one
    storage = pvc_storage_usage(pvc)
    if storage is not None:
        out["requests.storage"] = storage
        if cls:
            out[f"{cls}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
    return out


# --------------------------------------------------------------------------- constraints


def _container_usage_names(c: dict[str, Any]) -> set[str]:
    """The quota resources a container's own requests/limits name (``podComputeUsageHelper``)."""
    res = c.get("resources") or {}
    req = res.get("requests") or {}
    lim = res.get("limits") or {}
    names = {"pods"}
    for r in _POD_COMPUTE:
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
