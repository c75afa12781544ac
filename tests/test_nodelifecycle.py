"""Node lifecycle: a silent node goes Unknown after 40 s, is tainted, and its pods
are evicted after their 300 s tolerations — as upstream's node lifecycle and
taint-eviction controllers do."""

from __future__ import annotations

import trio

from k8semu.api.apiserver import MERGE_PATCH
from k8semu.api.meta import format_micro_time
from k8semu.client.component import Component
from k8semu.controllers.nodelifecycle import (
    NodeLifecycleController,
    TaintEvictionController,
    tolerates,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster


class FakeKubelet(Component):
    """Registers a Ready node and renews its Lease every 10 s (no pods)."""

    def __init__(self, api, node):
        super().__init__(api, f"kubelet/{node}")
        self.node = node

    async def main(self):
        api, now = self.api, self.api.now
        if not any(n["metadata"]["name"] == self.node for n in api.list("nodes")["items"]):
            api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node},
                                 "status": {"conditions": [{"type": "Ready", "status": "True",
                                                            "reason": "KubeletReady",
                                                            "lastHeartbeatTime": api.timestamp(now)}]}},
                       ctx=self.ctx)
            api.create("leases", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                  "metadata": {"name": self.node, "namespace": "kube-node-lease"},
                                  "spec": {"holderIdentity": self.node, "leaseDurationSeconds": 40}},
                       namespace="kube-node-lease", ctx=self.ctx)
        while True:
            api.patch("leases", self.node, {"spec": {"renewTime": format_micro_time(api.epoch, api.now)}},
                      MERGE_PATCH, namespace="kube-node-lease", ctx=self.ctx)
            await trio.sleep(10)


def bound_pod(api, name, node, tolerations=None):
    spec = {"containers": [{"name": "c", "image": "nginx"}], "nodeName": node}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec},
               namespace="default")
    p = api.get("pods", name, namespace="default")
    api.update("pods", {**p, "status": {**p["status"], "phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}}, namespace="default", subresource="status")


def factories(c):
    return {
        "node-lifecycle-controller": lambda: NodeLifecycleController(c.api),
        "taint-eviction-controller": lambda: TaintEvictionController(c.api),
        "kubelet/node-1": lambda: FakeKubelet(c.api, "node-1"),
        "kubelet/node-2": lambda: FakeKubelet(c.api, "node-2"),
    }


def ready_status(api, node):
    return next(c for c in api.get("nodes", node)["status"]["conditions"] if c["type"] == "Ready")


def test_silent_node_goes_unknown_at_40s_and_pods_are_evicted_after_300s():
    c = Cluster.create(seed=1)
    out = {}

    async def body(rt):
        api = c.api
        await rt.advance(1)
        bound_pod(api, "default-tol", "node-1")  # gets the 300 s tolerations from admission
        bound_pod(api, "forever", "node-1",
                  tolerations=[{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                "effect": "NoExecute"}])
        rt.stop("kubelet/node-1")
        # the last heartbeat was at 0 s; Unknown once 40 s have passed (checked every 5 s)
        await rt.until(lambda: ready_status(api, "node-1")["status"] == "Unknown", limit=100)
        out["unknown_at"] = rt.now
        out["reason"] = ready_status(api, "node-1")["reason"]
        out["message"] = ready_status(api, "node-1")["message"]
        await rt.advance(6)
        out["taints"] = sorted((t["key"], t["effect"]) for t in api.get("nodes", "node-1")["spec"]["taints"])
        out["pod_ready"] = [c_["status"] for c_ in api.get("pods", "forever", namespace="default")["status"]["conditions"]
                            if c_["type"] == "Ready"]
        out["node2"] = ready_status(api, "node-2")["status"]
        await rt.advance(280)
        out["at_280"] = api.get("pods", "default-tol", namespace="default")["metadata"].get("deletionTimestamp")
        await rt.advance(30)
        out["at_310"] = api.get("pods", "default-tol", namespace="default")["metadata"].get("deletionTimestamp")
        out["forever"] = api.get("pods", "forever", namespace="default")["metadata"].get("deletionTimestamp")

    run_cluster(c, body, factories(c))
    assert 40 <= out["unknown_at"] <= 45
    assert out["reason"] == "NodeStatusUnknown" and out["message"] == "Kubelet stopped posting node status."
    assert out["taints"] == [("node.kubernetes.io/unreachable", "NoExecute"),
                             ("node.kubernetes.io/unreachable", "NoSchedule")]
    assert out["pod_ready"] == ["False"]
    assert out["node2"] == "True"
    assert out["at_280"] is None  # tolerated for 300 s
    assert out["at_310"] is not None  # then evicted (graceful: the dead kubelet never finishes it)
    assert out["forever"] is None  # tolerates unreachable without a time limit
    ev = [e for e in c.api.list("events", namespace="default")["items"] if e["reason"] == "TaintManagerEviction"]
    assert [e["message"] for e in ev] == ["Marking for deletion Pod default/default-tol"]


def test_no_evictions_when_every_node_is_down():
    c = Cluster.create(seed=2)
    out = {}

    async def body(rt):
        await rt.advance(1)
        bound_pod(c.api, "p", "node-1")
        rt.stop("kubelet/node-1")
        rt.stop("kubelet/node-2")
        await rt.advance(400)
        taints = c.api.get("nodes", "node-1")["spec"].get("taints") or []
        out["taints"] = sorted((t["key"], t["effect"]) for t in taints)
        out["deleted"] = c.api.get("pods", "p", namespace="default")["metadata"].get("deletionTimestamp")

    run_cluster(c, body, factories(c))
    assert out["taints"] == [("node.kubernetes.io/unreachable", "NoSchedule")]
    assert out["deleted"] is None


def test_noschedule_taint_evicts_nothing_noexecute_does():
    c = Cluster.create(seed=3)
    out = {}

    async def body(rt):
        api = c.api
        await rt.advance(1)
        bound_pod(api, "p", "node-2")
        api.patch("nodes", "node-2", {"spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}}, MERGE_PATCH)
        await rt.advance(60)
        out["after_noschedule"] = api.get("pods", "p", namespace="default")["metadata"].get("deletionTimestamp")
        api.patch("nodes", "node-2", {"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}}, MERGE_PATCH)
        await rt.advance(1)
        out["after_noexecute"] = api.get("pods", "p", namespace="default")["metadata"].get("deletionTimestamp")

    run_cluster(c, body, factories(c))
    assert out["after_noschedule"] is None
    assert out["after_noexecute"] is not None


def test_toleration_matching():
    taint = {"key": "k", "value": "v", "effect": "NoExecute"}
    assert tolerates([{"key": "k", "operator": "Equal", "value": "v"}], taint)
    assert not tolerates([{"key": "k", "operator": "Equal", "value": "w"}], taint)
    assert tolerates([{"operator": "Exists"}], taint)
    assert not tolerates([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], taint)
