"""The DaemonSet controller behaves as upstream's daemonset-controller."""

from __future__ import annotations

from k8semu.client.component import Component
from k8semu.client.informer import EventHandler, meta_namespace_key
from k8semu.controllers.daemonset import (
    DaemonSetController,
    daemon_tolerations,
    node_should_run,
    target_node,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster


class FakeNodeAgent(Component):
    """What the scheduler and kubelets would do: bind each daemon pod to the node
    its affinity names, mark it Running and Ready, and finish graceful deletions."""

    name = "fake-node-agent"

    def __init__(self, api):
        super().__init__(api)
        self.pods = self.informer("pods")
        self.q = self.queue()
        self.pods.add_event_handler(EventHandler(on_add=lambda p: self.q.add(meta_namespace_key(p)),
                                                 on_update=lambda o, n: self.q.add(meta_namespace_key(n))))

    async def main(self):
        await self.run_workers(self.q, self.sync)

    def sync(self, key):
        ns, name = key.split("/", 1)
        if self.pods.indexer.get_by(ns, name) is None:
            return
        pod = self.api.get("pods", name, namespace=ns, ctx=self.ctx)
        if pod["metadata"].get("deletionTimestamp"):
            self.api.delete("pods", name, namespace=ns, grace_period_seconds=0, ctx=self.ctx)
            return
        if not pod["spec"].get("nodeName"):
            self.api.bind(name, {"target": {"name": target_node(pod)}}, namespace=ns, ctx=self.ctx)
            return
        if pod["status"].get("phase") == "Pending":
            now = self.api.timestamp()
            status = {**pod["status"], "phase": "Running", "conditions": [
                *pod["status"].get("conditions", []),
                {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}]}
            self.api.update("pods", {**pod, "status": status}, subresource="status", ctx=self.ctx)


def node(name, labels=None, taints=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": taints} if taints else {}}


def daemonset(name="agent", **spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}},
            **spec,
        },
    }


def live_pods(api):
    return [p for p in api.list("pods", namespace="default")["items"] if not p["metadata"].get("deletionTimestamp")]


def nodes_with_pods(api):
    return sorted(target_node(p) for p in live_pods(api))


def components(cluster, agent=True):
    out = {"daemonset-controller": lambda: DaemonSetController(cluster.api)}
    if agent:
        out["fake-node-agent"] = lambda: FakeNodeAgent(cluster.api)
    return out


GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_daemonset_follows_taints_being_removed_and_added():
    cluster = Cluster.create(seed=1)
    api = cluster.api
    for n in (node("node-1"), node("node-2"), node("node-3", taints=[GPU_TAINT])):
        api.create("nodes", n)
    seen = {}

    async def body(rt):
        api.create("daemonsets.apps", daemonset())
        await rt.settle()
        seen["start"] = nodes_with_pods(api)
        seen["status"] = api.get("daemonsets.apps", "agent", namespace="default")["status"]
        # the taint is removed: node-3 gets its pod
        n3 = api.get("nodes", "node-3")
        api.update("nodes", {**n3, "spec": {}})
        await rt.settle()
        seen["untainted"] = nodes_with_pods(api)
        # a NoExecute taint evicts the daemon pod; a NoSchedule taint lets it stay
        n1 = api.get("nodes", "node-1")
        api.update("nodes", {**n1, "spec": {"taints": [{"key": "maintenance", "value": "true",
                                                          "effect": "NoExecute"}]}})
        n2 = api.get("nodes", "node-2")
        api.update("nodes", {**n2, "spec": {"taints": [GPU_TAINT]}})
        await rt.settle()
        seen["tainted"] = nodes_with_pods(api)
        seen["final"] = api.get("daemonsets.apps", "agent", namespace="default")["status"]

    run_cluster(cluster, body, components(cluster))
    assert seen["start"] == ["node-1", "node-2"]
    st = seen["status"]
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["numberReady"],
            st["updatedNumberScheduled"], st["numberAvailable"], st["numberMisscheduled"]) == (2, 2, 2, 2, 2, 0)
    assert st["observedGeneration"] == 1
    assert seen["untainted"] == ["node-1", "node-2", "node-3"]
    assert seen["tainted"] == ["node-2", "node-3"]
    final = seen["final"]
    assert (final["desiredNumberScheduled"], final["currentNumberScheduled"], final["numberMisscheduled"]) == (1, 1, 1)
    created = [e["message"] for e in api.list("events", namespace="default")["items"]
               if e["reason"] == "SuccessfulCreate"]
    assert len(created) == 3 and all(m.startswith("Created pod: agent-") for m in created)


