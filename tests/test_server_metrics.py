"""``metrics.k8s.io/v1beta1`` through ``k8semu serve``'s app (what ``kubectl top`` reads), in process.

The prepared lab (3 workers, two ``web`` pods started at 1 s, 30 s of virtual
time): metrics-server's last scrape is at 30 s with a 15 s window.
"""

from __future__ import annotations

import shutil

import pytest
from test_server import ADMIN, JANE, call_json

from k8semu.api import auth
from k8semu.server.app import APIApp
from k8semu.server.pki import parse_token_file
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import set_machine_stopped

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
BASE = "/apis/metrics.k8s.io/v1beta1"


@pytest.fixture
def lab(base, tmp_path):
    path = tmp_path / "cluster.log"
    shutil.copy(base, path)
    cluster = Cluster.open(path)
    tokens = {ADMIN: auth.admin(), **parse_token_file(f'{JANE},jane,1001,"dev,qa"\n')}
    try:
        yield APIApp(cluster.api, tokens)
    finally:
        cluster.close()


def _web_pods(api):
    return sorted((p for p in api.list("pods", namespace="default")["items"]), key=lambda p: p["metadata"]["name"])


async def test_discovery_lists_the_metrics_group(lab):
    code, groups = await call_json(lab, "GET", "/apis")
    entry = next(g for g in groups["groups"] if g["name"] == "metrics.k8s.io")
    assert entry["preferredVersion"] == {"groupVersion": "metrics.k8s.io/v1beta1", "version": "v1beta1"}
    code, agg = await call_json(lab, "GET", "/apis", accept=AGGREGATED)
    item = next(i for i in agg["items"] if i["metadata"]["name"] == "metrics.k8s.io")
    (version,) = item["versions"]
    assert version["version"] == "v1beta1" and version["freshness"] == "Current"
    assert [(r["resource"], r["scope"], r["responseKind"]["kind"], r["verbs"]) for r in version["resources"]] == [
        ("nodes", "Cluster", "NodeMetrics", ["get", "list"]), ("pods", "Namespaced", "PodMetrics", ["get", "list"])]
    code, group = await call_json(lab, "GET", "/apis/metrics.k8s.io")
    assert code == 200 and group["kind"] == "APIGroup" and group["name"] == "metrics.k8s.io"
    code, rl = await call_json(lab, "GET", BASE)
    assert (code, rl["groupVersion"]) == (200, "metrics.k8s.io/v1beta1")
    assert [(r["name"], r["namespaced"], r["kind"]) for r in rl["resources"]] == [
        ("nodes", False, "NodeMetrics"), ("pods", True, "PodMetrics")]


async def test_node_and_pod_metrics(lab):
    code, nodes = await call_json(lab, "GET", f"{BASE}/nodes")
    assert code == 200 and (nodes["kind"], nodes["apiVersion"]) == ("NodeMetricsList", "metrics.k8s.io/v1beta1")
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["control-plane", "node-1", "node-2", "node-3"]
    for n in nodes["items"]:
        assert (n["timestamp"], n["window"]) == ("2025-01-01T00:00:30Z", "15s")
        assert n["usage"]["cpu"].endswith("n") and n["usage"]["memory"].endswith("Ki")
        assert n["metadata"]["labels"]["kubernetes.io/hostname"] == n["metadata"]["name"]
    pods = _web_pods(lab.api)
    code, pm = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods")
    assert (pm["kind"], [p["metadata"]["name"] for p in pm["items"]]) == (
        "PodMetricsList", [p["metadata"]["name"] for p in pods])
    first = pm["items"][0]
    assert (first["metadata"]["namespace"], first["timestamp"], first["window"]) == (
        "default", "2025-01-01T00:00:30Z", "15s")
    assert [c["name"] for c in first["containers"]] == ["nginx"]
    # a node's usage is the sum of its pods'
    by_node = {n["metadata"]["name"]: n for n in nodes["items"]}
    node = pods[0]["spec"]["nodeName"]
    on_node = [p for p in pm["items"] if next(x for x in pods if x["metadata"]["name"] == p["metadata"]["name"])
               ["spec"]["nodeName"] == node]
    cpu = sum(int(c["usage"]["cpu"][:-1]) for p in on_node for c in p["containers"])
    assert by_node[node]["usage"]["cpu"] == f"{cpu}n"
    # gets, all namespaces, and a label selector
    code, one = await call_json(lab, "GET", f"{BASE}/nodes/{node}")
    assert code == 200 and one == by_node[node]
    code, one = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods/{first['metadata']['name']}")
    assert code == 200 and one == first
    code, every = await call_json(lab, "GET", f"{BASE}/pods")
    assert every["items"] == pm["items"]
    code, none = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods?labelSelector=app%3Dother")
    assert none["items"] == []


async def test_a_stopped_node_has_no_metrics_nor_its_pods(lab):
    pods = _web_pods(lab.api)
    node = pods[0]["spec"]["nodeName"]
    set_machine_stopped(lab.api, node, True)
    code, nodes = await call_json(lab, "GET", f"{BASE}/nodes")
    assert node not in [n["metadata"]["name"] for n in nodes["items"]] and len(nodes["items"]) == 3
    code, st = await call_json(lab, "GET", f"{BASE}/nodes/{node}")
    assert (code, st["reason"], st["message"]) == (404, "NotFound", f'nodemetrics.metrics.k8s.io "{node}" not found')
    name = pods[0]["metadata"]["name"]
    code, pm = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods")
    assert name not in [p["metadata"]["name"] for p in pm["items"]]
    code, st = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods/{name}")
    assert (code, st["message"]) == (404, f'podmetrics.metrics.k8s.io "default/{name}" not found')


async def test_errors_rbac_and_tables(lab):
    code, st = await call_json(lab, "GET", f"{BASE}/nodes/nope")
    assert (code, st["message"]) == (404, 'node "nope" not found')
    code, st = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods/nope")
    assert (code, st["message"]) == (404, 'pod "nope" not found')
    code, st = await call_json(lab, "POST", f"{BASE}/nodes", {})
    assert code == 405
    code, st = await call_json(lab, "GET", "/apis/metrics.k8s.io/v1/nodes")
    assert code == 404
    code, st = await call_json(lab, "GET", f"{BASE}/namespaces/default/pods", token=JANE)
    assert (code, st["message"]) == (403, 'pods.metrics.k8s.io is forbidden: User "jane" cannot list resource "pods" '
                                          'in API group "metrics.k8s.io" in the namespace "default"')
    table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    code, t = await call_json(lab, "GET", f"{BASE}/nodes", accept=table)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "cpu", "memory", "Window"]
    assert t["rows"][0]["cells"][0] == "control-plane" and t["rows"][0]["cells"][3] == "15s"
