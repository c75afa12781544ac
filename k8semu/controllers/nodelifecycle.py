"""The node lifecycle controller and the taint-eviction controller.

Node lifecycle (upstream ``pkg/controller/nodelifecycle``, actor
``node-lifecycle-controller``, events from ``node-controller``), every
``node_monitor_period`` (5 s):

- a Node it has not seen before gets the event ``RegisteredNode`` ``Node X
  event: Registered Node X in Controller``, and one that is gone ``RemovingNode``
  ``Node X event: Removing Node X from Controller`` (upstream's
  ``monitorNodeHealth`` / ``classifyNodes`` / ``RecordNodeEvent``). Upstream
  keeps the known nodes in memory, so a restarted kube-controller-manager
  registers every node again; here the controllers start afresh with every
  CLI command but stand for one controller-manager that keeps running, so the
  known set is rebuilt from this controller's earlier ``RegisteredNode`` /
  ``RemovingNode`` events: once per Node object (per UID), whatever the number
  of commands;
- a node's last heartbeat is the later of its Lease's ``renewTime`` and its
  Ready condition's ``lastHeartbeatTime``; once ``node_monitor_grace_period``
  (40 s) passes without one, every node condition becomes ``Unknown`` with
  reason ``NodeStatusUnknown``, message ``Kubelet stopped posting node
  status.``; when Ready was ``True`` before, the Node gets the event
  ``NodeNotReady`` ``Node X status is now: NodeNotReady``
  (``RecordNodeStatusChange``) and then each pod on the node its Ready
  condition set False and a Warning event ``NodeNotReady`` ``Node is not
  ready`` (``MarkPodsNotReady``);
- taints follow the Ready condition (TaintNodesByCondition and taint-based
  eviction): Unknown → ``node.kubernetes.io/unreachable`` NoSchedule and
  NoExecute, False → ``node.kubernetes.io/not-ready`` NoSchedule and
  NoExecute, True → neither; ``spec.unschedulable`` →
  ``node.kubernetes.io/unschedulable`` NoSchedule;
- zone disruption: when every node of a zone is unhealthy (FullDisruption)
  and so is every other zone, no NoExecute taints are added and existing
  unreachable/not-ready NoExecute taints are removed (the control plane
  assumes it is the one that is cut off), as upstream's
  ``handleDisruption``; adding NoExecute taints is rate-limited to
  ``eviction_rate`` nodes per second (0.1) per zone.

Taint eviction (``pkg/controller/tainteviction``, actor
``taint-eviction-controller``): a pod on a node with NoExecute taints it does
not tolerate is deleted at once; one it tolerates for ``tolerationSeconds`` is
deleted when that time has passed since the taint's ``timeAdded``; event
``TaintManagerEviction`` ``Marking for deletion Pod <ns>/<name>``, and the
pod gets the ``DisruptionTarget`` condition (reason
``DeletionByTaintManager``) before deletion.
"""

from __future__ import annotations

from typing import Any

import trio

from ..api import errors
from ..api.apiserver import MERGE_PATCH, STRATEGIC_MERGE_PATCH, APIServer
from ..api.meta import parse_time
from ..api.scheduling import tolerates_taint
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler, node_name_index

__all__ = ["NodeLifecycleController", "TaintEvictionController", "UNREACHABLE", "NOT_READY", "tolerates"]

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
_ZONE_LABEL = "topology.kubernetes.io/zone"


