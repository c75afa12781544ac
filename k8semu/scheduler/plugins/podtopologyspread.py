"""PodTopologySpread (upstream ``plugins/podtopologyspread``).

Filter (``whenUnsatisfiable: DoNotSchedule`` constraints): placing the pod in
a domain must keep ``matching pods in the domain + (1 if the pod matches its
own selector) - global minimum <= maxSkew``; the global minimum is the
smallest count over the eligible domains, or 0 while there are fewer
eligible domains than ``minDomains``. A node lacking a constraint's topology
label is ``UnschedulableAndUnresolvable``. Eligible nodes honour
``nodeAffinityPolicy`` (default Honor: the pod's nodeSelector / required
node affinity) and ``nodeTaintsPolicy`` (default Ignore). ``matchLabelKeys``
adds ``key in (pod's value)`` to the selector.

Score (``ScheduleAnyway`` constraints, or the default constraints when the
pod has none: hostname maxSkew 3 and zone maxSkew 5, with the selector built
from the Services, ReplicationControllers, ReplicaSets and StatefulSets that
select / own the pod): per node ``sum(count in domain * log(domains + 2) +
maxSkew - 1)`` rounded, then normalised so the emptiest node gets 100:
``100 * (max + min - score) / max``.

The PreFilter state supports ``add_pod`` / ``remove_pod`` so preemption and
nominated pods can adjust counts without recomputing (upstream's two-entry
``criticalPaths`` approximation included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from k8semu.api.selectors import (IN, LabelSelector, Requirement, selector_from_label_selector,
                                  selector_from_set)

from ..cache import Snapshot
from ..framework import MAX_NODE_SCORE, CycleState, NodeScore, PreFilterResult, Status
from ...api.scheduling import RequiredNodeAffinity, find_untolerated_taint
from ..types import NodeInfo, NodeMemo, NodeShareSum, PodInfo, label_bucket

__all__ = ["NAME", "PodTopologySpread", "ERR_REASON_CONSTRAINTS_NOT_MATCH", "ERR_REASON_NODE_LABEL_NOT_MATCH",
           "SYSTEM_DEFAULT_CONSTRAINTS", "default_selector"]

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS = (
    {"topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
)
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME
_INF = 2**31 - 1
_MISSING_LABEL = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
_SKEW = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


@dataclass(frozen=True)
class Constraint:
    """A parsed ``TopologySpreadConstraint``."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str

    def match_node_inclusion(self, pod: PodInfo, node: Mapping[str, Any], req: RequiredNodeAffinity) -> bool:
        if self.node_affinity_policy == "Honor" and not req.matches(node):
            return False
        if self.node_taints_policy == "Honor":
            taints = (node.get("spec") or {}).get("taints") or ()
            if find_untolerated_taint(taints, (pod.pod.get("spec") or {}).get("tolerations") or ()) is not None:
                return False
        return True


def _filter_constraints(raw: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str,
                        selector: LabelSelector | None = None) -> list[Constraint]:
    out = []
    for c in raw:
        if (c.get("whenUnsatisfiable") or "DoNotSchedule") != action:
            continue
        if selector is not None:
            sel = selector
        else:
            try:
                sel = selector_from_label_selector(c.get("labelSelector"))
            except ValueError:
                continue
            keys = [k for k in c.get("matchLabelKeys") or () if k in pod_labels]
            if keys:
                sel = sel.add(*(Requirement(k, IN, (pod_labels[k],)) for k in keys))
        out.append(Constraint(int(c.get("maxSkew") or 1), c.get("topologyKey", ""), sel,
                              int(c.get("minDomains") or 1), c.get("nodeAffinityPolicy") or "Honor",
                              c.get("nodeTaintsPolicy") or "Ignore"))
    return out


