"""Nodes register and heartbeat as kubelets do; node IPAM hands out pod CIDRs;
a stopped kubelet goes quiet and a restarted one adopts its running pods."""

from __future__ import annotations

import pytest

from k8semu.api.meta import parse_time
from k8semu.controllers.nodeipam import NodeIPAMController
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig, ConfigError
from k8semu.sim.runtime import run_cluster


def lease(api, node):
    return api.get("leases.coordination.k8s.io", node, namespace="kube-node-lease")


def renew_time(api, node):
    return parse_time(api.epoch, lease(api, node)["spec"]["renewTime"])


def test_every_node_registers_ready_with_its_pod_cidr_and_lease():
    c = Cluster.create(seed=3)
    api = c.api

    async def body(rt):
        assert await rt.settle()
        nodes = {n["metadata"]["name"]: n for n in api.list("nodes")["items"]}
        assert sorted(nodes) == ["control-plane", "node-1", "node-2", "node-3"]
        for i, cfg in enumerate(c.nodes.nodes):
            n = nodes[cfg.name]
            assert n["spec"]["podCIDR"] == f"10.244.{i}.0/24"
            assert n["spec"]["podCIDRs"] == [f"10.244.{i}.0/24"]
            st = n["status"]
            assert st["allocatable"] == st["capacity"]
            assert st["capacity"]["cpu"] == "4" and st["capacity"]["memory"] == "8388608Ki"
            assert st["capacity"]["pods"] == "110"
            conds = {x["type"]: x for x in st["conditions"]}
            assert [x["type"] for x in st["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
            assert (conds["Ready"]["status"], conds["Ready"]["reason"], conds["Ready"]["message"]) == (
                "True", "KubeletReady", "kubelet is posting ready status")
            assert (conds["MemoryPressure"]["status"], conds["MemoryPressure"]["reason"]) == (
                "False", "KubeletHasSufficientMemory")
            assert st["addresses"] == [{"type": "InternalIP", "address": cfg.internal_ip},
                                       {"type": "Hostname", "address": cfg.name}]
            info = st["nodeInfo"]
            assert info["kubeletVersion"].startswith("v1.33.")
            assert info["containerRuntimeVersion"].startswith("containerd://2.0.")
            assert (info["operatingSystem"], info["architecture"]) == ("linux", "amd64")
            assert n["metadata"]["labels"]["kubernetes.io/hostname"] == cfg.name
            ls = lease(api, cfg.name)["spec"]
            assert ls["holderIdentity"] == cfg.name and ls["leaseDurationSeconds"] == 40
        assert nodes["control-plane"]["spec"]["taints"] == [
            {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
        # machine IDs are stable functions of the node name
        ids = {n["status"]["nodeInfo"]["machineID"] for n in nodes.values()}
        assert len(ids) == 4

    run_cluster(c, body, default_factories(c))


def test_lease_renews_every_10s_and_status_is_reposted_every_5_minutes():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        await rt.settle()
        t0 = renew_time(api, "node-1")
        await rt.advance(35)
        assert renew_time(api, "node-1") == t0 + 30
        writes = [r.time for r in c.log.records(prefix="/registry/minions/node-1")
                  + c.log.records(prefix="/registry/nodes/node-1") if r.actor == "kubelet/node-1"]
        await rt.advance(300)
        later = [r.time for r in c.log.records(prefix="/registry/minions/node-1")
                 + c.log.records(prefix="/registry/nodes/node-1") if r.actor == "kubelet/node-1"]
        assert len(later) - len(writes) == 1  # one unchanged-status report in 5 minutes
        hb = next(x for x in api.get("nodes", "node-1")["status"]["conditions"] if x["type"] == "Ready")
        assert parse_time(api.epoch, hb["lastHeartbeatTime"]) > parse_time(api.epoch, hb["lastTransitionTime"])

    run_cluster(c, body, default_factories(c))


def test_nodes_outside_the_config_get_the_next_free_cidr():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        await rt.settle()
        api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"}})
        await rt.settle()
        assert api.get("nodes", "extra")["spec"]["podCIDR"] == "10.244.2.0/24"

    run_cluster(c, body, {"node-ipam-controller": lambda: NodeIPAMController(api, c.nodes)})


def test_a_cluster_over_256_nodes_gets_a_pod_subnet_with_a_cidr_for_every_node():
    big = ClusterConfig.from_dict({"nodes": [{"count": 1000}]})
    assert big.pod_cidr == "10.128.0.0/14"
    assert ClusterConfig.from_dict({"nodes": [{"count": 5000}]}).pod_cidr == "10.128.0.0/11"
    assert ClusterConfig.default().pod_cidr == "10.244.0.0/16"
    ipam = NodeIPAMController(Cluster.create(seed=3).api, big)
    assert ipam.cidr_for("node-1000") == "10.131.231.0/24"  # the 1000th /24
    chosen = ClusterConfig.from_dict({"podSubnet": "10.32.0.0/12", "nodes": [{"count": 3}]})
    assert chosen.pod_cidr == "10.32.0.0/12"
    assert ClusterConfig.from_header(chosen.to_dict()).pod_cidr == "10.32.0.0/12"
    with pytest.raises(ConfigError, match=r"cfg.yaml: podSubnet: 10.1.0.0/24 has fewer /24s than the 3 nodes"):
        ClusterConfig.from_dict({"podSubnet": "10.1.0.0/24", "nodes": [{"count": 3}]}, "cfg.yaml")
    with pytest.raises(ConfigError, match=r"cfg.yaml: podSubnet: "):
        ClusterConfig.from_dict({"podSubnet": "10.1.0.300/16"}, "cfg.yaml")


def test_stopped_kubelet_goes_quiet_and_a_restarted_one_adopts_running_pods():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
                            "spec": {"nodeName": "node-1",
                                     "containers": [{"name": "nginx", "image": "nginx:1.30-alpine"}]}})
        assert await rt.until(lambda: api.get("pods", "web", namespace="default")["status"].get("phase")
                              == "Running", limit=30)
        before = api.get("pods", "web", namespace="default")
        rt.stop("kubelet/node-1")
        t_stop = renew_time(api, "node-1")
        rev = c.log.revision
        await rt.advance(120)
        assert renew_time(api, "node-1") == t_stop  # a dead node renews nothing
        assert [r for r in c.log.records(rev) if r.actor == "kubelet/node-1"] == []  # nor writes anything
        # meanwhile the node lifecycle controller marked the pod not ready (node unreachable)
        ready = lambda p: next(x["status"] for x in p["status"]["conditions"] if x["type"] == "Ready")  # noqa: E731
        assert ready(api.get("pods", "web", namespace="default")) == "False"
        await rt.start("kubelet/node-1")
        await rt.advance(25)
        after = api.get("pods", "web", namespace="default")
        # the same container, not restarted, and the kubelet reports it ready again
        assert after["status"]["containerStatuses"][0]["containerID"] == before["status"]["containerStatuses"][0]["containerID"]
        assert after["status"]["containerStatuses"][0]["restartCount"] == 0
        assert ready(after) == "True"
        assert renew_time(api, "node-1") > t_stop + 120  # heartbeats resume
        # the adopted container is still managed: deleting the pod stops it
        api.delete("pods", "web", namespace="default")
        assert await rt.until(lambda: not api.list("pods", namespace="default")["items"], limit=10)

    run_cluster(c, body, default_factories(c))


def test_restarted_kubelet_replays_what_happened_while_it_was_down():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job", "namespace": "default"},
                            "spec": {"nodeName": "node-1", "restartPolicy": "Never",
                                     "containers": [{"name": "main", "image": "busybox:1.36",
                                                     "command": ["sh", "-c", "sleep 20; echo done"]}]}})
        assert await rt.until(lambda: api.get("pods", "job", namespace="default")["status"].get("phase")
                              == "Running", limit=30)
        started = api.get("pods", "job", namespace="default")["status"]["containerStatuses"][0]
        rt.stop("kubelet/node-1")
        await rt.advance(60)
        assert api.get("pods", "job", namespace="default")["status"]["phase"] == "Running"
        await rt.start("kubelet/node-1")
        await rt.advance(1)
        p = api.get("pods", "job", namespace="default")
        assert p["status"]["phase"] == "Succeeded"
        t = p["status"]["containerStatuses"][0]["state"]["terminated"]
        # the exit is recorded at the time it really happened, not when the kubelet came back
        assert parse_time(api.epoch, t["finishedAt"]) == parse_time(
            api.epoch, started["state"]["running"]["startedAt"]) + 20

    run_cluster(c, body, default_factories(c))


