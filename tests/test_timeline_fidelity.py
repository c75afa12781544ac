"""What a user sees of the past: diff --against and replaced objects, trace of a recreated pod,
bisect's time/absent/indexed/bad conditions, one rule for points (k8semu.timeline)."""

from __future__ import annotations

import pytest

from k8semu.cli.main import main
from k8semu.cli.durations import go_duration
from k8semu.timeline import PointError, cluster_diff, open_log, resolve_point, trace_pod
from k8semu.timeline.bisect import ConditionError, bisect_log, parse_condition, parse_path, path_value
from k8semu.timeline.view import revision_at_time, time_of

STS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: "nginx:1.25"}]
"""

PODS = """\
apiVersion: v1
kind: Pod
metadata: {name: late}
spec:
  nodeSelector: {disk: ssd}
  containers: [{name: c, image: "nginx:1.25"}]
---
apiVersion: v1
kind: Pod
metadata: {name: stuck}
spec:
  nodeSelector: {disk: nvme}
  containers: [{name: c, image: "nginx:1.25"}]
"""

EXTRA = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: extra}
data: {k: v}
"""

STS_KEY = "/registry/statefulsets.apps/default/db"
POD_KEY = "/registry/pods/default/db-0"


def k(capsys, *argv):
    """Run ``k8semu ARGV…``; (exit code, stdout lines, stderr lines)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """1 worker: a StatefulSet whose pod db-0 is deleted (and recreated) at the end; pod ``late``
    Pending 90 s until its node gets the label it selects; pod ``stuck`` Pending for good."""
    d = tmp_path_factory.mktemp("fid")
    (d / "sts.yaml").write_text(STS)
    (d / "pods.yaml").write_text(PODS)
    (d / "extra.yaml").write_text(EXTRA)
    path = d / "cluster.log"
    for argv in (["cluster", "create", "--nodes", "1", "--bare"], ["apply", "-f", d / "sts.yaml"],
                 ["apply", "-f", d / "pods.yaml"], ["advance", "90s"], ["label", "node", "node-1", "disk=ssd"],
                 ["delete", "pod", "db-0"]):
        assert main(["--cluster", str(path), *map(str, argv)]) == 0
    return path


def _adds(log, key):
    return [r for r in log.history(key) if r.type == "ADDED"]


def _user_delete(log):
    """The user's write that started db-0's deletion (its deletionTimestamp)."""
    return next(r for r in log.history(POD_KEY) if r.actor.startswith("user:"))


# ---------------------------------------------------------------------------------- diff
def test_diff_shows_a_recreated_object_as_replaced(capsys, lab):
    log = open_log(lab)
    first, second = _adds(log, POD_KEY)
    uid1, uid2 = first.object["metadata"]["uid"], second.object["metadata"]["uid"]
    label = next(r for r in log.records(0, "/registry/") if r.actor.startswith("user:") and r.key.endswith("/node-1"))
    before = label.revision - 1  # then: late scheduled (changed in place), db-0 deleted and created again
    code, out, _ = k(capsys, "--cluster", lab, "diff", "--from", before)
    assert code == 0 and out[0] == f"revision {before} → {log.revision}"
    changed = len(cluster_diff(log, before, log.revision).changed["pods"])
    assert f"pods: 0 created, 0 deleted, {changed} changed, 1 replaced" in out
    assert "  ~ default/pod/late" in out
    i = out.index("  -/+ default/pod/db-0  replaced (deleted and created again: another uid)")
    assert f"      ~ metadata.uid: {uid1} → {uid2}" in out[i + 1:]
    code, out, _ = k(capsys, "--cluster", lab, "diff", "--from", before, "--brief")
    assert "  -/+ default/pod/db-0  replaced (deleted and created again: another uid)" in out
    assert not any("metadata.uid" in line for line in out)
    d = cluster_diff(log, before, log.revision)
    assert POD_KEY in d.replaced["pods"] and POD_KEY not in d.changed.get("pods", {})
    assert "/registry/pods/default/late" in d.changed["pods"]  # changed in place: still "changed"


def test_diff_against_a_fork(capsys, lab, tmp_path):
    log = open_log(lab)
    delete = _user_delete(log)
    fork = tmp_path / "fork.log"
    # the fork: the same cluster, with a ConfigMap applied and without the user's deletion of db-0
    code, out, err = k(capsys, "replay", lab, "--fork-at", delete.revision - 1, "--skip", delete.revision,
                       "--out", fork, "-f", lab.parent / "extra.yaml")
    assert code == 0, err
    other = open_log(fork)
    code, out, err = k(capsys, "--cluster", lab, "diff", "--against", fork, "--brief")
    assert code == 0 and err == []
    assert out[0] == (f"revision {log.revision} (t={go_duration(time_of(log, log.revision))}) → {fork} "
                      f"revision {other.revision} (t={go_duration(time_of(other, other.revision))})")
    # the ConfigMap only the fork has; db-0 the fork kept, which this log deleted and created again
    assert "configmaps: 1 created, 0 deleted, 0 changed" in out and "  + default/configmap/extra" in out
    assert "  -/+ default/pod/db-0  replaced (deleted and created again: another uid)" in out
    # --to applies to both logs: before the fork point they are the same cluster
    assert time_of(log, delete.revision) > 60
    code, out, _ = k(capsys, "--cluster", lab, "diff", "--against", fork, "--to", "1m")
    rev = revision_at_time(log, 60)
    t = go_duration(time_of(log, rev))
    assert code == 0 and out == [f"revision {rev} (t={t}) → {fork} revision {rev} (t={t})", "no changes"]
    code, out, _ = k(capsys, "--cluster", lab, "diff", "--against", lab)
    assert code == 0 and out[1:] == ["no changes"]
    # one point, not a window
    code, out, err = k(capsys, "--cluster", lab, "diff", "--against", fork, "--from", "1")
    assert (code, out) == (1, []) and err == [
        "error: --from cannot be used with --against: two logs are compared at one point, given by --to "
        "(default: each log's head)"]
    code, out, err = k(capsys, "--cluster", lab, "diff", "--against", fork, "--to", "1h")
    assert code == 1 and err == [f"error: --to 1h: the log ends at revision {log.revision} "
                                 f"(virtual time {go_duration(time_of(log, log.revision))})"]


# ---------------------------------------------------------------------------------- trace
def test_trace_shows_the_latest_incarnation_and_lists_them(capsys, lab):
    log = open_log(lab)
    first, second = _adds(log, POD_KEY)
    uid1, uid2 = first.object["metadata"]["uid"], second.object["metadata"]["uid"]
    code, out, _ = k(capsys, "--cluster", lab, "trace", "pod/db-0")
    assert code == 0
    assert out[0] == ("pod default/db-0 had 2 incarnations (deleted and created again); tracing the latest "
                      "(choose with --uid UID or --at POINT):")
    assert out[1].startswith(f"    uid {uid1}  created at revision {first.revision} (t=")
    assert ", deleted at revision " in out[1]
    assert out[2] == f"  * uid {uid2}  created at revision {second.revision} (t={go_duration(second.time)})"
    step2 = next(line for line in out if line.startswith(" 2. "))
    assert f"rev {second.revision} " in step2
    # the replacement was asked for by the user's delete of the first one
    assert out[out.index(next(line for line in out if line.startswith(" 1. "))) + 1].strip().startswith(
        "pod/db-0 deleted by user:kubernetes-admin; statefulset.apps/db created a replacement")
    assert trace_pod(log, "default", "db-0")[1].revision == second.revision
    # the first one, by uid (prefix) or by a point when it existed
    for choose in (["--uid", uid1[:8]], ["--at", str(first.revision + 1)]):
        code, out, _ = k(capsys, "--cluster", lab, "trace", "pod/db-0", *choose)
        assert code == 0 and out[1].startswith(f"  * uid {uid1}")
        assert f"rev {first.revision} " in next(line for line in out if line.startswith(" 2. "))
    assert trace_pod(log, "default", "db-0", uid=uid1)[1].revision == first.revision
    code, out, err = k(capsys, "--cluster", lab, "trace", "pod/db-0", "--uid", "nope")
    assert code == 1 and out == [] and len(err) == 1
    assert err[0].startswith('error: no incarnation of pod default/db-0 has uid "nope" (there were 2: ')
    code, _, err = k(capsys, "--cluster", lab, "trace", "pod/db-0", "--at", "1")
    assert err == [f"error: pod default/db-0 did not exist yet at revision 1 (first created at revision "
                   f"{first.revision})"]
    assert k(capsys, "--cluster", lab, "trace", "pod/db-0", "--uid", uid1, "--at", "1")[2] == [
        "error: --uid and --at both choose which pod to trace: give one"]
    assert k(capsys, "--cluster", lab, "trace", "pod/db-0", "--uid", "")[2] == [
        "error: --uid is empty: expected a pod's uid (or the start of one)"]
    # a pod with one incarnation: no header
    code, out, _ = k(capsys, "--cluster", lab, "trace", "pod/late")
    assert code == 0 and out[0].startswith(" 1. ")


# ---------------------------------------------------------------------------------- bisect
def _first_after(log, t):
    """The first revision written after virtual time t."""
    return revision_at_time(log, t) + 1


@pytest.mark.parametrize("pod", ["late", "stuck"])
def test_bisect_time_condition_is_found_at_the_first_revision_in_both_modes(capsys, lab, pod):
    # late: Pending 90 s, then scheduled (false at the head); stuck: Pending at the head
    log = open_log(lab)
    created = _adds(log, f"/registry/pods/default/{pod}")[0]
    # creationTimestamp has whole seconds: the pod is 60 s old 60 s after that second
    born = int(created.time)
    want = _first_after(log, born + 60)
    assert time_of(log, want) > born + 60 >= time_of(log, want - 1)
    cond = parse_condition(f"pod/{pod} pending>60s")
    assert bisect_log(log, cond).revision == want
    assert bisect_log(log, cond, linear=True).revision == want
    for mode in ([], ["--linear"]):
        code, out, _ = k(capsys, "bisect", lab, "--until", f"pod/{pod} pending>60s", *mode)
        assert code == 0
        assert out[0].startswith(f'"pod/{pod} pending>60s" first holds at revision {want} '
                                 f"(t={go_duration(time_of(log, want))}; ")
        assert out[1].endswith("(time passing made it true: the first write since)")


def test_bisect_absent_holds_before_the_object_is_created(capsys, lab):
    log = open_log(lab)
    created = _adds(log, STS_KEY)[0]
    for linear in (False, True):
        res = bisect_log(log, parse_condition("sts/db absent"), linear=linear)
        assert (res.revision, res.at_start) == (0, True)
    code, out, err = k(capsys, "bisect", lab, "--until", "sts/db absent")
    assert (code, out) == (1, [])
    assert err == [f'error: "sts/db absent" holds from the start of the log (revision 0, before the first record) '
                   f"until revision {created.revision} (t={go_duration(created.time)}; ADDED statefulset.apps/db by "
                   f"user:kubernetes-admin), and does not hold again up to revision {log.revision} "
                   f"({err[0].rsplit('(', 1)[1]}"]
    # db-0: absent before its creation, and again when it was deleted
    deleted = next(r for r in log.history(POD_KEY) if r.type == "DELETED")
    for mode in ([], ["--linear"]):
        code, out, _ = k(capsys, "bisect", lab, "--until", "pod/db-0 absent", *mode)
        assert code == 0
        assert out[0].startswith('"pod/db-0 absent" holds from the start of the log (revision 0, before the first '
                                 f"record) until revision {_adds(log, POD_KEY)[0].revision} (t=")
        assert out[1].startswith(f'"pod/db-0 absent" holds again from revision {deleted.revision} (t=')
        assert out[2] == f"  DELETED pod/db-0 by {deleted.actor}"
    # an object that never exists: one line saying so
    code, out, err = k(capsys, "bisect", lab, "--until", "svc/nope absent")
    assert code == 1 and err == [
        f'error: "svc/nope absent" holds from the start of the log (revision 0, before the first record) to '
        f"revision {log.revision}: it never became true in between; service/nope (namespace default) never "
        f"exists in this log"]


def test_bisect_field_paths_with_list_items(capsys, lab):
    log = open_log(lab)
    added = _adds(log, POD_KEY)[0]
    ready = next(r for r in log.history(POD_KEY) if any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in r.object.get("status", {}).get("conditions", ())))
    assert parse_path(".status.conditions[0].status") == ["status", "conditions", 0, "status"]
    assert parse_path(".metadata.labels['app.kubernetes.io/name']") == ["metadata", "labels", "app.kubernetes.io/name"]
    assert path_value({"a": [{"type": "X", "v": 1}, {"type": "Ready", "v": 2}]}, parse_path(".a[Ready].v")) == 2
    assert path_value({"a": [1, 2]}, parse_path(".a[-1]")) == 2
    for cond, want in (("pod/db-0 .spec.containers[0].image=nginx:1.25", added.revision),
                       ("pod/db-0 .spec.containers[c].image=nginx:1.25", added.revision),
                       ("pod/db-0 .status.conditions[Ready].status=True", ready.revision),
                       ("pod/db-0 .metadata.labels['statefulset.kubernetes.io/pod-name']=db-0", added.revision),
                       ("sts/db .spec.template.spec.containers[0].name=c", _adds(log, STS_KEY)[0].revision)):
        code, out, err = k(capsys, "bisect", lab, "--until", cond, "--linear")
        assert code == 0 and out[0].startswith(f'"{cond}" first holds at revision {want} '), (cond, out, err)
    # a boolean field compares with true / false
    res = bisect_log(log, parse_condition("pod/db-0 .status.containerStatuses[c].ready=true"), linear=True)
    assert res.revision is not None


@pytest.mark.parametrize("cond, message", [
    ("deploymnet/web available<2",
     'condition "deploymnet/web available<2": the server doesn\'t have a resource type "deploymnet"'),
    ("sts/db .spec.replcas>=1",
     'condition "sts/db .spec.replcas>=1": StatefulSet has no field .spec.replcas (did you mean .spec.replicas?)'),
    ("sts/db .spec.replicas>two", 'condition "sts/db .spec.replicas>two": > compares numbers, and "two" is not a number'),
    ("pod/db-0 .status.phase>3",
     'condition "pod/db-0 .status.phase>3": .status.phase is a string, not a number: it cannot be compared with >'),
    ("pod/db-0 .spec.containers.image=nginx",
     'condition "pod/db-0 .spec.containers.image=nginx": .spec.containers is a list: pick an item, '
     "e.g. .spec.containers[0] or .spec.containers[NAME]"),
    ("pod/db-0 .status.conditions[0.status=True",
     'condition "pod/db-0 .status.conditions[0.status=True": unexpected "[" at character 19 of '
     '".status.conditions[0.status"'),
    ("pod/db-0 phase=Runing",
     'condition "pod/db-0 phase=Runing": unknown Pod phase "Runing" (expected Pending, Running, Succeeded, Failed, '
     "Unknown)"),
    ("sts/db pending>60s",
     'condition "sts/db pending>60s": pending>DURATION is about a Pod, not a StatefulSet (use phase=Pending for its '
     "phase)"),
    ("pod/db-0 pending>soon", 'condition "pod/db-0 pending>soon": invalid duration "soon" (expected e.g. pending>60s)'),
    ("pod/db-0 available<2", 'condition "pod/db-0 available<2": a Pod has no status.availableReplicas'),
    ("sts/db notready", 'condition "sts/db notready": notready is the Ready condition of a Node or a Pod, not of a '
                        "StatefulSet; for a StatefulSet use a counter, e.g. ready<spec"),
])
def test_bisect_bad_condition_is_a_one_line_error(capsys, lab, cond, message):
    code, out, err = k(capsys, "bisect", lab, "--until", cond)
    assert (code, out, err) == (1, [], [f"error: {message}"])
    with pytest.raises(ConditionError):
        parse_condition(cond)


def test_bisect_well_formed_condition_that_never_holds(capsys, lab):
    log = open_log(lab)
    code, out, err = k(capsys, "bisect", lab, "--until", "sts/db .spec.replicas>=5")
    assert (code, out) == (1, []) and len(err) == 1
    assert err[0].startswith(f'error: "sts/db .spec.replicas>=5" does not hold at any revision from 0 to '
                             f"{log.revision} (")
    code, out, err = k(capsys, "bisect", lab, "--until", "sts/dbb .spec.replicas>=1")
    assert code == 1 and err[0].endswith("; statefulset.apps/dbb (namespace default) never exists in this log")


# ---------------------------------------------------------------------------------- points
def test_one_rule_for_points(capsys, lab):
    log = open_log(lab)
    head, end = log.revision, go_duration(time_of(log, log.revision))
    cl = ["--cluster", lab]
    empty = [
        (cl + ["get", "pods", "--at", ""], "--at"),
        (cl + ["describe", "pod", "db-0", "--at", ""], "--at"),
        (cl + ["diff", "--from", ""], "--from"),
        (cl + ["diff", "--to", " "], "--to"),
        (cl + ["history", "pod/db-0", "--to", ""], "--to"),
        (cl + ["trace", "pod/db-0", "--at", ""], "--at"),
        (["bisect", lab, "--until", "sts/db exists", "--from", ""], "--from"),
        (["bisect", lab, "--until", "sts/db exists", "--to", ""], "--to"),
    ]
    for argv, flag in empty:
        code, out, err = k(capsys, *argv)
        assert (code, out, err) == (1, [], [f"error: {flag} is empty: expected a revision or a duration "
                                             f"(e.g. 1234 or 2m30s)"]), argv
    late = [
        (cl + ["get", "pods", "--at", "1h"], "--at"),
        (cl + ["diff", "--to", "1h"], "--to"),
        (cl + ["diff", "--from", "1h"], "--from"),
        (cl + ["history", "pod/db-0", "--from", "1h"], "--from"),
        (cl + ["trace", "pod/db-0", "--at", "1h"], "--at"),
        (["bisect", lab, "--until", "sts/db exists", "--to", "1h"], "--to"),
    ]
    for argv, flag in late:
        code, out, err = k(capsys, *argv)
        assert (code, out, err) == (1, [], [f"error: {flag} 1h: the log ends at revision {head} "
                                             f"(virtual time {end})"]), argv
    for argv in (cl + ["get", "pods", "--at", str(head + 100)], cl + ["diff", "--to", str(head + 100)],
                 cl + ["trace", "pod/db-0", "--at", str(head + 100)],
                 ["bisect", lab, "--until", "sts/db exists", "--to", str(head + 100)]):
        code, out, err = k(capsys, *argv)
        assert (code, out, err) == (1, [], [f"error: revision {head + 100} is outside the log (1..{head})"]), argv
    # the end itself is a point: by revision and by its time
    code, out, _ = k(capsys, *cl, "diff", "--from", end, "--to", str(head))
    assert code == 0 and out[0] == f"revision {head} → {head}"
    with pytest.raises(PointError, match="the point is empty"):
        resolve_point(log, "")
    with pytest.raises(PointError, match=f"^--to 1h: the log ends at revision {head} "):
        resolve_point(log, "1h", strict=True, flag="--to")
    assert resolve_point(log, "1h") == (head, 3600.0)  # a Python caller asking "as of 1h" gets the head


def test_timeline_since_until_follow_the_rule_for_points(capsys, lab):
    log = open_log(lab)
    head, end = log.revision, go_duration(time_of(log, log.revision))
    cl = ["--cluster", lab, "timeline"]
    for flag in ("--since", "--until"):
        for empty in ("", " "):  # not "no filter"
            assert k(capsys, *cl, flag, empty) == (1, [], [
                f"error: {flag} is empty: expected a revision or a duration (e.g. 1234 or 2m30s)"])
        assert k(capsys, *cl, flag, "1h") == (1, [], [
            f"error: {flag} 1h: the log ends at revision {head} (virtual time {end})"])
        assert k(capsys, *cl, flag, head + 1) == (1, [], [f"error: revision {head + 1} is outside the log (1..{head})"])
    # the end itself is a point (by revision and by its time); 0 is before the first record
    assert k(capsys, *cl, "--since", head) == (0, [], [])
    assert k(capsys, *cl, "--since", end) == (0, [], [])
    code, out, _ = k(capsys, *cl, "--until", end)
    assert code == 0 and len(out) == head and out[-1].split()[0] == str(head)
    code, out, _ = k(capsys, *cl, "--since", "0", "--limit", "2")
    assert code == 0 and [line.split()[0] for line in out] == ["1", "2"]
    assert k(capsys, *cl, "--until", "0") == (0, [], [])
    code, out, _ = k(capsys, *cl, "--since", head - 3, "--until", head - 1)
    assert code == 0 and [line.split()[0] for line in out] == [str(head - 2), str(head - 1)]


def test_open_cluster_at_follows_the_rule_for_points(lab):
    """``--at`` of get/describe/events/top/explain-scheduling (session.open_cluster_at): resolve_point,
    strictly — called without the command line's own check, an empty point is an error, not "now"."""
    import argparse

    from k8semu.cli.session import open_cluster_at
    from k8semu.timeline import PastCluster

    log = open_log(lab)
    head, end = log.revision, go_duration(time_of(log, log.revision))
    for at, message in (("", "--at is empty: expected a revision or a duration (e.g. 1234 or 2m30s)"),
                        ("1h", f"--at 1h: the log ends at revision {head} (virtual time {end})"),
                        (str(head + 1), f"revision {head + 1} is outside the log (1..{head})")):
        with pytest.raises(PointError) as e:
            open_cluster_at(argparse.Namespace(cluster=str(lab), at=at))
        assert str(e.value) == message
    past = open_cluster_at(argparse.Namespace(cluster=str(lab), at=end))
    try:
        assert isinstance(past, PastCluster) and (past.revision, past.time) == (head, time_of(log, head))
    finally:
        past.close()
    live = open_cluster_at(argparse.Namespace(cluster=str(lab), at=None))
    try:
        assert not isinstance(live, PastCluster) and live.log.revision == head
    finally:
        live.close()