def _labels_have_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def _pod_counter(selector: LabelSelector, ns: str) -> Callable[[NodeInfo], int]:
    """``count(node_info)``: the pods on the node in ``ns``, not terminating, that ``selector``
    matches (upstream ``countPodsMatchSelector``). When the selector requires one label value,
    only the node's pods with that label are tested (:meth:`NodeInfo.pods_labelled`)."""
    if selector.empty or selector.nothing:
        return lambda ni: 0
    matches = selector.matches
    bucket = next((label_bucket(ns, r.key, v) for r in selector.requirements
                   if (v := selector.requires_exact_match(r.key)) is not None), None)
    if bucket is None:
        def count(ni: NodeInfo) -> int:
            n = 0
            for p in ni.pods:
                if p.namespace == ns and not p.terminating and matches(p.labels):
                    n += 1
            return n
    else:
        def count(ni: NodeInfo) -> int:
            n = 0
            for p in ni.pods_labelled(bucket):
                if not p.terminating and matches(p.labels):
                    n += 1
            return n
    return count


def default_selector(pod: Mapping[str, Any], snapshot: Snapshot) -> LabelSelector:
    """Upstream ``helper.DefaultSelector``: the union of the selectors of the Services
    selecting the pod, plus its controlling ReplicationController / ReplicaSet /
    StatefulSet's selector."""
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace", "")
    labels = meta.get("labels") or {}
    label_set: dict[str, str] = {}
    for sel in snapshot.services_selecting(ns, labels):
        label_set.update(sel)
    selector = selector_from_set(label_set)
    owner = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)
    if owner is None:
        return selector
    kind, api = owner.get("kind"), owner.get("apiVersion", "")
    obj = None
    if kind == "ReplicationController" and api == "v1":
        obj = snapshot.get_object("ReplicationController", f"{ns}/{owner.get('name')}")
        if obj is not None:
            label_set.update((obj.get("spec") or {}).get("selector") or {})
            return selector_from_set(label_set)
        return selector
    if (kind, api) in (("ReplicaSet", "apps/v1"), ("StatefulSet", "apps/v1")):
        obj = snapshot.get_object(kind, f"{ns}/{owner.get('name')}")
        if obj is not None:
            try:
                other = selector_from_label_selector((obj.get("spec") or {}).get("selector"))
            except ValueError:
                return selector
            if not other.nothing:
                selector = selector.add(*other.requirements)
    return selector


class _CriticalPaths:
    """The two domains with the fewest matching pods (upstream ``criticalPaths``)."""

    __slots__ = ("p",)

    def __init__(self) -> None:
        self.p = [["", _INF], ["", _INF]]

    def clone(self) -> "_CriticalPaths":
        c = _CriticalPaths()
        c.p = [list(self.p[0]), list(self.p[1])]
        return c

    def update(self, value: str, num: int) -> None:
        p = self.p
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i][1] = num
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = [value, num]
        elif num < p[1][1]:
            p[1] = [value, num]


class _PreFilterState:
    __slots__ = ("constraints", "pair_count", "critical", "domains", "reorder")

    def __init__(self, constraints: list[Constraint]) -> None:
        self.constraints = constraints
        self.pair_count: dict[tuple[str, str], int] = {}
        self.critical: dict[str, _CriticalPaths] = {}
        self.domains: dict[str, int] = {}
        # set while pair_count is not in node order (see PodTopologySpread.pre_filter):
        # puts it, and the critical paths built from it, in node order
        self.reorder: Any = None

    def clone(self) -> "_PreFilterState":
        c = _PreFilterState(self.constraints)
        c.pair_count = dict(self.pair_count)
        c.critical = {k: v.clone() for k, v in self.critical.items()}
        c.domains = dict(self.domains)
        c.reorder = self.reorder
        return c

    def build_critical_paths(self) -> None:
        """Domains per key and the critical paths, from pair_count in its order."""
        self.critical = {}
        self.domains = {}
        for c in self.constraints:
            self.critical.setdefault(c.topology_key, _CriticalPaths())
        for (key, value), num in self.pair_count.items():
            self.domains[key] = self.domains.get(key, 0) + 1
            self.critical[key].update(value, num)

    def min_match(self, key: str, min_domains: int) -> int:
        if self.domains.get(key, 0) < min_domains:
            return 0
        return self.critical[key].p[0][1]


class _PreScoreState:
    __slots__ = ("constraints", "ignored", "pair_count", "weights", "node_counts")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        self.ignored: set[str] = set()
        self.pair_count: dict[tuple[str, str], int] = {}
        self.weights: list[float] = []
        # per constraint: node name -> pods there the constraint's selector matches
        self.node_counts: list[dict[str, int]] = []


