"""kube-system as a kubeadm cluster has it: the control-plane mirror pods, kube-proxy on every
node, CoreDNS behind kube-dns, kubeadm's ConfigMaps, and the control plane's leader Leases."""

from __future__ import annotations

import re

import pytest

from k8semu.api.meta import parse_time
from k8semu.api.pods import is_pod_ready
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def _pods(cluster):
    return {p["metadata"]["name"]: p for p in cluster.api.list("pods", namespace="kube-system")["items"]}


def _node_ips(cluster):
    return {n["metadata"]["name"]: next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
            for n in cluster.api.list("nodes")["items"]}


@pytest.fixture(scope="module")
def settled():
    """A default cluster (seed 7) after it settled and 30 more seconds ran."""
    cluster = Cluster.create(seed=7, kubeadm_addons=True)

    async def body(rt):
        assert await rt.settle()
        await rt.advance(30)

    run_cluster(cluster, body, default_factories(cluster))
    return cluster


def test_every_kube_system_pod_runs_and_is_ready(settled):
    pods = _pods(settled)
    names = sorted(pods)
    assert [n for n in names if n.endswith("-control-plane")] == [f"{c}-control-plane" for c in CONTROL_PLANE]
    assert len([n for n in names if re.fullmatch(r"kube-proxy-[bcdfghjklmnpqrstvwxz2456789]{5}", n)]) == 4
    assert len([n for n in names if re.fullmatch(r"coredns-[a-z0-9]+-[a-z0-9]{5}", n)]) == 2
    assert len(names) == 10
    for p in pods.values():
        assert p["status"]["phase"] == "Running", p["metadata"]["name"]
        assert is_pod_ready(p), p["metadata"]["name"]


def test_mirror_pods_look_like_the_kubelets(settled):
    pods = _pods(settled)
    node = settled.api.get("nodes", "control-plane")
    ip = _node_ips(settled)["control-plane"]
    for comp in CONTROL_PLANE:
        p = pods[f"{comp}-control-plane"]
        meta, spec = p["metadata"], p["spec"]
        ann = meta["annotations"]
        assert ann["kubernetes.io/config.source"] == "file"
        assert ann["kubernetes.io/config.mirror"] == ann["kubernetes.io/config.hash"]
        assert re.fullmatch(r"[0-9a-f]{32}", ann["kubernetes.io/config.hash"])
        assert meta["labels"] == {"component": comp, "tier": "control-plane"}
        assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "control-plane",
                                            "uid": node["metadata"]["uid"], "controller": True}]
        assert spec["nodeName"] == "control-plane"
        assert spec["hostNetwork"] is True
        assert spec["priorityClassName"] == "system-node-critical"
        assert spec["priority"] == 2000001000
        assert p["status"]["podIP"] == ip and p["status"]["hostIP"] == ip
    assert pods["etcd-control-plane"]["metadata"]["annotations"][
        "kubeadm.kubernetes.io/etcd.advertise-client-urls"] == f"https://{ip}:2379"
    assert pods["kube-apiserver-control-plane"]["spec"]["containers"][0]["image"] == \
        "registry.k8s.io/kube-apiserver:v1.33.1"
    # the images were there before the pods: no pull
    reasons = [e["reason"] for e in settled.api.list("events", namespace="kube-system")["items"]
               if e["involvedObject"]["name"] == "etcd-control-plane"]
    assert "Pulling" not in reasons and "Pulled" in reasons


