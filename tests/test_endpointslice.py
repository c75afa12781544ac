"""EndpointSlice and Endpoints controllers (k8semu.controllers.endpointslice / endpoints)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.controllers.endpoints import EndpointsController
from k8semu.controllers.endpointslice import (
    EndpointSliceController,
    desired_endpoints,
    reconcile,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

ES = "endpointslices.discovery.k8s.io"


# --------------------------------------------------------------------------- helpers


def node(api, name, zone="zone-a"):
    api.create("nodes", {"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}})


def service(api, name="web", *, selector=None, ports=None, ns="default", **spec):
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns,
                                                                "labels": {"team": "a"}},
            "spec": {"selector": selector if selector is not None else {"app": name},
                     "ports": ports or [{"name": "http", "port": 80, "targetPort": "http"}], **spec}}
    if not body["spec"]["selector"]:
        del body["spec"]["selector"]
    return api.create("services", body)


def pod(api, name, *, app="web", node_name="node-1", ip=None, ready=True, port=8080, ns="default", **spec):
    p = api.create("pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"nodeName": node_name, "containers": [
            {"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": port}]}], **spec}})
    if ip is not None:
        p = set_status(api, p, ip=ip, ready=ready)
    return p


def set_status(api, p, *, ip=None, ready=True):
    """What the kubelet would write: Running, podIP and the Ready condition."""
    p = api.get("pods", p["metadata"]["name"], namespace=p["metadata"]["namespace"])
    status = dict(p["status"])
    status["phase"] = "Running"
    if ip:
        status["podIP"], status["podIPs"] = ip, [{"ip": ip}]
    status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False",
                             "lastTransitionTime": api.timestamp()}]
    return api.update("pods", {**p, "status": status}, subresource="status")


def slices(api, svc="web", ns="default"):
    return api.list(ES, namespace=ns, label_selector=f"kubernetes.io/service-name={svc}")["items"]


def all_endpoints(api, svc="web"):
    return sorted((e for s in slices(api, svc) for e in s.get("endpoints") or ()),
                  key=lambda e: e["targetRef"]["name"])


def run(cluster, body, **extra):
    factories = {"endpointslice-controller": lambda: EndpointSliceController(cluster.api),
                 "endpoint-controller": lambda: EndpointsController(cluster.api), **extra}
    return run_cluster(cluster, body, factories)


# --------------------------------------------------------------------------- EndpointSlices


def test_slice_shape_matches_upstream():
    c = Cluster.create(seed=1)
    api = c.api
    node(api, "node-1", "zone-a")

    async def body(rt):
        svc = service(api)
        pod(api, "web-0", ip="10.244.0.5", hostname="web-0", subdomain="web")
        pod(api, "web-1", ip="10.244.0.6", ready=False)
        pod(api, "web-2")  # no IP yet: not an endpoint
        await rt.settle()
        [sl] = slices(api)
        m = sl["metadata"]
        assert m["name"].startswith("web-") and len(m["name"]) == len("web-") + 5
        assert m["generateName"] == "web-"
        assert m["labels"] == {"team": "a", "kubernetes.io/service-name": "web",
                               "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
        assert m["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                         "uid": svc["metadata"]["uid"], "controller": True,
                                         "blockOwnerDeletion": True}]
        assert "endpoints.kubernetes.io/last-change-trigger-time" in m["annotations"]
        assert sl["addressType"] == "IPv4"
        assert sl["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        e0, e1 = all_endpoints(api)
        assert e0["addresses"] == ["10.244.0.5"]
        assert e0["conditions"] == {"ready": True, "serving": True, "terminating": False}
        assert e0["hostname"] == "web-0" and e0["nodeName"] == "node-1" and e0["zone"] == "zone-a"
        assert e0["targetRef"]["kind"] == "Pod" and e0["targetRef"]["name"] == "web-0"
        assert e1["conditions"] == {"ready": False, "serving": False, "terminating": False}
        assert "hostname" not in e1
        actors = {r.key.rsplit("/", 1)[1]: r.actor for r in c.log.records()
                  if r.key.startswith("/registry/endpointslices")}
        # the Service's slices are the controller's; default/kubernetes is the apiserver's own
        assert actors == {m["name"]: "endpointslice-controller", "kubernetes": "kube-apiserver"}

    run(c, body)


def test_terminating_pod_is_serving_but_not_ready_and_publish_not_ready():
    c = Cluster.create(seed=2)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        service(api, "all", selector={"app": "web"}, publishNotReadyAddresses=True)
        pod(api, "web-0", ip="10.244.0.5", terminationGracePeriodSeconds=30)
        pod(api, "web-1", ip="10.244.0.6", ready=False)
        await rt.settle()
        api.delete("pods", "web-0", namespace="default")  # bound: graceful, stays terminating
        await rt.settle()
        e0, e1 = all_endpoints(api)
        assert e0["conditions"] == {"ready": False, "serving": True, "terminating": True}
        a0, a1 = all_endpoints(api, "all")
        assert a0["conditions"] == {"ready": True, "serving": True, "terminating": True}
        assert a1["conditions"]["ready"] is True

    run(c, body)


def test_named_target_port_resolving_differently_splits_slices():
    c = Cluster.create(seed=3)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        pod(api, "web-0", ip="10.244.0.5", port=8080)
        pod(api, "web-1", ip="10.244.0.6", port=9090)
        await rt.settle()
        got = sorted((s["ports"][0]["port"], [e["targetRef"]["name"] for e in s["endpoints"]])
                     for s in slices(api))
        assert got == [(8080, ["web-0"]), (9090, ["web-1"])]

    run(c, body)


def test_no_pods_gives_one_placeholder_and_no_selector_gives_nothing():
    c = Cluster.create(seed=4)
    api = c.api

    async def body(rt):
        service(api)
        service(api, "manual", selector={})
        await rt.settle()
        [sl] = slices(api)
        assert sl["endpoints"] == [] and "ports" not in sl
        assert slices(api, "manual") == []
        # the placeholder is kept as is: no churn on further syncs
        rv = sl["metadata"]["resourceVersion"]
        service(api, "other")
        await rt.settle()
        assert slices(api)[0]["metadata"]["resourceVersion"] == rv

    run(c, body)


def test_at_most_100_endpoints_per_slice_and_scale_down_deletes_empty_slices():
    c = Cluster.create(seed=5)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        for i in range(250):
            pod(api, f"web-{i:03d}", ip=f"10.244.{i // 200}.{i % 200 + 1}")
        await rt.settle()
        sizes = sorted(len(s["endpoints"]) for s in slices(api))
        assert sizes == [50, 100, 100]
        for i in range(250):
            if i >= 40:
                api.delete("pods", f"web-{i:03d}", namespace="default", grace_period_seconds=0)
        await rt.settle()
        assert sum(len(s["endpoints"]) for s in slices(api)) == 40
        assert len(slices(api)) <= 2

    run(c, body)


def test_hand_edited_and_deleted_slices_are_repaired():
    c = Cluster.create(seed=6)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        pod(api, "web-0", ip="10.244.0.5")
        await rt.settle()
        [sl] = slices(api)
        api.update(ES, {**sl, "endpoints": []})
        await rt.settle()
        assert [e["addresses"] for e in all_endpoints(api)] == [["10.244.0.5"]]
        api.delete(ES, slices(api)[0]["metadata"]["name"], namespace="default")
        await rt.settle()
        assert [e["addresses"] for e in all_endpoints(api)] == [["10.244.0.5"]]
        assert len(slices(api)) == 1

    run(c, body)


def test_readiness_flip_updates_the_same_slice():
    c = Cluster.create(seed=7)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        p = pod(api, "web-0", ip="10.244.0.5")
        await rt.settle()
        name = slices(api)[0]["metadata"]["name"]
        set_status(api, p, ready=False)
        await rt.settle()
        [sl] = slices(api)
        assert sl["metadata"]["name"] == name
        assert sl["endpoints"][0]["conditions"]["ready"] is False

    run(c, body)


def test_pod_on_unknown_node_is_skipped_until_the_node_appears():
    c = Cluster.create(seed=8)
    api = c.api

    async def body(rt):
        service(api)
        pod(api, "web-0", ip="10.244.0.5", node_name="node-9")
        await rt.settle()
        assert all_endpoints(api) == []
        node(api, "node-9", "zone-z")
        await rt.until(lambda: all_endpoints(api) != [], limit=60)
        assert all_endpoints(api)[0]["zone"] == "zone-z"

    run(c, body)


def test_same_seed_same_log():
    def once():
        c = Cluster.create(seed=9)
        node(c.api, "node-1")

        async def body(rt):
            service(c.api)
            for i in range(5):
                pod(c.api, f"web-{i}", ip=f"10.244.0.{i + 2}")
            await rt.settle()

        run(c, body)
        return [(r.revision, r.key, r.actor, r.object) for r in c.log.records()]

    assert once() == once()


# --------------------------------------------------------------------------- pure reconciler


SVC = {"apiVersion": "v1", "kind": "Service",
       "metadata": {"name": "web", "namespace": "default", "uid": "u-svc"},
       "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                                       "protocol": "TCP"}]}}


def _pod(i, ready=True):
    return {"metadata": {"name": f"p{i:03d}", "namespace": "default", "uid": f"u{i}"},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250 + 1}",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _apply(existing, changes, counter):
    by_name = {s["metadata"]["name"]: s for s in existing}
    for s in changes.delete:
        del by_name[s["metadata"]["name"]]
    for s in changes.update:
        by_name[s["metadata"]["name"]] = s
    for s in changes.create:
        counter[0] += 1
        name = f"web-{counter[0]:05d}"
        by_name[name] = {**s, "metadata": {**s["metadata"], "name": name}}
    return list(by_name.values())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 260), st.booleans()), max_size=260), min_size=1, max_size=4))
def test_reconcile_converges_to_exactly_the_desired_endpoints(rounds):
    existing, counter = [], [0]
    for spec in rounds:
        pods = [_pod(i, r) for i, r in sorted(dict(spec).items())]
        desired, _ = desired_endpoints(SVC, pods, {})
        changes = reconcile(SVC, existing, desired)
        existing = _apply(existing, changes, counter)
        eps = [e for s in existing for e in s["endpoints"]]
        assert sorted(e["targetRef"]["name"] for e in eps) == sorted(p["metadata"]["name"] for p in pods)
        assert all(len(s["endpoints"]) <= 100 for s in existing)
        assert len(existing) >= 1  # a placeholder when empty
        if not pods:
            assert len(existing) == 1
        # a second pass changes nothing
        assert not reconcile(SVC, existing, desired_endpoints(SVC, pods, {})[0])


# --------------------------------------------------------------------------- v1 Endpoints


def test_endpoints_object_as_kubectl_describe_reads_it():
    c = Cluster.create(seed=10)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        pod(api, "web-0", ip="10.244.0.9")
        pod(api, "web-1", ip="10.244.0.10", ready=False)
        pod(api, "web-2", ip="10.244.0.11", terminationGracePeriodSeconds=30)
        await rt.settle()
        ann = api.get("endpoints", "web", namespace="default")["metadata"]["annotations"]
        assert ann == {"endpoints.kubernetes.io/last-change-trigger-time": "2025-01-01T00:00:00Z"}
        api.delete("pods", "web-2", namespace="default")  # terminating: left out of v1 Endpoints
        await rt.settle()
        ep = api.get("endpoints", "web", namespace="default")
        assert ep["metadata"]["labels"] == {"team": "a", "endpoints.kubernetes.io/managed-by": "endpoint-controller"}
        assert "ownerReferences" not in ep["metadata"]
        [subset] = ep["subsets"]
        assert [a["ip"] for a in subset["addresses"]] == ["10.244.0.9"]
        assert subset["addresses"][0]["nodeName"] == "node-1"
        assert subset["addresses"][0]["targetRef"]["name"] == "web-0"
        assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.244.0.10"]
        assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
        assert {r.actor for r in c.log.records() if r.key.startswith("/registry/endpoints/")
                and not r.key.endswith("/default/kubernetes")} == {"endpoint-controller"}
        # a hand edit is put back; deleting the Service deletes its Endpoints
        api.update("endpoints", {**api.get("endpoints", "web", namespace="default"), "subsets": []})
        await rt.settle()
        assert api.get("endpoints", "web", namespace="default")["subsets"] == ep["subsets"]
        api.delete("services", "web", namespace="default")
        await rt.settle()
        assert api.list("endpoints", namespace="default", label_selector="team=a")["items"] == []

    run(c, body)


def test_endpoints_of_selectorless_service_are_left_alone():
    c = Cluster.create(seed=11)
    api = c.api

    async def body(rt):
        service(api, "ext", selector={})
        api.create("endpoints", {"apiVersion": "v1", "kind": "Endpoints",
                                 "metadata": {"name": "ext", "namespace": "default"},
                                 "subsets": [{"addresses": [{"ip": "192.0.2.1"}], "ports": [{"port": 80}]}]})
        await rt.settle()
        ep = api.get("endpoints", "ext", namespace="default")
        assert ep["subsets"][0]["addresses"] == [{"ip": "192.0.2.1"}]
        assert "labels" not in ep["metadata"]

    run(c, body)


# --------------------------------------------------------------------------- default/kubernetes


def test_kubernetes_service_has_the_apiservers_endpoints_and_slice():
    """Regression: ``kubectl get ep kubernetes`` was NotFound. Upstream the apiserver's endpoint
    reconciler keeps Endpoints and an EndpointSlice ``default/kubernetes`` pointing at its
    advertise address (the control-plane node's InternalIP) on 6443; the controllers, which
    skip the selector-less ``kubernetes`` Service, leave them alone."""
    c = Cluster.create(seed=12)
    api = c.api
    cp_ip = "172.18.0.2"  # the default cluster's control-plane node

    async def body(rt):
        await rt.settle()

    run(c, body)
    ep = api.get("endpoints", "kubernetes", namespace="default")
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert "ownerReferences" not in ep["metadata"]
    assert ep["subsets"] == [{"addresses": [{"ip": cp_ip}],
                              "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    [sl] = slices(api, "kubernetes")
    assert sl["metadata"]["name"] == "kubernetes"
    assert sl["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert "ownerReferences" not in sl["metadata"]
    assert sl["addressType"] == "IPv4"
    assert sl["endpoints"] == [{"addresses": [cp_ip], "conditions": {"ready": True}}]
    assert sl["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    # written once, by the apiserver, right after the Service; no controller touched them
    recs = [r for r in c.log.records() if r.key.endswith("/default/kubernetes")]
    assert [(r.type, r.object["kind"], r.actor) for r in recs] == [
        ("ADDED", "Service", "kube-apiserver"), ("ADDED", "Endpoints", "kube-apiserver"),
        ("ADDED", "EndpointSlice", "kube-apiserver")]


def test_kubernetes_endpoints_follow_the_control_plane_nodes_address():
    from k8semu.sim.config import ClusterConfig

    config = ClusterConfig.from_dict({"nodes": [{"name": "worker-a"}, {"name": "cp", "role": "control-plane"}]})
    c = Cluster.create(seed=13, config=config)
    ep = c.api.get("endpoints", "kubernetes", namespace="default")
    assert ep["subsets"][0]["addresses"] == [{"ip": "172.18.0.3"}]  # the second node's InternalIP
    [sl] = slices(c.api, "kubernetes")
    assert sl["endpoints"][0]["addresses"] == ["172.18.0.3"]


def test_kubernetes_endpoints_in_kubectl_get_and_describe(tmp_path, capsys):
    from conftest import Kubectl

    k = Kubectl(tmp_path / "cluster.log", capsys)
    assert k("cluster", "create", "--nodes", "1", "--bare")[0] == 0
    rc, out, _ = k("get", "ep", "kubernetes")
    assert rc == 0 and out[0].split() == ["NAME", "ENDPOINTS", "AGE"]
    assert out[1].split()[:2] == ["kubernetes", "172.18.0.2:6443"]
    rc, out, _ = k("get", "endpointslice", "kubernetes")
    assert rc == 0 and out[1].split()[:4] == ["kubernetes", "IPv4", "6443", "172.18.0.2"]
    rc, out, _ = k("describe", "service", "kubernetes")
    assert rc == 0 and "Endpoints:                172.18.0.2:6443" in out


# --------------------------------------------------------------------------- one instant, one sync


def test_pods_ready_at_one_instant_cost_one_write_per_service_and_no_retry():
    """Thirty pods turning Ready at the same virtual instant: each controller syncs the Service once
    with all of them (the instant's events folded, as a busy controller folds them upstream), so the
    EndpointSlice and the Endpoints are each written once, and no sync fails on a cache that has not
    seen the controller's own last write (which used to cost a retry per pod at scale)."""
    c = Cluster.create(seed=11)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        pods = [pod(api, f"web-{i}") for i in range(30)]
        await rt.settle()
        before = c.log.revision
        for i, p in enumerate(pods):
            set_status(api, p, ip=f"10.244.0.{i + 10}")
        await rt.settle()
        writes = [r.key for r in c.log.records(after=before)
                  if r.actor in ("endpointslice-controller", "endpoint-controller")]
        assert sorted(writes) == sorted([f"/registry/{ES}/default/{slices(api)[0]['metadata']['name']}",
                                         "/registry/endpoints/default/web"])
        assert len(all_endpoints(api)) == 30
        for name in ("endpointslice-controller", "endpoint-controller"):
            assert rt.components[name].work.statistics().requeues == 0

    run(c, body)


def test_a_pod_on_a_missing_node_is_retried_with_upstreams_back_off_then_dropped():
    """Upstream's EndpointSlice controller leaves out a pod whose Node does not exist and retries the
    Service 1 s, 2 s, 4 s … later (its own back-off, not client-go's 5 ms), giving up after 15 tries."""
    c = Cluster.create(seed=12)
    api = c.api
    node(api, "node-1")

    async def body(rt):
        service(api)
        pod(api, "web-0", ip="10.244.0.5")
        pod(api, "web-1", ip="10.244.0.6", node_name="node-9")
        comp = rt.components["endpointslice-controller"]
        await rt.advance(0)
        assert [e["addresses"] for e in all_endpoints(api)] == [["10.244.0.5"]]
        retries = []
        for _ in range(5):
            retries.append(comp.work.next_ready_time() - rt.now)
            await rt.advance(retries[-1])
        assert retries == [1.0, 2.0, 4.0, 8.0, 16.0]
        await rt.advance(2 ** 16)
        assert comp.work.next_ready_time() is None and comp.work.num_requeues("default/web") == 0

    run(c, body)


def test_pod_updates_sync_the_services_upstream_syncs():
    """GetServicesToUpdateOnPodChange: nothing for a status write that keeps readiness and IPs,
    both sides for a readiness change, only joined/left Services for a label change."""
    from k8semu.controllers.controller_utils import ServiceMemberships

    class Services:
        def add_event_handler(self, h):
            self.h = h

    informer = Services()
    members = ServiceMemberships(informer)
    for name, sel in (("web", {"app": "web"}), ("canary", {"track": "canary"}), ("none", None)):
        informer.h.on_add({"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": sel}})

    def pod(labels, ready=False, ips=(), deleting=False):
        meta = {"name": "p", "namespace": "default", "labels": labels}
        if deleting:
            meta["deletionTimestamp"] = "2025-01-01T00:00:30Z"
        return {"metadata": meta, "spec": {}, "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "podIPs": [{"ip": ip} for ip in ips]}}

    web = {"app": "web"}
    assert members.of_pod(pod({"app": "web", "track": "canary"})) == ["default/canary", "default/web"]
    assert members.to_update_on_pod_change(pod(web), pod(web)) == []  # e.g. ContainerCreating
    assert members.to_update_on_pod_change(pod(web), pod(web, ips=["10.244.1.5"])) == ["default/web"]
    assert members.to_update_on_pod_change(pod(web, ips=["10.244.1.5"]),
                                           pod(web, ready=True, ips=["10.244.1.5"])) == ["default/web"]
    assert members.to_update_on_pod_change(pod(web), pod(web, deleting=True)) == ["default/web"]
    # labels only: the Services joined or left, not those it stays in
    assert members.to_update_on_pod_change(pod(web), pod({"app": "web", "track": "canary"})) == ["default/canary"]
    assert members.to_update_on_pod_change(pod({"app": "web", "track": "canary"}), pod({"track": "canary"})) == [
        "default/web"]
    informer.h.on_delete({"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": web}})
    assert members.of_pod(pod(web)) == []
