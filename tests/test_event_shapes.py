"""The Events as a 1.33 API server stores them, field by field.

- core/v1 Events written by client-go's ``tools/record`` (kubelets, controllers): the
  ``involvedObject`` reference holds only the fields that are set (``omitempty``: a kubelet's
  Node reference has no ``apiVersion`` nor ``resourceVersion``), ``eventTime: null``;
- kube-scheduler's, written through events.k8s.io/v1 (``tools/events``) and read as core/v1:
  ``eventTime`` in microseconds, ``action``, ``reportingComponent`` / ``reportingInstance``
  ``default-scheduler`` / ``default-scheduler-<host>``, ``source: {}``, null first and last
  timestamps, no ``count``; repeats become a ``series``;
- and what kubectl shows of them (``get events``, ``describe``, ``events``).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from k8semu.api.apiserver import RequestContext
from k8semu.client.events import EventsV1Recorder, object_reference
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"containers": [{"name": "nginx", "image": "nginx:1.30-alpine"}]}}
INSTANCE = "default-scheduler-control-plane"


def _nulls(obj, path=""):
    """Paths of the null values in ``obj``."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _nulls(v, f"{path}[{i}]")]
    return [path] if obj is None else []


def _run(body):
    cluster = Cluster.create(None, seed=1)
    run_cluster(cluster, body(cluster.api), default_factories(cluster))
    return cluster.api


def _events(api, **match):
    return [e for e in api.list("events", namespace="default")["items"]
            if all((e.get("involvedObject") or {}).get(k) == v for k, v in match.items())]


def test_no_event_stores_a_null_but_the_times_upstream_stores_null():
    def body(api):
        async def run(rt):
            await rt.settle()
            api.create("pods", POD, namespace="default")
            await rt.advance(30)
        return run

    api = _run(body)
    events = api.list("events", namespace="default")["items"]
    assert events
    for e in events:
        allowed = {".eventTime"} if e.get("source") else {".firstTimestamp", ".lastTimestamp"}
        assert set(_nulls(e)) <= allowed, (e["reason"], _nulls(e))
    nodes = [e for e in events if e["involvedObject"]["kind"] == "Node"]
    assert {e["reason"] for e in nodes} >= {"Starting", "NodeHasSufficientMemory", "NodeReady", "RegisteredNode"}
    for e in nodes:
        inv = e["involvedObject"]
        assert "resourceVersion" not in inv and "namespace" not in inv and "fieldPath" not in inv
        assert e["eventTime"] is None and e["count"] == 1 and e["firstTimestamp"] and e["lastTimestamp"]
        if e["source"]["component"] == "kubelet":  # the kubelet's nodeRef: uid = the node's name
            assert inv == {"kind": "Node", "name": inv["name"], "uid": inv["name"]}
            assert e["source"] == {"component": "kubelet", "host": inv["name"]}
            assert (e["reportingComponent"], e["reportingInstance"]) == ("kubelet", inv["name"])
        else:  # node-controller's RecordNodeEvent: apiVersion v1 and the Node's uid
            assert e["source"] == {"component": "node-controller"}
            assert list(inv) == ["kind", "name", "uid", "apiVersion"] and inv["apiVersion"] == "v1"
            assert inv["uid"] != inv["name"]
            assert (e["reportingComponent"], e["reportingInstance"]) == ("node-controller", "")
    # an object's reference: the set fields, in ObjectReference's order
    pulling = next(e for e in events if e["reason"] == "Pulling")
    assert list(pulling["involvedObject"]) == ["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                                               "fieldPath"]


def test_the_scheduled_event_is_an_events_k8s_io_event():
    seen = {}

    def body(api):
        async def run(rt):
            await rt.settle()
            await rt.advance(0.25)
            seen["pod"] = api.create("pods", POD, namespace="default")
            seen["time"] = api.now
            await rt.settle()
        return run

    api = _run(body)
    pod = api.get("pods", "web", namespace="default")
    (ev,) = [e for e in _events(api, name="web") if e["reason"] == "Scheduled"]
    meta = ev["metadata"]
    assert meta["namespace"] == "default" and meta["name"].startswith("web.")
    nanos = int(meta["name"].split(".", 1)[1], 16)
    assert MICRO.fullmatch(ev["eventTime"])
    assert ev["eventTime"][-8:-1] == f".{nanos // 1000 % 10**6:06d}"  # the name's instant, in microseconds
    assert ev["eventTime"] != api.timestamp(seen["time"])  # not whole seconds: a MicroTime
    shape = {k: v for k, v in ev.items() if k != "metadata"}
    assert shape == {
        "apiVersion": "v1", "kind": "Event",
        # GetReference of the assumed pod: the version the scheduler bound
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": pod["metadata"]["uid"],
                           "apiVersion": "v1", "resourceVersion": seen["pod"]["metadata"]["resourceVersion"]},
        "reason": "Scheduled",
        "message": f"Successfully assigned default/web to {pod['spec']['nodeName']}",
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "type": "Normal",
        "eventTime": ev["eventTime"],
        "action": "Binding",
        "reportingComponent": "default-scheduler",
        "reportingInstance": INSTANCE,
    }
    assert "count" not in ev and "series" not in ev and "related" not in ev


