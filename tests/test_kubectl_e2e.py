"""The real kubectl, unmodified, against ``k8semu serve`` (the lab from manifests/web.yaml).

One ``k8semu serve`` subprocess per module (free port, ``--speed 20``, its own
kubeconfig, a token file with an unprivileged user); every kubectl call gets
``--kubeconfig``, a temporary ``--cache-dir`` and a timeout; the server is
always stopped (SIGINT, then killed by pid if it lingers). The output of
every command is asserted, not just its exit code.

Skipped when no ``kubectl`` is on the PATH (CI has one).
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on the PATH")

ROOT = Path(__file__).resolve().parents[1]
WEB = str(ROOT / "manifests" / "web.yaml")
SPEED = "20"
SMOKE = """apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME, labels: {app: NAME}}
spec:
  replicas: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: nginx, image: "nginx:1.30-alpine"}]
"""


def _versioned(minor: str) -> str | None:
    if KUBECTL is None:
        return None
    path = Path(os.path.realpath(KUBECTL)).parent / f"kubectl.{minor}"
    return str(path) if path.exists() else None


class Server:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.kubeconfig = tmp / "kubeconfig"
        tokens = tmp / "tokens.csv"
        tokens.write_text('jane-token,jane,1001,"developers"\n')
        cmd = [sys.executable, "-m", "k8semu.cli.main", "--cluster", str(tmp / "cluster.log"), "serve",
               "--port", "0", "--speed", SPEED, "--kubeconfig", str(self.kubeconfig), "--token-file", str(tokens)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        if not line or not line[0].startswith("export KUBECONFIG="):
            self.stop()
            raise RuntimeError(f"k8semu serve did not start: {line} {self.proc.stderr.read()[-2000:]}")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # by pid: only the process this test started
                self.proc.wait(5)
        return self.proc.returncode

    def argv(self, *args: str, binary: str | None = None) -> list[str]:
        """A kubectl command line against this server (its own discovery cache per binary)."""
        exe = binary or KUBECTL
        cache = self.tmp / ("cache-" + Path(exe).name)
        return [exe, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(cache), *args]

    def write(self, name: str, text: str) -> str:
        """A manifest file in this server's directory; returns its path."""
        path = self.tmp / name
        path.write_text(text)
        return str(path)

    def kubectl(self, *args: str, binary: str | None = None, timeout: float = 90, ok: bool = True,
                env: dict[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess:
        out = subprocess.run(self.argv(*args, binary=binary), capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, **(env or {})}, input=input)
        if ok:
            assert out.returncode == 0, f"{' '.join(args)}: {out.stderr}"
        return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("serve"))
    try:
        yield srv
    finally:
        code = srv.stop()
        assert code == 0, srv.proc.stderr.read()[-2000:]


