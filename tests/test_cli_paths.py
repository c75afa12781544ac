"""Paths that cannot be used, and kubectl's last-applied-configuration text.

Bad paths — ``--cluster`` a directory, a path under a file, a file or directory without
permission, ``import``/``apply -f``/``diff --against``/``bisect`` inputs and ``--out`` outputs
that cannot be read or written — are one ``error: …`` line naming the path as it was given,
exit 1, never a traceback, and leave the cluster log (and the directory around it) byte for
byte as it was.

Permission checks need a process that permissions apply to: as root they run in a
subprocess with ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` dropped (``setpriv``), and
are skipped where that is not possible.

``k8semu apply`` writes the ``kubectl.kubernetes.io/last-applied-configuration`` text kubectl
1.32 writes, byte for byte (the literals below were captured from ``kubectl apply`` against
``k8semu serve``), so either tool's next apply of the same manifest is ``unchanged``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Kubectl
from k8semu.api.manifest import load_manifests
from k8semu.cli.commands.apply import LAST_APPLIED, with_last_applied
from k8semu.cli.main import main
from k8semu.cli.session import os_error_text

WEB = str(Path(__file__).resolve().parents[1] / "manifests" / "web.yaml")


def _tree(d: Path) -> dict[str, bytes | None]:
    """Every file under ``d`` (relative path -> bytes; None for a directory)."""
    return {str(p.relative_to(d)): (None if p.is_dir() else p.read_bytes()) for p in sorted(d.rglob("*"))}


def _one_error(result, line: str) -> None:
    rc, out, err = result
    assert (rc, out, err) == (1, [], [line]), result
    assert not any("Traceback" in e for e in err)


# --------------------------------------------------------------------------- --cluster a directory

_COMMANDS = [
    ["get", "pods"], ["apply", "-f", WEB], ["cluster", "info"], ["cluster", "create"], ["cluster", "delete"],
    ["history", "deployment/web"], ["diff", "--from", "0", "--to", "5"], ["timeline"], ["trace", "pod/x"],
    ["describe", "pods"], ["events"], ["advance", "1s"], ["scale", "deployment", "web", "--replicas", "3"],
    ["logs", "x"], ["top", "pods"], ["rollout", "status", "deployment/web"], ["delete", "pod", "x"],
    ["get", "pods", "--at", "5"],
]


@pytest.mark.parametrize("argv", _COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_cluster_a_directory_is_a_one_line_error(tmp_path, capsys, argv):
    d = tmp_path / "x"
    d.mkdir()
    (d / "keep").write_text("mine\n")
    before = _tree(tmp_path)
    _one_error(Kubectl(d, capsys)(*argv), f"error: --cluster {d}: is a directory, not a cluster log file")
    assert _tree(tmp_path) == before  # nothing made: no x.lock beside it, nothing inside


def test_serve_on_a_directory_is_the_same_error(tmp_path, capsys):
    d = tmp_path / "x"
    d.mkdir()
    _one_error(Kubectl(d, capsys)("serve", "--insecure-http", "--port", "0", "--kubeconfig", str(tmp_path / "kc")),
               f"error: --cluster {d}: is a directory, not a cluster log file")
    assert _tree(tmp_path) == {"x": None}


def test_the_error_names_the_cluster_as_it_was_given(tmp_path, capsys, monkeypatch):
    d = tmp_path / "x"
    d.mkdir()
    monkeypatch.setenv("K8SEMU_CLUSTER", str(d))
    capsys.readouterr()
    assert main(["get", "pods"]) == 1
    assert capsys.readouterr().err == f"error: K8SEMU_CLUSTER={d}: is a directory, not a cluster log file\n"
    monkeypatch.delenv("K8SEMU_CLUSTER")
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".k8semu" / "cluster.log").mkdir(parents=True)
    assert main(["apply", "-f", WEB]) == 1
    assert capsys.readouterr().err == "error: .k8semu/cluster.log: is a directory, not a cluster log file\n"
    assert _tree(tmp_path / ".k8semu") == {"cluster.log": None}


def test_cluster_a_fifo_or_device_is_a_one_line_error(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # reading one would hang
    for argv in (["get", "pods"], ["apply", "-f", WEB], ["cluster", "delete"], ["cluster", "create"]):
        _one_error(Kubectl(fifo, capsys)(*argv), f"error: --cluster {fifo}: is a special file, not a cluster log file")
    _one_error(Kubectl(fifo, capsys)("diff", "--against", str(fifo)),
               f"error: --cluster {fifo}: is a special file, not a cluster log file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]  # no fifo.lock


# --------------------------------------------------------------------------- a path under a file

@pytest.mark.parametrize("argv", [["get", "pods"], ["apply", "-f", WEB], ["cluster", "create"],
                                  ["cluster", "delete"], ["cluster", "info"], ["history", "deployment/web"]],
                         ids=lambda a: " ".join(a[:2]))
def test_a_cluster_path_under_a_file_is_a_one_line_error(tmp_path, capsys, argv):
    f = tmp_path / "file"
    f.write_text("not a directory\n")
    for path in (f / "x", f / "x" / "y" / "cluster.log"):
        _one_error(Kubectl(path, capsys)(*argv), f"error: --cluster {path}: {f} is not a directory")
    assert _tree(tmp_path) == {"file": b"not a directory\n"}


def test_a_relative_path_under_a_file_names_it_relatively(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("f").write_text("")
    _one_error(Kubectl(Path("f/c.log"), capsys)("cluster", "create"), "error: --cluster f/c.log: f is not a directory")


# --------------------------------------------------------------------------- existing clusters, other files

def test_cluster_create_on_an_existing_cluster_leaves_it_byte_for_byte(k):
    before = k.path.read_bytes()
    _one_error(k("cluster", "create"), f'error: a cluster already exists at "{k.path}"')
    _one_error(k("cluster", "create", "--nodes", "1", "--bare"), f'error: a cluster already exists at "{k.path}"')
    assert k.path.read_bytes() == before


def test_cluster_delete_deletes_only_a_k8semu_log(tmp_path, capsys):
    other = tmp_path / "notes.txt"
    other.write_text("precious\n")
    _one_error(Kubectl(other, capsys)("cluster", "delete"),
               f'error: --cluster {other}: not a k8semu log (no "format": "k8semu-log" header): not deleted')
    assert _tree(tmp_path) == {"notes.txt": b"precious\n"}


def test_cluster_create_config_that_cannot_be_read(tmp_path, capsys):
    k = Kubectl(tmp_path / "c.log", capsys)
    _one_error(k("cluster", "create", "--config", str(tmp_path)), f"error: {tmp_path}: is a directory")
    missing = tmp_path / "missing.yaml"
    _one_error(k("cluster", "create", "--config", str(missing)), f"error: {missing}: no such file or directory")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00nodes")
    _one_error(k("cluster", "create", "--config", str(binary)), f"error: {binary}: not UTF-8 text")
    assert not (tmp_path / "c.log").exists()


def test_logs_named_on_the_command_line_that_cannot_be_read(k, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    missing = tmp_path / "missing.log"
    before = k.path.read_bytes()
    _one_error(k("diff", "--against", str(d), "--to", "5"),
               f"error: --against {d}: is a directory, not a cluster log file")
    _one_error(k("diff", "--against", str(missing)), f"error: --against {missing}: no such file or directory")
    _one_error(k("bisect", str(d), "--until", "deployment/web available<2"),
               f"error: {d}: is a directory, not a cluster log file")
    _one_error(k("bisect", str(missing), "--until", "deployment/web available<2"),
               f"error: {missing}: no such file or directory")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _one_error(k("diff", "--against", str(fifo)), f"error: --against {fifo}: is a special file, not a cluster log file")
    _one_error(k("replay", str(d)), f"error: {d}: is a directory")  # main()'s one handler of OSError
    assert k.path.read_bytes() == before


@pytest.mark.parametrize("source", ["audit", "simkube"])
def test_import_inputs_and_outputs_that_cannot_be_used(tmp_path, capsys, source):
    k = Kubectl(tmp_path / "unused.log", capsys)
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "out.log"
    _one_error(k("import", source, str(d), "--out", str(out)), f"error: {d}: is a directory")
    missing = tmp_path / "missing.json"
    _one_error(k("import", source, str(missing), "--out", str(out)), f"error: {missing}: no such file or directory")
    src = tmp_path / "in.json"
    src.write_text("{}\n")
    _one_error(k("import", source, str(src), "--out", str(d)),
               f"error: {d} is a directory: give the path of a file to write")
    _one_error(k("import", source, str(src), "--out", str(tmp_path / "nodir" / "o.log")),
               f"error: directory {tmp_path / 'nodir'} does not exist")
    assert _tree(tmp_path) == {"d": None, "in.json": b"{}\n"}


def test_os_error_text_is_a_sentence_naming_the_file():
    assert os_error_text(PermissionError(13, "Permission denied", "/x/y")) == "/x/y: permission denied"
    assert os_error_text(IsADirectoryError(21, "Is a directory", "/tmp")) == "/tmp: is a directory"
    assert os_error_text(OSError(18, "Invalid cross-device link", "/a", None, "/b")) == (
        "/a -> /b: invalid cross-device link")
    assert os_error_text(OSError(28, "No space left on device")) == "no space left on device"
    assert os_error_text(FileNotFoundError('no cluster at "x"')) == 'no cluster at "x"'  # k8semu's own words


# --------------------------------------------------------------------------- permissions

_RUNNER = r"""
import contextlib, io, json, sys, traceback
from k8semu.cli.main import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except BaseException:
            traceback.print_exc(file=err)
            rc = "raised"
    results.append([rc, out.getvalue().splitlines(), err.getvalue().splitlines()])