def test_failed_scheduling_is_a_scheduling_action_and_a_pod_that_fits_nowhere_makes_a_series():
    big = {**POD, "metadata": {"name": "big", "namespace": "default"},
           "spec": {"containers": [{"name": "app", "image": "nginx:1.30-alpine",
                                    "resources": {"requests": {"cpu": "100"}}}]}}

    def body(api):
        async def run(rt):
            await rt.settle()
            api.create("pods", big, namespace="default")
            await rt.advance(2000)  # past the 30-minute refresh of the series
        return run

    api = _run(body)
    failed = sorted(_events(api, name="big"), key=lambda e: e["metadata"]["name"])
    assert {e["reason"] for e in failed} == {"FailedScheduling"}
    assert all((e["type"], e["action"], e["source"], e["reportingInstance"], e["lastTimestamp"])
               == ("Warning", "Scheduling", {}, INSTANCE, None) for e in failed)
    assert all("count" not in e for e in failed)
    # the first try's Event, then (the pod's status written) the next version's, whose repeats
    # are its series, written at 30 minutes by refreshExistingEventSeries
    first, second = failed
    assert "series" not in first
    assert int(first["involvedObject"]["resourceVersion"]) < int(second["involvedObject"]["resourceVersion"])
    assert second["series"]["count"] > 2
    assert MICRO.fullmatch(second["series"]["lastObservedTime"])
    assert second["series"]["lastObservedTime"] <= "2025-01-01T00:30:00.000000Z"


def _recorder(cluster):
    return EventsV1Recorder(cluster.api, RequestContext(actor="default-scheduler"), "default-scheduler", INSTANCE)


def _pod(rv="7"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "pod-uid", "resourceVersion": rv}}


def _stored(cluster):
    return sorted((e for e in cluster.api.list("events", namespace="default")["items"]
                   if e["involvedObject"]["name"] == "p"), key=lambda e: e["metadata"]["name"])


