"""``k8semu get`` on the lab (manifests/web.yaml): kubectl's tables, formats and errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from k8semu.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def _with_workload_controllers(monkeypatch):
    """Until the deployment/replicaset/endpoints controllers are registered in
    ``k8semu.sim.components``, add them (and the real scheduler) for the lab."""
    import k8semu.sim.components as comps

    orig = comps.default_factories

    def factories(cluster):
        f = dict(orig(cluster))
        api = cluster.api
        from k8semu.controllers.deployment.controller import DeploymentController
        from k8semu.controllers.endpoints import EndpointsController
        from k8semu.controllers.replicaset import ReplicaSetController

        f.setdefault("deployment-controller", lambda: DeploymentController(api))
        f.setdefault("replicaset-controller", lambda: ReplicaSetController(api))
        f.setdefault("endpoints-controller", lambda: EndpointsController(api))
        return f

    monkeypatch.setattr(comps, "default_factories", factories)


@pytest.fixture(scope="module")
def lab_file(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    _with_workload_controllers(mp)
    path = tmp_path_factory.mktemp("lab") / "cluster.log"
    assert main(["--cluster", str(path), "apply", "-q", "-f", str(ROOT / "manifests" / "web.yaml"),
                 "--for", "30s"]) == 0
    mp.undo()
    return path


@pytest.fixture
def lab(lab_file, tmp_path, monkeypatch):
    _with_workload_controllers(monkeypatch)
    dst = tmp_path / "cluster.log"
    shutil.copy(lab_file, dst)
    return dst


def k(capsys, cluster, *argv):
    capsys.readouterr()
    code = main(["--cluster", str(cluster), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def pod_names(capsys, cluster):
    _, out, _ = k(capsys, cluster, "get", "pods", "-o", "name")
    return [l.split("/", 1)[1] for l in out.splitlines()]


def test_get_deployment_table(capsys, lab):
    code, out, err = k(capsys, lab, "get", "deployment", "web")
    assert code == 0 and err == ""
    assert out == ("NAME   READY   UP-TO-DATE   AVAILABLE   AGE\n"
                   "web    2/2     2            2           30s\n")


def test_get_pods_wide_by_label(capsys, lab):
    code, out, _ = k(capsys, lab, "get", "pods", "-l", "app=web", "-o", "wide")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                "NOMINATED", "NODE", "READINESS", "GATES"]
    assert len(lines) == 3
    for line in lines[1:]:
        cells = line.split()
        assert cells[1:5] == ["1/1", "Running", "0", "30s"]
        assert cells[5].startswith("10.244.") and cells[6].startswith("node-")
        assert cells[7:] == ["<none>", "<none>"]


def test_get_service(capsys, lab):
    code, out, _ = k(capsys, lab, "get", "svc", "web")
    header, row = out.splitlines()
    ip = row.split()[2]
    assert header == f"NAME   TYPE        {'CLUSTER-IP'.ljust(len(ip))}   EXTERNAL-IP   PORT(S)   AGE"
    assert row.split()[0:2] == ["web", "ClusterIP"] and row.split()[3:] == ["<none>", "80/TCP", "30s"]


def test_several_kinds_print_kind_slash_name_and_blank_line(capsys, lab):
    code, out, _ = k(capsys, lab, "get", "deploy,svc")
    blocks = out.split("\n\n")
    assert blocks[0].splitlines()[1].startswith("deployment.apps/web   2/2")
    assert "service/web" in blocks[1]


def test_get_all_lists_the_all_category_in_order(capsys, lab):
    _, out, _ = k(capsys, lab, "get", "all")
    firsts = [b.splitlines()[1].split("/")[0] for b in out.split("\n\n")]
    assert firsts == ["pod", "service", "deployment.apps", "replicaset.apps"]


def test_jsonpath_name_and_range(capsys, lab):
    names = pod_names(capsys, lab)
    _, out, _ = k(capsys, lab, "get", "pods", "-o", "jsonpath={.items[0].metadata.name}")
    assert out == names[0]
    _, out, _ = k(capsys, lab, "get", "pods", "-o",
                  'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}')
    assert out == "".join(f"{n}\tTrue\n" for n in names)


def test_output_name(capsys, lab):
    _, out, _ = k(capsys, lab, "get", "deploy", "-o", "name")
    assert out == "deployment.apps/web\n"


def test_output_yaml_is_sorted_block_style_without_managed_fields(capsys, lab):
    _, out, _ = k(capsys, lab, "get", "deployment", "web", "-o", "yaml")
    lines = out.splitlines()
    assert lines[:3] == ["apiVersion: apps/v1", "kind: Deployment", "metadata:"]
    assert '  creationTimestamp: "2025-01-01T00:00:00Z"' in lines
    assert "managedFields" not in out
    assert "      containers:" in lines and "      - image: nginx:1.30-alpine" in lines
    assert "    kubectl.kubernetes.io/last-applied-configuration: |" in lines


def test_output_json_list_for_a_list_request(capsys, lab):
    _, out, _ = k(capsys, lab, "get", "svc", "-o", "json")
    data = json.loads(out)
    assert data["kind"] == "List" and data["apiVersion"] == "v1"
    assert data["metadata"] == {"resourceVersion": ""}
    assert [i["kind"] for i in data["items"]] == ["Service", "Service"]
    assert out.startswith('{\n    "apiVersion": "v1",\n    "items": [\n')


def test_custom_columns_and_sort_by(capsys, lab):
    names = pod_names(capsys, lab)
    _, out, _ = k(capsys, lab, "get", "pods", "--sort-by=.metadata.name", "-o",
                  "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[*].image,MISSING:.nope")
    w = max(len(n) for n in names) + 3
    assert out.splitlines() == ["NAME".ljust(w) + "IMAGE               MISSING"] + [
        n.ljust(w) + "nginx:1.30-alpine   <none>" for n in sorted(names)]


def test_show_labels_and_label_columns(capsys, lab):
    _, out, _ = k(capsys, lab, "get", "pods", "-L", "app", "--show-labels", "--no-headers")
    for line in out.splitlines():
        assert line.split()[-2] == "web"
        assert line.split()[-1].startswith("app=web,pod-template-hash=")


def test_not_found_and_no_resources(capsys, lab):
    code, out, err = k(capsys, lab, "get", "deployment", "x")
    assert code == 1 and out == ""
    assert err == 'Error from server (NotFound): deployments.apps "x" not found\n'
    code, out, err = k(capsys, lab, "get", "pods", "-n", "kube-public")
    assert code == 0 and err == "No resources found in kube-public namespace.\n"
    code, _, err = k(capsys, lab, "get", "nosuchkind")
    assert code == 1 and err == 'error: the server doesn\'t have a resource type "nosuchkind"\n'


def test_watch_prints_changes_in_virtual_time(capsys, lab):
    from k8semu.sim.cluster import Cluster

    c = Cluster.open(lab)
    c.api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w1"},
                          "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "5"]}],
                                   "restartPolicy": "Never"}}, namespace="default")
    c.close()
    code, out, _ = k(capsys, lab, "get", "pod", "w1", "-w", "--for", "20s")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:3] == ["w1", "0/1", "Pending"]
    statuses = [l.split()[2] for l in lines[2:]]
    assert "Running" in statuses and statuses[-1] == "Completed"