print(json.dumps(results))
"""


def _unprivileged_prefix() -> list[str]:
    """How to run a process that file permissions apply to (skips the test when there is none)."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    if shutil.which("setpriv") is None:
        pytest.skip("root, and no setpriv to drop CAP_DAC_OVERRIDE")
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"root, and setpriv cannot drop CAP_DAC_OVERRIDE: {probe.stderr.decode().strip()}")
    return prefix


def _run_unprivileged(*argvs: list[str]) -> list[tuple[int, list[str], list[str]]]:
    """Run each k8semu command line in one subprocess without the power to ignore permissions."""
    prefix = _unprivileged_prefix()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                                     os.environ.get("PYTHONPATH")]))}
    env.pop("K8SEMU_CLUSTER", None)
    p = subprocess.run([*prefix, sys.executable, "-c", _RUNNER, json.dumps([[str(a) for a in v] for v in argvs])],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    return [tuple(r) for r in json.loads(p.stdout)]


@pytest.fixture
def locked_down(tmp_path):
    """Paths with permissions taken away; given back afterwards (so that they can be removed)."""
    made: list[Path] = []

    def chmod(path: Path, mode: int) -> Path:
        path.chmod(mode)
        made.append(path)
        return path

    yield chmod
    for path in reversed(made):
        path.chmod(stat.S_IRWXU)


def test_a_cluster_log_without_permission(base, tmp_path, locked_down):
    unreadable = tmp_path / "unreadable.log"
    shutil.copy(base, unreadable)
    read_only = tmp_path / "read-only.log"
    shutil.copy(base, read_only)
    locked_down(unreadable, 0)
    locked_down(read_only, 0o444)
    ro_dir = tmp_path / "ro"
    ro_dir.mkdir()
    in_ro = ro_dir / "cluster.log"
    shutil.copy(base, in_ro)
    locked_down(ro_dir, 0o555)
    closed = tmp_path / "closed"
    closed.mkdir()
    shutil.copy(base, closed / "cluster.log")
    locked_down(closed, 0)
    before = {p: p.read_bytes() for p in (unreadable, read_only, in_ro)}
    results = _run_unprivileged(
        ["--cluster", unreadable, "get", "pods"],
        ["--cluster", unreadable, "apply", "-f", WEB],
        ["--cluster", unreadable, "cluster", "info"],
        ["--cluster", unreadable, "cluster", "delete"],
        ["--cluster", read_only, "apply", "-f", WEB],
        ["--cluster", read_only, "get", "deployment", "web", "-o", "name"],
        ["--cluster", in_ro, "scale", "deployment", "web", "--replicas", "3"],
        ["--cluster", ro_dir / "new.log", "cluster", "create"],
        ["--cluster", ro_dir / "sub" / "new.log", "apply", "-f", WEB],
        ["--cluster", closed / "cluster.log", "get", "pods"],
        ["--cluster", closed / "cluster.log", "cluster", "create"],
    )
    want = [
        f"error: --cluster {unreadable}: permission denied",
        f"error: --cluster {unreadable}: permission denied",
        f"error: --cluster {unreadable}: permission denied",
        f"error: --cluster {unreadable}: permission denied",
        f"error: --cluster {read_only}: permission denied",
        None,
        f"error: --cluster {in_ro}: cannot create its lock file {in_ro}.lock: permission denied",
        f"error: --cluster {ro_dir / 'new.log'}: cannot create its lock file {ro_dir / 'new.log'}.lock: "
        f"permission denied",
        f"error: --cluster {ro_dir / 'sub' / 'new.log'}: {ro_dir / 'sub'}: permission denied",
        f"error: --cluster {closed / 'cluster.log'}: permission denied",
        f"error: --cluster {closed / 'cluster.log'}: permission denied",
    ]
    for result, line in zip(results, want):
        if line is None:
            assert result == (0, ["deployment.apps/web"], []), result
        else:
            assert result == (1, [], [line]), result
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in ro_dir.iterdir()) == ["cluster.log"]


