"""The lab of the articles, end to end through the CLI, and what bad input does to it.

A user creates a cluster, applies ``manifests/web.yaml`` (Deployment ``web``:
2 nginx replicas with requests, limits and a readinessProbe; Service ``web``)
and inspects it with kubectl's commands. Every step runs ``k8semu.cli.main.main``
in-process on a cluster file, exactly as the console script does, and checks
what the user reads: kubectl's table headers, ``2/2``, Running pods on two
different workers whose IPs lie in their nodes' podCIDRs, a ClusterIP,
``rollout status``, a replacement pod with a new name, ``delete -f``.

The cluster is created and the lab applied once per module; each test that
changes it works on a byte copy. Pod names and ages are matched by pattern
(names come from the cluster's seeded randomness), everything else exactly.

Bad input — invalid YAML, an unknown kind, an invalid object, a missing file,
a damaged log — must give a one-line error naming the file, line or field,
a non-zero exit code, and leave the log byte-identical.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import re
import shutil
from pathlib import Path

import pytest

from k8semu.cli.main import main

WEB_YAML = Path(__file__).resolve().parents[1] / "manifests" / "web.yaml"


def k8semu(cluster: Path, *argv: str) -> tuple[int, str, str]:
    """Run ``k8semu --cluster CLUSTER ARGV…``; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--cluster", str(cluster), *argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A cluster with the lab applied: its path and the outputs of ``cluster create`` and ``apply``."""
    path = tmp_path_factory.mktemp("lab") / "cluster.log"
    created = k8semu(path, "cluster", "create")
    applied = k8semu(path, "apply", "-f", str(WEB_YAML))
    return {"path": path, "create": created, "apply": applied}


@pytest.fixture
def copy(lab: dict[str, object], tmp_path: Path) -> Path:
    """A private byte copy of the lab cluster, for tests that change it."""
    dst = tmp_path / "cluster.log"
    shutil.copyfile(lab["path"], dst)  # type: ignore[arg-type]
    return dst


def rows(text: str) -> list[list[str]]:
    """A kubectl table as rows of cells (header first); cells are separated by 2+ spaces."""
    return [re.split(r" {2,}", line.rstrip()) for line in text.splitlines() if line.strip()]


def web_pods(path: Path) -> list[list[str]]:
    rc, out, err = k8semu(path, "get", "pods", "-l", "app=web", "-o", "wide")
    assert rc == 0, err
    return rows(out)[1:]


# ---------------------------------------------------------------------------------- the lab
def test_cluster_create_and_apply_report(lab: dict[str, object]) -> None:
    rc, out, err = lab["create"]  # type: ignore[misc]
    # the control-plane node comes on top of the (default 3) workers, and the line says so
    assert (rc, out, err) == (0, f'cluster created: 1 control-plane node, 3 workers ("{lab["path"]}", seed 0)\n', "")
    rc, out, err = lab["apply"]  # type: ignore[misc]
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[:3] == ["deployment.apps/web created", "service/web created", ""]
    assert re.fullmatch(r"settled after [0-9.]+s of virtual time \([0-9.]+s wall\):", lines[3])
    assert lines[4] == "  ok deployment.apps/web: 2/2 available"
    assert re.fullmatch(r"  ok service/web: ClusterIP 10\.\d+\.\d+\.\d+, 2 ready endpoints", lines[5])
    assert len(lines) == 6


def test_cluster_create_says_the_control_plane_node_comes_on_top_of_the_workers(tmp_path: Path) -> None:
    path = tmp_path / "cluster.log"
    assert k8semu(path, "cluster", "create", "--nodes", "1", "--bare") == (
        0, f'cluster created: 1 control-plane node, 1 worker ("{path}", seed 0)\n', "")
    rc, out, _ = k8semu(path, "cluster", "info")
    assert rc == 0 and "nodes:     control-plane, node-1\n" in out and "time:      0s\n" in out
    other = tmp_path / "other.log"
    assert k8semu(other, "cluster", "create", "--nodes", "-1") == (
        1, "", "error: --nodes must be 0 or more (worker nodes), not -1\n")
    assert not other.exists()
    rc, out, _ = k8semu(path, "cluster", "--help")
    assert rc == 0 and "control-plane node is always added" in " ".join(out.split())