def _rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_the_lab(server):
    k = server.kubectl
    assert k("apply", "-f", WEB).stdout == "deployment.apps/web created\nservice/web created\n"
    assert k("rollout", "status", "deployment/web", "--timeout=60s").stdout.endswith(
        'deployment "web" successfully rolled out\n')

    rows = _rows(k("get", "deployment", "web").stdout)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1][:4] == ["web", "2/2", "2", "2"]

    rows = _rows(k("get", "pods", "-l", "app=web", "-o", "wide").stdout)
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert len(rows) == 3
    for r in rows[1:]:
        assert r[0].startswith("web-") and r[1:4] == ["1/1", "Running", "0"]
        assert r[5].startswith("10.244.") and r[6].startswith("node-")

    rows = _rows(k("get", "service", "web").stdout)
    assert rows[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert rows[1][:2] == ["web", "ClusterIP"] and rows[1][3:5] == ["<none>", "80/TCP"]

    desc = k("describe", "pod", "-l", "app=web").stdout
    assert len(re.findall(r"^Name:\s+web-", desc, re.M)) == 2
    assert "Events:" in desc and "Scheduled" in desc and "Started container nginx" in desc
    assert re.search(r"^    Port:\s+80/TCP$", desc, re.M)

    # client-side apply again: nothing changed
    assert k("apply", "-f", WEB).stdout == "deployment.apps/web unchanged\nservice/web unchanged\n"

    assert k("scale", "deployment/web", "--replicas=4").stdout == "deployment.apps/web scaled\n"
    k("rollout", "status", "deployment/web", "--timeout=60s")
    assert _rows(k("get", "deployment", "web").stdout)[1][:4] == ["web", "4/4", "4", "4"]

    assert k("set", "image", "deployment/web", "nginx=nginx:1.31-alpine").stdout == "deployment.apps/web image updated\n"
    assert "successfully rolled out" in k("rollout", "status", "deployment/web", "--timeout=90s").stdout
    image = "jsonpath={.spec.template.spec.containers[0].image}"
    assert k("get", "deployment", "web", "-o", image).stdout == "nginx:1.31-alpine"
    assert k("rollout", "undo", "deployment/web").stdout == "deployment.apps/web rolled back\n"
    k("rollout", "status", "deployment/web", "--timeout=90s")
    assert k("get", "deployment", "web", "-o", image).stdout == "nginx:1.30-alpine"
    assert k("wait", "--for=condition=Available", "deployment/web", "--timeout=60s").stdout == \
        "deployment.apps/web condition met\n"

    # cordon / drain / uncordon the node of one web pod
    node = k("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].spec.nodeName}").stdout
    assert k("cordon", node).stdout == f"node/{node} cordoned\n"
    assert _rows(k("get", "node", node).stdout)[1][1] == "Ready,SchedulingDisabled"
    out = k("drain", node, "--ignore-daemonsets", "--timeout=60s")
    assert "evicted" in out.stdout and out.stdout.endswith(f"node/{node} drained\n")
    assert all(n != node for n in k("get", "pods", "-l", "app=web", "-o",
                                    "jsonpath={.items[*].spec.nodeName}").stdout.split())
    assert k("uncordon", node).stdout == f"node/{node} uncordoned\n"
    assert _rows(k("get", "node", node).stdout)[1][1] == "Ready"

    # a container that logs
    k("run", "ticker", "--image=busybox:1.36", "--", "sh", "-c",
      'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done')
    k("wait", "--for=condition=Ready", "pod/ticker", "--timeout=60s")
    lines = k("logs", "ticker", "--tail=2").stdout.splitlines()
    assert len(lines) == 2 and all(re.fullmatch(r"tick \d+", x) for x in lines)
    n = int(lines[1].split()[1])
    assert int(lines[0].split()[1]) == n - 1
    k("delete", "pod", "ticker", "--grace-period=0", "--force")

    ev = k("get", "events").stdout
    assert _rows(ev)[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "ScalingReplicaSet" in ev and "deployment/web" in ev

    res = k("api-resources").stdout
    assert re.search(r"^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$", res, re.M)
    assert re.search(r"^pods\s+po\s+v1\s+true\s+Pod$", res, re.M)

    ex = k("explain", "deployment.spec.strategy").stdout
    assert "KIND:       Deployment" in ex and "FIELD: strategy <DeploymentStrategy>" in ex
    assert "rollingUpdate\t<RollingUpdateDeployment>" in ex and "type\t<string>" in ex

    out = k("delete", "-f", WEB).stdout
    assert out == 'deployment.apps "web" deleted\nservice "web" deleted\n'
    gone = k("get", "deployment", "web", ok=False)
    assert gone.returncode == 1 and gone.stderr == 'Error from server (NotFound): deployments.apps "web" not found\n'

    # server-side apply on a clean slate
    assert k("apply", "--server-side", "-f", WEB).stdout == \
        "deployment.apps/web serverside-applied\nservice/web serverside-applied\n"
    assert "unchanged" not in k("apply", "--server-side", "-f", WEB).stdout
    k("delete", "-f", WEB, "--wait=false")


def test_follow_logs_streams_new_lines(server):
    k = server.kubectl
    k("run", "follow", "--image=busybox:1.36", "--", "sh", "-c",
      'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 1; done')
    k("wait", "--for=condition=Ready", "pod/follow", "--timeout=60s")
    cmd = [KUBECTL, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(server.tmp / "cache-kubectl"),
           "logs", "-f", "follow", "--tail=1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        got = [proc.stdout.readline() for _ in range(5)]  # 1 tail line + 4 streamed ones
    finally:
        proc.kill()
        proc.wait(5)
    nums = [int(x.split()[1]) for x in got]
    assert nums == list(range(nums[0], nums[0] + 5))
    k("delete", "pod", "follow", "--grace-period=0", "--force")


@pytest.mark.parametrize("minor", ["", "1.27"])
def test_an_unknown_kind_gets_kubectls_no_matches_error(server, minor):
    """kubectl validates kinds it finds in no OpenAPI v3 document against /openapi/v2 (protobuf);
    a real cluster's v2 has no schema for an uninstalled kind, so kubectl goes on to its mapping
    error. Without /openapi/v2 it printed "error validating data: the server could not find the
    requested resource" instead."""
    exe = _versioned(minor) if minor else None
    if minor and exe is None:
        pytest.skip(f"kubectl.{minor} not installed beside kubectl")
    manifest = server.tmp / "widget.yaml"
    manifest.write_text("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n")
    out = server.kubectl("apply", "-f", str(manifest), binary=exe, ok=False)
    assert out.returncode == 1
    assert out.stderr == (f'error: resource mapping not found for name: "w1" namespace: "" from "{manifest}": '
                          'no matches for kind "Widget" in version "example.com/v1"\n'
                          "ensure CRDs are installed first\n")


def test_auth_can_i_asks_the_servers_rbac(server):
    k = server.kubectl
    assert k("auth", "can-i", "create", "pods").stdout == "yes\n"
    out = k("--token", "jane-token", "auth", "can-i", "create", "pods", ok=False)
    assert (out.returncode, out.stdout) == (1, "no\n")
    assert k("auth", "can-i", "create", "pods", "--as", "jane", ok=False).stdout == "no\n"
    assert _rows(k("auth", "whoami", "--as", "jane", "--as-group", "devs").stdout) == [
        ["ATTRIBUTE", "VALUE"], ["Username", "jane"], ["Groups", "[devs system:authenticated]"]]
    out = k("--token", "jane-token", "auth", "can-i", "--list")
    assert re.search(r"^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$",
                     out.stdout, re.M), out.stdout


def test_forbidden_user_and_bad_token(server):
    k = server.kubectl
    out = k("--token", "jane-token", "get", "pods", ok=False)
    assert out.returncode == 1
    assert out.stderr == ('Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource '
                          '"pods" in API group "" in the namespace "default"\n')
    out = k("--token", "no-such-token", "get", "pods", ok=False)
    assert out.returncode == 1 and "error: You must be logged in to the server" in out.stderr


def test_client_certificates_from_k8semu_kubeconfig_user(server):
    """``k8semu kubeconfig user`` (as ``kubeadm kubeconfig user``) signs a client certificate with the
    cluster CA; serve authenticates it as its common name and organizations, over HTTP/2 (kubectl's
    default), HTTP/1.1 and the SPDY upgrade of exec alike, and RBAC applies to that user."""
    out = subprocess.run([sys.executable, "-m", "k8semu.cli.main", "--cluster", str(server.tmp / "cluster.log"),
                          "kubeconfig", "user", "--client-name", "carol", "--org", "auditors", "--org", "qa"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "client-certificate-data: " in out.stdout and "token:" not in out.stdout
    kc = server.tmp / "carol.kubeconfig"
    kc.write_text(out.stdout)  # the running serve's server URL is in it
    k = server.kubectl
    for env in ({}, {"DISABLE_HTTP2": "1"}):
        assert _rows(k("--kubeconfig", str(kc), "auth", "whoami", env=env).stdout) == [
            ["ATTRIBUTE", "VALUE"], ["Username", "carol"], ["Groups", "[auditors qa system:authenticated]"]]
    out = k("--kubeconfig", str(kc), "get", "secrets", ok=False)
    assert out.stderr == ('Error from server (Forbidden): secrets is forbidden: User "carol" cannot list resource '
                          '"secrets" in API group "" in the namespace "default"\n')
    k("create", "rolebinding", "auditors-view", "--clusterrole=view", "--group=auditors")
    assert k("--kubeconfig", str(kc), "auth", "can-i", "list", "pods").stdout == "yes\n"
    assert k("--kubeconfig", str(kc), "auth", "can-i", "create", "pods", ok=False).stdout == "no\n"
    k("delete", "rolebinding", "auditors-view")


@pytest.mark.parametrize("minor", ["1.27", "1.33"])
def test_versioned_kubectl_smoke(server, minor):
    exe = _versioned(minor)
    if exe is None:
        pytest.skip(f"kubectl.{minor} not installed beside kubectl")
    k = lambda *a, **kw: server.kubectl(*a, binary=exe, **kw)  # noqa: E731
    name = "smoke-" + minor.replace(".", "")
    manifest = server.tmp / f"{name}.yaml"
    manifest.write_text(SMOKE.replace("NAME", name))
    assert k("create", "-f", str(manifest)).stdout == f"deployment.apps/{name} created\n"
    k("rollout", "status", f"deployment/{name}", "--timeout=60s")
    assert _rows(k("get", "deployment", name).stdout)[1][:4] == [name, "1/1", "1", "1"]
    assert k("scale", f"deployment/{name}", "--replicas=2").stdout == f"deployment.apps/{name} scaled\n"
    k("rollout", "status", f"deployment/{name}", "--timeout=60s")
    assert _rows(k("get", "pods", "-l", f"app={name}").stdout)[1][1:3] == ["1/1", "Running"]
    assert k("delete", "deployment", name).stdout == f'deployment.apps "{name}" deleted\n'


def _json(k, *args: str) -> dict:
    return json.loads(k("get", *args, "-o", "json").stdout)


@pytest.mark.parametrize("minor", ["", "1.32", "1.27"])
def test_create_subcommands_send_protobuf(server, minor):
    """kubectl ≥ 1.32's typed clients send application/vnd.kubernetes.protobuf bodies (and take JSON
    back); older ones send JSON."""
    exe = _versioned(minor) if minor else KUBECTL
    if exe is None:
        pytest.skip(f"kubectl.{minor} not installed beside kubectl")
    k = lambda *a, **kw: server.kubectl(*a, binary=exe, **kw)  # noqa: E731
    ns = "proto" + minor.replace(".", "")
    out = k("create", "namespace", ns, "-v=8")
    assert out.stdout == f"namespace/{ns} created\n"
    assert ("Content-Type: application/vnd.kubernetes.protobuf" in out.stderr) == (minor != "1.27")
    assert _json(k, "namespace", ns)["status"] == {"phase": "Active"}
    n = ["-n", ns]

    assert k("create", "deployment", "web2", "--image=nginx:1.27", "--replicas=2", "--port=80", *n).stdout == \
        "deployment.apps/web2 created\n"
    dep = _json(k, "deployment", "web2", *n)
    assert dep["spec"]["replicas"] == 2 and dep["spec"]["selector"] == {"matchLabels": {"app": "web2"}}
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["name"] == "nginx" and c["image"] == "nginx:1.27" and c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    k("rollout", "status", "deployment/web2", "--timeout=60s", *n)
    assert _rows(k("get", "deployment", "web2", *n).stdout)[1][:4] == ["web2", "2/2", "2", "2"]
    assert k("create", "deployment", "idle", "--image=nginx:1.27", "--replicas=0", *n).stdout == \
        "deployment.apps/idle created\n"
    assert _json(k, "deployment", "idle", *n)["spec"]["replicas"] == 0  # a pointer: the 0 is kept

    assert k("create", "configmap", "cfg", "--from-literal=a=b", "--from-literal=c=d", *n).stdout == \
        "configmap/cfg created\n"
    assert _json(k, "configmap", "cfg", *n)["data"] == {"a": "b", "c": "d"}
    assert k("create", "secret", "generic", "sec", "--from-literal=pw=s3cr3t", *n).stdout == "secret/sec created\n"
    sec = _json(k, "secret", "sec", *n)
    assert sec["data"] == {"pw": "czNjcjN0"} and sec["type"] == "Opaque"

    assert k("create", "service", "clusterip", "web2", "--tcp=80:8080", *n).stdout == "service/web2 created\n"
    spec = _json(k, "service", "web2", *n)["spec"]
    assert spec["type"] == "ClusterIP" and spec["selector"] == {"app": "web2"}
    assert spec["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert re.fullmatch(r"10\.\d+\.\d+\.\d+", spec["clusterIP"])

    assert k("create", "job", "once", "--image=busybox:1.36", *n, "--", "echo", "hi").stdout == \
        "job.batch/once created\n"
    tpl = _json(k, "job", "once", *n)["spec"]["template"]["spec"]
    assert tpl["restartPolicy"] == "Never" and tpl["containers"][0]["command"] == ["echo", "hi"]
    assert k("wait", "--for=condition=Complete", "job/once", "--timeout=60s", *n).stdout == \
        "job.batch/once condition met\n"
    assert k("create", "cronjob", "tick", "--image=busybox:1.36", "--schedule=*/5 * * * *", *n).stdout == \
        "cronjob.batch/tick created\n"
    assert _json(k, "cronjob", "tick", *n)["spec"]["schedule"] == "*/5 * * * *"

    assert k("create", "serviceaccount", "bot", *n).stdout == "serviceaccount/bot created\n"
    assert k("create", "role", "reader", "--verb=get,list", "--resource=pods", *n).stdout == \
        "role.rbac.authorization.k8s.io/reader created\n"
    assert _json(k, "role", "reader", *n)["rules"] == [{"apiGroups": [""], "resources": ["pods"],
                                                        "verbs": ["get", "list"]}]
    assert k("create", "rolebinding", "bot-reads", "--role=reader", f"--serviceaccount={ns}:bot", *n).stdout == \
        "rolebinding.rbac.authorization.k8s.io/bot-reads created\n"
    rb = _json(k, "rolebinding", "bot-reads", *n)
    assert [(x["kind"], x["name"], x["namespace"]) for x in rb["subjects"]] == [("ServiceAccount", "bot", ns)]
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
    assert k("create", "poddisruptionbudget", "web2", "--selector=app=web2", "--min-available=1", *n).stdout == \
        "poddisruptionbudget.policy/web2 created\n"
    assert _json(k, "pdb", "web2", *n)["spec"]["minAvailable"] == 1
    assert k("create", "quota", "q", "--hard=pods=20,cpu=4", *n).stdout == "resourcequota/q created\n"
    assert _json(k, "quota", "q", *n)["spec"]["hard"] == {"cpu": "4", "pods": "20"}
    assert k("create", "ingress", "web2", "--rule=example.com/*=web2:80", *n).stdout == \
        "ingress.networking.k8s.io/web2 created\n"
    assert _json(k, "ingress", "web2", *n)["spec"]["rules"] == [{"host": "example.com", "http": {"paths": [
        {"backend": {"service": {"name": "web2", "port": {"number": 80}}}, "path": "/", "pathType": "Prefix"}]}}]
    assert k("delete", "namespace", ns, "--wait=false").stdout == f'namespace "{ns}" deleted\n'


class PortForward:
    """A running ``kubectl port-forward`` (always killed by :meth:`stop`, by pid)."""

    def __init__(self, server: Server, *args: str, binary: str | None = None) -> None:
        exe = binary or KUBECTL
        cache = server.tmp / ("cache-" + Path(exe).name)
        cmd = [exe, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(cache), "port-forward", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout], daemon=True).start()

    def local_port(self, remote: int = 80, timeout: float = 60) -> int:
        """The local port of kubectl's first "Forwarding from 127.0.0.1:PORT -> REMOTE" line."""
        line = self.lines.get(timeout=timeout)
        m = re.fullmatch(rf"Forwarding from 127\.0\.0\.1:(\d+) -> {remote}\n", line)
        assert m, line
        return int(m.group(1))

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        return self.proc.stderr.read()


def _get(port: int) -> tuple[int, dict[str, str], str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as resp:
        return resp.status, dict(resp.headers), resp.read().decode()


@pytest.fixture(scope="module")
def pf_lab(server):
    """The lab in its own namespace (other tests delete theirs), rolled out."""
    k = server.kubectl
    assert k("create", "namespace", "pf").stdout == "namespace/pf created\n"
    k("apply", "-n", "pf", "-f", WEB)
    k("rollout", "status", "-n", "pf", "deployment/web", "--timeout=60s")
    return k("get", "pods", "-n", "pf", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}").stdout


@pytest.mark.parametrize("minor", ["", "1.31"])
def test_port_forward_to_a_pod_and_a_service(server, pf_lab, minor):
    exe = _versioned(minor) if minor else KUBECTL
    if exe is None:
        pytest.skip(f"kubectl.{minor} not installed beside kubectl")
    for target in (f"pod/{pf_lab}", "service/web"):
        pf = PortForward(server, "-n", "pf", target, ":80", binary=exe)
        try:
            port = pf.local_port()
            for _ in range(2):  # one forwarded connection each
                status, headers, body = _get(port)
                assert status == 200 and "<h1>Welcome to nginx!</h1>" in body
                assert headers["Server"] == "nginx/1.30.0" and headers["Content-Length"] == str(len(body))
        finally:
            pf.stop()


def test_port_forward_to_a_port_nothing_serves(server, pf_lab):
    pf = PortForward(server, "-n", "pf", f"pod/{pf_lab}", ":81")
    try:
        port = pf.local_port(remote=81)
        with pytest.raises((urllib.error.URLError, http.client.RemoteDisconnected, ConnectionError)):
            _get(port)
        assert pf.proc.wait(60) == 1  # kubectl gives up on the error, as against a real cluster
    finally:
        err = pf.stop()
    uid_free = re.sub(r"[0-9a-f]{64}", "SANDBOX", err)
    assert ('error forwarding port 81 to pod SANDBOX, uid : failed to execute portforward in network namespace '
            '\\"/var/run/netns/cni-') in uid_free
    assert ('failed to connect to localhost:81 inside namespace \\"SANDBOX\\", IPv4: dial tcp4 127.0.0.1:81: '
            'connect: connection refused IPv6 dial tcp6 [::1]:81: connect: connection refused ') in uid_free
    assert err.endswith("error: lost connection to pod\n")


@pytest.mark.parametrize("minor", ["1.27", "1.30"])
def test_port_forward_with_an_old_kubectl_over_spdy(server, pf_lab, minor):
    # kubectl <= 1.30 upgrades the connection to SPDY/3.1 (no WebSocket tunnel)
    exe = _versioned(minor)
    if exe is None:
        pytest.skip(f"kubectl.{minor} not installed beside kubectl")
    pf = PortForward(server, "-n", "pf", "service/web", ":80", binary=exe)
    try:
        port = pf.local_port()
        for _ in range(2):
            status, headers, body = _get(port)
            assert status == 200 and "<h1>Welcome to nginx!</h1>" in body
    finally:
        pf.stop()


def test_a_keep_alive_connection_is_never_closed_after_n_requests(server):
    """kube-apiserver (Go's net/http) serves any number of requests on one keep-alive
    connection; Hypercorn's default closes it after 1,000, losing the next request of a
    client that pipelines. 1,100 GETs on one TLS connection: none says ``Connection: close``."""
    import base64
    import http.client
    import ssl
    import tempfile

    from ruamel.yaml import YAML

    cfg = YAML(typ="safe").load(server.kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    token = cfg["users"][0]["user"]["token"]
    host, port = cluster["server"].removeprefix("https://").rsplit(":", 1)
    with tempfile.NamedTemporaryFile("wb", suffix=".crt") as ca:
        ca.write(base64.b64decode(cluster["certificate-authority-data"]))
        ca.flush()
        context = ssl.create_default_context(cafile=ca.name)
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    try:
        for i in range(1100):
            conn.request("GET", "/api/v1/namespaces/default", headers={"Authorization": f"Bearer {token}"})
            resp = conn.getresponse()
            assert resp.status == 200
            resp.read()
            assert (resp.getheader("connection") or "").lower() != "close", f"closed after {i + 1} requests"
        assert conn.sock is not None  # still the first connection
    finally:
        conn.close()
