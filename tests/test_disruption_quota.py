"""PodDisruptionBudget status and ResourceQuota usage follow the pods, as upstream's
disruption and resource-quota controllers keep them."""

from __future__ import annotations

from k8semu.controllers.disruption import DisruptionController
from k8semu.controllers.resourcequota import ResourceQuotaController
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster


def make_pod(api, name, ready=True, labels=None, cpu=None):
    c = {"name": "c", "image": "nginx"}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}}
    api.create("pods", {"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": name, "labels": labels or {"app": "web"}},
                        "spec": {"containers": [c], "nodeName": "node-1"}}, namespace="default")
    if ready:
        p = api.get("pods", name, namespace="default")
        api.update("pods", {**p, "status": {**p["status"], "phase": "Running",
                                            "conditions": [{"type": "Ready", "status": "True"}]}},
                   namespace="default", subresource="status")


def test_pdb_status_counts_healthy_pods_and_allows_evictions():
    c = Cluster.create(seed=1)
    api = c.api
    out = {}

    async def body(rt):
        for i in range(3):
            make_pod(api, f"web-{i}")
        make_pod(api, "web-3", ready=False)
        api.create("poddisruptionbudgets", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}, namespace="default")
        await rt.settle()
        out["first"] = api.get("poddisruptionbudgets", "web", namespace="default")["status"]
        api.evict("web-0", {}, namespace="default")
        await rt.settle()
        out["after"] = api.get("poddisruptionbudgets", "web", namespace="default")["status"]

    run_cluster(c, body, {"disruption-controller": lambda: DisruptionController(api)})
    first = out["first"]
    assert (first["expectedPods"], first["currentHealthy"], first["desiredHealthy"], first["disruptionsAllowed"]) == (4, 3, 2, 1)
    assert first["conditions"][0]["reason"] == "SufficientPods"
    after = out["after"]
    assert (after["currentHealthy"], after["disruptionsAllowed"]) == (2, 0)
    assert after["conditions"][0]["reason"] == "InsufficientPods"


def test_quota_status_tracks_usage():
    c = Cluster.create(seed=1)
    api = c.api
    out = {}

    async def body(rt):
        api.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                                      "spec": {"hard": {"pods": "10", "requests.cpu": "2"}}}, namespace="default")
        make_pod(api, "a", cpu="250m")
        make_pod(api, "b", cpu="500m")
        await rt.settle()
        out["used"] = api.get("resourcequotas", "q", namespace="default")["status"]
        api.delete("pods", "a", namespace="default", grace_period_seconds=0)
        await rt.settle()
        out["after"] = api.get("resourcequotas", "q", namespace="default")["status"]["used"]

    run_cluster(c, body, {"resourcequota-controller": lambda: ResourceQuotaController(api)})
    assert out["used"] == {"hard": {"pods": "10", "requests.cpu": "2"}, "used": {"pods": "2", "requests.cpu": "750m"}}
    assert out["after"] == {"pods": "1", "requests.cpu": "500m"}
