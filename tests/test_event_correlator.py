"""client-go's EventCorrelator in the event recorder (tools/record/events_cache.go).

Virtual time: the cluster's clock is moved by hand, the recorder reads it through the API server.
"""

from __future__ import annotations

from k8semu.api.apiserver import RequestContext
from k8semu.client.events import AGGREGATE_PREFIX, NORMAL, WARNING, EventRecorder, EventsV1Recorder
from k8semu.sim.cluster import Cluster

RS = {"kind": "ReplicaSet", "apiVersion": "apps/v1",
      "metadata": {"name": "web-5d8f", "namespace": "default", "uid": "rs-uid"}}
POD = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "default", "uid": "pod-uid"}}


def _setup(component="replicaset-controller", host=None):
    cluster = Cluster.create(None, seed=1)
    rec = EventRecorder(cluster.api, RequestContext(actor=component), component, host=host)
    return cluster, rec


def _events(cluster, name):
    items = cluster.api.list("events", namespace="default")["items"]
    return sorted((e for e in items if e["involvedObject"]["name"] == name),
                  key=lambda e: e["metadata"]["name"])


def _forbidden(i):
    return (f'Error creating: pods "web-5d8f-{i:05d}" is forbidden: violates PodSecurity "restricted:latest": '
            "allowPrivilegeEscalation != false")


def test_similar_events_are_combined_after_nine():
    cluster, rec = _setup()
    for i in range(14):
        cluster.time += 1
        rec.event(RS, WARNING, "FailedCreate", _forbidden(i))
    events = _events(cluster, "web-5d8f")
    singles = [e for e in events if not e["message"].startswith(AGGREGATE_PREFIX)]
    combined = [e for e in events if e["message"].startswith(AGGREGATE_PREFIX)]
    # the 10th distinct message reaches maxEvents (10): it and the later ones are combined
    assert [e["message"] for e in singles] == [_forbidden(i) for i in range(9)]
    assert all(e["count"] == 1 for e in singles)
    assert len(combined) == 1
    agg = combined[0]
    assert agg["count"] == 5
    assert agg["message"] == "(combined from similar events): " + _forbidden(13)  # the latest
    assert agg["reason"] == "FailedCreate" and agg["type"] == WARNING
    assert agg["source"] == {"component": "replicaset-controller"}
    assert agg["reportingComponent"] == "" and agg["reportingInstance"] == ""
    assert agg["firstTimestamp"] != agg["lastTimestamp"]
    # the count keeps growing on the same Event
    cluster.time += 1
    rec.event(RS, WARNING, "FailedCreate", _forbidden(14))
    again = [e for e in _events(cluster, "web-5d8f") if e["message"].startswith(AGGREGATE_PREFIX)]
    assert [(e["metadata"]["name"], e["count"]) for e in again] == [(agg["metadata"]["name"], 6)]


def test_similar_events_more_than_ten_minutes_apart_start_afresh():
    cluster, rec = _setup()
    for i in range(9):
        cluster.time += 1
        rec.event(RS, WARNING, "FailedCreate", _forbidden(i))
    cluster.time += 601
    rec.event(RS, WARNING, "FailedCreate", _forbidden(9))
    assert not any(e["message"].startswith(AGGREGATE_PREFIX) for e in _events(cluster, "web-5d8f"))


def test_other_reasons_and_objects_are_not_combined():
    cluster, rec = _setup()
    for i in range(12):
        cluster.time += 1
        rec.event(RS, NORMAL, f"Reason{i}", f"message {i}")
    assert len(_events(cluster, "web-5d8f")) == 12
    assert not any(e["message"].startswith(AGGREGATE_PREFIX) for e in _events(cluster, "web-5d8f"))


def test_identical_events_count_up():
    cluster, rec = _setup("kubelet", host="node-1")
    for _ in range(20):
        cluster.time += 10
        rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container app in pod p_default(pod-uid)",
                  field_path="spec.containers{app}")
    events = _events(cluster, "p")
    assert [(e["reason"], e["count"]) for e in events] == [("BackOff", 20)]
    assert events[0]["reportingComponent"] == "kubelet" and events[0]["reportingInstance"] == "node-1"


