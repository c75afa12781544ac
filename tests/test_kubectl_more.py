"""More of the real kubectl against ``k8semu serve``: what a kubectl user tries beyond the lab
of test_kubectl_e2e.py (patch with unknown fields, replace of a Service, diff, ``run -i`` and
``attach``, ``auth whoami`` per client version, dry runs, server-side apply conflicts, kustomize).

One ``k8semu serve`` subprocess for the module (free port, ``--speed 20``, its own kubeconfig);
every kubectl call gets ``--kubeconfig``, a temporary ``--cache-dir`` and a timeout; the server is
always stopped (SIGINT, then killed by pid if it lingers). Skipped when no ``kubectl`` is on the PATH.
"""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import pytest
from test_kubectl_e2e import KUBECTL, Server, _rows, _versioned

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on the PATH")

ROOT = Path(__file__).resolve().parents[1]
WEB = str(ROOT / "manifests" / "web.yaml")
NODEPORT = """apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  selector: {app: np}
  ports: [{name: http, port: 80}]
"""
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: NAME}
data: {a: "VALUE"}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("serve"))
    try:
        yield srv
    finally:
        code = srv.stop()
        assert code == 0, srv.proc.stderr.read()[-2000:]


def test_patch_drops_an_unknown_field_with_a_warning(server):
    """kubectl patch sends no fieldValidation: the server's default, Warn, drops the field."""
    k = server.kubectl
    k("create", "deployment", "pt", "--image=nginx:1.27", "--replicas=0")
    out = k("patch", "deployment", "pt", "--type=merge", "-p", '{"spec":{"bogus":1}}')
    assert out.stdout == "deployment.apps/pt patched (no change)\n"
    assert 'Warning: unknown field "spec.bogus"' in out.stderr
    out = k("patch", "deployment", "pt", "-p", '{"spec":{"replicas":1,"bogus":2}}')
    assert out.stdout == "deployment.apps/pt patched\n"
    assert "bogus" not in k("get", "deployment", "pt", "-o", "yaml").stdout
    # so kubectl edit (a patch of the whole object) keeps working
    out = k("patch", "deployment", "pt", "--type=json", "-p", '[{"op":"remove","path":"/spec/nope"}]', ok=False)
    assert out.returncode == 1
    assert "The request is invalid" in out.stderr
    k("delete", "deployment", "pt", "--wait=false")


def test_replace_of_a_service_keeps_its_cluster_ip_and_node_ports(server):
    k = server.kubectl
    path = server.write("np.yaml", NODEPORT)
    assert k("apply", "-f", path).stdout == "service/np created\n"
    shape = "jsonpath={.spec.clusterIP} {.spec.clusterIPs[0]} {.spec.ports[0].nodePort}"
    before = k("get", "service", "np", "-o", shape).stdout
    assert k("replace", "-f", path).stdout == "service/np replaced\n"
    assert k("get", "service", "np", "-o", shape).stdout == before
    k("delete", "service", "np")


