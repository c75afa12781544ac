"""Per-kind registry strategies: what kube-apiserver does to an object besides
defaulting and validation, by kind (pkg/registry/<group>/<kind>/strategy.go).

- which kinds track ``metadata.generation`` (bumped on spec changes only);
- which kinds have a ``status`` subresource (then an update of the main
  resource keeps the old status, and an update of ``status`` keeps the rest);
- what ``PrepareForCreate`` resets (a new Deployment's status, a new Pod's
  phase and QoS class, a Namespace's phase and finalizers);
- graceful deletion: how long a Pod is given (``terminationGracePeriodSeconds``
  unless the request says otherwise; immediately if never scheduled or
  already terminal);
- the default deletion propagation (Background, Orphan for the legacy kinds'
  old group-versions — all served versions here default to Background).
"""

from __future__ import annotations

from typing import Any

from .pods import is_terminal, qos_class

__all__ = ["tracks_generation", "has_status", "prepare_for_create", "prepare_for_update",
           "graceful_delete_seconds", "spec_changed"]

# Kinds whose strategy sets generation 1 on create and bumps it on spec change.
_GENERATION_KINDS = frozenset({
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob",
    "ReplicationController", "HorizontalPodAutoscaler", "PodDisruptionBudget",
    "NetworkPolicy", "Ingress", "PriorityClass", "Pod", "CustomResourceDefinition",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
})

# Kinds whose status is a subresource (main-resource writes keep the old status).
_STATUS_KINDS = frozenset({
    "Pod", "Node", "Service", "Namespace", "Deployment", "ReplicaSet", "StatefulSet",
    "DaemonSet", "Job", "CronJob", "ReplicationController", "HorizontalPodAutoscaler",
    "PodDisruptionBudget", "ResourceQuota", "PersistentVolume", "PersistentVolumeClaim",
    "Ingress", "CustomResourceDefinition", "ValidatingAdmissionPolicy",
})

# What a new object's reset status encodes to: the integer fields of these status
# structs have no ``omitempty``, so Go writes them as 0 (clients such as the Python
# client's typed models require them).
_EMPTY_STATUS: dict[str, dict[str, int]] = {
    "ReplicationController": {"replicas": 0},
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "DaemonSet": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                  "numberReady": 0},
    "HorizontalPodAutoscaler": {"desiredReplicas": 0},
    "PodDisruptionBudget": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
}

# Top-level keys that are not "spec" for generation purposes.
_NOT_SPEC = frozenset({"metadata", "status", "apiVersion", "kind"})


def tracks_generation(kind: str) -> bool:
    """Whether ``metadata.generation`` is maintained for ``kind``."""
    return kind in _GENERATION_KINDS


def has_status(kind: str) -> bool:
    """Whether ``kind`` has a ``status`` subresource."""
    return kind in _STATUS_KINDS


