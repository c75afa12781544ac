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


def test_top_sort_by_usage_largest_first(k, tmp_path):
    manifest = tmp_path / "hogs.yaml"
    docs = []
    for name, cpu, mem in (("hog-a", "300m", "10Mi"), ("hog-b", "100m", "50Mi"), ("hog-c", "200m", "30Mi")):
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations:\n"
                    f"    k8semu.io/behaviour: |\n      cpu {cpu}\n      memory {mem}\n"
                    "spec:\n  containers: [{name: app, image: 'busybox:1.36'}]\n")
    manifest.write_text("---\n".join(docs))
    assert k("apply", "-f", str(manifest), "--for", "1m", "-q")[0] == 0
    web = [p["metadata"]["name"] for p in _web_pods(k)]
    rc, out, _ = k("top", "pods")
    assert rc == 0 and [line.split()[0] for line in out[1:]] == ["hog-a", "hog-b", "hog-c"] + web
    rc, out, _ = k("top", "pods", "--sort-by=cpu")
    assert rc == 0 and out[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert [line.split()[:2] for line in out[1:4]] == [["hog-a", "300m"], ["hog-c", "200m"], ["hog-b", "100m"]]
    assert [line.split()[0] for line in out[4:]] == web  # ties keep the name order
    rc, out, _ = k("top", "pods", "--sort-by", "memory", "--no-headers")
    assert [line.split()[0] for line in out] == ["hog-b", "hog-c", "hog-a"] + web
    rc, out, _ = k("top", "pods", "-A", "--sort-by=memory")
    mem = [int(line.split()[3].removesuffix("Mi")) for line in out[1:]]
    assert mem == sorted(mem, reverse=True) and out[1].split()[:2] == ["default", "hog-b"]
    # nodes: by the sum of their pods' usage
    rc, out, _ = k("top", "nodes", "--sort-by=cpu")
    cpu = [int(line.split()[1].removesuffix("m")) for line in out[1:]]
    assert rc == 0 and cpu == sorted(cpu, reverse=True) and len(cpu) == 4
    rc, out, _ = k("top", "nodes", "--sort-by=memory")
    mem = [int(line.split()[3].removesuffix("Mi")) for line in out[1:]]
    assert mem == sorted(mem, reverse=True)


def test_top_sort_by_other_fields_is_kubectls_error(k):
    assert k("top", "pods", "--sort-by=CPU") == (1, [], ["error: --sort-by accepts only cpu or memory"])
    assert k("top", "nodes", "--sort-by=name") == (1, [], ["error: --sort-by accepts only cpu or memory"])


def test_top_nodes_sort_by_keeps_nodes_without_metrics_last(k):
    node = _web_pods(k)[0]["spec"]["nodeName"]
    assert k("node", "stop", node)[0] == 0
    rc, out, _ = k("top", "nodes", "--sort-by=memory")
    assert rc == 0 and out[-1].split() == [node] + ["<unknown>"] * 4
