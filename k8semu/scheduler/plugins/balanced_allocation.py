"""NodeResourcesBalancedAllocation (upstream ``plugins/noderesources/balanced_allocation.go``).

Favours nodes whose cpu and memory would be used in equal fractions after
placing the pod: score ``(1 - std) * 100`` of the per-resource fractions
``requested / allocatable`` (exact requests, not the non-zero defaults).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..framework import CycleState, Status
from ..types import NodeInfo, PodInfo
from .resource_allocation import ResourceAllocationScorer, balanced_allocation

__all__ = ["NAME", "NodeResourcesBalancedAllocation"]

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE_KEY = "PreScore" + NAME
_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


class NodeResourcesBalancedAllocation:
    """Args: ``resources`` (default cpu and memory)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        resources = (args or {}).get("resources") or _DEFAULT_RESOURCES
        self.scorer = ResourceAllocationScorer(resources, balanced_allocation, use_requested=True)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, self.scorer.pod_request_list(pod))
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        reqs = state.read(_PRE_SCORE_KEY)
        if reqs is None:
            reqs = self.scorer.pod_request_list(pod)
        return self.scorer.score(node_info, reqs), None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node."""
        reqs = state.read(_PRE_SCORE_KEY)
        if reqs is None:
            reqs = self.scorer.pod_request_list(pod)
        return self.scorer.score_nodes(nodes, reqs)
