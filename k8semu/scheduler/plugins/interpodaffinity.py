"""InterPodAffinity (upstream ``plugins/interpodaffinity``).

Filter, from counts per topology pair ``(topologyKey, node label value)``
computed at PreFilter:

* the pod's required **affinity** terms each need a matching pod in the
  node's domain (``UnschedulableAndUnresolvable`` ``node(s) didn't match pod
  affinity rules``) — unless no pod anywhere matches and the pod matches its
  own terms (the first pod of a self-affine group);
* the pod's required **anti-affinity** terms must find no matching pod in the
  node's domain (``node(s) didn't match pod anti-affinity rules``);
* no existing pod's required anti-affinity term may select the pod within the
  node's domains (``node(s) didn't satisfy existing pods anti-affinity rules``).

Score: for every existing pod, +weight of the incoming pod's preferred
affinity terms it matches, -weight for preferred anti-affinity, +
``hardPodAffinityWeight`` for the existing pod's required affinity terms that
match the incoming pod, ± its preferred terms; credited to the existing
pod's topology domain, summed per node and scaled to 0-100 between the
lowest and highest node.

Namespace selection: a term's ``namespaces`` (default: the pod's own
namespace), or its ``namespaceSelector`` evaluated against the Namespace
labels in the snapshot.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..framework import MAX_NODE_SCORE, CycleState, NodeScore, PreFilterResult, Status
from ..types import AffinityTerm, NodeInfo, NodeMemo, NodeShareSum, PodInfo

__all__ = ["NAME", "InterPodAffinity", "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
           "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH", "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH"]

NAME = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
_PRE_FILTER_KEY = "PreFilter" + NAME
_ANTI_REJECT = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
_EXISTING_REJECT = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
_PRE_SCORE_KEY = "PreScore" + NAME


def _resolve_namespaces(term: AffinityTerm, snapshot: Any) -> AffinityTerm:
    """Merge the namespaces selected by ``namespaceSelector`` into ``namespaces``
    (upstream ``mergeAffinityTermNamespacesIfNotEmpty``)."""
    sel = term.namespace_selector
    if sel.nothing:
        return term
    extra = [(ns.get("metadata") or {}).get("name", "") for ns in snapshot.list_objects("Namespace")
             if sel.matches((ns.get("metadata") or {}).get("labels") or {})]
    if not extra:
        return term
    return AffinityTerm(term.namespaces | frozenset(extra), term.selector, term.topology_key,
                        term.namespace_selector)


class _PreFilterState:
    __slots__ = ("existing_anti", "affinity", "anti", "ns_labels", "req_aff", "req_anti", "positive")

    def __init__(self) -> None:
        self.existing_anti: dict[tuple[str, str], int] = {}
        self.affinity: dict[tuple[str, str], int] = {}
        self.anti: dict[tuple[str, str], int] = {}
        self.ns_labels: Mapping[str, str] = {}
        self.req_aff: tuple[AffinityTerm, ...] = ()
        self.req_anti: tuple[AffinityTerm, ...] = ()
        self.positive: bool | None = None  # every count > 0 (filter_nodes' fast path); None: unknown

    def clone(self) -> "_PreFilterState":
        c = _PreFilterState()
        c.existing_anti, c.affinity, c.anti = dict(self.existing_anti), dict(self.affinity), dict(self.anti)
        c.ns_labels, c.req_aff, c.req_anti = self.ns_labels, self.req_aff, self.req_anti
        return c


def _items(m: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(m.items()))


def _bump(counts: dict[tuple[str, str], int], pair: tuple[str, str], delta: int) -> None:
    n = counts.get(pair, 0) + delta
    if n:
        counts[pair] = n
    else:
        counts.pop(pair, None)


def _count_terms(counts: dict[tuple[str, str], int], terms: Sequence[AffinityTerm], other: PodInfo,
                 labels: Mapping[str, str], delta: int) -> None:
    """+delta for each pair when ``other`` matches *all* ``terms`` (upstream
    ``updateWithAffinityTerms``: a pod counts only if it matches every term)."""
    if not terms:
        return
    for t in terms:
        if not t.matches(other.pod, None):
            return
    for t in terms:
        if t.topology_key in labels:
            _bump(counts, (t.topology_key, labels[t.topology_key]), delta)


def _count_anti_terms(counts: dict[tuple[str, str], int], terms: Sequence[AffinityTerm], other: PodInfo,
                      labels: Mapping[str, str], delta: int) -> None:
    """Anti-affinity counts each matching term separately (``updateWithAntiAffinityTerms``)."""
    for t in terms:
        if t.topology_key in labels and t.matches(other.pod, None):
            _bump(counts, (t.topology_key, labels[t.topology_key]), delta)


class InterPodAffinity:
    """Args: ``hardPodAffinityWeight`` (default 1), ``ignorePreferredTermsOfExistingPods``."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        args = args or {}
        w = args.get("hardPodAffinityWeight")
        self.hard_weight = 1 if w is None else int(w)
        self.ignore_existing_preferred = bool(args.get("ignorePreferredTermsOfExistingPods"))
        # per-node contributions to the counts, memoised across cycles (see NodeMemo): a
        # node's share depends only on the node and on what the key holds
        self._existing_sum = NodeShareSum()
        self._affinity_sum = NodeShareSum()
        self._anti_sum = NodeShareSum()
        self._score_memo = NodeMemo()

    # --- filtering ---------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        snapshot = state.snapshot
        s = _PreFilterState()
        s.ns_labels = snapshot.namespace_labels(pod.namespace) or {}
        s.req_aff = tuple(_resolve_namespaces(t, snapshot) for t in pod.required_affinity)
        s.req_anti = tuple(_resolve_namespaces(t, snapshot) for t in pod.required_anti_affinity)
        ns_labels = s.ns_labels
        # the existing pods' required anti-affinity terms that select this pod, per node
        sig = (pod.namespace, _items(pod.labels), _items(ns_labels))

        def existing(ni: NodeInfo) -> tuple[tuple[tuple[str, str], int], ...]:
            labels = ni.labels
            counts: dict[tuple[str, str], int] = {}
            for p in ni.pods:
                for t in p.required_anti_affinity:
                    if t.topology_key in labels and t.matches(pod.pod, ns_labels):
                        _bump(counts, (t.topology_key, labels[t.topology_key]), 1)
            return tuple(counts.items())

        s.existing_anti = dict(self._existing_sum.total(
            sig, snapshot.have_pods_with_required_anti_affinity, existing))
        if s.req_aff or s.req_anti:
            req_aff, req_anti = s.req_aff, s.req_anti

            def affinity_share(ni: NodeInfo) -> tuple[tuple[tuple[str, str], int], ...]:
                counts: dict[tuple[str, str], int] = {}
                labels = ni.labels
                for p in ni.pods:
                    _count_terms(counts, req_aff, p, labels, 1)
                return tuple(counts.items())

            def anti_share(ni: NodeInfo) -> tuple[tuple[tuple[str, str], int], ...]:
                counts: dict[tuple[str, str], int] = {}
                labels = ni.labels
                for p in ni.pods:
                    _count_anti_terms(counts, req_anti, p, labels, 1)
                return tuple(counts.items())

            nodes = snapshot.node_infos
            if req_aff:
                s.affinity = dict(self._affinity_sum.total(req_aff, nodes, affinity_share))
            if req_anti:
                s.anti = dict(self._anti_sum.total(req_anti, nodes, anti_share))
        elif not s.existing_anti:
            return None, Status.skip()
        state.write(_PRE_FILTER_KEY, s)
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node_info: NodeInfo) -> None:
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is not None:
            self._update(s, pod, to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node_info: NodeInfo) -> None:
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is not None:
            self._update(s, pod, to_remove, node_info, -1)

    @staticmethod
    def _update(s: _PreFilterState, pod: PodInfo, other: PodInfo, node_info: NodeInfo, delta: int) -> None:
        s.positive = None
        labels = node_info.labels
        for t in other.required_anti_affinity:
            if t.topology_key in labels and t.matches(pod.pod, s.ns_labels):
                _bump(s.existing_anti, (t.topology_key, labels[t.topology_key]), delta)
        _count_terms(s.affinity, s.req_aff, other, labels, delta)
        _count_anti_terms(s.anti, s.req_anti, other, labels, delta)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is None:
            return None
        labels = node_info.labels
        if s.req_aff:
            exist = True
            for t in s.req_aff:
                value = labels.get(t.topology_key)
                if value is None:
                    return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
                if s.affinity.get((t.topology_key, value), 0) <= 0:
                    exist = False
            if not exist and not (not s.affinity and all(t.matches(pod.pod, None) for t in s.req_aff)):
                return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if s.anti:
            for t in s.req_anti:
                value = labels.get(t.topology_key)
                if value is not None and s.anti.get((t.topology_key, value), 0) > 0:
                    return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if s.existing_anti:
            for pair in labels.items():
                if s.existing_anti.get(pair, 0) > 0:
                    return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """:meth:`filter` for a batch; without required affinity terms (and with only
        positive counts, as PreFilter leaves them) the checks are set lookups."""
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is None:
            return None
        anti, existing = s.anti, s.existing_anti
        if s.positive is None:
            s.positive = not ((anti and min(anti.values()) <= 0) or (existing and min(existing.values()) <= 0))
        if s.req_aff or not s.positive:
            f = self.filter
            return [f(state, pod, ni) for ni in nodes]
        if not anti and not existing:
            return None
        keys = [t.topology_key for t in s.req_anti] if anti else []
        existing_keys = existing.keys()
        out: list[Status | None] = []
        append = out.append
        for ni in nodes:
            labels = ni.labels
            st = None
            for k in keys:
                v = labels.get(k)
                if v is not None and (k, v) in anti:
                    st = _ANTI_REJECT
                    break
            if st is None and existing and not existing_keys.isdisjoint(labels.items()):
                st = _EXISTING_REJECT
            append(st)
        return out

    # --- scoring ---------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return Status.skip()
        snapshot = state.snapshot
        has_constraints = bool(pod.preferred_affinity or pod.preferred_anti_affinity)
        if self.ignore_existing_preferred and not has_constraints:
            return Status.skip()
        pref_aff = [(_resolve_namespaces(w.term, snapshot), w.weight) for w in pod.preferred_affinity]
        pref_anti = [(_resolve_namespaces(w.term, snapshot), w.weight) for w in pod.preferred_anti_affinity]
        ns_labels = snapshot.namespace_labels(pod.namespace) or {}
        hard_weight = self.hard_weight

        def credits(ni: NodeInfo) -> tuple[tuple[str, str, int], ...]:
            """This node's (topology key, value, weight) credits, in upstream's order."""
            labels = ni.labels
            if not labels:
                return ()
            out: list[tuple[str, str, int]] = []

            def credit(term: AffinityTerm, weight: int, target: Mapping[str, Any],
                       nsl: Mapping[str, str] | None) -> None:
                if term.matches(target, nsl):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        out.append((term.topology_key, value, weight))

            for p in ni.pods:
                if not has_constraints and not p.has_affinity:
                    continue
                for t, w in pref_aff:
                    credit(t, w, p.pod, None)
                for t, w in pref_anti:
                    credit(t, -w, p.pod, None)
                if hard_weight > 0:
                    for t in p.required_affinity:
                        credit(t, hard_weight, pod.pod, ns_labels)
                for wt in p.preferred_affinity:
                    credit(wt.term, wt.weight, pod.pod, ns_labels)
                for wt in p.preferred_anti_affinity:
                    credit(wt.term, -wt.weight, pod.pod, ns_labels)
            return tuple(out)

        node_list = snapshot.node_infos if has_constraints else snapshot.have_pods_with_affinity
        key = (has_constraints, tuple(pref_aff), tuple(pref_anti), pod.namespace, _items(pod.labels),
               _items(ns_labels))
        scores: dict[str, dict[str, int]] = {}
        for share in filter(None, self._score_memo.map(key, node_list, credits)):
            for topology_key, value, weight in share:
                by_value = scores.setdefault(topology_key, {})
                by_value[value] = by_value.get(value, 0) + weight
        if not scores:
            return Status.skip()
        state.write(_PRE_SCORE_KEY, scores)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        scores: dict[str, dict[str, int]] = state.read(_PRE_SCORE_KEY)
        total = 0
        labels = node_info.labels
        for key, by_value in scores.items():
            value = labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        return total, None

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        if not state.read(_PRE_SCORE_KEY):
            return None
        lo = min(x.score for x in scores)
        hi = max(x.score for x in scores)
        diff = hi - lo
        for x in scores:
            x.score = int(MAX_NODE_SCORE * ((x.score - lo) / diff)) if diff > 0 else 0
        return None
