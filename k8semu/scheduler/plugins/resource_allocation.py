"""The scoring core shared by NodeResourcesFit and NodeResourcesBalancedAllocation
(upstream ``plugins/noderesources/resource_allocation.go`` and the three strategies).

For each configured resource the scorer sees ``(allocatable, requested)``
where ``requested`` is the node's requests plus the pod's. cpu and memory use
the "non-zero" sums (containers without a request count 100m / 200Mi) unless
``use_requested``; ephemeral-storage and extended resources always use the
exact sums, and an extended resource the pod does not request is left out.
Resources with zero allocatable are left out.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

from ..framework import MAX_NODE_SCORE
from ..types import CPU, MEMORY, EPHEMERAL_STORAGE, NodeInfo, NodeMemo, PodInfo, is_scalar_resource

__all__ = ["ResourceAllocationScorer", "ResourceScoring", "least_allocated", "most_allocated",
           "requested_to_capacity_ratio", "balanced_allocation", "MAX_CUSTOM_PRIORITY_SCORE"]

MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


def go_trunc_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on ints."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def least_allocated(weights: Sequence[int]) -> Callable[[list[int], list[int]], int]:
    """``sum(w * (alloc - req) * 100 // alloc) // sum(w)``; 0 for a resource over capacity."""
    def score(requested: list[int], allocatable: list[int]) -> int:
        total = wsum = 0
        for req, alloc, w in zip(requested, allocatable, weights):
            if alloc == 0:
                continue
            s = 0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc
            total += s * w
            wsum += w
        return total // wsum if wsum else 0
    score.kind = "least"  # type: ignore[attr-defined]  # lets score_nodes inline it
    score.weights = tuple(weights)  # type: ignore[attr-defined]
    return score


def most_allocated(weights: Sequence[int]) -> Callable[[list[int], list[int]], int]:
    """``sum(w * min(req, alloc) * 100 // alloc) // sum(w)``."""
    def score(requested: list[int], allocatable: list[int]) -> int:
        total = wsum = 0
        for req, alloc, w in zip(requested, allocatable, weights):
            if alloc == 0:
                continue
            total += (min(req, alloc) * MAX_NODE_SCORE // alloc) * w
            wsum += w
        return total // wsum if wsum else 0
    return score


def broken_linear(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """Upstream ``helper.BuildBrokenLinearFunction`` over (utilization, score) points."""
    def f(p: int) -> int:
        for i, (u, s) in enumerate(shape):
            if p <= u:
                if i == 0:
                    return shape[0][1]
                u0, s0 = shape[i - 1]
                return s0 + go_trunc_div((s - s0) * (p - u0), u - u0)
        return shape[-1][1]
    return f


def requested_to_capacity_ratio(weights: Sequence[int], shape: Sequence[Mapping[str, Any]]) -> Callable[[list[int], list[int]], int]:
    """The ``RequestedToCapacityRatio`` strategy: a broken-linear function of utilization
    (0-100) whose points' scores (0-10) are scaled by 10; per-resource scores of 0 do not
    count in the weighted mean, which is rounded."""
    pts = [(int(p.get("utilization", 0)), int(p.get("score", 0)) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE))
           for p in shape]
    raw = broken_linear(pts)

    def per_resource(req: int, cap: int) -> int:
        if cap == 0 or req > cap:
            return raw(MAX_UTILIZATION)
        return raw(req * MAX_UTILIZATION // cap)

    def score(requested: list[int], allocatable: list[int]) -> int:
        total = wsum = 0
        for req, alloc, w in zip(requested, allocatable, weights):
            if alloc == 0:
                continue
            s = per_resource(req, alloc)
            if s > 0:
                total += s * w
                wsum += w
        return int(math.floor(total / wsum + 0.5)) if wsum else 0
    return score


def balanced_allocation(requested: list[int], allocatable: list[int]) -> int:
    """``(1 - std) * 100`` over the resources' request fractions (each capped at 1);
    with two resources ``std = |f1 - f2| / 2``."""
    fractions = []
    for req, alloc in zip(requested, allocatable):
        if alloc == 0:
            continue
        fractions.append(min(req / alloc, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


balanced_allocation.kind = "balanced"  # type: ignore[attr-defined]  # lets score_nodes inline it


class ResourceAllocationScorer:
    """Computes the (requested, allocatable) vectors for a pod on a node and applies a scorer.

    Args:
        resources: ``[{"name": "cpu", "weight": 1}, …]`` from the plugin args.
        scorer: ``f(requested: list[int], allocatable: list[int]) -> int``.
        use_requested: use exact cpu/memory sums instead of the non-zero ones.
    """

    def __init__(self, resources: Sequence[Mapping[str, Any]],
                 scorer: Callable[[list[int], list[int]], int], use_requested: bool) -> None:
        self.names = [r["name"] for r in resources]
        self.weights = [int(r.get("weight") or 1) for r in resources]
        self.scorer = scorer
        self.use_requested = use_requested
        self._cpu_memory_only = self.names == [CPU, MEMORY]
        kind = getattr(scorer, "kind", None)
        # the inlined forms (see _compute): LeastAllocated on non-zero cpu/memory, or
        # balanced allocation on exact cpu/memory
        if not self._cpu_memory_only or (kind, use_requested) not in (("least", False), ("balanced", True)):
            kind = None
        self._kind = kind
        self._least_weights = getattr(scorer, "weights", (1, 1))
        self._memo = NodeMemo()

    def pod_request_list(self, pod: PodInfo) -> list[int]:
        """The pod's request per configured resource (cpu millicores; non-zero defaults unless
        ``use_requested``)."""
        if self.use_requested:
            reqs = {CPU: pod.requests.milli_cpu, MEMORY: pod.requests.memory}
        else:
            reqs = {CPU: pod.non_zero_cpu, MEMORY: pod.non_zero_memory}
        out = []
        for name in self.names:
            if name in reqs:
                out.append(reqs[name])
            else:
                out.append(pod.requests.get(name))
        return out

    def score_nodes(self, nodes: Sequence[NodeInfo], pod_requests_list: list[int]) -> list[int]:
        """:meth:`score` for every node, memoised per (NodeInfo, generation, pod requests).

        A snapshot's NodeInfos never change (the cache clones before changing one), so
        between two cycles only the nodes that got or lost a pod need scoring again; the
        generation guards against a NodeInfo changed in place (a preemption clone). The
        default cpu + memory LeastAllocated and balanced-allocation scorers are computed
        inline with the same integer and float operations, so results are identical.
        """
        reqs = pod_requests_list
        compute = self._compute
        return self._memo.map(tuple(reqs), list(nodes), lambda ni: compute(ni, reqs))

    def _compute(self, ni: NodeInfo, pod_requests_list: list[int]) -> int:
        kind = self._kind
        if kind is not None:
            a = ni.allocatable
            ac, am = a.milli_cpu, a.memory
            if ac and am:
                pc, pm = pod_requests_list
                if kind == "least":
                    w1, w2 = self._least_weights
                    if w1 + w2:
                        rc = ni.non_zero_cpu + pc
                        rm = ni.non_zero_memory + pm
                        sc = 0 if rc > ac else (ac - rc) * MAX_NODE_SCORE // ac
                        sm = 0 if rm > am else (am - rm) * MAX_NODE_SCORE // am
                        return (sc * w1 + sm * w2) // (w1 + w2)
                else:
                    r = ni.requested
                    f1 = (r.milli_cpu + pc) / ac
                    f2 = (r.memory + pm) / am
                    if f1 > 1.0:
                        f1 = 1.0
                    if f2 > 1.0:
                        f2 = 1.0
                    return int((1 - abs((f1 - f2) / 2)) * MAX_NODE_SCORE)
        return self.score(ni, pod_requests_list)

    def score(self, node_info: NodeInfo, pod_requests_list: list[int]) -> int:
        """The scorer applied to ``node_info`` with the pod's requests added."""
        alloc_r, req_r = node_info.allocatable, node_info.requested
        if self._cpu_memory_only:  # the default configuration, without the generic loop
            if self.use_requested:
                used_cpu, used_mem = req_r.milli_cpu, req_r.memory
            else:
                used_cpu, used_mem = node_info.non_zero_cpu, node_info.non_zero_memory
            ac, am = alloc_r.milli_cpu, alloc_r.memory
            return self.scorer([used_cpu + pod_requests_list[0] if ac else 0,
                                used_mem + pod_requests_list[1] if am else 0], [ac, am])
        requested, allocatable = [], []
        for name, pod_req in zip(self.names, pod_requests_list):
            if name == CPU:
                alloc = alloc_r.milli_cpu
                req = (req_r.milli_cpu if self.use_requested else node_info.non_zero_cpu) + pod_req
            elif name == MEMORY:
                alloc = alloc_r.memory
                req = (req_r.memory if self.use_requested else node_info.non_zero_memory) + pod_req
            elif name == EPHEMERAL_STORAGE:
                alloc, req = alloc_r.ephemeral_storage, req_r.ephemeral_storage + pod_req
            elif is_scalar_resource(name):
                if pod_req == 0 or name not in alloc_r.scalar:
                    alloc = req = 0
                else:
                    alloc, req = alloc_r.scalar[name], req_r.scalar.get(name, 0) + pod_req
            else:
                alloc = req = 0
            if alloc == 0:
                requested.append(0)
                allocatable.append(0)
            else:
                requested.append(req)
                allocatable.append(alloc)
        return self.scorer(requested, allocatable)


class ResourceScoring:
    """PreScore / Score / batch score of a plugin that scores through a
    :class:`ResourceAllocationScorer` (NodeResourcesFit, NodeResourcesBalancedAllocation):
    the pod's request list is computed once per cycle in PreScore, under ``pre_score_key``."""

    scorer: ResourceAllocationScorer
    pre_score_key: str

    def pre_score(self, state: Any, pod: PodInfo, nodes: Sequence[NodeInfo]) -> None:
        state.write(self.pre_score_key, self.scorer.pod_request_list(pod))
        return None

    def _requests(self, state: Any, pod: PodInfo) -> list[int]:
        reqs = state.read(self.pre_score_key)
        return self.scorer.pod_request_list(pod) if reqs is None else reqs

    def score(self, state: Any, pod: PodInfo, node_info: NodeInfo) -> tuple[int, None]:
        return self.scorer.score(node_info, self._requests(state, pod)), None

    def score_nodes(self, state: Any, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node."""
        return self.scorer.score_nodes(nodes, self._requests(state, pod))
