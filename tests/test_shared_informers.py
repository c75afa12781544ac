"""kube-controller-manager's controllers share one informer per resource (upstream's
SharedInformerFactory), and a watch fault on one of them still leaves the others' view alone."""

from __future__ import annotations

from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig
from k8semu.sim.runtime import run_cluster

NS = "default"


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


def _cluster() -> Cluster:
    return Cluster.create(seed=3, config=ClusterConfig.default(workers=1))


def test_controllers_share_one_pod_cache_and_one_watch():
    cluster = _cluster()
    api = cluster.api
    seen: dict = {}

    async def body(rt):
        api.create("pods", _pod("a"))
        await rt.settle()
        rs = rt.components["replicaset-controller"].pod_informer
        others = [rt.components[n].pods for n in ("job-controller", "daemonset-controller",
                                                   "disruption-controller", "endpoint-controller")]
        seen["same"] = all(o.indexer is rs.indexer for o in others)
        seen["cached"] = rs.indexer.get_by(NS, "a") is not None
        # one watch of all pods for the whole controller manager (upstream: 17 controllers)
        seen["watchers"] = api.log._hub.lot("pods").statistics().tasks_waiting

    run_cluster(cluster, body, default_factories(cluster))
    assert seen["same"] and seen["cached"]
    assert seen["watchers"] == 2  # kube-controller-manager and kube-scheduler (the kubelet's is indexed)


def test_a_frozen_controller_keeps_its_stale_cache_while_the_others_move_on():
    cluster = _cluster()
    api = cluster.api
    seen: dict = {}

    async def body(rt):
        api.create("pods", _pod("a"))
        await rt.settle()
        rt.freeze("replicaset-controller")
        api.create("pods", _pod("b"))
        await rt.settle()
        rs = rt.components["replicaset-controller"].pod_informer
        job = rt.components["job-controller"].pods
        seen["frozen"] = (rs.indexer.get_by(NS, "a") is not None, rs.indexer.get_by(NS, "b") is not None)
        seen["others"] = job.indexer.get_by(NS, "b") is not None
        rt.thaw("replicaset-controller")
        await rt.settle()
        seen["thawed"] = rs.indexer.get_by(NS, "b") is not None
        rt.crash("job-controller", restart_after=1)  # a fresh instance shares the cache again
        await rt.advance(5)
        seen["restarted"] = rt.components["job-controller"].pods.indexer.get_by(NS, "b") is not None

    run_cluster(cluster, body, default_factories(cluster))
    assert seen["frozen"] == (True, False)  # stale: froze before b
    assert seen["others"]
    assert seen["thawed"]
    assert seen["restarted"]
