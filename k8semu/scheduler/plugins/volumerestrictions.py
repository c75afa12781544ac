"""VolumeRestrictions, minimal (upstream ``plugins/volumerestrictions``).

Only the ``ReadWriteOncePod`` rule: a pod using a ``ReadWriteOncePod`` claim
that another pod in the cluster already uses is ``Unschedulable`` ``node has
pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access
mode``. (The in-tree disk conflict checks for GCE PD / EBS / RBD / iSCSI are
not emulated.)
"""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import CycleState, PreFilterResult, Status
from ..types import NodeInfo, PodInfo
from .volumebinding import pod_claim_names

__all__ = ["NAME", "VolumeRestrictions", "ERR_REASON_RWOP_CONFLICT"]

NAME = "VolumeRestrictions"
ERR_REASON_RWOP_CONFLICT = ("node has pod using PersistentVolumeClaim with the same name and "
                            "ReadWriteOncePod access mode")
_KEY = "PreFilter" + NAME


class _State:
    __slots__ = ("claims", "conflicts")

    def __init__(self, claims: frozenset[str], conflicts: int) -> None:
        self.claims, self.conflicts = claims, conflicts

    def clone(self) -> "_State":
        return _State(self.claims, self.conflicts)


def _uses(pi: PodInfo, claims: frozenset[str]) -> bool:
    return any(f"{pi.namespace}/{c}" in claims for c in pod_claim_names(pi.pod))


class VolumeRestrictions:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        snapshot = state.snapshot
        rwop = set()
        for claim in pod_claim_names(pod.pod):
            pvc = snapshot.get_object("PersistentVolumeClaim", f"{pod.namespace}/{claim}")
            if pvc is None:
                continue
            if "ReadWriteOncePod" in ((pvc.get("spec") or {}).get("accessModes") or ()):
                rwop.add(f"{pod.namespace}/{claim}")
        if not rwop:
            return None, Status.skip()
        claims = frozenset(rwop)
        conflicts = sum(1 for ni in snapshot.node_infos for p in ni.pods if p.key != pod.key and _uses(p, claims))
        state.write(_KEY, _State(claims, conflicts))
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node_info: NodeInfo) -> None:
        s = state.read(_KEY)
        if s is not None and _uses(to_add, s.claims):
            s.conflicts += 1

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node_info: NodeInfo) -> None:
        s = state.read(_KEY)
        if s is not None and _uses(to_remove, s.claims):
            s.conflicts -= 1

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s = state.read(_KEY)
        if s is not None and s.conflicts > 0:
            return Status.unschedulable(ERR_REASON_RWOP_CONFLICT)
        return None