def test_spam_filter_drops_the_26th_event_and_refills_one_per_five_minutes():
    cluster, rec = _setup("kubelet", host="node-1")
    written = [rec.event(POD, NORMAL, f"Reason{i}", f"message {i}") for i in range(26)]
    assert all(written[:25]) and written[25] is None
    assert len(_events(cluster, "p")) == 25
    cluster.time += 299
    assert rec.event(POD, NORMAL, "Late", "still over the limit") is None
    cluster.time += 1  # 5 minutes after the burst: one token back
    assert rec.event(POD, NORMAL, "Later", "one let through") is not None
    assert rec.event(POD, NORMAL, "Later2", "and none more") is None
    assert len(_events(cluster, "p")) == 26
    # another object has its own bucket
    other = {**POD, "metadata": {**POD["metadata"], "name": "q", "uid": "q-uid"}}
    assert rec.event(other, NORMAL, "Reason", "message") is not None


def test_a_dropped_repeat_still_counts():
    cluster, rec = _setup("kubelet", host="node-1")
    for i in range(24):
        rec.event(POD, NORMAL, f"Reason{i}", f"message {i}")
    rec.event(POD, WARNING, "BackOff", "Back-off")  # the 25th token
    for _ in range(3):
        cluster.time += 10
        assert rec.event(POD, WARNING, "BackOff", "Back-off") is None
    cluster.time += 300
    ev = rec.event(POD, WARNING, "BackOff", "Back-off")
    assert ev is not None and ev["count"] == 5  # the dropped repeats are in the count, as upstream's


def test_a_dropped_first_occurrence_is_created_later_with_its_count():
    cluster, rec = _setup("kubelet", host="node-1")
    for i in range(25):
        rec.event(POD, NORMAL, f"Reason{i}", f"message {i}")
    first = cluster.api.timestamp()
    assert rec.event(POD, WARNING, "Unhealthy", "Readiness probe failed") is None
    cluster.time += 300
    ev = rec.event(POD, WARNING, "Unhealthy", "Readiness probe failed")
    assert ev["count"] == 2 and ev["firstTimestamp"] == first


def test_the_scheduler_is_not_filtered():
    """The scheduler records through tools/events (events.k8s.io): no aggregator, no spam filter;
    events about different versions of the pod are not isomorphic, each is written."""
    cluster = Cluster.create(None, seed=1)
    rec = EventsV1Recorder(cluster.api, RequestContext(actor="default-scheduler"), "default-scheduler",
                           "default-scheduler-control-plane")
    for i in range(30):
        cluster.time += 1
        pod = {**POD, "metadata": {**POD["metadata"], "resourceVersion": str(100 + i)}}
        assert rec.eventf(pod, None, WARNING, "FailedScheduling", "Scheduling", f"0/{i} nodes are available")
    events = _events(cluster, "p")
    assert [e["message"] for e in events] == [f"0/{i} nodes are available" for i in range(30)]
    assert all("count" not in e and "series" not in e for e in events)


def test_a_later_life_goes_on_with_the_earlier_state():
    cluster, rec = _setup("kubelet", host="node-1")
    for i in range(25):
        rec.event(POD, NORMAL, f"Reason{i}", f"message {i}")
    cluster.time += 60
    later = EventRecorder(cluster.api, RequestContext(actor="kubelet"), "kubelet", host="node-1")
    assert later.event(POD, NORMAL, "Reason0", "message 0") is None  # the bucket is still empty
    cluster.time += 300
    ev = later.event(POD, NORMAL, "Reason0", "message 0")
    assert ev is not None and ev["count"] == 3  # the earlier Event folded into (its dropped repeat counted)
    # and the aggregator's groups
    cluster2, rec2 = _setup()
    for i in range(9):
        rec2.event(RS, WARNING, "FailedCreate", _forbidden(i))
    cluster2.time += 30
    later2 = EventRecorder(cluster2.api, RequestContext(actor="x"), "replicaset-controller")
    ev = later2.event(RS, WARNING, "FailedCreate", _forbidden(9))
    assert ev["message"] == AGGREGATE_PREFIX + _forbidden(9)
