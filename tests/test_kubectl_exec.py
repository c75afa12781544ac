"""The real ``kubectl exec`` against ``k8semu serve``: WebSocket (kubectl ≥ 1.30, the default
``kubectl`` dispatches to 1.33 here) and SPDY/3.1 (kubectl ≤ 1.29), output and exit codes asserted.

One server per module (tests/test_kubectl_e2e.py's ``Server``: free port, ``--speed 20``, its own
kubeconfig and cache folders, always stopped). Skipped when no ``kubectl`` is on the PATH.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import time

import pytest

from test_kubectl_e2e import KUBECTL, Server, _versioned

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on the PATH")

PODS = """apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: "hello from a configmap\\n"}
---
apiVersion: v1
kind: Pod
metadata: {name: box}
spec:
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
    env: [{name: FOO, value: bar}]
    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]
  - {name: side, image: "nginx:1.30-alpine"}
  volumes: [{name: cfg, configMap: {name: cfg}}]
---
apiVersion: v1
kind: Pod
metadata: {name: oneshot, annotations: {kubectl.kubernetes.io/default-container: b}}
spec:
  restartPolicy: Never
  containers:
  - {name: a, image: busybox, command: ["sh", "-c", "echo bye"]}
  - {name: b, image: busybox, command: ["sleep", "3600"]}
"""

#: (kubectl binary suffix, how it talks): "" is the dispatcher, which runs kubectl 1.33 here
VERSIONS = [("", "websocket"), ("1.29", "spdy")]
EXEC_ID = re.compile(r'"[0-9a-f]{64}"')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("serve-exec"))
    try:
        manifest = srv.tmp / "pods.yaml"
        manifest.write_text(PODS)
        srv.kubectl("apply", "-f", str(manifest))
        srv.kubectl("wait", "--for=condition=Ready", "pod/box", "--timeout=60s")
        srv.kubectl("wait", "--for=jsonpath={.status.containerStatuses[0].state.terminated.reason}=Completed",
                    "pod/oneshot", "--timeout=60s")
        yield srv
    finally:
        code = srv.stop()
        assert code == 0, srv.proc.stderr.read()[-2000:]


def _binary(minor: str) -> str:
    exe = _versioned(minor) if minor else KUBECTL
    if exe is None:
        pytest.skip(f"kubectl.{minor} not installed beside kubectl")
    return exe


@pytest.mark.parametrize("minor,transport", VERSIONS)
def test_exec_output_and_exit_codes(server, minor, transport):
    exe = _binary(minor)

    def k(*args, stdin=None):
        out = server.kubectl("exec", *args, binary=exe, ok=False, timeout=60) if stdin is None else \
            subprocess.run([exe, "--kubeconfig", str(server.kubeconfig), "--cache-dir",
                            str(server.tmp / f"cache-{minor}"), "exec", *args], input=stdin, capture_output=True,
                           text=True, timeout=60)
        return out.returncode, out.stdout, out.stderr

    assert k("box", "--", "echo", "hi") == (0, "hi\n", 'Defaulted container "main" out of: main, side\n')
    assert k("box", "-c", "main", "--", "printenv", "HOSTNAME", "FOO") == (0, "box\nbar\n", "")
    assert k("box", "-c", "main", "--", "cat", "/etc/cfg/greeting") == (0, "hello from a configmap\n", "")
    assert k("box", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2; exit 3") == \
        (3, "out\n", "err\ncommand terminated with exit code 3\n")
    # -c picks the container: FOO is main's only
    assert k("box", "-c", "side", "--", "printenv", "FOO") == (1, "", "command terminated with exit code 1\n")
    assert k("oneshot", "--", "hostname") == (0, "oneshot\n", "")  # the default-container annotation
    # stdin: a shell reads and runs it line by line
    assert k("-i", "box", "-c", "main", "--", "sh", stdin="X=4; echo $X$FOO\nexit 5\n") == \
        (5, "4bar\n", "command terminated with exit code 5\n")
    assert k("-i", "box", "-c", "main", "--", "cat", stdin="piped\n") == (0, "piped\n", "")

    code, out, err = k("box", "-c", "main", "--", "foo")
    # the WebSocket goes through kube-apiserver's translator, which wraps the kubelet's error once more
    wrap = "Internal error occurred: " * (2 if transport == "websocket" else 1)
    assert (code, out, EXEC_ID.sub('"ID"', err)) == (1, "", (
        f"error: {wrap}error executing command in container: failed to exec in container: failed to start exec "
        '"ID": OCI runtime exec failed: exec failed: unable to start container process: exec: "foo": executable '
        "file not found in $PATH: unknown\n"))
    wrap = "Internal error occurred: " if transport == "websocket" else ""
    assert k("oneshot", "-c", "a", "--", "ls") == (
        1, "", f'error: {wrap}unable to upgrade connection: container not found ("a")\n')
    assert k("box", "-c", "bogus", "--", "ls") == (
        1, "", "Error from server (BadRequest): container bogus is not valid for pod box\n")
    assert k("nope", "--", "ls") == (1, "", 'Error from server (NotFound): pods "nope" not found\n')


@pytest.mark.parametrize("minor", ["1.27", "1.31"])
def test_other_versions_and_virtual_time(server, minor):
    exe = _binary(minor)
    start = time.monotonic()
    out = server.kubectl("exec", "box", "-c", "main", "--", "sh", "-c", "for i in 1 2; do echo $i; sleep 10; done",
                         binary=exe, timeout=60)
    assert out.stdout == "1\n2\n"
    assert time.monotonic() - start < 15  # 20 virtual seconds at --speed 20


def test_an_interactive_shell_on_a_terminal(server):
    """``kubectl exec -it POD -- sh`` on a pseudo-terminal: echo, prompt, state kept between lines, ^C."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(server.tmp / "cache-pty"),
                             "exec", "-it", "box", "-c", "main", "--", "sh"], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    seen = b""

    def expect(tail: bytes, timeout: float = 30) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while not seen.endswith(tail):
            assert time.monotonic() < deadline, seen
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break

    try:
        expect(b"/ # ")
        for typed, answer in ((b"cd /etc; X=42\r", b"/etc # "), (b"echo $X $PWD\r", b"42 /etc\r\n/etc # "),
                              (b"sleep 1000\r", b"sleep 1000\r\n"), (b"\x03", b"^C\r\n/etc # ")):
            os.write(master, typed)
            expect(answer)
        os.write(master, b"exit 6\r")
        assert proc.wait(30) == 6
        expect(b"command terminated with exit code 6\r\n")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)
    assert seen == (b"/ # cd /etc; X=42\r\n/etc # echo $X $PWD\r\n42 /etc\r\n/etc # sleep 1000\r\n^C\r\n"
                    b"/etc # exit 6\r\ncommand terminated with exit code 6\r\n")