def test_inputs_and_outputs_without_permission(k, tmp_path, locked_down):
    unreadable = tmp_path / "web.yaml"
    shutil.copy(WEB, unreadable)
    locked_down(unreadable, 0)
    closed = tmp_path / "manifests"
    closed.mkdir()
    shutil.copy(WEB, closed / "web.yaml")
    locked_down(closed, 0)
    half = tmp_path / "half"
    half.mkdir()
    shutil.copy(WEB, half / "web.yaml")
    locked_down(half / "web.yaml", 0)
    audit = tmp_path / "audit.json"
    audit.write_text('{"apiVersion":"audit.k8s.io/v1","kind":"Event","level":"RequestResponse","auditID":"1",'
                     '"stage":"ResponseComplete","verb":"get","objectRef":{"resource":"pods","namespace":"default",'
                     '"name":"p","apiVersion":"v1"},"user":{"username":"a"},"responseStatus":{"code":200},'
                     '"stageTimestamp":"2025-01-01T00:00:00Z"}\n')
    secret_audit = tmp_path / "secret.json"
    shutil.copy(audit, secret_audit)
    locked_down(secret_audit, 0)
    ro_dir = tmp_path / "ro"
    ro_dir.mkdir()
    locked_down(ro_dir, 0o555)
    config = tmp_path / "config.yaml"
    config.write_text("nodes: []\n")
    locked_down(config, 0)
    before = k.path.read_bytes()
    results = _run_unprivileged(
        ["--cluster", k.path, "apply", "-f", unreadable],
        ["--cluster", k.path, "apply", "-f", closed],
        ["--cluster", k.path, "apply", "-f", half],
        ["import", "audit", secret_audit, "--out", tmp_path / "a.log"],
        ["import", "audit", audit, "--out", ro_dir / "a.log"],
        ["--cluster", tmp_path / "new.log", "cluster", "create", "--config", config],
        ["replay", k.path, "--until", "1", "--out", ro_dir / "r.log"],
    )
    assert results == [
        (1, [], [f"error: open {unreadable}: permission denied"]),
        (1, [], [f'error: error reading "{closed}": open {closed}: permission denied']),
        (1, [], [f"error: open {half / 'web.yaml'}: permission denied"]),
        (1, [], [f"error: {secret_audit}: permission denied"]),
        (1, [], [f"error: cannot write {ro_dir / 'a.log'}: permission denied"]),
        (1, [], [f"error: {config}: permission denied"]),
        (1, [], [f"error: cannot write {ro_dir / 'r.log'}: permission denied"]),  # before any replay
    ]
    assert k.path.read_bytes() == before
    assert list(ro_dir.iterdir()) == [] and not (tmp_path / "a.log").exists() and not (tmp_path / "new.log").exists()


