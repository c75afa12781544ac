"""The real kubectl against ``k8semu serve``: ``logs`` of a crash-looping container and ``top``.

One server for the module (:class:`test_kubectl_e2e.Server`: free port,
``--speed 20``). Skipped when no ``kubectl`` is on the PATH.
"""

from __future__ import annotations

import re
import time

import pytest
from test_kubectl_e2e import KUBECTL, Server

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on the PATH")

CRASHER = """apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
    - name: app
      image: busybox:1.37
      command: ["sh", "-c", "echo starting; sleep 2; echo fatal: cannot connect to database; exit 1"]
"""
IDLE = """apiVersion: apps/v1
kind: Deployment
metadata: {name: idle}
spec:
  replicas: 2
  selector: {matchLabels: {app: idle}}
  template:
    metadata: {labels: {app: idle}}
    spec:
      containers: [{name: nginx, image: "nginx:1.30-alpine"}]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("serve"))
    try:
        yield srv
    finally:
        code = srv.stop()
        assert code == 0, srv.proc.stderr.read()[-2000:]


def _until(check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_logs_of_a_crash_looping_container_are_its_last_run(server, tmp_path):
    k = server.kubectl
    (tmp_path / "crasher.yaml").write_text(CRASHER)
    k("apply", "-f", str(tmp_path / "crasher.yaml"))
    state = "jsonpath={.status.containerStatuses[0].state.waiting.reason} {.status.containerStatuses[0].restartCount}"

    def waiting_in_back_off():  # from the third restart on, the back-off is 40 s (2 s of wall time)
        reason, _, restarts = k("get", "pod", "crasher", "-o", state).stdout.partition(" ")
        return reason == "CrashLoopBackOff" and int(restarts or 0) >= 3

    _until(waiting_in_back_off, 90)
    for previous in ([], ["--previous"]):
        out = k("logs", "crasher", *previous)
        assert (out.stdout, out.stderr) == ("starting\nfatal: cannot connect to database\n", "")
    k("delete", "pod", "crasher", "--grace-period=0", "--force")


def test_top_nodes_and_pods_then_a_stopped_node(server, tmp_path):
    k = server.kubectl
    (tmp_path / "idle.yaml").write_text(IDLE)
    k("apply", "-f", str(tmp_path / "idle.yaml"))
    k("rollout", "status", "deployment/idle", "--timeout=60s")

    def top_pods():  # metrics-server needs a whole 15 s window of a container
        out = k("top", "pods", "-l", "app=idle", ok=False)
        return out.stdout if out.returncode == 0 and out.stdout.count("idle-") == 2 else None

    lines = _until(top_pods).splitlines()
    assert lines[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert all(re.fullmatch(r"idle-\S+ +1m +4Mi +", line) for line in lines[1:])

    out = k("top", "nodes").stdout.splitlines()
    assert out[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert [line.split()[0] for line in out[1:]] == ["control-plane", "node-1", "node-2", "node-3"]
    assert all(re.fullmatch(r"\S+ +\d+m +\d+% +\d+Mi +\d+% +", line) for line in out[1:])
    raw = k("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/node-1").stdout
    assert '"kind":"NodeMetrics"' in raw and '"window":"15s"' in raw

    # stop node-3's machine, as `k8semu node stop` records it: its kubelet no longer answers the scrape
    k("create", "configmap", "k8semu-machines", "-n", "kube-system", "--from-literal=node-3=stopped")

    def unknown():
        rows = k("top", "nodes").stdout.splitlines()
        return rows if rows[-1].split()[0] == "node-3" else None

    rows = _until(unknown)
    assert rows[-1].split() == ["node-3"] + ["<unknown>"] * 4
    got = k("top", "node", "node-3", ok=False)
    assert (got.returncode, got.stderr) == (
        1, 'Error from server (NotFound): nodemetrics.metrics.k8s.io "node-3" not found\n')
    k("delete", "configmap", "k8semu-machines", "-n", "kube-system")
    k("delete", "-f", str(tmp_path / "idle.yaml"), "--wait=false")
