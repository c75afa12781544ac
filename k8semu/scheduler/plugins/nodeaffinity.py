"""NodeAffinity (upstream ``plugins/nodeaffinity``).

Filter: the pod's ``nodeSelector`` and required node affinity (and the
scheduler-enforced ``addedAffinity`` arg) must match the node, else
``UnschedulableAndUnresolvable``. PreFilter narrows the nodes to the names
listed by ``matchFields metadata.name In`` when every term has one.

Score: the sum of the weights of the preferred terms the node matches,
normalised so the best node gets 100 (``DefaultNormalizeScore``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..framework import (MAX_NODE_SCORE, CycleState, NodeScore, PreFilterResult, Status,
                         default_normalize_score, default_normalize_scores)
from ...api.scheduling import RequiredNodeAffinity, node_selector_term_matches
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "NodeAffinity", "ERR_REASON_POD", "ERR_REASON_ENFORCED", "ERR_REASON_CONFLICT"]

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


def _preferred(terms: Any) -> list[tuple[int, Mapping[str, Any]]]:
    return [(int(t.get("weight") or 0), t.get("preference") or {}) for t in terms or () if t.get("weight")]


def _score_terms(terms: list[tuple[int, Mapping[str, Any]]], node: Mapping[str, Any]) -> int:
    return sum(w for w, term in terms if node_selector_term_matches(term, node))


class NodeAffinity:
    """Args: ``addedAffinity`` (a NodeAffinity applied to every pod of the profile)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        added = (args or {}).get("addedAffinity") or {}
        req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self._added_required = None
        if req is not None:
            self._added_required = RequiredNodeAffinity(
                {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": req}}}})
        self._added_preferred = _preferred(added.get("preferredDuringSchedulingIgnoredDuringExecution"))

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        spec = pod.pod.get("spec") or {}
        na = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is None and self._added_required is None and spec.get("nodeSelector") is None:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, RequiredNodeAffinity(pod.pod))
        terms = (req or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None, None
        names: set[str] | None = None
        for t in terms:
            term_names: set[str] | None = None
            for r in t.get("matchFields") or ():
                if r.get("key") == "metadata.name" and r.get("operator") == "In":
                    vals = set(r.get("values") or ())
                    term_names = vals if term_names is None else term_names & vals
            if term_names is None:
                return None, None
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names or ())), None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node or {}
        if self._added_required is not None and not self._added_required.matches(node):
            return Status.unresolvable(ERR_REASON_ENFORCED)
        req = state.read(_PRE_FILTER_KEY)
        if req is None:
            req = RequiredNodeAffinity(pod.pod)
        if not req.matches(node):
            return Status.unresolvable(ERR_REASON_POD)
        return None

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        na = ((pod.pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
        terms = _preferred(na.get("preferredDuringSchedulingIgnoredDuringExecution"))
        if not terms:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, terms)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node or {}
        terms = state.read(_PRE_SCORE_KEY)
        if terms is None:
            na = ((pod.pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
            terms = _preferred(na.get("preferredDuringSchedulingIgnoredDuringExecution"))
        count = _score_terms(self._added_preferred, node) if self._added_preferred else 0
        return count + _score_terms(terms, node), None

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_scores(self, state: CycleState, pod: PodInfo, names: list[str], scores: list[int]) -> list[int]:
        return default_normalize_scores(MAX_NODE_SCORE, False, scores)
