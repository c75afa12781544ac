"""Reading the past: --at, history, diff, timeline, trace, bisect (k8semu.timeline)."""

from __future__ import annotations

import pytest

from k8semu.cli.main import main
from k8semu.timeline import (PointError, cluster_diff, diff_objects, object_history, open_log, resolve_point,
                             state_at, timeline, trace_pod)
from k8semu.timeline.bisect import ConditionError, bisect_log, parse_condition

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
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def k(capsys, path, *argv):
    code = main(["--cluster", str(path), *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    d = tmp_path_factory.mktemp("tl")
    (d / "web.yaml").write_text(WEB)
    path = d / "cluster.log"
    for argv in (["apply", "-f", str(d / "web.yaml")], ["scale", "deployment", "web", "--replicas", "3"],
                 ["label", "deployment", "web", "tier=front"]):
        assert main(["--cluster", str(path), *argv]) == 0
    return path


def _user_writes(log):
    return [r for r in timeline(log, actor="user")]


def test_history_shows_who_changed_what(capsys, lab):
    code, out, _ = k(capsys, lab, "history", "deploy/web")
    assert code == 0
    assert "~ spec.replicas: 2 → 3" in out
    assert "+ metadata.labels.tier: front" in out
    scale = next(line for line in out.splitlines() if line.startswith("revision") and "MODIFIED" in line
                 and "user:kubernetes-admin" in line)
    assert scale.startswith("revision ")
    versions = object_history(open_log(lab), "/registry/deployments.apps/default/web")
    assert versions[0].type == "ADDED" and versions[0].actor == "user:kubernetes-admin"
    assert [v.revision for v in versions] == sorted(v.revision for v in versions)


def test_readable_diff_addresses_named_list_items():
    old = {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}], "replicas": 2},
           "metadata": {"labels": {"a": "1"}, "resourceVersion": "5"}}
    new = {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.26"}], "replicas": 2},
           "metadata": {"labels": {"b": "2"}, "resourceVersion": "9"}}
    assert [str(c) for c in diff_objects(old, new)] == [
        "~ spec.containers[nginx].image: nginx:1.25 → nginx:1.26",
        "- metadata.labels.a: 1",
        "+ metadata.labels.b: 2",
    ]


def test_get_at_a_revision_shows_the_past(capsys, lab):
    log = open_log(lab)
    scale = [r for r in _user_writes(log) if r.key.endswith("deployments.apps/default/web")][1]
    code, out, _ = k(capsys, lab, "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}",
                     "--at", str(scale.revision - 1))
    assert (code, out) == (0, "2")
    code, out, _ = k(capsys, lab, "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}")
    assert (code, out) == (0, "3")
    code, _, err = k(capsys, lab, "get", "deploy", "--at", "1")
    assert code == 0 and "No resources found in default namespace." in err


def test_at_outside_the_log_is_a_one_line_error(capsys, lab):
    head = open_log(lab).revision
    code, out, err = k(capsys, lab, "get", "pods", "--at", str(head + 1))
    assert code == 1 and out == ""
    assert err == f"error: revision {head + 1} is outside the log (1..{head})\n"


def test_resolve_point_by_time_and_read_only_view(lab):
    log = open_log(lab)
    rev, t = resolve_point(log, "1h")
    assert (rev, t) == (log.revision, 3600.0)
    assert resolve_point(log, "0s")[0] <= resolve_point(log, "2s")[0]
    with pytest.raises(PointError, match="neither a revision nor a duration"):
        resolve_point(log, "yesterday")
    api = state_at(log, log.revision)
    assert api.get("deployments", "web", namespace="default")["spec"]["replicas"] == 3
    with pytest.raises(PermissionError):
        api.log.create("/registry/pods/default/x", {}, "user:x")


def test_diff_between_two_points(capsys, lab):
    log = open_log(lab)
    scale = [r for r in _user_writes(log) if r.key.endswith("deployments.apps/default/web")][1]
    d = cluster_diff(log, scale.revision - 1, scale.revision)
    assert [str(c) for c in d.changed["deployments.apps"]["/registry/deployments.apps/default/web"]
            if "replicas" in c.path and c.path.startswith("spec")] == ["~ spec.replicas: 2 → 3"]
    code, out, _ = k(capsys, lab, "diff", "--from", str(scale.revision - 1), "--to", str(scale.revision))
    assert code == 0 and "deployments.apps: 0 created, 0 deleted, 1 changed" in out
    code, out, _ = k(capsys, lab, "diff", "--from", "0", "--brief")
    assert "+ default/deployment.apps/web" in out and "+ default/service/web" in out


def test_timeline_filters(capsys, lab):
    code, out, _ = k(capsys, lab, "timeline", "--actor", "user")
    rows = out.splitlines()
    assert code == 0 and len(rows) == 4  # create deploy, create svc, scale, label
    assert all("user:kubernetes-admin" in r for r in rows)
    code, out, _ = k(capsys, lab, "timeline", "--kind", "pods", "-n", "default", "--actor", "default-scheduler")
    assert len(out.splitlines()) == 3 and all("MODIFIED default/pod/web-" in r for r in out.splitlines())
    code, out, _ = k(capsys, lab, "timeline", "--kind", "events", "--limit", "2")
    assert len(out.splitlines()) == 2
    # a window that ends before it starts is a mistake, not an empty timeline
    code, out, err = k(capsys, lab, "timeline", "--since", "20", "--until", "10")
    assert (code, out, err) == (1, "", "error: --since 20 (revision 20) is after --until 10 (revision 10)\n")