def test_kube_proxy_runs_on_every_node_in_the_host_network(settled):
    pods = [p for p in _pods(settled).values() if p["metadata"]["name"].startswith("kube-proxy-")]
    ips = _node_ips(settled)
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(ips)
    for p in pods:
        assert p["spec"]["hostNetwork"] is True
        assert p["status"]["podIP"] == ips[p["spec"]["nodeName"]]
        assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    ds = settled.api.get("daemonsets", "kube-proxy", namespace="kube-system")
    assert ds["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert ds["status"]["numberReady"] == 4 and ds["status"]["desiredNumberScheduled"] == 4


def test_coredns_behind_kube_dns(settled):
    api = settled.api
    d = api.get("deployments", "coredns", namespace="kube-system")
    assert d["spec"]["replicas"] == 2 and d["status"]["readyReplicas"] == 2
    tmpl = d["spec"]["template"]["spec"]
    c = tmpl["containers"][0]
    assert c["image"] == "registry.k8s.io/coredns/coredns:v1.12.0"
    assert c["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 8181, "scheme": "HTTP"}
    assert tmpl["priorityClassName"] == "system-cluster-critical"
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in tmpl["tolerations"]
    svc = api.get("services", "kube-dns", namespace="kube-system")
    assert svc["spec"]["clusterIP"] == "10.96.0.10"
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == \
        [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
    pods = [p for p in _pods(settled).values() if p["metadata"]["name"].startswith("coredns-")]
    # preferred anti-affinity spreads the two replicas
    assert len({p["spec"]["nodeName"] for p in pods}) == 2
    slices = api.list("endpointslices", namespace="kube-system",
                      label_selector="kubernetes.io/service-name=kube-dns")["items"]
    ready = sorted(e["addresses"][0] for s in slices for e in s.get("endpoints") or ()
                   if e["conditions"]["ready"])
    assert ready == sorted(p["status"]["podIP"] for p in pods)


def test_kubeadm_config_maps(settled):
    api = settled.api
    cms = {c["metadata"]["name"]: c for c in api.list("configmaps", namespace="kube-system")["items"]}
    assert {"coredns", "kube-proxy", "kubeadm-config", "kubelet-config"} <= set(cms)
    assert "kubernetesVersion: v1.33.1" in cms["kubeadm-config"]["data"]["ClusterConfiguration"]
    assert "podSubnet: 10.244.0.0/16" in cms["kubeadm-config"]["data"]["ClusterConfiguration"]
    assert "- 10.96.0.10" in cms["kubelet-config"]["data"]["kubelet"]
    assert sorted(cms["kube-proxy"]["data"]) == ["config.conf", "kubeconfig.conf"]
    assert "kubernetes cluster.local in-addr.arpa ip6.arpa" in cms["coredns"]["data"]["Corefile"]


def test_control_plane_leases_renew_every_two_seconds_without_blocking_settle():
    cluster = Cluster.create(seed=3, kubeadm_addons=True)
    seen: list[tuple[str, str]] = []

    async def body(rt):
        assert await rt.settle()
        t0 = rt.now
        await rt.advance(10)
        for name in ("kube-controller-manager", "kube-scheduler"):
            lease = cluster.api.get("leases", name, namespace="kube-system")
            seen.append((lease["spec"]["holderIdentity"], lease["spec"]["renewTime"]))
            assert rt.now - parse_time(cluster.api.epoch, lease["spec"]["renewTime"]) <= 2.0
            assert lease["spec"]["leaseDurationSeconds"] == 15
        assert await rt.settle()
        assert rt.now - t0 < 60

    run_cluster(cluster, body, default_factories(cluster))
    assert all(h.startswith("control-plane_") for h, _ in seen)
    writes = [r for r in cluster.log.records() if r.key == "/registry/leases.coordination.k8s.io/kube-system/kube-scheduler"]
    assert [r.actor for r in writes[:2]] == ["kube-scheduler", "kube-scheduler"]
    gaps = {round(b.time - a.time, 6) for a, b in zip(writes, writes[1:])}
    assert gaps == {2.0}


def test_a_deleted_mirror_pod_is_recreated():
    cluster = Cluster.create(seed=5, kubeadm_addons=True)
    uids = []

    async def body(rt):
        assert await rt.settle()
        uids.append(cluster.api.get("pods", "kube-scheduler-control-plane", namespace="kube-system")["metadata"]["uid"])
        cluster.api.delete("pods", "kube-scheduler-control-plane", namespace="kube-system")
        assert await rt.until(lambda: any(
            p["metadata"]["name"] == "kube-scheduler-control-plane" and p["metadata"]["uid"] != uids[0]
            and p["status"].get("phase") == "Running"
            for p in cluster.api.list("pods", namespace="kube-system")["items"]), limit=120)

    run_cluster(cluster, body, default_factories(cluster))