@pytest.mark.parametrize("minor", ["", "1.29"])
def test_kubectl_debug_adds_an_ephemeral_container_and_attaches(server, minor):
    """``kubectl debug -i POD --image=busybox --target=main``: the ephemeralcontainers subresource,
    the kubelet starting the container, then an attach to its shell that reads the piped input."""
    exe = _binary(minor)
    name = f"dbg{minor.replace('.', '')}"
    out = subprocess.run([exe, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(server.tmp / f"cache-{minor}"),
                          "debug", "-i", "box", "--image=busybox", f"--container={name}", "--target=main",
                          "--profile=general"],
                         input="echo hello from $HOSTNAME\nwget -qO- localhost | grep title\nexit 3\n",
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ('Targeting container "main". If you don\'t see processes from this container it may be '
                          "because the container runtime doesn't support this feature.\nhello from box\n"
                          "<title>Welcome to nginx!</title>\n")  # the pod's nginx, in the same network namespace
    status = server.kubectl("get", "pod", "box", "-o",
                            f"jsonpath={{.status.ephemeralContainerStatuses[?(@.name=='{name}')].state.terminated.exitCode}}",
                            binary=exe).stdout
    assert status == "3"
    assert server.kubectl("logs", "box", "-c", name, binary=exe).stdout == \
        "hello from box\n<title>Welcome to nginx!</title>\n"
