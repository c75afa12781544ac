"""How long a k8semu command lets the cluster run, and what ``apply``'s summary then says.

A command that changes the cluster runs it until it settles, at most for the settle limit
(10 minutes of virtual time), or for exactly ``--for DURATION``. The summary of ``apply`` must
describe the state reached honestly: a workload its controller has not synced yet is not
``0/0 ready``, a rollout under way is not converged, and what is still on its way when the run
ended early is marked ``..`` / ``(progressing)`` rather than ``!!``. A cluster that never settles
makes the command say so on stderr, with what is still changing, without changing its exit code.

The ``k`` fixture (a :class:`conftest.Kubectl` on a copy of the prepared lab cluster: one
control-plane node, three workers, Deployment and Service ``web``) is in ``conftest.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from k8semu.api.manifest import load_manifests, resource_for
from k8semu.cli.summary import summarize
from k8semu.sim.cluster import Cluster

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
DAEMONSET = str(MANIFESTS / "daemonset.yaml")
WEB = str(MANIFESTS / "web.yaml")

LOOPER = """\
apiVersion: v1
kind: Pod
metadata:
  name: looper
spec:
  containers:
  - name: app
    image: busybox:1.37
    command: ["sh", "-c", "while true; do echo tick; sleep 5; done"]
"""

NOT_SETTLED = re.compile(
    r"Warning: the cluster did not settle within 10m0s of virtual time \(the limit of a command; "
    r"--for DURATION runs a fixed span instead\); still changing: (.*)")


def _header(line: str) -> str:
    """``settled after 11s of virtual time (1.20s wall):`` without its numbers."""
    return re.sub(r"[0-9.]+s", "Ns", line)


# --------------------------------------------------------------------------- apply's summary

def test_apply_of_a_daemonset_reports_the_settled_state(k):
    # on this cluster the first run ends one step early (the pods created, not yet scheduled):
    # apply lets it settle again, in sessions of their own, and the log still replays identically
    rc, out, err = k("apply", "-f", DAEMONSET)
    assert (rc, err) == (0, [])
    assert out[:2] == ["daemonset.apps/node-agent created", ""]
    assert _header(out[2]) == "settled after Ns of virtual time (Ns wall):"
    assert out[3:] == ["  ok daemonset.apps/node-agent: 4/4 ready"]
    rc, out, _ = k("replay", str(k.path))
    assert rc == 0 and out[0].startswith("identical (")


def test_a_daemonset_cut_short_is_progressing_never_0_of_0(k):
    rc, out, err = k("apply", "-f", DAEMONSET, "--for", "0s")
    assert (rc, err) == (0, [])
    assert _header(out[2]) == "still changing after Ns of virtual time (Ns wall):"
    assert re.fullmatch(r"  \.\. daemonset\.apps/node-agent: 0/4 ready.* \(progressing\)", out[3]), out[3]
    assert all(line.startswith("  ..   pod/node-agent-") for line in out[4:]), out
    assert not any("0/0" in line for line in out)


def test_a_workload_its_controller_has_not_synced_says_so(tmp_path):
    cluster = Cluster.create(tmp_path / "c.log")
    try:
        doc = load_manifests(DAEMONSET)[0]
        info = resource_for(doc)
        cluster.api.create(info, doc.obj, namespace="kube-system")
        [line] = summarize(cluster.api, [(info, "kube-system", "node-agent")])
    finally:
        cluster.close()
    assert (line.ok, line.progressing, line.text) == (False, True, "not yet synced by its controller")


def test_a_daemonset_on_its_way_is_progressing_then_settled_it_is_ready_on_every_node(k):
    rc, out, _ = k("apply", "-f", DAEMONSET, "--for", "1s")
    assert rc == 0
    assert _header(out[2]) == "still changing after Ns of virtual time (Ns wall):"
    assert out[3] == "  .. daemonset.apps/node-agent: 0/4 ready (progressing)"
    pods = out[4:]
    assert len(pods) == 4 and all(
        re.fullmatch(r"  \.\.   pod/node-agent-\w{5}: Pending: containers are being created \(progressing\)", p)
        for p in pods), pods
    rc, out, err = k("apply", "-f", DAEMONSET)
    assert (rc, err) == (0, [])
    assert out[0] == "daemonset.apps/node-agent unchanged"
    assert _header(out[2]) == "settled after Ns of virtual time (Ns wall):"
    assert out[3:] == ["  ok daemonset.apps/node-agent: 4/4 ready"]


def test_a_pod_stuck_creating_shows_its_last_warning_in_the_summary(k, tmp_path):
    """A pod whose ConfigMap volume does not exist stays ContainerCreating: the summary says why, with
    the kubelet's FailedMount event (it said "containers are being created", only describe said why)."""
    manifest = tmp_path / "cm-pod.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: needs-cm\nspec:\n  containers:\n"
                        "  - name: c\n    image: busybox\n    command: [sleep, '3600']\n"
                        "    volumeMounts: [{name: cfg, mountPath: /etc/cfg}]\n"
                        "  volumes: [{name: cfg, configMap: {name: color}}]\n")
    rc, out, _ = k("apply", "-f", str(manifest))
    assert rc == 0
    assert re.fullmatch(r'  !! pod/needs-cm: Pending: FailedMount \(x\d+\): MountVolume\.SetUp failed for volume '
                        r'"cfg" : configmap "color" not found', out[-1]), out