def test_repeats_are_a_series_written_at_the_second_then_by_the_timers():
    cluster = Cluster.create(None, seed=1)
    rec = _recorder(cluster)
    cluster.time = 10
    created = rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available")
    assert created["eventTime"] == "2025-01-01T00:00:10.000000Z" and "series" not in created
    cluster.time = 20
    # isomorphic: the same type, action, reason, reporter and regarding (the note is not in the key)
    patched = rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes are available")
    assert patched["metadata"]["name"] == created["metadata"]["name"]
    assert patched["series"] == {"count": 2, "lastObservedTime": "2025-01-01T00:00:20.000000Z"}
    assert patched["message"] == "0/3 nodes are available"
    for t in (30.5, 40):
        cluster.time = t
        assert rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "x") is None
    (ev,) = _stored(cluster)
    assert ev["series"]["count"] == 2  # the later ones are in the broadcaster's cache only
    # finishSeries, every 6 minutes: a series last seen more than 6 minutes before is written, forgotten
    assert rec.next_tick() == 720
    cluster.time = 719
    rec.tick()
    assert _stored(cluster)[0]["series"]["count"] == 2
    cluster.time = 720
    rec.tick()
    assert _stored(cluster)[0]["series"] == {"count": 4, "lastObservedTime": "2025-01-01T00:00:40.000000Z"}
    assert rec.next_tick() is None
    cluster.time = 721
    again = rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "later")
    assert again["metadata"]["name"] != created["metadata"]["name"] and "series" not in again
    # another version of the pod, another reason or a related object: not isomorphic
    cluster.time = 722
    assert rec.eventf(_pod("8"), None, "Warning", "FailedScheduling", "Scheduling", "later")
    assert rec.eventf(_pod(), _pod("1"), "Normal", "Preempted", "Preempting", "Preempted by pod q on node n")
    events = _stored(cluster)
    assert len(events) == 4
    preempted = events[-1]
    assert preempted["related"] == object_reference(_pod("1"))
    assert list(preempted)[-3:] == ["related", "reportingComponent", "reportingInstance"]


def test_the_30_minute_refresh_writes_every_series():
    cluster = Cluster.create(None, seed=1)
    rec = _recorder(cluster)
    for t in range(1000, 1900, 60):  # every minute: never 6 minutes quiet
        cluster.time = t
        rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes are available")
    (ev,) = _stored(cluster)
    # written at the second occurrence, then at the refresh (t=1800), as the cache had it then
    assert ev["series"] == {"count": 14, "lastObservedTime": "2025-01-01T00:29:40.000000Z"}


def test_a_series_whose_event_is_gone_creates_it_again():
    cluster = Cluster.create(None, seed=1)
    rec = _recorder(cluster)
    first = rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
    cluster.api.delete("events", first["metadata"]["name"], namespace="default")  # e.g. its TTL ran out
    cluster.time = 5
    ev = rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
    assert ev["metadata"]["name"] == first["metadata"]["name"]
    assert ev["eventTime"] == first["eventTime"] and ev["series"]["count"] == 2


def test_a_later_scheduler_goes_on_with_the_series_its_earlier_life_left():
    cluster = Cluster.create(None, seed=1)
    rec = _recorder(cluster)
    for t in (10, 20):
        cluster.time = t
        rec.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "no")
    cluster.time = 100
    later = _recorder(cluster)  # the next command's scheduler
    assert later.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "no") is None
    assert len(_stored(cluster)) == 1
    cluster.time = 720  # more than 6 minutes quiet at the 12-minute tick: the count it had is written
    later.tick()
    assert _stored(cluster)[0]["series"] == {"count": 3, "lastObservedTime": "2025-01-01T00:01:40.000000Z"}
    # a life that starts once the entry would have been forgotten starts a new Event
    cluster.time = 1500
    last = _recorder(cluster)
    assert last.eventf(_pod(), None, "Warning", "FailedScheduling", "Scheduling", "no") is not None
    assert len(_stored(cluster)) == 2


def test_kubectl_shows_the_scheduled_event_as_for_a_real_cluster(k):
    """``get events`` (LAST SEEN and FIRST SEEN from ``eventTime``, SOURCE from the reporting
    fields), ``describe`` (``Normal  Scheduled  30s  default-scheduler …``) and ``events``."""
    rc, out, _ = k("get", "events", "-o", "wide")
    assert rc == 0
    rows = [re.split(r"\s{2,}", line.strip()) for line in out]
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN",
                       "COUNT", "NAME"]
    scheduled = [r for r in rows if r[2] == "Scheduled"]
    assert len(scheduled) == 2
    for r in scheduled:
        pod = r[3].removeprefix("pod/")
        assert r[:3] == ["30s", "Normal", "Scheduled"] and r[4] == f"default-scheduler, {INSTANCE}"
        assert re.fullmatch(rf"Successfully assigned default/{pod} to node-\d", r[5])
        assert r[6:8] == ["30s", "1"] and r[8].startswith(f"{pod}.")
    pod = scheduled[0][3].removeprefix("pod/")
    rc, out, _ = k("describe", "pod", pod)
    events = out[out.index("Events:") + 1:]
    assert events[0].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert re.fullmatch(rf"  Normal  Scheduled  30s   default-scheduler  Successfully assigned default/{pod} "
                        r"to node-\d", events[2])
    rc, out, _ = k("events", "--for", f"pod/{pod}")
    assert re.match(rf"30s\s+Normal\s+Scheduled\s+Pod/{pod}\s+Successfully assigned", out[1])


