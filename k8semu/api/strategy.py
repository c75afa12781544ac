"""Per-kind registry strategies: what kube-apiserver does to an object besides
defaulting and validation, by kind (pkg/registry/<group>/<kind>/strategy.go).

- which kinds track ``metadata.generation`` (bumped on spec changes only);
- which kinds have a ``status`` subresource (then an update of the main
  resource keeps the old status, and an update of ``status`` keeps the rest);
- what ``PrepareForCreate`` resets (a new Deployment's status, a new Pod's
  phase and QoS class, a Namespace's phase and finalizers, a PersistentVolume's
  phase ``Pending`` and ``status.lastPhaseTransitionTime``);
- a PersistentVolume ``status`` update's ``lastPhaseTransitionTime``
  (:func:`pv_last_phase_transition_time`: the virtual now when the phase changes);
- graceful deletion: how long a Pod is given (``terminationGracePeriodSeconds``
  unless the request says otherwise; immediately if never scheduled or
  already terminal);
- the default deletion propagation (Background, Orphan for the legacy kinds'
  old group-versions — all served versions here default to Background);
- CertificateSigningRequests (pkg/registry/certificates/certificates/strategy.go and the
  ``CertificateApproval``, ``CertificateSigning`` and ``CertificateSubjectRestriction``
  admission plugins): the three update paths (main resource, ``/status``, ``/approval``); the
  part that needs the request's user, the clock or the authorizer is the admission plugin
  :class:`k8semu.api.admission.CertificateSigningRequestAdmission`.
"""

from __future__ import annotations

from typing import Any

from .pods import is_terminal, qos_class

__all__ = ["tracks_generation", "has_status", "prepare_for_create", "prepare_for_update",
           "graceful_delete_seconds", "spec_changed", "with_pod_spec", "csr_subresource_errors",
           "populate_csr_condition_timestamps", "pv_last_phase_transition_time"]

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
    "Ingress", "CustomResourceDefinition", "ValidatingAdmissionPolicy", "CertificateSigningRequest",
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


def with_pod_spec(obj: dict[str, Any], old: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """What a pod subresource that changes the spec stores (``ephemeralcontainers``, ``resize``):
    the stored pod ``old`` with ``spec``, its metadata kept but for the request's (``obj``'s)
    managedFields, and ``metadata.generation`` one up when the spec changed (``updatePodGeneration``)."""
    meta = dict(old.get("metadata") or {})
    managed = (obj.get("metadata") or {}).get("managedFields")
    if managed is not None:
        meta["managedFields"] = managed
    if "generation" in meta and spec != (old.get("spec") or {}):
        meta["generation"] = meta["generation"] + 1
    return {**old, "metadata": meta, "spec": spec}


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
    elif kind == "PersistentVolume":
        # persistentvolumeStrategy.PrepareForCreate: phase Pending since now (the apiserver
        # stamped creationTimestamp from the same virtual clock reading just before)
        obj["status"] = {"phase": "Pending"}
        if meta.get("creationTimestamp"):
            obj["status"]["lastPhaseTransitionTime"] = meta["creationTimestamp"]
    elif has_status(kind):
        obj["status"] = dict(_EMPTY_STATUS.get(kind, {})) if kind != "PersistentVolumeClaim" else {"phase": "Pending"}
    return obj


def prepare_for_update(obj: dict[str, Any], old: dict[str, Any], subresource: str,
                       now: str | None = None) -> dict[str, Any]:
    """Carry over what this kind of update may not change, and bump generation.

    A main-resource update keeps the old ``status`` (for kinds with a status
    subresource); a ``status`` update keeps everything but ``status`` (and
    metadata labels/annotations changes are dropped, as upstream).

    ``now`` (RFC 3339, the cluster's virtual clock) is what a PersistentVolume ``status``
    update whose phase changes stamps as ``status.lastPhaseTransitionTime``
    (:func:`pv_last_phase_transition_time`); without it that time is left as the request has it.
    """
    kind = old.get("kind")
    if kind == "CertificateSigningRequest":
        return _csr_prepare_for_update(obj, old, subresource)
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
        if kind == "PersistentVolume":
            out = pv_last_phase_transition_time(out, old, now)
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


def pv_last_phase_transition_time(obj: dict[str, Any], old: dict[str, Any], now: str | None) -> dict[str, Any]:
    """``persistentvolumeStatusStrategy.PrepareForUpdate``'s ``status.lastPhaseTransitionTime``
    (PersistentVolumeLastPhaseTransitionTime, GA in 1.31, gate gone in 1.33):

    * phase unchanged and the request has no time: the stored one is kept (a client cannot clear it);
    * phase changed and the request has no time, or the stored one unchanged: ``now``;
    * otherwise (phase unchanged or changed, and the request sets a time of its own) the
      request's time stands.

    Phases compare as Go strings (absent is ``""``); times as instants (``metav1.Time.Equal``).
    ``now`` None leaves the phase-change case alone.
    """
    status = obj.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    old_status = old.get("status") if isinstance(old.get("status"), dict) else {}
    new_t, old_t = status.get("lastPhaseTransitionTime"), old_status.get("lastPhaseTransitionTime")
    if (status.get("phase") or "") == (old_status.get("phase") or ""):
        if new_t is None and old_t is not None:
            status["lastPhaseTransitionTime"] = old_t
        else:
            return obj
    elif now is not None and (new_t is None or _same_instant(new_t, old_t)):
        status["lastPhaseTransitionTime"] = now
    else:
        return obj
    return {**obj, "status": status}


def _same_instant(a: Any, b: Any) -> bool:
    """``metav1.Time.Equal`` of two RFC 3339 strings (both nil is equal, one nil is not)."""
    if a is None or b is None:
        return a is None and b is None
    if a == b:
        return True
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(a).replace("Z", "+00:00")) == \
            datetime.fromisoformat(str(b).replace("Z", "+00:00"))
    except ValueError:
        return False


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


