"""Re-execution: session marks, verified replay, --until, fork, and bad input (k8semu.timeline.rerun)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from k8semu.cli.main import main
from k8semu.sim.cluster import Cluster
from k8semu.store import EventLog, LogFormatError
from k8semu.timeline import fork, open_log, replay, sessions_of

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.25", ports: [{containerPort: 80}]}]
"""

EXTRA = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: extra}
data: {k: v}
"""


def k(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("rp")
    (d / "web.yaml").write_text(WEB)
    (d / "extra.yaml").write_text(EXTRA)
    path = d / "cluster.log"
    for argv in (["apply", "-f", d / "web.yaml"], ["scale", "deployment", "web", "--replicas", "3"],
                 ["node", "stop", "node-1"], ["advance", "30s"]):
        assert main(["--cluster", str(path), *map(str, argv)]) == 0
    return path


def test_sessions_are_marked_in_the_log(recorded):
    log = open_log(recorded)
    sessions = sessions_of(log)
    assert len(sessions) == 4
    assert sessions[0].start["rng"] == "create" and sessions[1].start["rng"] == "reopen"
    assert sessions[3].start["for"] == 30.0
    assert sessions[3].end["t"] - sessions[3].start["t"] == pytest.approx(30.0)
    assert all(s.end_rev >= s.start_rev for s in sessions)
    # the node-stop fault is an input like any user write
    assert [r.key for r in sessions[2].inputs] == ["/registry/configmaps/kube-system/k8semu-machines"]


def test_replay_is_identical_record_by_record(capsys, recorded):
    log = open_log(recorded)
    res = replay(log)
    assert res.identical and res.records == log.revision
    code, out, _ = k(capsys, "replay", recorded)
    assert code == 0 and out.startswith(f"identical ({log.revision} records)")


def test_replay_reports_the_first_divergence(capsys, recorded, tmp_path):
    lines = recorded.read_bytes().splitlines(keepends=True)
    # edit one component output: the scheduler's binding of the first pod goes elsewhere
    for i, line in enumerate(lines):
        if b'"actor":"default-scheduler"' in line and b'"/registry/pods/default/' in line:
            rec = orjson.loads(line)
            node = rec["obj"]["spec"]["nodeName"]
            lines[i] = line.replace(f'"nodeName":"{node}"'.encode(), b'"nodeName":"node-9"')
            rev = rec["rev"]
            break
    edited = tmp_path / "edited.log"
    edited.write_bytes(b"".join(lines))
    code, out, _ = k(capsys, "replay", edited)
    assert code == 1
    assert out.splitlines()[0] == f"diverged at revision {rev}: a different object"
    assert "by default-scheduler" in out
    assert f"~ spec.nodeName: node-9 → {node}" in out


def test_replay_until_leaves_a_cluster_file(capsys, recorded, tmp_path):
    log = open_log(recorded)
    scale = sessions_of(log)[1]
    out_path = tmp_path / "past.log"
    code, out, _ = k(capsys, "replay", recorded, "--until", scale.start_rev, "--out", out_path)
    assert code == 0 and f"wrote {out_path}" in out
    past = EventLog.open(out_path, read_only=True)
    assert past.revision == scale.start_rev
    code, out, _ = k(capsys, "--cluster", out_path, "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}")
    assert (code, out) == (0, "2")


def test_fork_applies_other_manifests_and_continues(capsys, recorded, tmp_path):
    log = open_log(recorded)
    at = sessions_of(log)[1].start_rev
    new = tmp_path / "fork.log"
    code, out, _ = k(capsys, "replay", recorded, "--fork-at", at, "--out", new, "-f", _extra(tmp_path))
    assert code == 0 and f"forked into {new}" in out
    forked = open_log(new)
    assert forked.get("/registry/configmaps/default/extra") is not None
    assert forked.get("/registry/deployments.apps/default/web").object["spec"]["replicas"] == 3
    assert replay(forked).identical  # a fork is an ordinary, replayable log


def _extra(tmp_path):
    p = tmp_path / "extra.yaml"
    p.write_text(EXTRA)
    return p


def test_fork_can_drop_a_recorded_fault(recorded, tmp_path):
    log = open_log(recorded)
    fault = sessions_of(log)[2].inputs[0].revision
    prefix, n = fork(log, sessions_of(log)[2].start_rev, tmp_path / "nofault.log", skip=frozenset({fault}))
    assert prefix.identical and n > 0
    forked = open_log(tmp_path / "nofault.log")
    assert forked.get("/registry/configmaps/kube-system/k8semu-machines") is None
    # node-1's kubelet kept running through the later session: its Lease was renewed there
    lease = forked.get("/registry/leases.coordination.k8s.io/kube-node-lease/node-1")
    assert lease.actor == "kubelet/node-1" and lease.time > sessions_of(log)[3].start["t"]


def test_a_fork_inside_an_advance_runs_to_its_recorded_end(capsys, recorded, tmp_path):
    # README: fork 2m into a 5m advance, then compare both clusters at 5m: the fork
    # must run on to where the advance ended, not stop at the fork point
    log = open_log(recorded)
    adv = sessions_of(log)[3]
    at = next(r.revision for r in log.records(adv.start_rev) if r.time >= adv.start["t"] + 10)
    new = tmp_path / "fork.log"
    code, out, _ = k(capsys, "replay", recorded, "--fork-at", at, "--out", new, "-f", _extra(tmp_path))
    assert code == 0, out
    forked = open_log(new)
    assert forked.get("/registry/configmaps/default/extra") is not None
    assert forked.marks[-1]["t"] == adv.end["t"]  # 30 s after the advance began, as recorded
    code, out, err = k(capsys, "--cluster", recorded, "diff", "--against", new, "--brief")
    assert code == 0, err
    assert "+ default/configmap/extra" in out


def test_bad_logs_are_one_line_errors(capsys, recorded, tmp_path):
    lines = recorded.read_bytes().splitlines(keepends=True)
    newer = tmp_path / "newer.log"
    hdr = orjson.loads(lines[0])
    newer.write_bytes(orjson.dumps({**hdr, "version": 2}) + b"\n" + b"".join(lines[1:]))
    code, _, err = k(capsys, "replay", newer)
    assert code == 1 and err.count("\n") == 1
    assert "log format version 2 is newer than this k8semu reads (1)" in err
    damaged = tmp_path / "damaged.log"
    damaged.write_bytes(b"".join(lines[:5]) + b'{"rev":5,"t":0.0}\n' + b"".join(lines[5:]))
    code, _, err = k(capsys, "replay", damaged)
    assert code == 1 and f"{damaged}:6: damaged line" in err and err.count("\n") == 1
    code, _, err = k(capsys, "replay", recorded, "--until", "999999", "--out", tmp_path / "x.log")
    assert code == 1 and "revision 999999 is outside the log" in err
    assert not (tmp_path / "x.log").exists()
    unknown = tmp_path / "unknown.log"
    unknown.write_bytes(b"".join(lines[:3]) + b'{"type":"NOPE","rev":2}\n' + b"".join(lines[3:]))
    with pytest.raises(LogFormatError, match="unknown line type 'NOPE'"):
        EventLog.open(unknown, read_only=True)


def test_a_log_without_sessions_cannot_be_replayed(capsys, tmp_path):
    log = EventLog(path=tmp_path / "bare.log", header={"seed": 0, "cluster": {}})
    log.create("/registry/namespaces/x", {"metadata": {"name": "x"}}, "user:admin")
    log.close()
    code, _, err = k(capsys, "replay", tmp_path / "bare.log")
    assert code == 1 and "no session marks" in err


def test_a_pod_the_user_created_replays_identically(capsys, tmp_path):
    # admission names the pod's token volume with a draw from the API server's RNG; the
    # replay re-sends the recorded pod (volume included) and must still make that draw, or
    # the scheduler's tie-break among three equal workers picks another node
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: crasher}\nspec:\n  containers:\n"
        "  - {name: app, image: 'busybox:1.37', command: [sh, -c, 'sleep 2; exit 1']}\n")
    path = tmp_path / "cluster.log"
    for argv in (["cluster", "create"], ["create", "-f", tmp_path / "pod.yaml"]):
        assert main(["--cluster", str(path), *map(str, argv)]) == 0
    capsys.readouterr()
    code, out, err = k(capsys, "replay", path)
    assert code == 0 and out.startswith("identical ("), out + err


# ---------------------------------------------------------------------- commands that wait
LAB = Path(__file__).resolve().parents[1] / "manifests" / "web.yaml"
PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 4
  selector: {matchLabels: {app: web}}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The default cluster (kubeadm's kube-system, 3 workers) with the lab's Deployment, scaled to 4
    replicas, and Service, as ``k8semu apply -f manifests/web.yaml`` makes it."""
    d = tmp_path_factory.mktemp("lab")
    (d / "pdb.yaml").write_text(PDB)
    path = d / "cluster.log"
    for argv in (["apply", "-f", LAB, "-q"], ["scale", "deployment", "web", "--replicas", "4"]):
        assert main(["--cluster", str(path), *map(str, argv)]) == 0
    return path


