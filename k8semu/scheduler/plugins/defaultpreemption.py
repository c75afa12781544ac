"""DefaultPreemption: the PostFilter that makes room for a pod by evicting
lower-priority pods (upstream ``plugins/defaultpreemption`` and ``framework/preemption``).

Steps, as upstream ``Evaluator.Preempt``:

1. eligibility: ``preemptionPolicy: Never`` pods do not preempt (``not eligible
   due to preemptionPolicy=Never.``), nor do pods whose nominated node still
   has a lower-priority pod terminating because of an earlier preemption;
2. candidates: nodes not rejected as ``UnschedulableAndUnresolvable`` (those
   get ``Preemption is not helpful for scheduling``), visited from a random
   offset; on each, remove every lower-priority pod, check the pod fits (else
   the Filter's reason, or ``No preemption victims found for incoming pod``
   when there was nothing to remove), then reprieve as many victims as
   possible, most important first, PDB-violating ones before the others. The
   search stops once ``max(10 % of nodes, 100)`` candidates are found and at
   least one violates no PDB;
3. pick: fewest PDB violations, then lowest highest-victim priority, then
   lowest priority sum, then fewest victims, then latest start of the most
   important victims, then the first.

The result is a :class:`PostFilterResult` with the nominated node, the
victims (for the caller to delete) and the lower-priority pods nominated to
the same node (whose ``nominatedNodeName`` the caller clears). With no
candidate, the status message is ``preemption: 0/N nodes are available: …``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from k8semu.api.selectors import selector_from_label_selector

from ..framework import (Code, CycleState, FitError, Diagnosis, PostFilterResult, Status)
from ..types import NodeInfo, PodInfo

__all__ = ["NAME", "DefaultPreemption", "Candidate", "pick_one_node_for_preemption"]

NAME = "DefaultPreemption"
_MAX_INT32 = 2**31 - 1
_NOW = "\uffff"  # GetPodStartTime of a pod that has not started: "now", later than any timestamp


def _start_time(pod: Mapping[str, Any]) -> str:
    return (pod.get("status") or {}).get("startTime") or _NOW


def _importance_key(pi: PodInfo) -> tuple[int, str]:
    """Sort key for upstream ``MoreImportantPod``: higher priority, then earlier start."""
    return (-pi.priority, _start_time(pi.pod))


class Candidate:
    """A node where preemption would work, with its victims (most important first)."""

    __slots__ = ("name", "victims", "num_pdb_violations")

    def __init__(self, name: str, victims: list[PodInfo], num_pdb_violations: int) -> None:
        self.name = name
        self.victims = victims
        self.num_pdb_violations = num_pdb_violations


def _earliest_start_of_most_important(victims: Sequence[PodInfo]) -> str:
    top = max(v.priority for v in victims)
    return min(_start_time(v.pod) for v in victims if v.priority == top)


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate | None:
    """Upstream ``pickOneNodeForPreemption``'s tie-breaking chain, first candidate wins a full tie."""
    if not candidates:
        return None
    criteria = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + _MAX_INT32 + 1 for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_most_important(c.victims),
    )
    pool = list(candidates)
    for f in criteria:
        best = max(f(c) for c in pool)
        pool = [c for c in pool if f(c) == best]
        if len(pool) == 1:
            return pool[0]
    return pool[0]


def _filter_pods_with_pdb_violation(pods: Sequence[PodInfo], pdbs: Sequence[Mapping[str, Any]]
                                    ) -> tuple[list[PodInfo], list[PodInfo]]:
    allowed = [int((p.get("status") or {}).get("disruptionsAllowed") or 0) for p in pdbs]
    selectors = []
    for p in pdbs:
        try:
            selectors.append(selector_from_label_selector((p.get("spec") or {}).get("selector")))
        except ValueError:
            selectors.append(None)
    violating, ok = [], []
    for pi in pods:
        violated = False
        if pi.labels:
            for i, pdb in enumerate(pdbs):
                meta = pdb.get("metadata") or {}
                sel = selectors[i]
                if meta.get("namespace") != pi.namespace or sel is None or sel.empty or sel.nothing:
                    continue
                if not sel.matches(pi.labels):
                    continue
                name = (pi.pod.get("metadata") or {}).get("name", "")
                if name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else ok).append(pi)
    return violating, ok