def test_serve_catches_a_stale_clock_up_without_nodes_going_not_ready():
    """``serve`` on a cluster last run 100 days ago (by kubectl's wall clock): the clock jumps
    to the wall clock's time, so kubectl's ages are right; like a restarted control plane,
    nodes get a full grace period from then on instead of going Unknown at once."""
    from datetime import timedelta

    from k8semu.cli.commands.serve import catch_up_with_wall_clock

    c = Cluster.create(seed=3)

    async def first(rt):
        assert await rt.settle()

    run_cluster(c, first, default_factories(c))
    before = c.time
    wall = c.api.epoch + timedelta(days=100, seconds=0.5)
    assert catch_up_with_wall_clock(c, wall) == before
    assert c.time == c.resumed_at == 100 * 86400.0
    assert catch_up_with_wall_clock(c, wall) is None  # caught up: nothing to do

    async def resumed(rt):
        await rt.advance(60)
        for n in c.api.list("nodes")["items"]:
            ready = next(x for x in n["status"]["conditions"] if x["type"] == "Ready")
            assert ready["status"] == "True", n["metadata"]["name"]
        assert c.api.timestamp(c.time).startswith((c.api.epoch + timedelta(days=100)).strftime("%Y-%m-%d"))

    run_cluster(c, resumed, default_factories(c))
    not_ready = [e for e in c.api.list("events", namespace="default")["items"] if e["reason"] == "NodeNotReady"]
    assert not_ready == []