def _web_pod(path):
    """``pod/NAME`` of a web pod, one on node-1 if there is one."""
    c = Cluster.open(path, read_only=True)
    try:
        pods = c.api.list("pods", namespace="default", label_selector="app=web")["items"]
        on = [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == "node-1"]
        return "pod/" + sorted(on or [p["metadata"]["name"] for p in pods])[0]
    finally:
        c.close()


# Each sequence: the commands (a callable argument is computed from the cluster file just
# before; {dir} is the lab's directory, {web} its manifest) and the exit codes wanted.
# Together they cover every mutating command, and each command that waits inside its
# session (drain's evict-and-poll loop, wait, rollout status, delete's and replace
# --force's wait for deletion).
WAITING_SEQUENCES = {
    # the reported case: the drain's one-second polls used to reorder the components (at revision 508)
    "drain": [(["set", "image", "deployment/web", "nginx=nginx:1.31"], 0), (["rollout", "undo", "deployment/web"], 0),
              (["delete", _web_pod], 0), (["cordon", "node-1"], 0), (["drain", "node-1", "--ignore-daemonsets"], 0),
              (["uncordon", "node-1"], 0)],
    # evictions refused by a PodDisruptionBudget, retried every 5 s until --timeout
    "drain-budget": [(["apply", "-f", "{dir}/pdb.yaml", "-q"], 0),
                     (["drain", "node-1", "--ignore-daemonsets", "--timeout", "7s"], 1),
                     (["delete", "pdb", "web"], 0), (["drain", "node-1", "--ignore-daemonsets"], 0)],
    "wait": [(["scale", "deployment", "web", "--replicas", "6", "--for", "0s"], 0),
             (["wait", "--for=jsonpath={.status.readyReplicas}=6", "deployment/web", "--timeout=60s"], 0),
             (["wait", "--for=delete", _web_pod, "--timeout=3s"], 1)],
    "rollout": [(["set", "image", "deployment/web", "nginx=nginx:1.31", "--for", "0s"], 0),
                (["rollout", "status", "deployment/web"], 0), (["rollout", "pause", "deployment/web"], 0),
                (["rollout", "resume", "deployment/web"], 0),
                (["rollout", "restart", "deployment/web", "--for", "0s"], 0),
                (["rollout", "status", "deployment/web", "--timeout", "2s"], 1)],
    "delete-replace": [(["delete", _web_pod, "--grace-period", "3"], 0), (["replace", "--force", "-f", "{web}"], 0),
                       (["patch", "deployment", "web", "-p", '{"spec":{"replicas":3}}'], 0),
                       (["label", "deployment", "web", "tier=front"], 0), (["annotate", "pods", "--all", "a=b"], 0)],
    "create-nodes": [(["create", "deployment", "x", "--image=nginx"], 0), (["create", "namespace", "team"], 0),
                     (["create", "job", "once", "--image=busybox", "--", "true"], 0),
                     (["taint", "nodes", "node-2", "k=v:NoExecute"], 0), (["node", "stop", "node-3", "--for", "1m"], 0),
                     (["node", "start", "node-3"], 0), (["advance", "10s"], 0), (["delete", "-f", "{web}"], 0)],
}