# ------------------------------------------------------------------ trace: step 1 follows the uid
@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """manifests/statefulset.yaml (web-0..2): web-0 deleted twice, then web-1 and web-2 in one command."""
    from pathlib import Path

    path = tmp_path_factory.mktemp("sts3") / "cluster.log"
    manifest = Path(__file__).resolve().parents[1] / "manifests" / "statefulset.yaml"
    for argv in (["cluster", "create", "--nodes", "1"], ["apply", "-f", manifest], ["delete", "pod", "web-0"],
                 ["delete", "pod", "web-0"], ["delete", "pod", "web-1", "web-2"]):
        assert main(["--cluster", str(path), *map(str, argv)]) == 0
    return path


def _step1(out):
    """The two lines of step 1 of ``k8semu trace``'s output."""
    i = next(i for i, line in enumerate(out) if line.startswith(" 1. "))
    return out[i], out[i + 1].strip()


def _deletions(log, name):
    """The user's writes that started the deletion of each incarnation of pod ``name``, oldest first."""
    return [r for r in log.history(f"/registry/pods/default/{name}")
            if r.actor.startswith("user:") and r.object["metadata"].get("deletionTimestamp")]


def _expect_step1(line, detail, rec, name):
    assert f"t={go_duration(rec.time)} " in line and f"rev {rec.revision} " in line
    assert line.endswith("user:kubernetes-admin")
    assert detail.startswith(f"pod/{name} deleted by user:kubernetes-admin; statefulset.apps/web created a "
                             f"replacement")