def test_get_deployment_shows_2_of_2(lab: dict[str, object]) -> None:
    rc, out, err = k8semu(lab["path"], "get", "deployment", "web")  # type: ignore[arg-type]
    assert rc == 0 and err == ""
    header, row = out.splitlines()
    assert header == "NAME   READY   UP-TO-DATE   AVAILABLE   AGE"
    assert re.fullmatch(r"web    2/2     2            2           \d+s", row)


def test_two_running_pods_on_different_workers_with_ips_in_their_podcidrs(lab: dict[str, object]) -> None:
    path: Path = lab["path"]  # type: ignore[assignment]
    rc, out, _ = k8semu(path, "get", "pods", "-l", "app=web", "-o", "wide")
    assert rc == 0
    lines = out.splitlines()
    assert re.fullmatch(r"NAME +READY   STATUS    RESTARTS   AGE   IP +NODE +NOMINATED NODE   READINESS GATES",
                        lines[0])
    pods = rows(out)[1:]
    assert len(pods) == 2
    rc, out, _ = k8semu(path, "get", "nodes", "-o", "json")
    cidrs = {n["metadata"]["name"]: n["spec"]["podCIDR"] for n in json.loads(out)["items"]}
    nodes = set()
    for name, ready, status, restarts, age, ip, node, nominated, gates in pods:
        assert re.fullmatch(r"web-[0-9a-f]{8,10}-[a-z0-9]{5}", name)
        assert (ready, status, restarts, nominated, gates) == ("1/1", "Running", "0", "<none>", "<none>")
        assert re.fullmatch(r"node-[1-3]", node), "scheduled on a worker, not the control plane"
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidrs[node])
        nodes.add(node)
    assert len(nodes) == 2, "the replicas are spread over two workers"


def test_service_has_a_cluster_ip(lab: dict[str, object]) -> None:
    rc, out, err = k8semu(lab["path"], "get", "service", "web")  # type: ignore[arg-type]
    assert rc == 0 and err == ""
    header, row = out.splitlines()
    assert re.fullmatch(r"NAME   TYPE        CLUSTER-IP +EXTERNAL-IP   PORT\(S\)   AGE", header)
    name, kind, ip, external, ports, age = rows(out)[1]
    assert (name, kind, external, ports) == ("web", "ClusterIP", "<none>", "80/TCP")
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12")


def test_rollout_status_succeeds(lab: dict[str, object]) -> None:
    assert k8semu(lab["path"], "rollout", "status", "deployment/web") == (  # type: ignore[arg-type]
        0, 'deployment "web" successfully rolled out\n', "")


def test_deleting_a_pod_brings_a_replacement_with_a_new_name(copy: Path) -> None:
    before = {r[0] for r in web_pods(copy)}
    victim = sorted(before)[0]
    assert k8semu(copy, "delete", "pod", victim) == (0, f'pod "{victim}" deleted\n', "")
    after = web_pods(copy)
    names = {r[0] for r in after}
    assert len(names) == 2 and victim not in names
    assert len(names - before) == 1, "exactly one new pod"
    assert all(r[1:3] == ["1/1", "Running"] for r in after)
    rc, out, _ = k8semu(copy, "get", "deployment", "web")
    assert rows(out)[1][1] == "2/2"


def test_delete_f_removes_everything(copy: Path) -> None:
    assert k8semu(copy, "delete", "-f", str(WEB_YAML)) == (
        0, 'deployment.apps "web" deleted\nservice "web" deleted\n', "")
    rc, out, err = k8semu(copy, "get", "deployments,replicasets,pods,services", "-l", "app=web")
    assert (rc, out, err) == (0, "", "No resources found in default namespace.\n")
    assert k8semu(copy, "get", "service", "web") == (1, "", 'Error from server (NotFound): services "web" not found\n')