@pytest.mark.parametrize("name", list(WAITING_SEQUENCES))
def test_every_command_replays_identically(capsys, lab, tmp_path, name):
    path = tmp_path / "cluster.log"
    path.write_bytes(lab.read_bytes())
    for argv, want in WAITING_SEQUENCES[name]:
        argv = [a(path) if callable(a) else a.replace("{dir}", str(lab.parent)).replace("{web}", str(LAB))
                for a in argv]
        code, out, err = k(capsys, "--cluster", path, *argv)
        assert code == want, (argv, out, err)
        if argv[0] == "drain" and want == 0:
            assert out.splitlines()[-1] == "node/node-1 drained"
    code, out, err = k(capsys, "replay", path)
    assert code == 0 and out.startswith("identical ("), out + err


def test_the_waits_are_in_the_log_and_an_unknown_one_is_a_one_line_error(capsys, lab, tmp_path):
    path = tmp_path / "cluster.log"
    path.write_bytes(lab.read_bytes())
    code, out, _ = k(capsys, "--cluster", path, "delete", "pod", "--all", "--grace-period", "2")
    assert code == 0
    session = sessions_of(open_log(path))[-1]
    assert [w["op"] for w in session.waits] == ["until"] and session.waits[0]["met"] is True
    # a replay --until inside the session keeps the wait and ends the cut session
    cut = tmp_path / "cut.log"
    at = session.waits[0]["rev"]
    assert k(capsys, "replay", path, "--until", at, "--out", cut)[0] == 0
    last = sessions_of(open_log(cut))[-1]
    assert last.waits == session.waits and last.end["cut"] is True and last.end["rev"] == at
    lines = path.read_bytes().splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if b'"event":"wait"' in line)
    lines[i] = lines[i].replace(b'"op":"until"', b'"op":"nap"')
    newer = tmp_path / "newer.log"
    newer.write_bytes(b"".join(lines))
    code, out, err = k(capsys, "replay", newer)
    assert code == 1 and err.count("\n") == 1 and "a command's wait of an unknown kind 'nap'" in err


