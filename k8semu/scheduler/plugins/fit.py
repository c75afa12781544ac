"""NodeResourcesFit (upstream ``plugins/noderesources/fit.go``).

Filter: the node must have room for the pod's requests next to the pods
already on it (assumed pods included): ``Too many pods`` when the pod count
would exceed ``allocatable.pods``; ``Insufficient cpu`` / ``memory`` /
``ephemeral-storage`` / ``<extended resource>`` for each resource whose
request exceeds ``allocatable - requested``. All failing resources are
reported, each a separate reason. Extended resources named in
``ignoredResources`` (or whose prefix is in ``ignoredResourceGroups``) are
not checked.

Score, by ``scoringStrategy.type``: ``LeastAllocated`` (default),
``MostAllocated`` or ``RequestedToCapacityRatio`` over
``scoringStrategy.resources`` (default cpu and memory, weight 1 each).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..framework import CycleState, PreFilterResult, Status
from ..types import NodeInfo, NodeMemo, PodInfo
from .resource_allocation import (ResourceAllocationScorer, ResourceScoring, least_allocated, most_allocated,
                                  requested_to_capacity_ratio)

__all__ = ["NAME", "NodeResourcesFit", "insufficient_resources"]

NAME = "NodeResourcesFit"
_PRE_SCORE_KEY = "PreScore" + NAME
_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
_DEFAULT_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


def _is_extended(name: str) -> bool:
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def insufficient_resources(pod: PodInfo, node_info: NodeInfo, ignored: frozenset[str] = frozenset(),
                           ignored_groups: frozenset[str] = frozenset()) -> list[str]:
    """The failure reasons of upstream ``fitsRequest``, in its order (scalars sorted by name)."""
    reasons = []
    alloc, used = node_info.allocatable, node_info.requested
    if len(node_info.pods) + 1 > alloc.allowed_pod_number:
        reasons.append("Too many pods")
    req = pod.requests
    if req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar:
        return reasons
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        reasons.append("Insufficient cpu")
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        reasons.append("Insufficient memory")
    if req.ephemeral_storage > 0 and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
        reasons.append("Insufficient ephemeral-storage")
    for name in sorted(req.scalar):
        q = req.scalar[name]
        if q == 0:
            continue
        if _is_extended(name) and (name in ignored or name.split("/")[0] in ignored_groups):
            continue
        if q > alloc.scalar.get(name, 0) - used.scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons


class NodeResourcesFit(ResourceScoring):
    """Args (``NodeResourcesFitArgs``): ``ignoredResources``, ``ignoredResourceGroups``,
    ``scoringStrategy: {type, resources, requestedToCapacityRatio: {shape}}``.

    Raises:
        ValueError: an unknown scoring strategy type.
    """

    name = NAME
    pre_score_key = _PRE_SCORE_KEY

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        args = args or {}
        self.ignored = frozenset(args.get("ignoredResources") or ())
        self.ignored_groups = frozenset(args.get("ignoredResourceGroups") or ())
        strategy = args.get("scoringStrategy") or {}
        kind = strategy.get("type") or "LeastAllocated"
        resources = strategy.get("resources") or _DEFAULT_RESOURCES
        weights = [int(r.get("weight") or 1) for r in resources]
        if kind == "LeastAllocated":
            scorer = least_allocated(weights)
        elif kind == "MostAllocated":
            scorer = most_allocated(weights)
        elif kind == "RequestedToCapacityRatio":
            shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or _DEFAULT_SHAPE
            scorer = requested_to_capacity_ratio(weights, shape)
        else:
            raise ValueError(f"scoring strategy {kind} is not supported")
        self.strategy = kind
        self._memo = NodeMemo()
        self.scorer = ResourceAllocationScorer(resources, scorer, use_requested=False)

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        reasons = insufficient_resources(pod, node_info, self.ignored, self.ignored_groups)
        return Status.unschedulable(*reasons) if reasons else None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """:meth:`filter` for a batch: a node with room for every requested resource (read
        from its ``free_*`` sums) passes without building a reason list; any other
        node gets the full check."""
        req = pod.requests
        if req.scalar:
            return [self.filter(state, pod, ni) for ni in nodes]
        pc, pm, pe = req.milli_cpu, req.memory, req.ephemeral_storage
        roomy = self._memo.map((pc, pm, pe), nodes, lambda ni: (
            ni.free_pods > 0 and ni.free_cpu >= pc and ni.free_memory >= pm and ni.free_ephemeral_storage >= pe))
        if False not in roomy:
            return None
        flt = self.filter
        return [None if ok else flt(state, pod, ni) for ni, ok in zip(nodes, roomy)]