def test_a_rollout_under_way_is_not_reported_as_converged(k, tmp_path):
    newer = tmp_path / "web.yaml"
    newer.write_text(Path(WEB).read_text().replace("image: nginx:1.30-alpine", "image: nginx:1.31-alpine"))
    rc, out, _ = k("apply", "-f", str(newer), "--for", "1s")
    assert rc == 0 and out[:3] == ["deployment.apps/web configured", "service/web unchanged", ""]
    # the two old pods are still available, but only one new one exists: not "ok 2/2 available"
    assert out[4] == "  .. deployment.apps/web: 2/2 available, 1/2 updated (progressing)"
    rc, out, _ = k("apply", "-f", str(newer))
    assert _header(out[3]) == "settled after Ns of virtual time (Ns wall):"
    assert out[4] == "  ok deployment.apps/web: 2/2 available"


def test_after_settling_what_is_stuck_stays_marked_stuck(k, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(Path(WEB).read_text().replace("image: nginx:1.30-alpine", "image: nginx:does-not-exist"))
    rc, out, _ = k("apply", "-f", str(f))
    assert rc == 0 and _header(out[3]) == "settled after Ns of virtual time (Ns wall):"
    assert out[4] == "  !! deployment.apps/web: 2/2 available, 1/2 updated"
    assert re.fullmatch(r'  !!   pod/web-\w+-\w{5}: ImagePullBackOff: Back-off pulling image "nginx:does-not-exist"',
                        out[5])


# --------------------------------------------------------------------------- the settle limit

@pytest.fixture
def looping(k, tmp_path):
    """The lab plus a pod whose container logs every 5 s forever: the cluster never settles."""
    f = tmp_path / "looper.yaml"
    f.write_text(LOOPER)
    rc, out, err = k("apply", "-f", str(f), "--for", "30s", "-q")
    assert (rc, out, err) == (0, ["pod/looper created"], [])
    return k


def test_a_command_on_a_cluster_that_never_settles_says_so_and_what_is_changing(looping):
    k = looping
    rc, out, err = k("label", "pod", "looper", "tier=demo")
    assert (rc, out) == (0, ["pod/looper labeled"])  # the exit code is the command's own
    assert len(err) == 1, err
    m = NOT_SETTLED.fullmatch(err[0])
    assert m, err[0]
    assert re.fullmatch(r"pod/looper \(kubelet/node-\d\)", m.group(1))


def test_apply_on_a_cluster_that_never_settles_warns_and_its_summary_says_still_changing(looping, tmp_path):
    k = looping
    rc, out, err = k("apply", "-f", WEB)
    assert rc == 0 and len(err) == 1 and NOT_SETTLED.fullmatch(err[0])
    assert _header(out[3]) == "still changing after Ns of virtual time (Ns wall):"
    assert out[4] == "  ok deployment.apps/web: 2/2 available"


def test_for_bounds_a_command_on_a_cluster_that_never_settles(looping):
    k = looping
    rc, out, err = k("label", "pod", "looper", "tier=demo", "--for", "20s")
    assert (rc, out, err) == (0, ["pod/looper labeled"], [])
    rc, out, err = k("annotate", "pod", "looper", "note=x")
    assert rc == 0 and len(err) == 1 and NOT_SETTLED.fullmatch(err[0])


def test_a_negative_for_is_a_one_line_error(k):
    before = k.path.read_bytes()
    assert k("label", "pod", "-l", "app=web", "x=y", "--for", "-1m") == (
        1, [], ['error: invalid duration "-1m": must not be negative'])
    assert k("apply", "-f", WEB, "--for=-5s") == (1, [], ['error: invalid duration "-5s": must not be negative'])
    assert k.path.read_bytes() == before


# --------------------------------------------------------------------------- every write settles alike

def _rolled_out(k) -> None:
    rc, out, _ = k("get", "deployment", "web")
    assert rc == 0 and out[1].split()[:4] == ["web", "2/2", "2", "2"], out
    assert k("rollout", "status", "deployment/web", "--watch=false") == (
        0, ['deployment "web" successfully rolled out'], [])


def test_set_image_returns_with_the_rollout_done(k):
    assert k("set", "image", "deployment/web", "nginx=nginx:1.31") == (
        0, ["deployment.apps/web image updated"], [])
    _rolled_out(k)


def test_patch_of_the_image_returns_with_the_rollout_done(k):
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.31"}]}}}}'
    assert k("patch", "deployment", "web", "-p", patch) == (0, ["deployment.apps/web patched"], [])
    _rolled_out(k)


def test_rollout_restart_and_undo_return_with_the_rollout_done(k):
    assert k("rollout", "restart", "deployment/web") == (0, ["deployment.apps/web restarted"], [])
    _rolled_out(k)
    assert k("rollout", "undo", "deployment/web") == (0, ["deployment.apps/web rolled back"], [])
    _rolled_out(k)


def test_delete_without_waiting_still_lets_the_cluster_settle(k):
    """``--wait=false`` only skips kubectl's wait for the objects to go: the cluster then settles as after
    any write, so the ReplicaSet's replacement is up before the command returns."""
    victim = sorted(p["metadata"]["name"] for p in k.pods())[0]
    rc, out, err = k("delete", "pod", victim, "--wait=false")
    assert (rc, out, err) == (0, [f'pod "{victim}" deleted'], [])
    rc, out, _ = k("get", "pods")
    rows = [line.split() for line in out[1:]]
    assert len(rows) == 2 and victim not in [r[0] for r in rows], out
    assert all(r[1:3] == ["1/1", "Running"] for r in rows), out


def test_deleting_a_node_runs_a_session_until_podgc_removes_its_pods_after_40s(k):
    """The Node is deleted and the cluster settles only once its pods are gone: the EndpointSlice
    controller cannot place them ("skipping Pod … Node node-2 Not Found") and retries with its 1 s,
    2 s, 4 s … back-off, as upstream, until podgc's 40 s quarantine of a deleted node's pods
    (upstream's ``quarantineTime``) ends; their ReplicaSets replace them elsewhere."""
    on_node_2 = sorted(p["metadata"]["name"] for p in k.pods() if p["spec"]["nodeName"] == "node-2")
    assert on_node_2
    start = k.cluster_time()
    assert k("delete", "node", "node-2") == (0, ['node "node-2" deleted'], [])
    assert k.cluster_time() - start >= 40
    rc, out, _ = k("get", "nodes")
    assert rc == 0 and not any(line.startswith("node-2 ") for line in out)
    rc, out, _ = k("get", "pods", "-o", "wide")
    assert rc == 0 and len(out) == 3 and not any(line.split()[6] == "node-2" for line in out[1:]), out
    assert not {line.split()[0] for line in out[1:]} & set(on_node_2)


def test_the_next_command_starts_where_the_last_one_left_virtual_time(k):
    """A run that ends quiet (no record at its last instant) still moved the clock: the next command
    goes on from there, it does not repeat the last second (``advance`` said "virtual time is now …")."""
    from k8semu.timeline import open_log

    rc, out, _ = k("advance", "95s")
    assert rc == 0
    k("scale", "deployment", "web", "--replicas=3")
    log = open_log(k.path)
    try:
        marks = [m for m in log.marks if m.get("event") in ("start", "end")]
    finally:
        log.close()
    advanced_end, scale_start = marks[-3], marks[-2]
    assert advanced_end["event"] == "end" and scale_start["event"] == "start"
    assert scale_start["t"] == advanced_end["t"]
    assert out[0].endswith(f"virtual time is now {_go(advanced_end['t'])} (revision {advanced_end['rev']})")


def _go(seconds: float) -> str:
    from k8semu.cli.durations import go_duration

    return go_duration(seconds)


def test_points_print_to_the_microsecond():
    # records serve wrote carry float noise below the microsecond; timeline/history/bisect drop it
    from k8semu.cli.durations import point_time

    assert point_time(60437153.338569616) == "16788h5m53.33857s"
    assert point_time(1.250123) == "1.250123s"  # an audit log's microseconds stay
    assert point_time(29.988) == "29.988s" and point_time(61.0) == "1m1s" and point_time(0.0) == "0s"
