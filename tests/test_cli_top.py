"""``k8semu top``: metrics-server's figures as ``kubectl top`` prints them (the same ``serve`` answers with)."""

from __future__ import annotations

import re


def _web_pods(k):
    return sorted((p for p in k.pods() if p["metadata"]["name"].startswith("web-")), key=lambda p: p["metadata"]["name"])


def test_top_nodes_and_pods(k):
    rc, out, err = k("top", "nodes")
    assert (rc, err) == (0, [])
    assert out[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert [line.split()[0] for line in out[1:]] == ["control-plane", "node-1", "node-2", "node-3"]
    assert all(re.fullmatch(r"\S+ +\d+m +\d+% +\d+Mi +\d+% +", line) for line in out[1:])
    rc, out, _ = k("top", "pods")
    assert [line.split()[0] for line in out[1:]] == [p["metadata"]["name"] for p in _web_pods(k)]
    # nginx idles at metrics-server's floor: 1m, 4Mi
    assert all(line.split()[1:] == ["1m", "4Mi"] for line in out[1:])


def test_a_stopped_node_is_unknown(k):
    pods = _web_pods(k)
    node = pods[0]["spec"]["nodeName"]
    assert k("node", "stop", node)[0] == 0
    rc, out, _ = k("top", "nodes")
    assert rc == 0
    # kubectl's printMissingMetricsNodeLine: after the nodes with metrics
    assert out[-1].split() == [node] + ["<unknown>"] * 4
    assert [line.split()[0] for line in out[1:-1]] == sorted({"control-plane", "node-1", "node-2", "node-3"} - {node})
    assert k("top", "node", node) == (1, [], [f'Error from server (NotFound): nodemetrics.metrics.k8s.io "{node}" '
                                             'not found'])
    rc, out, _ = k("top", "pods")
    assert pods[0]["metadata"]["name"] not in [line.split()[0] for line in out[1:]]


def test_no_pod_metrics_reads_as_kubectl_top(k):
    pods = _web_pods(k)
    name = pods[0]["metadata"]["name"]
    for node in sorted({p["spec"]["nodeName"] for p in pods}):
        assert k("node", "stop", node)[0] == 0
    assert k("top", "pod", name) == (1, [], [f'Error from server (NotFound): podmetrics.metrics.k8s.io "default/{name}" '
                                             'not found'])
    assert k("top", "pod", "nope") == (1, [], ['Error from server (NotFound): pod "nope" not found'])
    # kubectl's verifyEmptyMetrics: young pods may not have been scraped yet, older ones should have been
    assert k("top", "pods") == (1, [], ["error: metrics not available yet"])
    assert k("advance", "2m")[0] == 0
    rc, out, err = k("top", "pods")
    assert rc == 1 and re.fullmatch(rf"error: Metrics not available for pod default/{name}, age: 2m\d+s", err[0])
    assert k("top", "pods", "-n", "kube-system") == (0, [], ["No resources found in kube-system namespace."])
