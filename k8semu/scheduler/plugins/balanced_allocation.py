"""NodeResourcesBalancedAllocation (upstream ``plugins/noderesources/balanced_allocation.go``).

Favours nodes whose cpu and memory would be used in equal fractions after
placing the pod: score ``(1 - std) * 100`` of the per-resource fractions
``requested / allocatable`` (exact requests, not the non-zero defaults).
"""

from __future__ import annotations

from typing import Any, Mapping

from .resource_allocation import ResourceAllocationScorer, ResourceScoring, balanced_allocation

__all__ = ["NAME", "NodeResourcesBalancedAllocation"]

NAME = "NodeResourcesBalancedAllocation"
_PRE_SCORE_KEY = "PreScore" + NAME
_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


class NodeResourcesBalancedAllocation(ResourceScoring):
    """Args: ``resources`` (default cpu and memory)."""

    name = NAME
    pre_score_key = _PRE_SCORE_KEY

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        resources = (args or {}).get("resources") or _DEFAULT_RESOURCES
        self.scorer = ResourceAllocationScorer(resources, balanced_allocation, use_requested=True)