def test_trace_step1_is_the_deletion_of_the_incarnation_it_replaced(capsys, web):
    log = open_log(web)
    first, second = _deletions(log, "web-0")  # of the 1st and of the 2nd incarnation
    incs = _adds(log, "/registry/pods/default/web-0")
    assert len(incs) == 3 and first.revision < incs[1].revision < second.revision < incs[2].revision
    # the latest web-0 replaced the second: the second deletion asked for it (not the first)
    code, out, _ = k(capsys, "--cluster", web, "trace", "pod/web-0")
    assert code == 0
    _expect_step1(*_step1(out), second, "web-0")
    # the second web-0 replaced the first
    code, out, _ = k(capsys, "--cluster", web, "trace", "pod/web-0", "--uid", incs[1].object["metadata"]["uid"])
    assert code == 0
    _expect_step1(*_step1(out), first, "web-0")
    # the first web-0 was created for the StatefulSet itself
    code, out, _ = k(capsys, "--cluster", web, "trace", "pod/web-0", "--at", incs[0].revision)
    sts = log.history("/registry/statefulsets.apps/default/web")[0]
    line, detail = _step1(out)
    assert code == 0 and f"rev {sts.revision} " in line and detail == (
        "ADDED statefulset.apps/web; via statefulset.apps/web")