def _condition(node: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> dict[str, Any] | None:
    """The toleration that tolerates ``taint`` (as ``Toleration.ToleratesTaint``), or None."""
    return next((t for t in tolerations or () if tolerates_taint(t, taint)), None)


class NodeLifecycleController(Component):
    """Marks silent nodes Unknown, keeps condition taints, marks their pods not ready.

    Args:
        api: the API server.
        node_monitor_period: seconds between checks (5).
        node_monitor_grace_period: seconds without a heartbeat before Unknown (40).
        resumed_at: virtual time at which the whole cluster came back after being off
            (``serve`` catching its clock up with the wall clock): like a restarted
            controller-manager, whose probe timestamps start at its start, no node
            goes Unknown for a silence before then.
        eviction_rate: NoExecute taints added per second per zone (0.1).
    """

    name = "node-lifecycle-controller"

    def __init__(self, api: APIServer, *, node_monitor_period: float = 5.0,
                 node_monitor_grace_period: float = 40.0, eviction_rate: float = 0.1,
                 resumed_at: float | None = None) -> None:
        super().__init__(api)
        self.period = node_monitor_period
        self.grace = node_monitor_grace_period
        self.eviction_interval = 1.0 / eviction_rate if eviction_rate > 0 else 0.0
        self.nodes = self.informer("nodes")
        self.leases = self.informer("leases", namespace="kube-node-lease")
        self.pods = self.informer("pods", indexers={"node": node_name_index})
        self.events = EventRecorder(api, self.ctx, "node-controller")
        self._last_taint_time: dict[str, float] = {}  # zone -> virtual time of the last NoExecute taint
        self._known: dict[str, str] | None = None  # uid -> name of the nodes registered (knownNodeSet)
        self.resumed_at = resumed_at

    def _last_heartbeat(self, node: dict[str, Any]) -> float | None:
        name = node["metadata"]["name"]
        times = []
        lease = self.leases.indexer.get_by("kube-node-lease", name)
        if lease and (lease.get("spec") or {}).get("renewTime"):
            times.append(parse_time(self.api.epoch, lease["spec"]["renewTime"]))
        ready = _condition(node, "Ready")
        if ready and ready.get("lastHeartbeatTime"):
            times.append(parse_time(self.api.epoch, ready["lastHeartbeatTime"]))
        if not times:
            created = node["metadata"].get("creationTimestamp")
            if not created:
                return None
            times.append(parse_time(self.api.epoch, created))
        if self.resumed_at is not None:
            times.append(self.resumed_at)
        return max(times)

    def next_wakeup(self) -> float | None:
        """When a node that has missed a heartbeat (10 s) would go Unknown if it stays silent,
        or, for a node Ready again that still has an ``unreachable`` / ``not-ready`` taint,
        the next pass (which lifts it)."""
        out = None
        now = self.api.now
        for node in self.nodes.indexer.list():
            ready = _condition(node, "Ready")
            if ready is None or ready.get("status") == "Unknown":
                continue
            if ready.get("status") == "True" and any(
                    t.get("key") in (UNREACHABLE, NOT_READY) for t in (node.get("spec") or {}).get("taints") or ()):
                t = now + self.period
                out = t if out is None or t < out else out
                continue
            hb = self._last_heartbeat(node)
            if hb is not None and now - hb > 10.0:
                t = hb + self.grace
                out = t if out is None or t < out else out
        return out

    async def main(self) -> None:
        while True:
            await self.gate()
            self.monitor()
            await trio.sleep(self.period)

    # ------------------------------------------------------------------ one pass
    def monitor(self) -> None:
        """One monitoring pass over every node (in name order)."""
        now = self.api.now
        nodes = self.nodes.indexer.list()
        self._classify(nodes)
        for node in nodes:
            try:
                self._check_node(node, now)
            except errors.StatusError:
                continue  # retried on the next pass
        self._reconcile_taints(now)

    def _known_nodes(self) -> dict[str, str]:
        """uid -> name of the Nodes this controller has registered and not removed.

        Read once from its own ``RegisteredNode`` / ``RemovingNode`` events (the
        controller-manager runs on across CLI commands), then kept in memory.
        """
        if self._known is None:
            self._known = {}
            try:
                events = self.api.list("events", namespace="default", ctx=self.ctx,
                                       field_selector="involvedObject.kind=Node,source=node-controller")["items"]
            except errors.StatusError:
                events = []
            gone = set()
            for ev in events:
                inv = ev.get("involvedObject") or {}
                if not inv.get("uid"):
                    continue
                if ev.get("reason") == "RegisteredNode":
                    self._known[inv["uid"]] = inv.get("name", "")
                elif ev.get("reason") == "RemovingNode":
                    gone.add(inv["uid"])
            for uid in gone:
                self._known.pop(uid, None)
        return self._known

    def _classify(self, nodes: list[dict[str, Any]]) -> None:
        """``RegisteredNode`` for each new Node, ``RemovingNode`` for each one gone (``classifyNodes``)."""
        known = self._known_nodes()
        present = set()
        for node in nodes:
            meta = node["metadata"]
            present.add(meta["uid"])
            if meta["uid"] not in known:
                self._node_event(meta["name"], meta["uid"], "RegisteredNode",
                                 f"Registered Node {meta['name']} in Controller")
                known[meta["uid"]] = meta["name"]
        for uid, name in sorted(known.items(), key=lambda kv: (kv[1], kv[0])):
            if uid not in present:
                self._node_event(name, uid, "RemovingNode", f"Removing Node {name} from Controller")
                del known[uid]

    def _node_event(self, name: str, uid: str, reason: str, event: str) -> None:
        """Upstream's ``RecordNodeEvent``: a Normal event about the Node ``name``/``uid``."""
        ref = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "uid": uid}}
        self.events.event(ref, NORMAL, reason, f"Node {name} event: {event}")

    def _check_node(self, node: dict[str, Any], now: float) -> None:
        ready = _condition(node, "Ready")
        if ready is None or ready.get("status") == "Unknown":
            return
        hb = self._last_heartbeat(node)
        if hb is None or now - hb < self.grace:
            return
        stamp = self.api.timestamp(now)
        conds = []
        for c in (node.get("status") or {}).get("conditions") or ():
            if c.get("type") in _CONDITION_TYPES and c.get("status") != "Unknown":
                c = {**c, "status": "Unknown", "reason": "NodeStatusUnknown",
                     "message": "Kubelet stopped posting node status.", "lastTransitionTime": stamp}
            conds.append(c)
        name = node["metadata"]["name"]
        self.api.patch("nodes", name, {"status": {"conditions": conds}}, STRATEGIC_MERGE_PATCH,
                       subresource="status", ctx=self.ctx, field_validation="Ignore")
        if ready.get("status") == "True":  # reported once, when Ready leaves True
            ref = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "uid": node["metadata"]["uid"]}}
            self.events.event(ref, NORMAL, "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            self._mark_pods_not_ready(name, stamp)

    def _mark_pods_not_ready(self, node_name: str, stamp: str) -> None:
        for pod in self.pods.indexer.by_index("node", node_name):
            status = pod.get("status") or {}
            conds = status.get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                continue
            new = [
                {**c, "status": "False", "lastTransitionTime": stamp} if c.get("type") == "Ready" else c
                for c in conds
            ]
            meta = pod["metadata"]
            try:
                self.api.patch("pods", meta["name"], {"status": {"conditions": new}}, STRATEGIC_MERGE_PATCH,
                               namespace=meta["namespace"], subresource="status", ctx=self.ctx,
                               field_validation="Ignore")
            except errors.StatusError:
                continue
            self.events.event(pod, WARNING, "NodeNotReady", "Node is not ready")

    # ------------------------------------------------------------------ taints
    def _wanted_taints(self, node: dict[str, Any], disrupted: bool) -> list[dict[str, Any]]:
        ready = _condition(node, "Ready")
        status = ready.get("status") if ready else None
        out = []
        if status == "Unknown":
            out.append((UNREACHABLE, "NoSchedule"))
            if not disrupted:
                out.append((UNREACHABLE, "NoExecute"))
        elif status == "False":
            out.append((NOT_READY, "NoSchedule"))
            if not disrupted:
                out.append((NOT_READY, "NoExecute"))
        if (node.get("spec") or {}).get("unschedulable"):
            out.append((UNSCHEDULABLE, "NoSchedule"))
        return [{"key": k, "effect": e} for k, e in out]

    def _zone_states(self) -> dict[str, str]:
        zones: dict[str, list[bool]] = {}
        for node in self.nodes.indexer.list():
            zone = (node["metadata"].get("labels") or {}).get(_ZONE_LABEL, "")
            ready = _condition(node, "Ready")
            zones.setdefault(zone, []).append(bool(ready and ready.get("status") == "True"))
        return {z: ("FullDisruption" if not any(v) else "Normal") for z, v in zones.items()}

    def _reconcile_taints(self, now: float) -> None:
        states = self._zone_states()
        all_disrupted = bool(states) and all(s == "FullDisruption" for s in states.values())
        managed = (UNREACHABLE, NOT_READY, UNSCHEDULABLE)
        for node in self.nodes.indexer.list():
            zone = (node["metadata"].get("labels") or {}).get(_ZONE_LABEL, "")
            taints = list((node.get("spec") or {}).get("taints") or [])
            have = {(t.get("key"), t.get("effect")) for t in taints if t.get("key") in managed}
            want_list = self._wanted_taints(node, all_disrupted)
            want = {(t["key"], t["effect"]) for t in want_list}
            if have == want:
                continue
            adding_noexec = any(e == "NoExecute" for (_, e) in want - have)
            if adding_noexec and self.eviction_interval:
                last = self._last_taint_time.get(zone)
                if last is not None and now - last < self.eviction_interval:
                    continue  # rate limited: next pass
                self._last_taint_time[zone] = now
            kept = [t for t in taints if t.get("key") not in managed]
            stamp = self.api.timestamp(now)
            current = {(t.get("key"), t.get("effect")): t for t in taints}
            for t in want_list:
                key = (t["key"], t["effect"])
                if key in current:
                    kept.append(current[key])
                elif t["effect"] == "NoExecute":
                    kept.append({**t, "timeAdded": stamp})
                else:
                    kept.append(t)
            try:
                self.api.patch("nodes", node["metadata"]["name"], {"spec": {"taints": kept or None}},
                               MERGE_PATCH, ctx=self.ctx, field_validation="Ignore")
            except errors.StatusError:
                continue


class TaintEvictionController(Component):
    """Deletes pods from nodes with NoExecute taints they do not tolerate (long enough)."""

    name = "taint-eviction-controller"

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.nodes = self.informer("nodes")
        self.pods = self.informer("pods", indexers={"node": node_name_index})
        self.queue_ = self.queue()
        self.events = EventRecorder(api, self.ctx, "taint-eviction-controller")
        self.nodes.add_event_handler(EventHandler(
            on_add=lambda n: self.queue_.add(n["metadata"]["name"]),
            on_update=lambda o, n: self.queue_.add(n["metadata"]["name"]),
        ))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_changed, on_update=lambda o, n: self._pod_changed(n),
        ))

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            self.queue_.add(node)

    async def main(self) -> None:
        await self.run_workers(self.queue_, self.sync)

    def eviction_time(self, pod: dict[str, Any], taints: list[dict[str, Any]]) -> float | None:
        """Virtual time at which ``pod`` must go because of ``taints`` (NoExecute only), or None."""
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        when: float | None = None
        for taint in taints:
            if taint.get("effect") != "NoExecute":
                continue
            tol = tolerates(tolerations, taint)
            if tol is None:
                return self.api.now
            secs = tol.get("tolerationSeconds")
            if secs is None:
                continue
            added = parse_time(self.api.epoch, taint["timeAdded"]) if taint.get("timeAdded") else self.api.now
            t = added + max(0, int(secs))
            when = t if when is None or t < when else when
        return when

    def sync(self, node_name: str) -> None:
        node = self.nodes.indexer.get(node_name)
        taints = ((node or {}).get("spec") or {}).get("taints") or []
        if not any(t.get("effect") == "NoExecute" for t in taints):
            return
        now = self.api.now
        for pod in self.pods.indexer.by_index("node", node_name):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            when = self.eviction_time(pod, taints)
            if when is None:
                continue
            if when > now:
                self.queue_.add_after(node_name, when - now)
                continue
            self._evict(pod)

    def _evict(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.events.event(pod, NORMAL, "TaintManagerEviction",
                          f"Marking for deletion Pod {meta['namespace']}/{meta['name']}")
        stamp = self.api.timestamp()
        conds = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conds.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                      "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": stamp})
        try:
            self.api.patch("pods", meta["name"], {"status": {"conditions": conds}}, STRATEGIC_MERGE_PATCH,
                           namespace=meta["namespace"], subresource="status", ctx=self.ctx,
                           field_validation="Ignore")
            self.api.delete("pods", meta["name"], namespace=meta["namespace"], ctx=self.ctx,
                            preconditions={"uid": meta["uid"]})
        except errors.StatusError:
            pass
