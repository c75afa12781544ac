"""TaintToleration (upstream ``plugins/tainttoleration``).

Filter: the first NoSchedule/NoExecute taint the pod does not tolerate rejects
the node as ``UnschedulableAndUnresolvable``
``node(s) had untolerated taint {key: value}``.

Score: the number of ``PreferNoSchedule`` taints not tolerated by the pod's
tolerations with an empty or ``PreferNoSchedule`` effect; normalised in
reverse (fewest intolerable taints → 100) with ``DefaultNormalizeScore``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..framework import CycleState, NodeScore, Status, default_normalize_score, MAX_NODE_SCORE
from ..helpers import find_untolerated_taint, tolerations_tolerate_taint
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "TaintToleration"]

NAME = "TaintToleration"
_PRE_SCORE_KEY = "PreScore" + NAME


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

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None
