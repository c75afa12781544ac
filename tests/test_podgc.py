"""The pod garbage collector: pods of a deleted node and terminated pods beyond the
threshold are deleted, as kube-controller-manager's podgc."""

from __future__ import annotations

from k8semu.controllers.podgc import PodGCController
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig
from k8semu.sim.runtime import run_cluster

NS = "default"


def pod(name, node=None, **spec):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def names(api):
    return sorted(p["metadata"]["name"] for p in api.list("pods", namespace=NS)["items"])


def test_pods_of_a_deleted_node_are_failed_and_deleted_after_the_40s_quarantine():
    c = Cluster.create(seed=5, config=ClusterConfig.default(workers=2))
    api = c.api
    seen = {}

    async def body(rt):
        api.create("pods", pod("web", "node-2"), namespace=NS)
        api.create("pods", pod("keep", "node-1"), namespace=NS)
        await rt.settle()
        rt.stop("kubelet/node-2")
        api.delete("nodes", "node-2")
        await rt.advance(39)
        seen["before"] = names(api)
        await rt.advance(2)
        seen["after"] = names(api)

    run_cluster(c, body, default_factories(c))
    assert seen["before"] == ["keep", "web"]
    assert seen["after"] == ["keep"]
    last = [r for r in c.log.history(f"/registry/pods/{NS}/web") if r.type != "DELETED"][-1].object
    cond = next(x for x in last["status"]["conditions"] if x["type"] == "DisruptionTarget")
    assert (last["status"]["phase"], cond["reason"], cond["message"]) == (
        "Failed", "DeletionByPodGC", "PodGC: node no longer exists")
    gone = c.log.history(f"/registry/pods/{NS}/web")[-1]
    assert gone.type == "DELETED" and gone.actor == "pod-garbage-collector"


def test_a_restarted_collector_counts_the_quarantine_from_the_node_deletion():
    # each k8semu command starts the components afresh while the cluster runs on: the 40 s
    # quarantine of a Node deleted in one session ends in the next one at deletion + 40 s
    c = Cluster.create(seed=5, config=ClusterConfig.default(workers=2))
    api = c.api
    seen = {}

    async def first(rt):
        api.create("pods", pod("web", "node-2"), namespace=NS)
        await rt.settle()
        rt.stop("kubelet/node-2")
        api.delete("nodes", "node-2")
        seen["deleted_at"] = rt.now
        await rt.advance(25)

    async def second(rt):
        await rt.advance(seen["deleted_at"] + 39 - rt.now)
        seen["at_39s"] = names(api)
        await rt.advance(2)
        seen["at_41s"] = names(api)

    run_cluster(c, first, default_factories(c))
    assert names(api) == ["web"]
    run_cluster(c, second, default_factories(c))
    assert seen["at_39s"] == ["web"] and seen["at_41s"] == []
    assert api.list("nodes", field_selector="metadata.name=node-2")["items"] == []  # nothing re-registered it


def test_terminated_pods_beyond_the_threshold_go_oldest_first():
    c = Cluster.create(seed=5, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        for i in range(4):
            api.create("pods", pod(f"job-{i}", "node-1", restartPolicy="Never",
                                   containers=[{"name": "c", "image": "busybox:1.36", "command": ["true"]}]),
                       namespace=NS)
            await rt.advance(5)
        await rt.settle()

    factories = {k: v for k, v in default_factories(c).items() if k != "pod-garbage-collector"}
    factories["pod-garbage-collector"] = lambda: PodGCController(api, terminated_threshold=2)
    run_cluster(c, body, factories)
    assert names(api) == ["job-2", "job-3"]