def test_trace_pod_follows_the_twelve_steps(capsys, lab):
    log = open_log(lab)
    pod = next(r.key.rsplit("/", 1)[1] for r in log.records(0, "/registry/pods/default/")
               if r.type == "ADDED")
    steps = trace_pod(log, "default", pod)
    assert [s.number for s in steps] == list(range(1, 13))
    assert steps[0].actor == "user:kubernetes-admin"
    assert steps[1].actor == "replicaset-controller"
    assert steps[2].actor == "default-scheduler" and "Scheduled" in steps[2].detail
    assert all(s.actor.startswith("kubelet/") for s in steps[3:10])
    assert steps[10].actor in ("endpointslice-controller", "endpoint-controller")
    revs = [s.revision for s in steps[1:11]]
    assert None not in revs
    assert revs[1] < revs[5] <= revs[8]  # bound before pulled before Running
    code, out, _ = k(capsys, lab, "trace", f"pod/{pod}")
    assert code == 0 and " 3. scheduler binds the pod to a node" in out


def test_bisect_finds_the_write(capsys, lab):
    log = open_log(lab)
    scale = [r for r in _user_writes(log) if r.key.endswith("deployments.apps/default/web")][1]
    res = bisect_log(log, parse_condition("deploy/web .spec.replicas>=3"))
    assert res.revision == scale.revision
    assert res.checks <= log.revision.bit_length() + 2
    code, out, _ = k(capsys, lab, "bisect", str(lab), "--until", "deployment/web available<spec")
    assert code == 0 and "first holds at revision" in out
    code, _, err = k(capsys, lab, "bisect", str(lab), "--until", "deployment/web absent")
    assert code == 1 and "does not hold" in err
    with pytest.raises(ConditionError, match="unknown predicate"):
        parse_condition("deployment/web wobbly")


def test_trace_names_what_made_the_replicaset_create_the_pod(capsys, tmp_path):
    (tmp_path / "web.yaml").write_text(WEB)
    path = tmp_path / "cluster.log"
    assert main(["--cluster", str(path), "apply", "-f", str(tmp_path / "web.yaml")]) == 0
    log = open_log(path)
    pods = sorted(r.key.rsplit("/", 1)[1] for r in log.range("/registry/pods/default/"))
    assert main(["--cluster", str(path), "scale", "deployment", "web", "--replicas", "3"]) == 0
    assert main(["--cluster", str(path), "delete", "pod", pods[0]]) == 0
    capsys.readouterr()
    log = open_log(path)
    created = [r for r in log.records(0, "/registry/pods/default/") if r.type == "ADDED"]
    scaled, replacement = created[-2], created[-1]  # the scale's pod, then the deleted one's replacement
    scale = next(r for r in log.history("/registry/deployments.apps/default/web")
                 if r.actor.startswith("user:") and r.object["spec"]["replicas"] == 3)
    step1 = trace_pod(log, "default", scaled.key.rsplit("/", 1)[1])[0]
    assert (step1.revision, step1.actor) == (scale.revision, "user:kubernetes-admin")
    step1 = trace_pod(log, "default", replacement.key.rsplit("/", 1)[1])[0]
    assert step1.actor == "user:kubernetes-admin"
    assert step1.detail.startswith(f"pod/{pods[0]} deleted by user:kubernetes-admin; replicaset.apps/web-")
    steps = trace_pod(log, "default", replacement.key.rsplit("/", 1)[1])
    assert steps[3].revision <= min(s.revision for s in steps[4:10])  # the kubelet's first write comes first


def test_bisect_says_when_the_condition_already_holds_at_from(capsys, lab):
    log = open_log(lab)
    scale = [r for r in _user_writes(log) if r.key.endswith("deployments.apps/default/web")][1]
    after = scale.revision + 1
    code, out, err = k(capsys, lab, "bisect", str(lab), "--from", str(after), "--until", "deploy/web .spec.replicas>=3")
    assert code == 1 and out == ""
    assert err.strip().startswith(f'error: "deploy/web .spec.replicas>=3" already holds at --from (revision {after}, t=')
    code, out, _ = k(capsys, lab, "bisect", str(lab), "--from", str(scale.revision - 1),
                     "--until", "deploy/web .spec.replicas>=3")
    assert code == 0 and f"first holds at revision {scale.revision} " in out


CRONTAB = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {cronSpec: {type: string}}}
---
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: nightly}
spec: {cronSpec: "0 0 * * *"}
"""


def test_the_past_of_a_custom_resource_outlives_its_crd(capsys, tmp_path):
    path = tmp_path / "c.log"
    manifest = tmp_path / "crontab.yaml"
    manifest.write_text(CRONTAB)
    assert k(capsys, path, "apply", "-f", str(manifest), "-q")[0] == 0
    assert k(capsys, path, "advance", "10s")[0] == 0
    assert k(capsys, path, "delete", "crd", "crontabs.stable.example.com")[0] == 0
    code, _, err = k(capsys, path, "get", "ct")
    assert (code, err) == (1, 'error: the server doesn\'t have a resource type "ct"\n')
    # the kind is known where the CRD was: at a past point, in an object's history, in the timeline
    code, out, _ = k(capsys, path, "get", "ct", "--at", "5s", "-o", "name")
    assert (code, out) == (0, "crontab.stable.example.com/nightly\n")
    code, out, _ = k(capsys, path, "history", "crontab/nightly", "--no-diff")
    assert code == 0 and [line.split()[3:5] for line in out.splitlines()] == [
        ["user:kubernetes-admin", "ADDED"], ["apiextensions-apiserver", "DELETED"]]
    code, out, _ = k(capsys, path, "timeline", "--kind", "crontabs")
    assert code == 0 and len(out.splitlines()) == 2