def test_daemon_pods_get_node_affinity_tolerations_and_revision():
    cluster = Cluster.create(seed=2)
    api = cluster.api
    api.create("nodes", node("node-1", labels={"disk": "ssd"}))
    api.create("nodes", node("node-2"))

    async def body(rt):
        api.create("daemonsets.apps", daemonset(
            template={"metadata": {"labels": {"app": "agent"}},
                      "spec": {"nodeSelector": {"disk": "ssd"}, "hostNetwork": True,
                               "containers": [{"name": "agent", "image": "agent:1"}]}}))
        await rt.settle()
        # labelling node-2 brings it into the set
        n2 = api.get("nodes", "node-2")
        api.update("nodes", {**n2, "metadata": {**n2["metadata"], "labels": {**n2["metadata"]["labels"],
                                                                              "disk": "ssd"}}})
        await rt.settle()

    run_cluster(cluster, body, components(cluster, agent=False))
    pods = sorted(live_pods(api), key=target_node)
    assert [target_node(p) for p in pods] == ["node-1", "node-2"]
    pod = pods[0]
    assert "nodeName" not in pod["spec"]  # the scheduler binds it
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}
    tols = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule"),
            ("node.kubernetes.io/network-unavailable", "NoSchedule")} <= tols
    assert all("tolerationSeconds" not in t for t in pod["spec"]["tolerations"])
    revs = api.list("controllerrevisions.apps", namespace="default")["items"]
    assert len(revs) == 1 and revs[0]["revision"] == 1
    h = revs[0]["metadata"]["labels"]["controller-revision-hash"]
    assert revs[0]["metadata"]["name"] == f"agent-{h}"
    assert pod["metadata"]["labels"]["controller-revision-hash"] == h
    st = api.get("daemonsets.apps", "agent", namespace="default")["status"]
    assert st["desiredNumberScheduled"] == 2 and st["numberReady"] == 0 and st["numberUnavailable"] == 2


def test_rolling_update_replaces_one_node_at_a_time():
    cluster = Cluster.create(seed=3)
    api = cluster.api
    for i in range(1, 5):
        api.create("nodes", node(f"node-{i}"))
    worst = []

    async def body(rt):
        api.create("daemonsets.apps", daemonset())
        await rt.settle()
        old_hash = live_pods(api)[0]["metadata"]["labels"]["controller-revision-hash"]
        ds = api.get("daemonsets.apps", "agent", namespace="default")
        tmpl = ds["spec"]["template"]
        tmpl = {**tmpl, "spec": {**tmpl["spec"], "containers": [{"name": "agent", "image": "agent:2"}]}}
        api.update("daemonsets.apps", {**ds, "spec": {**ds["spec"], "template": tmpl}})

        def done():
            ready = [p for p in live_pods(api) if p["status"].get("phase") == "Running"]
            worst.append(4 - len(ready))
            hashes = {p["metadata"]["labels"]["controller-revision-hash"] for p in live_pods(api)}
            return len(ready) == 4 and old_hash not in hashes

        assert await rt.until(done, step=0.01)
        await rt.settle()

    run_cluster(cluster, body, components(cluster))
    assert max(worst) <= 1  # maxUnavailable: 1
    st = api.get("daemonsets.apps", "agent", namespace="default")["status"]
    assert st["updatedNumberScheduled"] == 4 and st["numberAvailable"] == 4 and st["observedGeneration"] == 2
    revs = sorted(api.list("controllerrevisions.apps", namespace="default")["items"], key=lambda r: r["revision"])
    assert [r["revision"] for r in revs] == [1, 2]


def test_should_run_rules():
    ds = daemonset()
    assert node_should_run(ds, node("a")) == (True, True)
    assert node_should_run(ds, node("a", taints=[GPU_TAINT])) == (False, True)
    assert node_should_run(ds, node("a", taints=[{"key": "x", "effect": "NoExecute"}])) == (False, False)
    # the daemon tolerations cover an unschedulable or not-ready node
    assert node_should_run(ds, node("a", taints=[{"key": "node.kubernetes.io/unschedulable",
                                                  "effect": "NoSchedule"}])) == (True, True)
    assert node_should_run(ds, node("a", taints=[{"key": "node.kubernetes.io/not-ready",
                                                  "effect": "NoExecute"}])) == (True, True)
    assert not any(t["key"] == "node.kubernetes.io/network-unavailable" for t in daemon_tolerations({}))