class PodTopologySpread:
    """Args: ``defaultingType`` (``System`` / ``List``), ``defaultConstraints``."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        args = args or {}
        self._counts = NodeShareSum()  # PreFilter's per-domain counts, across cycles
        # PreScore's matching pods per node, by (namespace, selector), across cycles: only the
        # nodes that got or lost a pod are counted again
        self._matching = NodeMemo(keys=64)
        # PreScore's per-domain sums of matching pods, by (constraints, namespace), across cycles
        self._domain_counts = NodeShareSum(keys=16)
        self.system_defaulted = (args.get("defaultingType") or "System") == "System"
        if self.system_defaulted:
            self.default_constraints: Sequence[Mapping[str, Any]] = SYSTEM_DEFAULT_CONSTRAINTS
        else:
            self.default_constraints = args.get("defaultConstraints") or ()

    def _constraints(self, snapshot: Snapshot, pod: PodInfo, action: str) -> list[Constraint]:
        raw = (pod.pod.get("spec") or {}).get("topologySpreadConstraints") or ()
        if raw:
            return _filter_constraints(raw, pod.labels, action)
        if not self.default_constraints:
            return []
        if not any((c.get("whenUnsatisfiable") or "DoNotSchedule") == action for c in self.default_constraints):
            return []
        sel = default_selector(pod.pod, snapshot)
        if sel.empty:
            return []
        return _filter_constraints(self.default_constraints, pod.labels, action, sel)

    # --- filtering ------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self._constraints(state.snapshot, pod, "DoNotSchedule")
        if not constraints:
            return None, Status.skip()
        s = _PreFilterState(constraints)
        req = RequiredNodeAffinity(pod.pod)
        namespace = pod.namespace

        counters = [_pod_counter(c.selector, namespace) for c in constraints]

        def share(ni: NodeInfo) -> tuple[tuple[tuple[str, str], int], ...]:
            """The node's (domain, matching pods) per constraint that counts it."""
            labels = ni.labels
            if not _labels_have_keys(labels, constraints):
                return ()
            node = ni.node or {}
            return tuple(((c.topology_key, labels[c.topology_key]), count(ni))
                         for c, count in zip(constraints, counters) if c.match_node_inclusion(pod, node, req))

        # Everything share() reads besides the node: the constraints, the namespace, the
        # pod's node affinity / selector and tolerations (inclusion policies).
        spec = pod.pod.get("spec") or {}
        key = (tuple(constraints), namespace, _freeze(spec.get("nodeSelector")),
               _freeze((spec.get("affinity") or {}).get("nodeAffinity")), _freeze(spec.get("tolerations")))
        nodes = state.snapshot.node_infos
        s.pair_count = dict(self._counts.total(key, nodes, share))
        # The sums come in no particular order. The minimum per key (all Filter reads) does
        # not depend on it, but the critical paths kept up to date by add_pod / remove_pod
        # do, so those first put the pairs in node order, as a node-by-node count would.
        s.build_critical_paths()

        def reorder(st: _PreFilterState) -> None:
            ordered: dict[tuple[str, str], int] = {}
            for ni in nodes:
                for pair, _n in share(ni):
                    if pair not in ordered:
                        ordered[pair] = st.pair_count[pair]
            st.pair_count = ordered
            st.build_critical_paths()
            st.reorder = None

        s.reorder = reorder
        state.write(_PRE_FILTER_KEY, s)
        return None, None

    def _update(self, state: CycleState, pod: PodInfo, other: PodInfo, node_info: NodeInfo, delta: int) -> None:
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is None or other.namespace != pod.namespace or node_info.node is None:
            return
        if s.reorder is not None:
            s.reorder(s)
        if not _labels_have_keys(node_info.labels, s.constraints):
            return
        req = RequiredNodeAffinity(pod.pod)
        for c in s.constraints:
            if not c.selector.matches(other.labels) or not c.match_node_inclusion(pod, node_info.node, req):
                continue
            pair = (c.topology_key, node_info.labels[c.topology_key])
            s.pair_count[pair] = s.pair_count.get(pair, 0) + delta
            s.critical[c.topology_key].update(pair[1], s.pair_count[pair])

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node_info: NodeInfo) -> None:
        self._update(state, pod, to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node_info: NodeInfo) -> None:
        self._update(state, pod, to_remove, node_info, -1)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is None or not s.constraints:
            return None
        labels = node_info.labels
        for c in s.constraints:
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = s.pair_count.get((c.topology_key, value), 0) + self_match - s.min_match(c.topology_key, c.min_domains)
            if skew > c.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[Status | None] | None:
        """:meth:`filter` for a batch, with each constraint's self-match and global
        minimum worked out once."""
        s: _PreFilterState | None = state.read(_PRE_FILTER_KEY)
        if s is None or not s.constraints:
            return None
        checks = [(c.topology_key, (1 if c.selector.matches(pod.labels) else 0)
                   - s.min_match(c.topology_key, c.min_domains), c.max_skew) for c in s.constraints]
        counts = s.pair_count
        out: list[Status | None] = []
        append = out.append
        for ni in nodes:
            labels = ni.labels
            st = None
            for key, base, max_skew in checks:
                value = labels.get(key)
                if value is None:
                    st = _MISSING_LABEL
                    break
                if counts.get((key, value), 0) + base > max_skew:
                    st = _SKEW
                    break
            append(st)
        return out

    # --- scoring ----------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        snapshot = state.snapshot
        if not nodes or not len(snapshot):
            return Status.skip()
        s = _PreScoreState()
        s.constraints = self._constraints(snapshot, pod, "ScheduleAnyway")
        if not s.constraints:
            return Status.skip()
        require_all = bool((pod.pod.get("spec") or {}).get("topologySpreadConstraints")) or not self.system_defaulted
        topo_size = [0] * len(s.constraints)
        labelled: set[str] = set()  # topology keys some scored node has
        for ni in nodes:
            if require_all and not _labels_have_keys(ni.labels, s.constraints):
                s.ignored.add(ni.name)
                continue
            for i, c in enumerate(s.constraints):
                if c.topology_key == HOSTNAME:
                    continue
                if c.topology_key in ni.labels:
                    labelled.add(c.topology_key)
                pair = (c.topology_key, ni.labels.get(c.topology_key, ""))
                if pair not in s.pair_count:
                    s.pair_count[pair] = 0
                    topo_size[i] += 1
        for i, c in enumerate(s.constraints):
            size = len(nodes) - len(s.ignored) if c.topology_key == HOSTNAME else topo_size[i]
            s.weights.append(math.log(size + 2))
        req = RequiredNodeAffinity(pod.pod)
        infos = snapshot.node_infos
        ns = pod.namespace

        def matching(c: Constraint, nodes: list[NodeInfo]) -> list[int]:
            sel = c.selector
            return self._matching.map((ns, str(sel), sel.nothing), nodes, _pod_counter(sel, ns))

        # hostname constraints score a node by its own matching pods: only the scored nodes are counted
        names = [ni.name for ni in nodes]
        s.node_counts = [dict(zip(names, matching(c, list(nodes)))) if c.topology_key == HOSTNAME else {}
                         for c in s.constraints]
        # per-domain sums over every node of the snapshot; the inclusion policies are checked only
        # where they can exclude a node
        everywhere = req.selector == {} and req.terms is None
        # Score reads a domain's count only for nodes that have the topology label: a key no
        # scored node has (a zone on a cluster without zones) needs no counting, which upstream
        # does anyway
        by_domain = [(c.topology_key, c,
                      c.node_taints_policy != "Honor" and (everywhere or c.node_affinity_policy != "Honor"))
                     for c in s.constraints if c.topology_key != HOSTNAME and c.topology_key in labelled]
        pair_count = s.pair_count
        if by_domain and all(included for _k, _c, included in by_domain):
            # the usual case (system default constraints): sums kept up to date across cycles from
            # the nodes that changed, instead of a walk over every node per pod
            constraints = s.constraints
            domain_counters = [(key, _pod_counter(c.selector, ns)) for key, c, _inc in by_domain]

            def share(ni: NodeInfo) -> tuple[tuple[tuple[str, str], int], ...]:
                labels = ni.labels
                if require_all and not _labels_have_keys(labels, constraints):
                    return ()
                return tuple(((key, labels.get(key, "")), count(ni)) for key, count in domain_counters)

            totals = self._domain_counts.total((tuple(constraints), ns, require_all), infos, share)
            for pair in pair_count:
                pair_count[pair] = totals.get(pair, 0)
        elif by_domain:
            counts = [dict(zip(infos, matching(c, infos))) for _key, c, _inc in by_domain]
            for ni in infos:
                labels = ni.labels
                if require_all and not _labels_have_keys(labels, s.constraints):
                    continue
                for (key, c, included), by_node in zip(by_domain, counts):
                    pair = (key, labels.get(key, ""))
                    if pair not in pair_count:
                        continue
                    if not included and not c.match_node_inclusion(pod, ni.node or {}, req):
                        continue
                    pair_count[pair] += by_node[ni]
        state.write(_PRE_SCORE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        s: _PreScoreState | None = state.read(_PRE_SCORE_KEY)
        if s is None or node_info.name in s.ignored:
            return 0, None
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = node_info.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME:
                cnt = s.node_counts[i].get(node_info.name)
                if cnt is None:  # a node outside the snapshot's list
                    cnt = _pod_counter(c.selector, pod.namespace)(node_info)
            else:
                cnt = s.pair_count.get((c.topology_key, value), 0)
            total += cnt * s.weights[i] + (c.max_skew - 1)
        return _go_round(total), None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """:meth:`score` for every node of the cycle (the same arithmetic, without a call
        and a Status per node)."""
        s: _PreScoreState | None = state.read(_PRE_SCORE_KEY)
        if s is None:  # PreScore skipped (no constraint): the framework does not score
            return [0] * len(nodes)
        ignored, weights, counts, pairs = s.ignored, s.weights, s.node_counts, s.pair_count
        plan = [(c.topology_key, c.topology_key == HOSTNAME, counts[i], weights[i], c.max_skew - 1, c)
                for i, c in enumerate(s.constraints)]
        out = []
        for ni in nodes:
            name = ni.name
            if name in ignored:
                out.append(0)
                continue
            labels = ni.labels
            total = 0.0
            for key, by_host, node_counts, weight, extra, c in plan:
                value = labels.get(key)
                if value is None:
                    continue
                if by_host:
                    cnt = node_counts.get(name)
                    if cnt is None:  # a node outside the snapshot's list
                        cnt = _pod_counter(c.selector, pod.namespace)(ni)
                else:
                    cnt = pairs.get((key, value), 0)
                total += cnt * weight + extra
            out.append(_go_round(total))
        return out

    def normalize_scores(self, state: CycleState, pod: PodInfo, names: Sequence[str], raw: list[int]) -> list[int]:
        """:meth:`normalize_score` on plain lists (node names and raw scores, in order)."""
        s: _PreScoreState | None = state.read(_PRE_SCORE_KEY)
        if s is None:
            return raw
        ignored = s.ignored
        valid = [x for n, x in zip(names, raw) if n not in ignored]
        lo = min(valid, default=_INF)
        hi = max(max(valid, default=0), 0)
        if hi == 0:
            return [0 if n in ignored else MAX_NODE_SCORE for n in names]
        return [0 if n in ignored else MAX_NODE_SCORE * (hi + lo - x) // hi for n, x in zip(names, raw)]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        s: _PreScoreState | None = state.read(_PRE_SCORE_KEY)
        if s is None:
            return None
        valid = [x.score for x in scores if x.name not in s.ignored]
        lo = min(valid, default=_INF)
        hi = max(valid, default=0)
        hi = max(hi, 0)
        for x in scores:
            if x.name in s.ignored:
                x.score = 0
            elif hi == 0:
                x.score = MAX_NODE_SCORE
            else:
                x.score = MAX_NODE_SCORE * (hi + lo - x.score) // hi
        return None


def _freeze(x: Any) -> Any:
    """A hashable copy of a JSON-shaped value (dict keys sorted)."""
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, list):
        return tuple(_freeze(v) for v in x)
    return x


def _go_round(x: float) -> int:
    """``math.Round``: half away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))
