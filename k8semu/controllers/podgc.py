"""The pod garbage collector, as kube-controller-manager's ``pod-garbage-collector``
(pkg/controller/podgc).

Design
======

Upstream checks every 20 s (``gcCheckPeriod``); here each check is driven by
the event that makes it necessary, so an idle cluster has nothing scheduled:

* **Orphaned pods** — bound to a Node that does not exist. When a Node is
  deleted (or a pod names a node the cache does not have), the node is checked
  after the 40 s quarantine (``quarantineTime``). A controller starting (every
  ``k8semu`` command starts the components afresh, but the cluster runs on)
  looks for pods of missing nodes once its caches have synced, as upstream's
  periodic check would, and counts the quarantine from the Node's deletion as
  the log recorded it (from its start for a node that never existed), so the
  40 s run on across commands. If the API server still has
  no such Node, each of its pods gets the ``DisruptionTarget`` condition
  (reason ``DeletionByPodGC``, message ``PodGC: node no longer exists``), phase
  ``Failed`` unless it already finished, and is deleted with grace period 0.
* (Upstream also force-deletes unscheduled pods that are terminating; here the
  API server already deletes an unscheduled pod with grace period 0.)
* **Terminated pods** beyond ``--terminated-pod-gc-threshold`` (12,500):
  the oldest finished pods (by creation time, then name) are deleted.

It writes as the admin (upstream: the ``pod-garbage-collector`` service
account) and records no events, as upstream.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.apiserver import STRATEGIC_MERGE_PATCH
from ..client.component import Component
from ..client.informer import EventHandler, node_name_index

__all__ = ["PodGCController", "QUARANTINE_SECONDS", "TERMINATED_POD_GC_THRESHOLD"]

Obj = dict[str, Any]

#: how long a node must be missing before its pods are collected (virtual seconds)
QUARANTINE_SECONDS = 40.0
#: kube-controller-manager's ``--terminated-pod-gc-threshold`` default
TERMINATED_POD_GC_THRESHOLD = 12500

_TERMINATED = "terminated"


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _finished_index(pod: Obj) -> list[str]:
    return ["yes"] if _finished(pod) else []


class PodGCController(Component):
    """Deletes orphaned pods and excess terminated pods (actor ``pod-garbage-collector``).

    Args:
        api: the API server.
        terminated_threshold: terminated pods kept before the oldest are deleted
            (``--terminated-pod-gc-threshold``; 0 turns that part off, as upstream).
    """

    name = "pod-garbage-collector"

    def __init__(self, api: Any, terminated_threshold: int = TERMINATED_POD_GC_THRESHOLD) -> None:
        super().__init__(api)
        self.threshold = terminated_threshold
        self.pods = self.informer("pods", indexers={"node": node_name_index, "finished": _finished_index})
        self.nodes = self.informer("nodes")
        self.q = self.queue()
        self.pods.add_event_handler(EventHandler(on_add=self._pod_changed,
                                                 on_update=lambda _o, n: self._pod_changed(n)))
        self.nodes.add_event_handler(EventHandler(on_add=self._node_added, on_delete=self._node_deleted))

    async def main(self) -> None:
        self._check_missing_nodes()
        await self.run_workers(self.q, self.sync)

    def _check_missing_nodes(self) -> None:
        """At start: quarantine every node that pods name but the cache lacks, counting the
        40 s from the Node's deletion (its last record in the log, if a DELETED one)."""
        now = self.api.now
        missing = sorted({n for p in self.pods.indexer.list() if (n := (p.get("spec") or {}).get("nodeName"))
                          and self.nodes.indexer.get(n) is None})
        for node in missing:
            hist = self.api.log.history(f"/registry/nodes/{node}")
            gone = hist[-1].time if hist and hist[-1].type == "DELETED" else now
            self.q.add_after(("node", node), gone + QUARANTINE_SECONDS - now)

    # ---- event handlers (enqueue only)
    def _pod_changed(self, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and self.nodes.indexer.get(node) is None and self.nodes.has_synced:
            self.q.add_after(("node", node), QUARANTINE_SECONDS)
        if self.threshold > 0 and _finished(pod):
            self.q.add((_TERMINATED, ""))

    def _node_added(self, node: Obj) -> None:
        # pods can name a node before its Node registers (a kubelet's static pods): the orphan
        # check queued for them would find the node there
        self.q.cancel_after(("node", node["metadata"]["name"]))

    def _node_deleted(self, node: Obj) -> None:
        self.q.add_after(("node", node["metadata"]["name"]), QUARANTINE_SECONDS)

    # ---- sync
    def sync(self, key: tuple[str, str]) -> None:
        """One check: ``("node", name)`` or ``("terminated", "")``."""
        kind, name = key
        if kind == "node":
            self._gc_orphans(name)
        else:
            self._gc_terminated()

    def _gc_orphans(self, node: str) -> None:
        try:
            self.api.get("nodes", node, ctx=self.ctx)
            return  # it came back (or the cache was behind)
        except errors.NotFound:
            pass
        stamp = self.api.timestamp()
        for pod in self.pods.indexer.by_index("node", node):
            meta = pod["metadata"]
            status = pod.get("status") or {}
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
            conds.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                          "message": "PodGC: node no longer exists", "lastTransitionTime": stamp})
            patch: Obj = {"status": {"conditions": conds}}
            if not _finished(pod):
                patch["status"]["phase"] = "Failed"
            try:
                self.api.patch("pods", meta["name"], patch, STRATEGIC_MERGE_PATCH, namespace=meta["namespace"],
                               subresource="status", ctx=self.ctx, field_validation="Ignore")
            except errors.StatusError:
                continue
            self._force_delete(pod)

    def _gc_terminated(self) -> None:
        done = self.pods.indexer.by_index("finished", "yes")
        excess = len(done) - self.threshold
        if self.threshold <= 0 or excess <= 0:
            return
        done.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
        for pod in done[:excess]:
            self._force_delete(pod)

    def _force_delete(self, pod: Obj) -> None:
        meta = pod["metadata"]
        try:
            self.api.delete("pods", meta["name"], namespace=meta["namespace"], ctx=self.ctx,
                            grace_period_seconds=0, preconditions={"uid": meta.get("uid")})
        except errors.StatusError:
            pass