@pytest.mark.parametrize("name", ["web-1", "web-2"])
def test_trace_step1_never_names_another_pods_deletion(capsys, web, name):
    log = open_log(web)
    (mine,) = _deletions(log, name)
    (other,) = _deletions(log, "web-2" if name == "web-1" else "web-1")
    code, out, _ = k(capsys, "--cluster", web, "trace", f"pod/{name}")
    assert code == 0
    line, detail = _step1(out)
    _expect_step1(line, detail, mine, name)
    assert f"rev {other.revision} " not in line
    assert trace_pod(log, "default", name)[0].revision == mine.revision


def test_trace_step1_pairs_the_replacements_of_two_deleted_replicaset_pods(capsys, tmp_path):
    (tmp_path / "dep.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: nginx, image: 'nginx:1.25'}]}\n")
    path = tmp_path / "cluster.log"
    assert main(["--cluster", str(path), "cluster", "create", "--nodes", "1", "--bare"]) == 0
    assert main(["--cluster", str(path), "apply", "-f", str(tmp_path / "dep.yaml")]) == 0
    log = open_log(path)
    gone = sorted(r.key.rsplit("/", 1)[1] for r in log.range("/registry/pods/default/"))[:2]
    assert main(["--cluster", str(path), "delete", "pod", *gone]) == 0
    log = open_log(path)
    created = [r.key.rsplit("/", 1)[1] for r in log.records(0, "/registry/pods/default/") if r.type == "ADDED"]
    details = []
    for name in created[-2:]:  # the two replacements: each names one deleted pod, not both the same one
        code, out, _ = k(capsys, "--cluster", path, "trace", f"pod/{name}")
        assert code == 0
        details.append(_step1(out)[1].split(" deleted by ")[0])
    assert sorted(details) == [f"pod/{n}" for n in gone]
