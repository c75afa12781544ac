"""The disruption controller: keeps each PodDisruptionBudget's status current.

As upstream's ``pkg/controller/disruption`` (actor ``disruption-controller``):

- the budget's pods are the pods of its namespace matching ``spec.selector``;
- ``expectedPods``: with an integer ``minAvailable``, the number of those
  pods; otherwise the sum of the desired replicas of their controllers
  (a ReplicaSet owned by a Deployment counts as the Deployment; StatefulSets,
  ReplicationControllers and bare ReplicaSets count themselves);
- ``desiredHealthy``: ``minAvailable`` (a percentage of expected, rounded up),
  or ``expected - maxUnavailable`` (a percentage rounded up), at least 0;
- ``currentHealthy``: pods that are Ready and not being deleted, less pods
  recorded in ``disruptedPods`` (evicted, not yet gone; entries expire after 2 minutes);
- ``disruptionsAllowed = max(0, currentHealthy - desiredHealthy)``;
- condition ``DisruptionAllowed`` (``SufficientPods`` / ``InsufficientPods``)
  and ``observedGeneration``, which the eviction subresource checks.
"""

from __future__ import annotations

import math
from typing import Any

from ..api import errors
from ..api.apiserver import APIServer
from ..api.meta import controller_of, parse_time
from ..api.pods import is_pod_ready
from ..api.selectors import selector_from_label_selector
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = ["DisruptionController", "budget_status"]

_DISRUPTED_TTL = 120.0


def _int_or_percent(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        frac = int(value[:-1]) * total / 100
        return math.ceil(frac) if round_up else math.floor(frac)
    return int(value)


def budget_status(
    pdb: dict[str, Any],
    pods: list[dict[str, Any]],
    expected_from_controllers: int | None,
    now: float,
    epoch,
    disrupted: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The PDB status for its matching ``pods`` (pure; see module docstring).

    Args:
        expected_from_controllers: the controllers' replicas, or None when a
            controller could not be found (then ``expectedPods`` = pod count).
        disrupted: ``status.disruptedPods`` (pod name -> RFC 3339 time).
    """
    spec = pdb.get("spec") or {}
    min_avail = spec.get("minAvailable")
    max_unavail = spec.get("maxUnavailable")
    if min_avail is not None and not isinstance(min_avail, str):
        expected = len(pods)
    else:
        expected = expected_from_controllers if expected_from_controllers is not None else len(pods)
    if min_avail is not None:
        desired = _int_or_percent(min_avail, expected, True)
    elif max_unavail is not None:
        desired = expected - _int_or_percent(max_unavail, expected, True)
    else:
        desired = expected  # an empty budget (validation normally forbids it)
    desired = max(0, desired)
    live_disrupted = {
        name: t for name, t in (disrupted or {}).items()
        if now - parse_time(epoch, t) < _DISRUPTED_TTL
        and any(p["metadata"]["name"] == name and not p["metadata"].get("deletionTimestamp") for p in pods)
    }
    healthy = sum(
        1 for p in pods
        if is_pod_ready(p) and not p["metadata"].get("deletionTimestamp")
        and p["metadata"]["name"] not in live_disrupted
    )
    allowed = max(0, healthy - desired)
    return {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        **({"disruptedPods": live_disrupted} if live_disrupted else {}),
        "conditions": [{
            "type": "DisruptionAllowed",
            "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
            "observedGeneration": pdb["metadata"].get("generation", 1),
        }],
    }


class DisruptionController(Component):
    """Maintains PodDisruptionBudget status from pods and their controllers."""

    name = "disruption-controller"

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.pdbs = self.informer("poddisruptionbudgets")
        self.pods = self.informer("pods")
        self.rss = self.informer("replicasets")
        self.deployments = self.informer("deployments")
        self.statefulsets = self.informer("statefulsets")
        self.rcs = self.informer("replicationcontrollers")
        self.q = self.queue()
        self.pdbs.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n)))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod, on_update=lambda o, n: (self._pod(o), self._pod(n)), on_delete=self._pod))

    def _enqueue(self, pdb: dict[str, Any]) -> None:
        m = pdb["metadata"]
        self.q.add(f"{m['namespace']}/{m['name']}")

    def _pod(self, pod: dict[str, Any]) -> None:
        ns = pod["metadata"].get("namespace")
        labels = pod["metadata"].get("labels") or {}
        for pdb in self.pdbs.indexer.by_index("namespace", ns):
            if selector_from_label_selector((pdb.get("spec") or {}).get("selector")).matches(labels):
                self._enqueue(pdb)

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def _controller_replicas(self, pod: dict[str, Any], seen: dict[str, int]) -> bool:
        ref = controller_of(pod)
        if ref is None:
            return False
        ns = pod["metadata"]["namespace"]
        kind, name = ref.get("kind"), ref.get("name")
        if kind == "ReplicaSet":
            rs = self.rss.indexer.get_by(ns, name)
            if rs is None:
                return False
            dref = controller_of(rs)
            if dref is not None and dref.get("kind") == "Deployment":
                d = self.deployments.indexer.get_by(ns, dref["name"])
                if d is None:
                    return False
                seen[d["metadata"]["uid"]] = (d.get("spec") or {}).get("replicas", 1)
                return True
            seen[rs["metadata"]["uid"]] = (rs.get("spec") or {}).get("replicas", 1)
            return True
        source = {"StatefulSet": self.statefulsets, "ReplicationController": self.rcs}.get(kind)
        if source is None:
            return False
        obj = source.indexer.get_by(ns, name)
        if obj is None:
            return False
        seen[obj["metadata"]["uid"]] = (obj.get("spec") or {}).get("replicas", 1)
        return True

    def sync(self, key: str) -> None:
        ns, name = key.split("/", 1)
        pdb = self.pdbs.indexer.get_by(ns, name)
        if pdb is None:
            return
        sel = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
        pods = [p for p in self.pods.indexer.by_index("namespace", ns)
                if sel.matches(p["metadata"].get("labels") or {})]
        seen: dict[str, int] = {}
        found = all(self._controller_replicas(p, seen) for p in pods)
        expected = sum(seen.values()) if found and pods else (0 if not pods else None)
        status = budget_status(pdb, pods, expected, self.api.now, self.api.epoch,
                               (pdb.get("status") or {}).get("disruptedPods"))
        old = pdb.get("status") or {}
        if {k: v for k, v in old.items() if k != "conditions"} == {k: v for k, v in status.items() if k != "conditions"} \
                and [(c.get("type"), c.get("status")) for c in old.get("conditions") or []] == \
                [(c["type"], c["status"]) for c in status["conditions"]]:
            return
        conds = status["conditions"]
        old_cond = next((c for c in old.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), None)
        stamp = self.api.timestamp()
        conds[0]["lastTransitionTime"] = (
            old_cond["lastTransitionTime"]
            if old_cond and old_cond.get("status") == conds[0]["status"] and old_cond.get("lastTransitionTime")
            else stamp
        )
        try:
            self.api.update("poddisruptionbudgets", {**pdb, "status": status}, namespace=ns,
                            subresource="status", ctx=self.ctx, field_validation="Ignore")
        except errors.Conflict:
            self.q.add(key)