def _terminating_by_preemption(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp") is None:
        return False
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler" and c.get("status") == "True":
            return True
    return False


class DefaultPreemption:
    """Args: ``minCandidateNodesPercentage`` (10), ``minCandidateNodesAbsolute`` (100)."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Any = None) -> None:
        args = args or {}
        self.min_pct = int(args.get("minCandidateNodesPercentage", 10))
        self.min_abs = int(args.get("minCandidateNodesAbsolute", 100))
        self.handle = handle

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status | None]:
        res, st = self.preempt(state, pod, statuses)
        if st is not None and st.reasons:
            return res, Status(st.code, (f"preemption: {st.message()}",))
        return res, st

    def num_candidates(self, num_nodes: int) -> int:
        """``max(num_nodes * pct // 100, abs)``, at most ``num_nodes``."""
        n = num_nodes * self.min_pct // 100
        return min(max(n, self.min_abs), num_nodes)

    def eligible(self, pod: PodInfo, state: CycleState, nominated_status: Status | None) -> tuple[bool, str]:
        """Upstream ``PodEligibleToPreemptOthers``."""
        spec = pod.pod.get("spec") or {}
        if spec.get("preemptionPolicy") == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nom = (pod.pod.get("status") or {}).get("nominatedNodeName") or ""
        if nom:
            if nominated_status is not None and nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = state.snapshot.get(nom)
            if ni is not None:
                for p in ni.pods:
                    if p.priority < pod.priority and _terminating_by_preemption(p.pod):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def preempt(self, state: CycleState, pod: PodInfo,
                statuses: Mapping[str, Status]) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``Evaluator.Preempt`` without the API calls (see module docstring)."""
        nom = (pod.pod.get("status") or {}).get("nominatedNodeName") or ""
        ok, msg = self.eligible(pod, state, statuses.get(nom))
        if not ok:
            return None, Status.unschedulable(msg)
        snapshot = state.snapshot
        node_statuses: dict[str, Status] = {}
        potential = []
        not_helpful = Status.unresolvable("Preemption is not helpful for scheduling")
        for ni in snapshot.node_infos:
            st = statuses.get(ni.name)
            if st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                node_statuses[ni.name] = not_helpful
            else:
                potential.append(ni)
        candidates: list[Candidate] = []
        if potential:
            pdbs = snapshot.list_objects("PodDisruptionBudget")
            rng = getattr(state, "rng", None)
            offset = rng.randrange(len(potential)) if rng is not None else 0
            wanted = self.num_candidates(len(potential))
            non_violating: list[Candidate] = []
            violating: list[Candidate] = []
            for i in range(len(potential)):
                ni = potential[(offset + i) % len(potential)]
                victims, n_viol, st = self.select_victims_on_node(state.clone(), pod, ni.clone(), pdbs)
                if st is None and victims:
                    (violating if n_viol else non_violating).append(Candidate(ni.name, victims, n_viol))
                    if non_violating and len(non_violating) + len(violating) >= wanted:
                        break
                    continue
                if st is None:
                    st = Status.error(f'expected at least one victim pod on node "{ni.name}"')
                node_statuses[ni.name] = st
            candidates = non_violating[:wanted] + violating[:wanted]
        if not candidates:
            fit = FitError(pod.pod, len(node_statuses), Diagnosis(node_to_status=node_statuses))
            return PostFilterResult(""), Status.unschedulable(fit.message())
        best = pick_one_node_for_preemption(candidates)
        nominator = state.nominator
        lower = []
        if nominator is not None:
            lower = [p.pod for p in nominator.nominated_pods_for_node(best.name) if p.priority < pod.priority]
        return PostFilterResult(best.name, tuple(v.pod for v in best.victims), tuple(lower)), None

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               pdbs: Sequence[Mapping[str, Any]]) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream ``SelectVictimsOnNode`` on private copies of ``state`` and ``node_info``."""
        fw = self.handle
        potential = [p for p in node_info.pods if p.priority < pod.priority]
        for p in potential:
            node_info.remove_pod(p.key)
            fw.run_pre_filter_extension_remove_pod(state, pod, p, node_info)
        if not potential:
            return [], 0, Status.unresolvable("No preemption victims found for incoming pod")
        st = fw.run_filter_with_nominated_pods(state, pod, node_info)
        if st is not None and st.code != Code.SUCCESS:
            return [], 0, st
        potential.sort(key=_importance_key)
        violating, non_violating = _filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        n_viol = 0

        def reprieve(p: PodInfo) -> bool:
            node_info.add_pod(p)
            fw.run_pre_filter_extension_add_pod(state, pod, p, node_info)
            s = fw.run_filter_with_nominated_pods(state, pod, node_info)
            fits = s is None or s.code == Code.SUCCESS
            if not fits:
                node_info.remove_pod(p.key)
                fw.run_pre_filter_extension_remove_pod(state, pod, p, node_info)
                victims.append(p)
            return fits

        for p in violating:
            if not reprieve(p):
                n_viol += 1
        for p in non_violating:
            reprieve(p)
        if violating and non_violating:
            victims.sort(key=_importance_key)
        return victims, n_viol, None
