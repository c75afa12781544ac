"""NodeUnschedulable: reject nodes with ``spec.unschedulable`` unless the pod tolerates
the ``node.kubernetes.io/unschedulable:NoSchedule`` taint (upstream ``plugins/nodeunschedulable``)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Mapping

from ..framework import Status
from ...api.scheduling import tolerations_tolerate_taint
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "NodeUnschedulable", "ERR_REASON_UNSCHEDULABLE"]

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_UNSCHEDULABLE = attrgetter("unschedulable")
_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def filter(self, state: Any, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node or {}
        if not (node.get("spec") or {}).get("unschedulable"):
            return None
        if tolerations_tolerate_taint((pod.pod.get("spec") or {}).get("tolerations") or (), _TAINT):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_nodes(self, state: Any, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """:meth:`filter` for a batch (None: no node in it is cordoned)."""
        if not getattr(state.snapshot, "any_unschedulable", True) or not any(map(_UNSCHEDULABLE, nodes)):
            return None
        return [self.filter(state, pod, ni) if ni.unschedulable else None for ni in nodes]