def test_get_all_after_delete_f_shows_only_the_kubernetes_service(copy: Path) -> None:
    assert k8semu(copy, "delete", "-f", str(WEB_YAML))[0] == 0
    rc, out, err = k8semu(copy, "get", "all")
    assert [r[0] for r in rows(out)[1:]] == ["service/kubernetes"]


# ---------------------------------------------------------------------------------- bad input
BAD_FILES = {
    "invalid-yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  labels: [a\n",
    "unknown-kind": "apiVersion: v1\nkind: Widget\nmetadata:\n  name: w\n",
    "invalid-object": ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: broken\nspec:\n  replicas: -1\n"
                       "  selector:\n    matchLabels: {app: b}\n  template:\n    metadata:\n      labels: {app: b}\n"
                       "    spec:\n      containers:\n      - name: c\n        image: nginx\n"),
}

BAD_ERRORS = {
    "invalid-yaml": "error: error parsing {file}: error converting YAML to JSON: yaml: line 5: "
                    "did not find expected ',' or ']'",
    "unknown-kind": 'error: resource mapping not found for name: "w" namespace: "" from "{file}": '
                    'no matches for kind "Widget" in version "v1"',
    "invalid-object": 'The Deployment "broken" is invalid: spec.replicas: Invalid value: -1: '
                      "must be greater than or equal to 0",
    "missing-file": 'error: the path "{file}" does not exist',
    "damaged-log": "error: cannot read the cluster log: {log}:6: damaged line: record does not end with '}}'",
}


def _bad_case(case: str, copy: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """Prepare ``case``; returns the manifest to apply and the argv."""
    f = tmp_path / f"{case}.yaml"
    if case in BAD_FILES:
        f.write_text(BAD_FILES[case])
    elif case == "damaged-log":
        f = WEB_YAML
        lines = copy.read_bytes().split(b"\n")
        lines[5] = lines[5][: len(lines[5]) // 2]  # a record cut in half
        copy.write_bytes(b"\n".join(lines))
    return f, ["apply", "-f", str(f)]


@pytest.mark.parametrize("case", sorted(BAD_ERRORS))
def test_bad_input_is_a_one_line_error_naming_file_line_or_field(case: str, copy: Path, tmp_path: Path) -> None:
    f, argv = _bad_case(case, copy, tmp_path)
    rc, out, err = k8semu(copy, *argv)
    assert rc == 1
    assert out == ""
    first, *rest = err.splitlines()
    assert first == BAD_ERRORS[case].format(file=f, log=copy)
    # kubectl adds its hint on a line of its own after a resource-mapping error
    assert rest == (["ensure CRDs are installed first"] if case == "unknown-kind" else [])


@pytest.mark.parametrize("case", [
    "invalid-yaml",
    "unknown-kind",
    "invalid-object",
    "missing-file",
    "damaged-log",
])
def test_bad_input_leaves_the_log_byte_identical(case: str, copy: Path, tmp_path: Path) -> None:
    f, argv = _bad_case(case, copy, tmp_path)
    before = copy.read_bytes()
    rc, _, _ = k8semu(copy, *argv)
    assert rc == 1
    assert copy.read_bytes() == before


def test_valid_siblings_still_apply_and_the_exit_code_says_some_failed(copy: Path, tmp_path: Path) -> None:
    f = tmp_path / "mixed.yaml"
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata: {a: b}\n---\n"
                 + BAD_FILES["unknown-kind"])
    rc, out, err = k8semu(copy, "apply", "-f", str(f), "-q")
    assert (rc, out) == (1, "configmap/good created\n")
    assert err.splitlines()[0] == BAD_ERRORS["unknown-kind"].format(file=f)
    rc, out, err = k8semu(copy, "get", "configmap", "good", "-o", "name")
    assert (rc, out) == (0, "configmap/good\n")