# --------------------------------------------------------------------------- last-applied-configuration

# kubectl 1.32's text, captured from `kubectl apply -f` against `k8semu serve` (`kubectl get … -o
# jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}'`)
KUBECTL_WEB_DEPLOYMENT = (
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},'
    '"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},'
    '"spec":{"containers":[{"image":"nginx:1.30-alpine","name":"nginx","ports":[{"containerPort":80,"name":"http"}],'
    '"readinessProbe":{"httpGet":{"path":"/","port":"http"},"initialDelaySeconds":2,"periodSeconds":5},'
    '"resources":{"limits":{"memory":"128Mi"},"requests":{"cpu":"50m","memory":"64Mi"}}}]}}}}\n')
KUBECTL_WEB_SERVICE = (
    '{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"name":"web","namespace":"default"},'
    '"spec":{"ports":[{"name":"http","port":80,"targetPort":"http"}],"selector":{"app":"web"}}}\n')

MANIFESTS = """\
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
  annotations:
    note: "a <b> & c"
rules:
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get"]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: team
  labels:
    app: web
  annotations:
    owner: "\u00e9 \u00fc <x> & y"
    z-last: "1"
    a-first: "2"
data:
  float: "1.0"
  text: "line1\\nline2\\ttab \\u2028 sep"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg2
  annotations: {}
data: {}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg3
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"bogus":true}'
    keep: "yes"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nums
  namespace: team
spec:
  replicas: 1.0
  progressDeadlineSeconds: 600
  selector:
    matchLabels: {app: nums}
  template:
    metadata:
      labels: {app: nums}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
        - name: c
          image: busybox
          command: ["sleep", "3600"]
          resources:
            requests:
              cpu: 0.5
              memory: 100000000
"""
KUBECTL_TEXTS = {
    "team": '{"apiVersion":"v1","kind":"Namespace","metadata":{"annotations":{},"name":"team"}}\n',
    "reader": ('{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"annotations":'
               '{"note":"a \\u003cb\\u003e \\u0026 c"},"name":"reader"},"rules":[{"apiGroups":[""],"resources":'
               '["pods"],"verbs":["get"]}]}\n'),
    "cfg": ('{"apiVersion":"v1","data":{"float":"1.0","text":"line1\\nline2\\ttab \\u2028 sep"},"kind":"ConfigMap",'
            '"metadata":{"annotations":{"a-first":"2","owner":"\u00e9 \u00fc \\u003cx\\u003e \\u0026 y","z-last":"1"},'
            '"labels":{"app":"web"},"name":"cfg","namespace":"team"}}\n'),
    "cfg2": ('{"apiVersion":"v1","data":{},"kind":"ConfigMap","metadata":{"annotations":{},"name":"cfg2",'
             '"namespace":"default"}}\n'),
    "cfg3": ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"keep":"yes"},"name":"cfg3",'
             '"namespace":"default"}}\n'),
    "nums": ('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"nums",'
             '"namespace":"team"},"spec":{"progressDeadlineSeconds":600,"replicas":1,"selector":{"matchLabels":'
             '{"app":"nums"}},"template":{"metadata":{"labels":{"app":"nums"}},"spec":{"containers":[{"command":'
             '["sleep","3600"],"image":"busybox","name":"c","resources":{"requests":{"cpu":0.5,"memory":100000000}}}],'
             '"terminationGracePeriodSeconds":30}}}}\n'),
}
# numbers as Go writes them (kubectl apply --dry-run=client -o jsonpath=…)
FLOATS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: floats
spec:
  replicas: 1
  selector:
    matchLabels: {app: f}
  template:
    metadata:
      labels: {app: f}
    spec:
      containers:
        - name: c
          image: busybox
          resources:
            requests: {cpu: 0.00001, memory: 1e-7}
            limits: {cpu: 1.5e-7, memory: 12345678901234567890}
          ports:
            - containerPort: 1e3
              hostPort: 2.0E+3
          env:
            - {name: A, value: "x"}
            - {name: BIG, value: "1e21"}
      terminationGracePeriodSeconds: 1e21
      activeDeadlineSeconds: 1.25e+21
