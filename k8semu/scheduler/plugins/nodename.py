"""NodeName: a pod with ``spec.nodeName`` fits only that node (upstream ``plugins/nodename``)."""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import Status
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "NodeName", "ERR_REASON"]

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def filter(self, state: Any, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        want = pod.node_name
        if not want or want == node_info.name:
            return None
        return Status.unresolvable(ERR_REASON)

    def filter_nodes(self, state: Any, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """:meth:`filter` for a batch (None: the pod names no node)."""
        if not pod.node_name:
            return None
        return [self.filter(state, pod, ni) for ni in nodes]