# ------------------------------------------------------------------ certificates.k8s.io

CSR_GROUP = "certificates.k8s.io"
CSR_PLURAL = "certificatesigningrequests"
KUBE_APISERVER_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


def _csr_prepare_for_update(obj: dict[str, Any], old: dict[str, Any], subresource: str) -> dict[str, Any]:
    """The three ``PrepareForUpdate`` of a CertificateSigningRequest:

    * main resource (``csrStrategy``): ``spec`` and ``status`` are the stored ones (only
      metadata changes; approving by a plain update does nothing);
    * ``status`` (``csrStatusStrategy``): ``spec`` and metadata are the stored ones; existing
      ``Approved`` / ``Denied`` conditions are kept as stored when as many are sent
      (``preserveConditionInstances``; adding or removing one fails validation);
    * ``approval`` (``csrApprovalStrategy``): only ``status.conditions`` (and metadata)
      change; ``spec`` and ``status.certificate`` are the stored ones.
    """
    obj = dict(obj)
    old_status = old.get("status") or {}
    obj["spec"] = old.get("spec")
    if obj["spec"] is None:
        obj.pop("spec")
    if subresource == "status":
        out = {k: v for k, v in old.items() if k != "status"}
        status = dict(obj.get("status") or {})
        conds = list(status.get("conditions") or [])
        old_conds = list(old_status.get("conditions") or [])
        for t in ("Approved", "Denied"):
            new_i = [i for i, c in enumerate(conds) if isinstance(c, dict) and c.get("type") == t]
            old_i = [i for i, c in enumerate(old_conds) if isinstance(c, dict) and c.get("type") == t]
            if len(new_i) == len(old_i):
                for ni, oi in zip(new_i, old_i):
                    conds[ni] = old_conds[oi]
        if conds:
            status["conditions"] = conds
        out["status"] = status
        meta = dict(old.get("metadata") or {})
        new_meta = obj.get("metadata") or {}
        if "managedFields" in new_meta:
            meta["managedFields"] = new_meta["managedFields"]
        out["metadata"] = meta
        return out
    if subresource == "approval":
        status = {k: v for k, v in old_status.items() if k != "conditions"}
        conds = (obj.get("status") or {}).get("conditions")
        if conds:
            status["conditions"] = conds
        obj["status"] = status
        return obj
    obj["status"] = old_status
    return obj


def populate_csr_condition_timestamps(obj: dict[str, Any], old: dict[str, Any], now: str) -> dict[str, Any]:
    """``populateConditionTimestamps``: a condition without ``lastUpdateTime`` gets ``now``; one
    without ``lastTransitionTime`` gets the stored condition's of the same type and status, else
    ``now``."""
    conds = (obj.get("status") or {}).get("conditions")
    if not isinstance(conds, list) or not conds:
        return obj
    old_conds = [c for c in ((old.get("status") or {}).get("conditions") or ()) if isinstance(c, dict)]
    out = []
    for c in conds:
        if isinstance(c, dict):
            c = dict(c)
            if not c.get("lastUpdateTime"):
                c["lastUpdateTime"] = now
            if not c.get("lastTransitionTime"):
                c["lastTransitionTime"] = next(
                    (o["lastTransitionTime"] for o in old_conds if o.get("type") == c.get("type")
                     and o.get("status") == c.get("status") and o.get("lastTransitionTime")), now)
        out.append(c)
    return {**obj, "status": {**obj["status"], "conditions": out}}


def csr_subresource_errors(obj: dict[str, Any], old: dict[str, Any], subresource: str) -> list[Any]:
    """The subresource-dependent part of ``validateCertificateSigningRequestUpdate``: outside
    ``/approval`` an Approved / Denied condition may not be added or changed; outside ``/status``
    the certificate may not be set (both already kept as stored by :func:`prepare_for_update`,
    so in practice this refuses what ``/status`` tries with the approval conditions)."""
    from .errors import FieldError
    from .validation import csr_conditions, wire_bytes

    errs: list[Any] = []
    if subresource != "approval":
        for t in ("Approved", "Denied"):
            new_c, old_c = csr_conditions(obj, t), csr_conditions(old, t)
            if len(new_c) > len(old_c):
                errs.append(FieldError.forbidden("status.conditions", f'updates may not add a condition of type "{t}"'))
            elif len(new_c) == len(old_c) and new_c != old_c:
                errs.append(FieldError.forbidden("status.conditions", f'updates may not modify a condition of type "{t}"'))
    if subresource != "status":
        if wire_bytes((obj.get("status") or {}).get("certificate")) != wire_bytes(
                (old.get("status") or {}).get("certificate")):
            errs.append(FieldError.forbidden("status.certificate", "updates may not set certificate content"))
    return errs