def test_kubectl_shows_a_series_as_for_a_real_cluster(kf):
    """A pod that fits nowhere: the first try, then its next version's series, ``87s (x2 over 89s)``
    (LAST SEEN from ``series.lastObservedTime``, COUNT from ``series.count``)."""
    rc, out, _ = kf("describe", "pod", "too-big")
    rows = [line for line in out[out.index("Events:") + 3:] if "FailedScheduling" in line]
    assert [re.split(r"\s{2,}", line.strip())[:4] for line in rows] == [
        ["Warning", "FailedScheduling", "90s", "default-scheduler"],
        ["Warning", "FailedScheduling", "87s (x2 over 89s)", "default-scheduler"]]
    rc, out, _ = kf("get", "events", "--field-selector", "involvedObject.name=too-big", "-o", "wide")
    rows = [re.split(r"\s{2,}", line.strip()) for line in out[1:]]
    assert [(r[0], r[-3], r[-2]) for r in rows] == [("90s", "90s", "1"), ("87s", "89s", "2")]  # FIRST SEEN, COUNT


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on the PATH")
def test_the_real_kubectl_reads_the_scheduled_event(tmp_path):
    """Through ``k8semu serve``: the Event as JSON, ``get events -o wide`` and ``describe``."""
    kubeconfig = tmp_path / "kubeconfig"
    cmd = [sys.executable, "-m", "k8semu.cli.main", "--cluster", str(tmp_path / "cluster.log"), "serve",
           "--port", "0", "--speed", "20", "--kubeconfig", str(kubeconfig)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)

    def kubectl(*args: str) -> str:
        out = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
                              *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        assert line and line[0].startswith("export KUBECONFIG="), proc.stderr.read()[-2000:] if line else ""
        manifest = tmp_path / "pod.yaml"
        manifest.write_text(json.dumps(POD))
        assert kubectl("apply", "-f", str(manifest)) == "pod/web created\n"
        kubectl("wait", "--for=condition=PodScheduled", "pod/web", "--timeout=60s")
        pod = json.loads(kubectl("get", "pod", "web", "-o", "json"))
        events = json.loads(kubectl("get", "events", "--field-selector", "reason=Scheduled", "-o", "json"))["items"]
        (ev,) = events
        assert {k: ev.get(k) for k in ("action", "reason", "source", "firstTimestamp", "lastTimestamp", "count",
                                       "reportingComponent", "reportingInstance", "type")} == {
            "action": "Binding", "reason": "Scheduled", "source": {}, "firstTimestamp": None,
            "lastTimestamp": None, "count": None, "reportingComponent": "default-scheduler",
            "reportingInstance": INSTANCE, "type": "Normal"}
        assert MICRO.fullmatch(ev["eventTime"])
        assert ev["involvedObject"]["uid"] == pod["metadata"]["uid"]
        node = pod["spec"]["nodeName"]
        rows = [re.split(r"\s{2,}", row.strip()) for row in
                kubectl("get", "events", "--field-selector", "reason=Scheduled", "-o", "wide").splitlines()]
        assert rows[1][1:6] == ["Normal", "Scheduled", "pod/web", f"default-scheduler, {INSTANCE}",
                                f"Successfully assigned default/web to {node}"]
        assert rows[1][-2:] == ["1", ev["metadata"]["name"]]
        described = kubectl("describe", "pod", "web")
        assert re.search(rf"^  Normal  Scheduled  \S+ +default-scheduler  Successfully assigned default/web to {node}$",
                         described, re.M)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()  # by pid: only the process this test started
                proc.wait(5)