def test_diff_and_server_dry_runs(server):
    k = server.kubectl
    one = server.write("cm1.yaml", CONFIGMAP.replace("NAME", "df").replace("VALUE", "1"))
    two = server.write("cm2.yaml", CONFIGMAP.replace("NAME", "df").replace("VALUE", "2"))
    k("apply", "-f", one)
    assert k("diff", "-f", one).stdout == ""
    out = k("diff", "-f", two, ok=False)
    assert out.returncode == 1, out.stderr
    changed = [line for line in out.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ['-  a: "1"', '+  a: "2"']  # no resourceVersion line: a dry run keeps it

    assert k("apply", "-f", two, "--dry-run=server").stdout == "configmap/df configured (server dry run)\n"
    assert k("get", "configmap", "df", "-o", "jsonpath={.data.a}").stdout == "1"
    assert k("delete", "configmap", "df", "--dry-run=server").stdout == 'configmap "df" deleted (server dry run)\n'
    out = k("create", "configmap", "dry", "--from-literal=x=y", "--dry-run=server", "-o", "yaml").stdout
    assert "uid:" in out and "resourceVersion" not in out
    assert k("get", "configmap", "dry", ok=False).returncode == 1
    k("delete", "configmap", "df")


def test_server_side_apply_conflict_and_force(server):
    k = server.kubectl
    one = server.write("ssa1.yaml", CONFIGMAP.replace("NAME", "ssa").replace("VALUE", "1"))
    two = server.write("ssa2.yaml", CONFIGMAP.replace("NAME", "ssa").replace("VALUE", "2"))
    assert k("apply", "--server-side", "-f", one).stdout == "configmap/ssa serverside-applied\n"
    out = k("apply", "--server-side", "--field-manager=other", "-f", two, ok=False)
    assert out.returncode == 1
    assert out.stderr.startswith('error: Apply failed with 1 conflict: conflict with "kubectl": .data.a\n')
    assert k("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", two).stdout == \
        "configmap/ssa serverside-applied\n"
    managers = k("get", "configmap", "ssa", "--show-managed-fields", "-o",
                 "jsonpath={.metadata.managedFields[*].manager}").stdout
    assert managers == "other"
    k("delete", "configmap", "ssa")


def test_apply_kustomize_directory(server):
    k = server.kubectl
    d = server.tmp / "kus"
    d.mkdir()
    (d / "cm.yaml").write_text(CONFIGMAP.replace("NAME", "base").replace("VALUE", "1"))
    (d / "kustomization.yaml").write_text(
        "namePrefix: k-\nlabels: [{pairs: {team: a}}]\nresources: [cm.yaml]\n"
        "configMapGenerator: [{name: gen, literals: [x=y]}]\n")
    out = sorted(k("apply", "-k", str(d)).stdout.splitlines())
    assert out[0] == "configmap/k-base created" and re.fullmatch(r"configmap/k-gen-[a-z0-9]{10} created", out[1])
    assert k("get", "configmap", "-l", "team=a", "-o", "name").stdout.count("configmap/k-") == 2
    k("delete", "-k", str(d))


@pytest.mark.parametrize("minor", ["", "29"])  # WebSocket v5 (1.33) and SPDY (1.29)
def test_run_interactive_attaches_to_the_containers_shell(server, minor):
    binary = _versioned(f"1.{minor}") if minor else None
    if minor and binary is None:
        pytest.skip(f"kubectl.1.{minor} is not installed")
    name = f"dbg{minor or 'ws'}"
    out = server.kubectl("run", name, "-i", "--rm", "--image=busybox:1.36", "--", "sh",
                         binary=binary, input="echo hi-from-sh\nhostname\nexit\n", timeout=90)
    lines = out.stdout.splitlines()
    assert lines[-3:] == ["hi-from-sh", name, f'pod "{name}" deleted'], out.stdout
    assert "falling back to streaming logs" not in out.stderr


def test_attach_streams_what_the_container_writes_from_now_on(server):
    k = server.kubectl
    k("run", "ticker", "--image=busybox:1.36", "--", "sh", "-c",
      "i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done")
    k("wait", "--for=condition=Ready", "pod/ticker", "--timeout=60s")
    proc = subprocess.Popen(server.argv("attach", "ticker"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines: list[str] = []

    def read() -> None:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if len(lines) >= 3:
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)
    proc.kill()  # by pid: the kubectl this test started
    proc.wait(10)
    assert len(lines) >= 3, proc.stderr.read()
    ticks = [int(line.split()[1]) for line in lines[:3]]
    assert all(line.startswith("tick ") for line in lines[:3])
    assert ticks == list(range(ticks[0], ticks[0] + 3))
    k("delete", "pod", "ticker", "--now")


@pytest.mark.parametrize("minor", ["28", "30", "33"])
def test_auth_whoami_per_client_version(server, minor):
    binary = _versioned(f"1.{minor}")
    if binary is None:
        pytest.skip(f"kubectl.1.{minor} is not installed")
    rows = _rows(server.kubectl("auth", "whoami", binary=binary).stdout)
    assert rows == [["ATTRIBUTE", "VALUE"], ["Username", "kubernetes-admin"],
                    ["Groups", "[system:masters system:authenticated]"]]


def test_kubectl_127_whoami_finds_no_beta_api_as_on_a_real_133_cluster(server):
    """authentication.k8s.io v1alpha1 / v1beta1 are off by default upstream (1.33 serves only v1)."""
    binary = _versioned("1.27")
    if binary is None:
        pytest.skip("kubectl.1.27 is not installed")
    out = server.kubectl("auth", "whoami", binary=binary, ok=False)
    assert out.returncode == 1
    assert out.stderr.startswith("error: the selfsubjectreviews API is not enabled in the cluster\n")


def test_service_and_pod_proxy_reach_nginx(server):
    k = server.kubectl
    k("create", "namespace", "px")
    k("apply", "-n", "px", "-f", WEB)
    k("rollout", "status", "-n", "px", "deployment/web", "--timeout=60s")
    page = k("get", "--raw", "/api/v1/namespaces/px/services/web:80/proxy/").stdout
    assert "<title>Welcome to nginx!</title>" in page
    assert "<title>Welcome to nginx!</title>" in k("get", "--raw", "/api/v1/namespaces/px/services/web:http/proxy/").stdout
    out = k("get", "--raw", "/api/v1/namespaces/px/services/web:81/proxy/", ok=False)
    assert out.stderr == 'Error from server (ServiceUnavailable): no service port 81 found for service "web"\n'
    pod = k("get", "pods", "-n", "px", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}").stdout
    ip = k("get", "pod", "-n", "px", pod, "-o", "jsonpath={.status.podIP}").stdout
    assert "Welcome to nginx!" in k("get", "--raw", f"/api/v1/namespaces/px/pods/{pod}/proxy/").stdout
    out = k("get", "--raw", f"/api/v1/namespaces/px/pods/{pod}:81/proxy/", ok=False)
    assert out.stderr == ("Error from server (ServiceUnavailable): error trying to reach service: "
                          f"dial tcp {ip}:81: connect: connection refused\n")
    k("delete", "namespace", "px", "--wait=false")


def test_raw_metrics_are_prometheus_text(server):
    k = server.kubectl
    k("get", "pods", "-n", "kube-system")
    text = k("get", "--raw", "/metrics").stdout
    assert "# TYPE apiserver_request_total counter\n" in text
    assert re.search(r'^apiserver_request_total\{code="200",component="apiserver",dry_run="",group="",'
                     r'resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"\} \d+$', text, re.M)
    assert re.search(r'^apiserver_storage_objects\{resource="nodes"\} 4$', text, re.M)
    assert re.search(r'^kubernetes_build_info\{.*git_version="v1\.33\.\d+".*\} 1$', text, re.M)
