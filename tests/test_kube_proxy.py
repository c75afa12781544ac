"""The per-node kube-proxy component (k8semu.node.kube_proxy) fed by the EndpointSlice controller."""

from __future__ import annotations

from collections import Counter

from k8semu.controllers.endpointslice import EndpointSliceController
from k8semu.node.kube_proxy import KubeProxy
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

CLIENT = "10.244.9.9"


def setup(api):
    for n in ("node-1", "node-2"):
        api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n},
                             "status": {"addresses": [{"type": "InternalIP", "address": f"172.18.0.{n[-1]}"}]}})
    svc = api.create("services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    pods = []
    for i, n in enumerate(("node-1", "node-2", "node-2")):
        p = api.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
                                "spec": {"nodeName": n, "containers": [{"name": "c", "image": "nginx"}]}})
        pods.append(set_ready(api, p, True, ip=f"10.244.{i}.5"))
    return svc, pods


def set_ready(api, p, ready, ip=None):
    p = api.get("pods", p["metadata"]["name"], namespace="default")
    status = {**p["status"], "phase": "Running",
              "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                              "lastTransitionTime": api.timestamp()}]}
    if ip:
        status["podIP"], status["podIPs"] = ip, [{"ip": ip}]
    return api.update("pods", {**p, "status": status}, subresource="status")


def run(c, body):
    return run_cluster(c, body, {
        "endpointslice-controller": lambda: EndpointSliceController(c.api),
        "kube-proxy/node-1": lambda: KubeProxy(c.api, "node-1", seed=c.seed),
        "kube-proxy/node-2": lambda: KubeProxy(c.api, "node-2", seed=c.seed),
    })


def test_readiness_gates_traffic():
    c = Cluster.create(seed=1)
    api = c.api

    async def body(rt):
        svc, pods = setup(api)
        await rt.settle()
        proxy = rt.components["kube-proxy/node-1"]
        vip = svc["spec"]["clusterIP"]
        sp = proxy.table.get("default/web")
        assert [e.ip for e in sp.cluster_endpoints] == ["10.244.0.5", "10.244.1.5", "10.244.2.5"]
        hits = Counter(proxy.route(CLIENT, vip, 80).pod_ref for _ in range(300))
        assert set(hits) == {"default/web-0", "default/web-1", "default/web-2"}

        set_ready(api, pods[1], False)
        await rt.settle()
        sp = proxy.table.get("default/web")
        assert [e.ip for e in sp.cluster_endpoints] == ["10.244.0.5", "10.244.2.5"]
        assert "10.244.1.5" in [e.ip for e in sp.endpoints]  # still listed, just not used
        for name in ("kube-proxy/node-1", "kube-proxy/node-2"):
            results = [rt.components[name].route(CLIENT, vip, 80) for _ in range(200)]
            assert {r.pod_ref for r in results} == {"default/web-0", "default/web-2"}
            assert all(r.backend_port == 8080 for r in results)

        for p in pods:
            set_ready(api, p, False)
        await rt.settle()
        assert proxy.route(CLIENT, vip, 80).kind == "reject"  # no endpoints: connection refused

    run(c, body)


def test_proxy_writes_nothing_and_routing_is_reproducible():
    def once():
        c = Cluster.create(seed=2)

        async def body(rt):
            svc, _ = setup(c.api)
            await rt.settle()
            proxy = rt.components["kube-proxy/node-2"]
            return [proxy.route(CLIENT, svc["spec"]["clusterIP"], 80).pod_ref for _ in range(20)], c

        return run(c, body)

    picks, c = once()
    assert not [r for r in c.log.records() if r.actor.startswith("kube-proxy/")]
    assert once()[0] == picks
    assert "KUBE-SVC-" in run(Cluster.create(seed=2), _dump_body)


async def _dump_body(rt):
    setup(rt.cluster.api)
    await rt.settle()
    return rt.components["kube-proxy/node-1"].table.dump()


def test_a_frozen_kube_proxy_routes_by_what_it_saw_until_thawed():
    """Healthy kube-proxies read the API server's state; a watch fault gives one node's
    proxy caches of its own, which go stale while frozen (as upstream's informers would)."""
    c = Cluster.create(seed=1)
    api = c.api

    async def body(rt):
        _, pods = setup(api)
        await rt.settle()
        rt.freeze("kube-proxy/node-1")
        await rt.settle()
        set_ready(api, pods[1], False)
        await rt.settle()

        def ready_ips(node):
            return [e.ip for e in rt.components[f"kube-proxy/{node}"].table.get("default/web").cluster_endpoints]

        assert ready_ips("node-1") == ["10.244.0.5", "10.244.1.5", "10.244.2.5"]  # stale
        assert ready_ips("node-2") == ["10.244.0.5", "10.244.2.5"]
        rt.thaw("kube-proxy/node-1")
        await rt.settle()
        assert ready_ips("node-1") == ["10.244.0.5", "10.244.2.5"]

    run(c, body)
