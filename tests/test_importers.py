"""Incidents recorded elsewhere: audit logs and SimKube traces as k8semu logs (k8semu.timeline.importers)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from k8semu.cli.main import main
from k8semu.timeline import object_history, open_log, resolve_point, state_at
from k8semu.timeline.importers import ImportError_, import_audit, import_simkube, reenact

TRACES = Path("/work/shared/cases/traces")
pytestmark = pytest.mark.skipif(not TRACES.exists(), reason="shared trace samples not available")


def k(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_audit_create_becomes_an_input_in_the_served_version(capsys, tmp_path):
    out = tmp_path / "falco.log"
    code, text, _ = k(capsys, "import", "audit", TRACES / "falco-create_deployment.json", "--out", out)
    assert code == 0 and text == f"wrote {out}: 1 records, 1 inputs\n"
    log = open_log(out)
    rec = log.record(1)
    assert (rec.type, rec.key, rec.actor) == ("ADDED", "/registry/deployments.apps/default/nginx-deployment",
                                             "user:minikube-user")
    assert rec.object["apiVersion"] == "apps/v1"  # extensions/v1beta1 converted
    assert log.header["cluster"]["epoch"] == "2018-10-26T13:07:36Z"
    report = reenact(log)
    assert report.refused == []
    assert report.pods["default/deployment.apps/nginx-deployment"][1] == 1  # spec.replicas: 1
    code, text, _ = k(capsys, "replay", out)
    assert code == 0 and "k8semu created 1 pods" in text


def test_audit_delete_of_an_object_that_predates_the_recording(tmp_path):
    out = tmp_path / "del.log"
    res = import_audit(TRACES / "falco-delete_deployment.json", out)
    log = open_log(out)
    assert [(r.type, r.actor) for r in object_history(log, "/registry/deployments.apps/default/nginx-deployment")] \
        == [("ADDED", "import:pre-existing"), ("DELETED", "user:minikube-user")]
    assert res.inputs == 1
    report = reenact(log)
    assert any("not found" in msg or "invalid" in msg for _, msg in report.refused)


def test_metadata_level_reads_import_as_nothing(capsys, tmp_path):
    res = import_audit(TRACES / "audit2rbac-demo.log", tmp_path / "rbac.log")
    assert (res.records, res.inputs) == (0, 0)
    assert res.skipped == {"read (get)": 23, "read (list)": 14}  # 11 of the lists were refused (403)
    assert open_log(tmp_path / "rbac.log").revision == 0
    out = tmp_path / "a.log"
    code, text, _ = k(capsys, "import", "audit", TRACES / "audit2rbac-demo.log", "--out", out)
    assert (code, text) == (0, f"wrote {out}: 0 records, 0 inputs; skipped 37: 23 read (get), 14 read (list)\n")


def test_every_audit_event_not_imported_is_counted_by_reason(capsys, tmp_path):
    base = {"apiVersion": "audit.k8s.io/v1", "kind": "Event", "level": "Metadata", "stage": "ResponseComplete",
            "user": {"username": "alice"}, "responseStatus": {"code": 200}, "stageTimestamp": "2024-01-01T00:00:00Z",
            "objectRef": {"resource": "pods", "namespace": "default", "name": "p", "apiVersion": "v1"}}
    events = [
        {**base, "auditID": "1", "verb": "create", "stage": "RequestReceived"},
        {**base, "auditID": "1", "verb": "create"},
        {**base, "auditID": "2", "verb": "watch"},
        {**base, "auditID": "3", "verb": "deletecollection"},
        {**base, "auditID": "4", "verb": "delete", "responseStatus": {"code": 404}},
        {**base, "auditID": "5", "verb": "create", "level": "RequestResponse",
         "objectRef": {**base["objectRef"], "subresource": "eviction"}},
    ]
    src = tmp_path / "events.jsonl"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    out = tmp_path / "e.log"
    code, text, _ = k(capsys, "import", "audit", src, "--out", out)
    assert (code, text) == (0, f"wrote {out}: 0 records, 0 inputs; skipped 6: 1 failed request, "
                               "1 level Metadata (no object), 1 read (watch), 1 stage RequestReceived, "
                               "1 subresource eviction, 1 verb deletecollection\n")


def test_audit_event_list_and_request_response(tmp_path):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    base = {"apiVersion": "audit.k8s.io/v1", "kind": "Event", "level": "RequestResponse", "auditID": "a",
            "stage": "ResponseComplete", "objectRef": {"resource": "pods", "namespace": "default", "name": "p",
                                                       "apiVersion": "v1"},
            "responseStatus": {"code": 201}}
    events = [
        {**base, "verb": "create", "user": {"username": "alice"}, "responseObject": pod,
         "stageTimestamp": "2024-01-01T00:00:00.000000Z"},
        {**base, "verb": "patch", "user": {"username": "system:kube-scheduler"},
         "objectRef": {**base["objectRef"], "subresource": "binding"}, "stageTimestamp": "2024-01-01T00:00:01Z"},
        {**base, "verb": "update", "user": {"username": "system:node:n1"},
         "objectRef": {**base["objectRef"], "subresource": "status"},
         "responseObject": {**pod, "status": {"phase": "Running"}}, "stageTimestamp": "2024-01-01T00:00:05Z"},
    ]
    src = tmp_path / "list.json"
    src.write_bytes(orjson.dumps({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "items": events}))
    res = import_audit(src, tmp_path / "list.log")
    assert res.skipped["subresource binding"] == 1
    log = open_log(tmp_path / "list.log")
    assert [(r.actor, r.time) for r in log.records(0)] == [("user:alice", 0.0), ("kubelet/n1", 5.0)]
    rev, _ = resolve_point(log, "3s")
    assert "status" not in state_at(log, rev).get("pods", "p", namespace="default")


def test_bad_audit_input_is_a_one_line_error_and_leaves_no_file(capsys, tmp_path):
    src = tmp_path / "bad.jsonl"
    good = (TRACES / "falco-create_deployment.json").read_text().strip()
    src.write_text(good + "\n" + '{"kind":"Pod","apiVersion":"v1"}\n')
    out = tmp_path / "bad.log"
    code, _, err = k(capsys, "import", "audit", src, "--out", out)
    assert code == 1 and err == f"error: {src}:2: not an audit event (expected kind Event with verb and auditID)\n"
    assert not out.exists() and list(tmp_path.iterdir()) == [src]
    with pytest.raises(ImportError_, match="unsupported audit apiVersion 'audit.k8s.io/v2'"):
        src.write_text('{"kind":"Event","apiVersion":"audit.k8s.io/v2","verb":"get","auditID":"x"}\n')
        import_audit(src, out)


def test_simkube_json_trace(tmp_path):
    res = import_simkube(TRACES / "simkube-trace.json", tmp_path / "sk.log")
    log = open_log(tmp_path / "sk.log")
    assert res.inputs == 2 and log.header["source"] == {"kind": "simkube", "file": "simkube-trace.json"}
    assert log.get("/registry/deployments.apps/default/nginx-deployment").object["spec"]["replicas"] == 2
    report = reenact(log)
    assert report.pods["default/deployment.apps/nginx-deployment"][1] == 2


def test_simkube_msgpack_trace_replays_bare_pods(tmp_path):
    res = import_simkube(TRACES / "simkube-bare-pods.sktrace", tmp_path / "bare.log")
    log = open_log(tmp_path / "bare.log")
    assert res.inputs == 4
    assert [r.time for r in log.records(0)] == [0.0, 42.0, 102.0, 162.0]  # seconds since the first event
    report = reenact(log)
    assert report.refused == []
    assert sorted(v[1] for v in report.pods.values()) == [1, 1, 1, 1]


def test_simkube_large_trace_imports_and_reads(capsys, tmp_path):
    out = tmp_path / "large.log"
    code, text, _ = k(capsys, "import", "simkube", TRACES / "simkube-large_trace.json", "--out", out)
    assert code == 0 and "250 records, 250 inputs" in text
    code, text, _ = k(capsys, "--cluster", out, "get", "deploy", "-n", "dsb", "--at", "0s", "--no-headers")
    assert code == 0 and len(text.splitlines()) >= 20
    report = reenact(open_log(out), until=0.0)
    assert report.refused == [] and report.inputs >= 20


def test_simkube_wrong_version(tmp_path):
    src = tmp_path / "v1.json"
    src.write_text('{"version": 1, "events": []}')
    with pytest.raises(ImportError_, match="SimKube trace version 1 is not supported"):
        import_simkube(src, tmp_path / "v1.log")
    assert not (tmp_path / "v1.log").exists()


def test_audit_times_are_exact_to_the_microsecond(capsys, tmp_path):
    """Offsets from the first event are computed from the timestamps exactly (whole microseconds),
    not by subtracting float POSIX times: 10 ms later shows as t=10ms, not t=9.99999ms."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    base = {"apiVersion": "audit.k8s.io/v1", "kind": "Event", "level": "RequestResponse", "auditID": "a",
            "stage": "ResponseComplete", "user": {"username": "alice"}, "responseStatus": {"code": 200},
            "objectRef": {"resource": "pods", "namespace": "default", "name": "p", "apiVersion": "v1"}}

    def labelled(v):
        return {**pod, "metadata": {**pod["metadata"], "labels": {"v": v}}}

    events = [
        {**base, "verb": "create", "responseObject": pod, "stageTimestamp": "2024-01-01T00:00:00Z"},
        {**base, "verb": "update", "responseObject": labelled("1"), "stageTimestamp": "2024-01-01T00:00:00.010Z"},
        {**base, "verb": "update", "responseObject": labelled("2"),
         "stageTimestamp": "2024-01-01T00:00:01.250123Z"},
        {**base, "verb": "update", "responseObject": labelled("3"),
         "stageTimestamp": "2024-01-01T01:00:00.000001+01:00"},  # the same instant as 00:00:00.000001Z
    ]
    src = tmp_path / "ms.jsonl"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    out = tmp_path / "ms.log"
    assert k(capsys, "import", "audit", src, "--out", out)[0] == 0
    log = open_log(out)
    assert [r.time for r in log.records(0)] == [0.0, 0.000001, 0.01, 1.250123]
    assert log.header["cluster"]["epoch"] == "2024-01-01T00:00:00Z"
    code, text, _ = k(capsys, "--cluster", out, "history", "pod/p")
    assert code == 0
    assert [line.split("  ")[1] for line in text.splitlines() if line.startswith("revision ")] == [
        "t=0s", "t=1µs", "t=10ms", "t=1.250123s"]