WIDGETS = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1beta1
      served: true
      storage: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {color: {type: string}}}
"""

OLD_WIDGET = """\
apiVersion: example.com/v1beta1
kind: Widget
metadata: {name: w}
spec: {color: green, anything: [1, 2]}
"""


def test_a_custom_object_written_through_another_version_replays(capsys, tmp_path):
    # stored in v1 with a field only v1beta1's schema keeps: the replay must make the request
    # through v1beta1 again (v1 refuses the field), as the user did
    path = tmp_path / "c.log"
    (tmp_path / "crd.yaml").write_text(WIDGETS)
    (tmp_path / "w.yaml").write_text(OLD_WIDGET)
    assert main(["--cluster", str(path), "apply", "-f", str(tmp_path / "crd.yaml"), "-q"]) == 0
    assert main(["--cluster", str(path), "apply", "-f", str(tmp_path / "w.yaml"), "-q"]) == 0
    capsys.readouterr()
    stored = open_log(path).get("/registry/widgets.example.com/default/w").object
    assert stored["apiVersion"] == "example.com/v1" and stored["spec"]["anything"] == [1, 2]
    # its manager wrote v1beta1, as its managedFields entry says (upstream records the request's version)
    assert [e["apiVersion"] for e in stored["metadata"]["managedFields"]] == ["example.com/v1beta1"]
    code, out, _ = k(capsys, "replay", path)
    assert code == 0 and out.startswith("identical ("), out