"""
KUBECTL_FLOATS = (
    '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"floats","namespace":"default"},'
    '"spec":{"replicas":1,"selector":{"matchLabels":{"app":"f"}},"template":{"metadata":{"labels":{"app":"f"}},'
    '"spec":{"activeDeadlineSeconds":1.25e+21,"containers":[{"env":[{"name":"A","value":"x"},{"name":"BIG",'
    '"value":"1e21"}],"image":"busybox","name":"c","ports":[{"containerPort":1000,"hostPort":2000}],"resources":'
    '{"limits":{"cpu":1.5e-7,"memory":12345678901234567000},"requests":{"cpu":0.00001,"memory":1e-7}}}],'
    '"terminationGracePeriodSeconds":1e+21}}}}\n')


def _last_applied(k: Kubectl, resource: str, name: str, namespace: str | None = "default") -> str:
    """The annotation as stored (read from the API: a CLI line would split at a U+2028)."""
    c = k.api()
    try:
        obj = c.api.get(resource, name, namespace=namespace)
    finally:
        c.close()
    return obj["metadata"]["annotations"][LAST_APPLIED]


def _texts(path: Path, namespace: str = "default") -> list[str]:
    """What ``k8semu apply`` writes for each document of ``path``, in order (``namespace`` for the
    namespaced ones that name none, as ``-n``)."""
    from k8semu.api.manifest import resource_for

    out = []
    for doc in load_manifests(path):
        info = resource_for(doc)
        ns = (doc.obj["metadata"].get("namespace") or namespace) if info.namespaced else None
        out.append(with_last_applied(doc.obj, ns)["metadata"]["annotations"][LAST_APPLIED])
    return out


def test_apply_writes_kubectls_last_applied_text_byte_for_byte(k):
    assert _last_applied(k, "deployments", "web") == KUBECTL_WEB_DEPLOYMENT
    assert _last_applied(k, "services", "web") == KUBECTL_WEB_SERVICE
    assert k("apply", "-f", WEB, "-q") == (0, ["deployment.apps/web unchanged", "service/web unchanged"], [])
    assert _last_applied(k, "deployments", "web") == KUBECTL_WEB_DEPLOYMENT


def test_last_applied_text_of_namespaces_annotations_and_numbers(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(MANIFESTS, encoding="utf-8")
    assert _texts(path) == list(KUBECTL_TEXTS.values())
    floats = tmp_path / "floats.yaml"
    floats.write_text(FLOATS)
    assert _texts(floats) == [KUBECTL_FLOATS]
    other = '"namespace":"other"'  # kubectl apply -n other
    assert _texts(Path(WEB), namespace="other") == [KUBECTL_WEB_DEPLOYMENT.replace('"namespace":"default"', other),
                                                    KUBECTL_WEB_SERVICE.replace('"namespace":"default"', other)]


def test_apply_after_kubectl_and_kubectl_after_apply_is_unchanged(tmp_path, capsys):
    k = Kubectl(tmp_path / "c.log", capsys)
    assert k("cluster", "create", "--nodes", "1", "--bare")[0] == 0
    path = tmp_path / "m.yaml"
    path.write_text(MANIFESTS, encoding="utf-8")
    rc, out, err = k("apply", "-f", str(path), "-q", "--for", "1s")
    assert (rc, err) == (0, []), err
    for name, want in KUBECTL_TEXTS.items():
        target = {"team": ("namespaces", "team", None), "reader": ("clusterroles", "reader", None),
                  "cfg": ("configmaps", "cfg", "team"), "nums": ("deployments", "nums", "team")}.get(
            name, ("configmaps", name, "default"))
        assert _last_applied(k, *target) == want, name
    # the text is kubectl's, so whichever tool applied first, the other's next apply is "unchanged"
    assert k("apply", "-f", str(path), "-q") == (0, [
        "namespace/team unchanged", "clusterrole.rbac.authorization.k8s.io/reader unchanged",
        "configmap/cfg unchanged", "configmap/cfg2 unchanged", "configmap/cfg3 unchanged",
        "deployment.apps/nums unchanged"], [])


def test_an_older_k8semu_text_is_brought_to_kubectls_once(k):
    old = json.dumps(json.loads(KUBECTL_WEB_SERVICE) | {"metadata": {"name": "web"}},
                     separators=(",", ":"), sort_keys=True) + "\n"
    assert k("annotate", "service", "web", "--overwrite", f"{LAST_APPLIED}={old}")[0] == 0
    assert k("apply", "-f", WEB, "-q")[1] == ["deployment.apps/web unchanged", "service/web configured"]
    assert _last_applied(k, "services", "web") == KUBECTL_WEB_SERVICE
    assert k("apply", "-f", WEB, "-q")[1] == ["deployment.apps/web unchanged", "service/web unchanged"]