def spec_changed(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether anything but metadata and status differs (what bumps generation)."""
    keys = (set(new) | set(old)) - _NOT_SPEC
    return any(new.get(k) != old.get(k) for k in sorted(keys))


def prepare_for_create(obj: dict[str, Any]) -> dict[str, Any]:
    """Reset what a create may not set, as each kind's ``PrepareForCreate``.

    Args:
        obj: the decoded object (not mutated).
    Returns:
        the object to default, validate and store.
    """
    kind = obj.get("kind")
    obj = dict(obj)
    meta = dict(obj.get("metadata") or {})
    if tracks_generation(kind):
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    obj["metadata"] = meta
    if kind == "Pod":
        status: dict[str, Any] = {"phase": "Pending", "qosClass": qos_class(obj)}
        if (obj.get("spec") or {}).get("schedulingGates"):
            # the pod registry's applySchedulingGatedCondition: the scheduler leaves it alone
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                     "lastTransitionTime": meta.get("creationTimestamp"),
                                     "reason": "SchedulingGated",
                                     "message": "Scheduling is blocked due to non-empty scheduling gates"}]
        obj["status"] = status
    elif kind == "Namespace":
        obj["status"] = {"phase": "Active"}
        spec = dict(obj.get("spec") or {})
        spec["finalizers"] = ["kubernetes"]
        obj["spec"] = spec
    elif kind in ("Node",):
        pass  # the kubelet registers its Node with status
    elif kind == "Service":
        obj["status"] = {"loadBalancer": {}}
    elif has_status(kind):
        obj["status"] = dict(_EMPTY_STATUS.get(kind, {})) if kind not in (
            "PersistentVolumeClaim", "PersistentVolume") else (
            {"phase": "Pending"} if kind == "PersistentVolumeClaim" else {"phase": "Pending"}
        )
    return obj


def prepare_for_update(obj: dict[str, Any], old: dict[str, Any], subresource: str) -> dict[str, Any]:
    """Carry over what this kind of update may not change, and bump generation.

    A main-resource update keeps the old ``status`` (for kinds with a status
    subresource); a ``status`` update keeps everything but ``status`` (and
    metadata labels/annotations changes are dropped, as upstream).
    """
    kind = old.get("kind")
    obj = dict(obj)
    meta = dict(obj.get("metadata") or {})
    old_meta = old.get("metadata") or {}
    if kind == "Namespace" and subresource in ("", "finalize"):
        # spec.finalizers change only through namespaces/NAME/finalize
        spec = dict(obj.get("spec") or {})
        if subresource == "finalize":
            obj = {**old, "spec": {**(old.get("spec") or {}), "finalizers": spec.get("finalizers") or []}}
            meta = dict(old_meta)
        elif "finalizers" in (old.get("spec") or {}):
            spec["finalizers"] = old["spec"]["finalizers"]
            obj["spec"] = spec
    if subresource == "status":
        out = {k: v for k, v in old.items() if k != "status"}
        if "status" in obj:
            out["status"] = obj["status"]
        out["metadata"] = dict(old_meta)
        if "managedFields" in meta:
            out["metadata"]["managedFields"] = meta["managedFields"]
        if kind == "CustomResourceDefinition":
            # the CRD status strategy resets labels, annotations, owners and generation only:
            # the finalizer controller removes its finalizer through /status
            if meta.get("finalizers"):
                out["metadata"]["finalizers"] = meta["finalizers"]
            else:
                out["metadata"].pop("finalizers", None)
        return out
    if has_status(kind) and "status" in old:
        obj["status"] = old["status"]
    elif has_status(kind):
        obj.pop("status", None)
    if kind == "Service":
        obj = drop_type_dependent_fields(obj, old)
    if tracks_generation(kind):
        gen = old_meta.get("generation", 1)
        if spec_changed(obj, old) or (
            meta.get("deletionTimestamp") and not old_meta.get("deletionTimestamp")
        ):
            gen += 1
        meta["generation"] = gen
    obj["metadata"] = meta
    return obj


def _needs_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _needs_hc_node_port(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def drop_type_dependent_fields(obj: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """A Service update that changes ``type`` drops what the old type had and the new one
    does not take, when the update kept the old value (upstream's service strategy
    ``dropTypeDependentFields``): ``clusterIP(s)`` / ``ipFamilies`` / ``ipFamilyPolicy`` for
    ExternalName, the ``nodePort`` s (unless new ones were added), ``healthCheckNodePort``,
    ``allocateLoadBalancerNodePorts``, ``loadBalancerClass`` and ``externalTrafficPolicy``;
    and the load-balancer status of a Service that is no longer a LoadBalancer. The apiserver
    releases what was allocated (its allocation is derived from the stored Services)."""
    ospec, spec = old.get("spec") or {}, dict(obj.get("spec") or {})
    before = dict(spec)
    if ospec.get("type") != "ExternalName" and spec.get("type") == "ExternalName":
        if (ospec.get("clusterIP") or "") == (spec.get("clusterIP") or "") and \
                list(ospec.get("clusterIPs") or []) == list(spec.get("clusterIPs") or []):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if ospec.get("ipFamilies") == spec.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if ospec.get("ipFamilyPolicy") == spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)

    def node_ports(s: dict[str, Any]) -> set[int]:
        return {p.get("nodePort") for p in s.get("ports") or () if isinstance(p, dict) and p.get("nodePort")}

    if _needs_node_port(ospec) and not _needs_node_port(spec) and node_ports(spec) <= node_ports(ospec):
        spec["ports"] = [{k: v for k, v in p.items() if k != "nodePort"} if isinstance(p, dict) else p
                         for p in spec.get("ports") or ()]
        if not spec["ports"] and "ports" not in before:
            spec.pop("ports")
    if _needs_hc_node_port(ospec) and not _needs_hc_node_port(spec) and \
            ospec.get("healthCheckNodePort") == spec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if ospec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is not None and \
                ospec.get("allocateLoadBalancerNodePorts") == spec.get("allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts")
        if ospec.get("loadBalancerClass") == spec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if _needs_node_port(ospec) and not _needs_node_port(spec) and \
            ospec.get("externalTrafficPolicy") == spec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    out = {**obj, "spec": spec} if spec != before else dict(obj)
    if spec.get("type") != "LoadBalancer" and (out.get("status") or {}).get("loadBalancer"):
        out["status"] = {**out["status"], "loadBalancer": {}}
    return out


def graceful_delete_seconds(obj: dict[str, Any], requested: int | None) -> int:
    """Seconds of grace a delete gives, as ``CheckGracefulDelete``; 0 means immediately.

    Only Pods are graceful: a pod gets ``requested`` or its
    ``terminationGracePeriodSeconds`` (default 30), except a pod never bound to
    a node or already Succeeded/Failed, which goes at once.
    """
    if obj.get("kind") != "Pod":
        return 0
    spec = obj.get("spec") or {}
    if not spec.get("nodeName") or is_terminal(obj):
        return 0
    if requested is not None:
        return max(0, int(requested))
    g = spec.get("terminationGracePeriodSeconds")
    return 30 if g is None else int(g)
