"""VolumeBinding (upstream ``plugins/volumebinding``), for claims the PV controller binds.

PreFilter: a pod whose PersistentVolumeClaims (``persistentVolumeClaim``
volumes, and the ``<pod>-<volume>`` claims of generic ephemeral volumes) do
not all exist is ``UnschedulableAndUnresolvable`` ``persistentvolumeclaim
"x" not found``; a claim being deleted is an error. A claim is *bound* when
it has ``spec.volumeName`` and the PV controller's
``pv.kubernetes.io/bind-completed`` annotation (``isPVCFullyBound``); one that
is not, and whose StorageClass does not use ``WaitForFirstConsumer`` (or that
names a volume), makes the pod ``UnschedulableAndUnresolvable`` ``pod has
unbound immediate PersistentVolumeClaims`` until the PV controller binds it
(the PVC update moves the pod back to the active queue). Kept from before the
PV controller existed: a claim with ``spec.volumeName`` but no annotation
whose PV is not in the cache counts as bound (upstream: unbound immediate).
Of the bound claims, PVs whose required node affinity names nodes by
``kubernetes.io/hostname In`` (``local`` PVs) narrow the nodes to those
(``GetEligibleNodes``).

Filter: every bound claim's PV must exist (``node(s) unavailable due to one
or more pvc(s) bound to non-existent pv(s)``) and its required node affinity
must match the node's labels (``node(s) had volume node affinity conflict``),
as ``checkBoundClaims``. Delayed-binding (``WaitForFirstConsumer``) claims are
assumed provisionable on every node: the scheduler does not bind PVs itself.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...api.scheduling import node_selector_term_matches
from ..framework import CycleState, PreFilterResult, Status
from ..types import PodInfo

__all__ = ["NAME", "VolumeBinding", "ERR_REASON_UNBOUND_IMMEDIATE", "ERR_REASON_NODE_CONFLICT",
           "ERR_REASON_PV_NOT_EXIST"]

NAME = "VolumeBinding"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
_HOSTNAME = "kubernetes.io/hostname"
_STATE_KEY = "PreFilterVolumeBinding"


def pod_claim_names(pod: Mapping[str, Any]) -> list[str]:
    """Names of the PVCs a pod uses, in volume order."""
    name = (pod.get("metadata") or {}).get("name", "")
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if "persistentVolumeClaim" in v:
            out.append((v["persistentVolumeClaim"] or {}).get("claimName", ""))
        elif "ephemeral" in v:
            out.append(f"{name}-{v.get('name', '')}")
    return out


def _claim_class(pvc: Mapping[str, Any]) -> str:
    ann = (pvc.get("metadata") or {}).get("annotations") or {}
    if _BETA_STORAGE_CLASS in ann:
        return ann[_BETA_STORAGE_CLASS] or ""
    return (pvc.get("spec") or {}).get("storageClassName") or ""


def pv_node_affinity_matches(pv: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: the PV's required node affinity (terms ORed) holds for a node with
    these labels (as upstream, a node of labels only: ``matchFields`` never match)."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if required is None:
        return True
    node = {"metadata": {"labels": dict(labels)}}
    return any(node_selector_term_matches(t, node) for t in required.get("nodeSelectorTerms") or ())


def local_volume_node_names(pv: Mapping[str, Any]) -> set[str]:
    """``GetLocalPersistentVolumeNodeNames``: the union over the PV's required terms of the
    intersection of their ``kubernetes.io/hostname In`` values."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    out: set[str] = set()
    for term in (required or {}).get("nodeSelectorTerms") or ():
        names: set[str] | None = None
        for expr in term.get("matchExpressions") or ():
            if expr.get("key") == _HOSTNAME and expr.get("operator") == "In":
                values = set(expr.get("values") or ())
                names = values if names is None else names & values
        out |= names or set()
    return out


class VolumeBinding:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        claims = pod_claim_names(pod.pod)
        if not claims:
            return None, Status.skip()
        snapshot = state.snapshot
        unbound_immediate = False
        bound: list[tuple[str, bool]] = []  # the bound claims' (volume name, fully bound)
        for claim in claims:
            pvc = snapshot.get_object("PersistentVolumeClaim", f"{pod.namespace}/{claim}")
            if pvc is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            if (pvc.get("metadata") or {}).get("deletionTimestamp") is not None:
                return None, Status.error(f'persistentvolumeclaim "{claim}" is being deleted')
            spec = pvc.get("spec") or {}
            volume = spec.get("volumeName")
            if volume:
                fully = ANN_BIND_COMPLETED in ((pvc.get("metadata") or {}).get("annotations") or {})
                if fully or snapshot.get_object("PersistentVolume", volume) is None:
                    bound.append((volume, fully))
                else:
                    unbound_immediate = True  # pre-bound by the user, not bound by the PV controller yet
                continue
            sc = snapshot.get_object("StorageClass", _claim_class(pvc))
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                unbound_immediate = True
        if unbound_immediate:
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        state.write(_STATE_KEY, tuple(bound))
        eligible: set[str] | None = None
        for volume, _ in bound:
            pv = snapshot.get_object("PersistentVolume", volume)
            names = local_volume_node_names(pv) if pv is not None else set()
            if names:
                eligible = names if eligible is None else eligible & names
        if eligible is not None:
            return PreFilterResult(frozenset(eligible)), None
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        """``checkBoundClaims``: each bound claim's PV exists and its node affinity fits the node."""
        bound = state.read(_STATE_KEY)
        if not bound:
            return None
        snapshot = state.snapshot
        labels = ((node_info.node or {}).get("metadata") or {}).get("labels") or {}
        for volume, fully in bound:
            pv = snapshot.get_object("PersistentVolume", volume)
            if pv is None:
                if fully:
                    return Status.unresolvable(ERR_REASON_PV_NOT_EXIST)
                continue  # volumeName without the annotation and no PV: kept as bound (module docstring)
            if not pv_node_affinity_matches(pv, labels):
                return Status.unresolvable(ERR_REASON_NODE_CONFLICT)
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> list[Status | None] | None:
        if not state.read(_STATE_KEY):
            return None
        verdicts = [self.filter(state, pod, ni) for ni in nodes]
        return None if all(v is None for v in verdicts) else verdicts

    def reserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None:
        return None

    def pre_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        return None
