"""VolumeBinding, minimal (upstream ``plugins/volumebinding``).

PreFilter only: a pod whose PersistentVolumeClaims (``persistentVolumeClaim``
volumes, and the ``<pod>-<volume>`` claims of generic ephemeral volumes) do
not all exist is ``UnschedulableAndUnresolvable`` ``persistentvolumeclaim
"x" not found``; a claim being deleted is an error; a claim that is not
bound (no ``spec.volumeName``) and whose StorageClass does not use
``WaitForFirstConsumer`` makes the pod ``UnschedulableAndUnresolvable`` ``pod
has unbound immediate PersistentVolumeClaims`` until the PV controller binds
it. Delayed-binding claims are assumed provisionable on every node, and PV
node affinity is not checked (k8semu has no volume topology).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import CycleState, PreFilterResult, Status
from ..types import PodInfo

__all__ = ["NAME", "VolumeBinding", "ERR_REASON_UNBOUND_IMMEDIATE"]

NAME = "VolumeBinding"
ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


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
        for claim in claims:
            pvc = snapshot.get_object("PersistentVolumeClaim", f"{pod.namespace}/{claim}")
            if pvc is None:
                return None, Status.unresolvable(f'persistentvolumeclaim "{claim}" not found')
            if (pvc.get("metadata") or {}).get("deletionTimestamp") is not None:
                return None, Status.error(f'persistentvolumeclaim "{claim}" is being deleted')
            spec = pvc.get("spec") or {}
            if spec.get("volumeName"):
                continue
            sc = snapshot.get_object("StorageClass", spec.get("storageClassName") or "")
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                unbound_immediate = True
        if unbound_immediate:
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Any) -> None:
        return None

    def reserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> None:
        return None

    def pre_bind(self, state: CycleState, pod: Mapping[str, Any], node_name: str) -> Status | None:
        return None
