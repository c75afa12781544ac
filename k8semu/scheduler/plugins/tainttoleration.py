"""TaintToleration (upstream ``plugins/tainttoleration``).

Filter: the first NoSchedule/NoExecute taint the pod does not tolerate rejects
the node as ``UnschedulableAndUnresolvable``
``node(s) had untolerated taint {key: value}``.

Score: the number of ``PreferNoSchedule`` taints not tolerated by the pod's
tolerations with an empty or ``PreferNoSchedule`` effect; normalised in
reverse (fewest intolerable taints → 100) with ``DefaultNormalizeScore``.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Mapping, Sequence

from ..framework import (MAX_NODE_SCORE, CycleState, NodeScore, Status, default_normalize_score,
                         default_normalize_scores)
from ...api.scheduling import find_untolerated_taint, tolerations_tolerate_taint
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "TaintToleration"]

NAME = "TaintToleration"
_PRE_SCORE_KEY = "PreScore" + NAME
_TAINTS = attrgetter("taints")


class TaintToleration:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        pass

    def filter(self, state: Any, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if not node_info.taints:
            return None
        taint = find_untolerated_taint(node_info.taints, (pod.pod.get("spec") or {}).get("tolerations") or ())
        if taint is None:
            return None
        return Status.unresolvable(
            f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}")

    def filter_nodes(self, state: Any, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """:meth:`filter` for a batch (None: no node in it is tainted)."""
        if not getattr(state.snapshot, "any_tainted", True) or not any(map(_TAINTS, nodes)):
            return None
        return [self.filter(state, pod, ni) if ni.taints else None for ni in nodes]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        tols = [t for t in (pod.pod.get("spec") or {}).get("tolerations") or ()
                if not t.get("effect") or t.get("effect") == "PreferNoSchedule"]
        state.write(_PRE_SCORE_KEY, tols)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        tols = state.read(_PRE_SCORE_KEY) or ()
        n = 0
        for taint in node_info.taints:
            if taint.get("effect") == "PreferNoSchedule" and not tolerations_tolerate_taint(tols, taint):
                n += 1
        return n, None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node (untainted nodes score 0 without a lookup)."""
        if not state.snapshot.any_tainted or not any(map(_TAINTS, nodes)):
            return [0] * len(nodes)
        return [self.score(state, pod, ni)[0] if ni.taints else 0 for ni in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    def normalize_scores(self, state: CycleState, pod: PodInfo, names: list[str], scores: list[int]) -> list[int]:
        return default_normalize_scores(MAX_NODE_SCORE, True, scores)
