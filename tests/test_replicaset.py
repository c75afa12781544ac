"""The ReplicaSet / ReplicationController controllers, against upstream behaviour.

A tiny fake kubelet (defined here) binds pods, marks them Running + Ready a
few virtual seconds after it first sees them, and finishes deletions.
"""

from __future__ import annotations

from typing import Any, Callable

from k8semu.api.meta import DEFAULT_EPOCH, format_time
from k8semu.client.component import Component
from k8semu.client.informer import EventHandler, meta_namespace_key
from k8semu.controllers.controller_utils import (
    ControllerExpectations,
    compute_hash,
    filter_active_pods,
    fnv32a,
    is_pod_available,
    rank_pods_for_deletion,
    safe_encode_string,
    slow_start_batch,
    sort_active_pods,
)
from k8semu.controllers.replicaset import (
    ReplicaSetController,
    ReplicationManager,
    calculate_status,
    pod_from_template,
    pods_to_delete,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

NS = "default"


class FakeKubelet(Component):
    """Binds every pod to ``node``, makes it Running+Ready ``delay(pod)`` seconds
    after first seeing it (never, if None), and deletes terminating pods
    ``terminate_after`` seconds after their deletion was requested."""

    name = "fake-kubelet"

    def __init__(self, api: Any, delay: Callable[[dict], float | None] = lambda p: 2.0,
                 node: str = "node-1", terminate_after: float = 1.0) -> None:
        super().__init__(api)
        self.delay = delay
        self.node = node
        self.terminate_after = terminate_after
        self.seen: dict[str, float] = {}
        self.pods = self.informer("pods")
        self.q = self.queue()
        self.pods.add_event_handler(EventHandler(
            on_add=lambda p: self.q.add(meta_namespace_key(p)),
            on_update=lambda o, p: self.q.add(meta_namespace_key(p))))

    async def main(self) -> None:
        await self.run_workers(self.q, self.sync)

    def sync(self, key: str) -> None:
        pod = self.pods.indexer.get(key)
        if pod is None:
            return
        meta, now = pod["metadata"], self.api.now
        first = self.seen.setdefault(meta["uid"], now)
        if meta.get("deletionTimestamp"):
            due = self.seen.setdefault("del:" + meta["uid"], now) + self.terminate_after
            if now < due:
                self.q.add_after(key, due - now)
                return
            self.api.delete("pods", meta["name"], namespace=meta["namespace"], ctx=self.ctx,
                            grace_period_seconds=0)
            return
        if not pod["spec"].get("nodeName"):
            self.api.bind(meta["name"], {"target": {"name": self.node}}, namespace=meta["namespace"], ctx=self.ctx)
            return
        if (pod.get("status") or {}).get("phase") == "Running":
            return
        delay = self.delay(pod)
        if delay is None:
            return
        if now < first + delay:
            self.q.add_after(key, first + delay - now)
            return
        stamp = self.api.timestamp()
        status = {**(pod.get("status") or {}), "phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": stamp},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
        ]}
        self.api.update("pods", {**pod, "status": status}, subresource="status", ctx=self.ctx)


def rs_manifest(name: str = "web", replicas: int = 3, min_ready: int = 0, labels: dict | None = None) -> dict:
    labels = labels or {"app": name}
    spec: dict = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels},
                     "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}},
    }
    if min_ready:
        spec["minReadySeconds"] = min_ready
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def pods_of(api, label: str = "app=web") -> list[dict]:
    return api.list("pods", namespace=NS, label_selector=label)["items"]


def events(api, reason: str | None = None) -> list[dict]:
    evs = api.list("events", namespace=NS)["items"]
    return [e for e in evs if reason is None or e["reason"] == reason]


def run(body, *, kubelet: Callable[[Any], Component] | None = None, seed: int = 1, rc: bool = False):
    cluster = Cluster.create(seed=seed)
    factories: dict = {}
    if rc:
        factories["replication-controller"] = lambda: ReplicationManager(cluster.api)
    else:
        factories["replicaset-controller"] = lambda: ReplicaSetController(cluster.api)
    if kubelet is not None:
        factories["fake-kubelet"] = lambda: kubelet(cluster.api)
    return cluster, run_cluster(cluster, lambda rt: body(rt, cluster.api), factories)


# --------------------------------------------------------------------------- pure helpers


def test_fnv32a_and_safe_encoding_match_the_reference():
    # FNV-1a 32 published test vectors
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"foobar") == 0xBF9CF968
    # rand.SafeEncodeString maps digits into "4 5 6 7 8 9 b c d f"
    assert safe_encode_string("0123456789") == "456789bcdf"


def test_pod_template_hash_reference_value_and_collision_count():
    # Input documented: the canonical JSON (sorted keys, compact) of this template.
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"image": "nginx:1.25", "name": "c"}]}}
    raw = b'{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1.25","name":"c"}]}}'
    expected = safe_encode_string(str(fnv32a(raw)))
    assert compute_hash(template) == expected
    assert set(expected) <= set("456789bcdf") and 1 <= len(expected) <= 10
    # collisionCount is appended as 8 little-endian bytes, changing the hash
    with_one = safe_encode_string(str(fnv32a(b"\x01" + b"\x00" * 7, fnv32a(raw))))
    assert compute_hash(template, 1) == with_one != expected
    assert compute_hash(template, 0) != expected  # a zero count still feeds 8 bytes


def test_slow_start_batches_stop_after_a_failing_batch():
    calls = []

    def ok():
        calls.append(1)

    assert slow_start_batch(10, 1, ok) == (10, None)
    assert len(calls) == 10  # batches 1, 2, 4, 3

    n = {"i": 0}

    def fail_on_fourth():
        n["i"] += 1
        if n["i"] == 4:
            raise RuntimeError("quota")

    done, err = slow_start_batch(20, 1, fail_on_fourth)
    # batches 1, 2 succeed; the batch of 4 runs fully with one failure; then stop
    assert (done, str(err), n["i"]) == (6, "quota", 7)


def test_expectations_satisfied_observed_and_expire_after_five_minutes():
    e = ControllerExpectations()
    assert e.satisfied("ns/a", 0.0)
    e.expect_creations("ns/a", 2, now=10.0)
    assert not e.satisfied("ns/a", 11.0)
    e.creation_observed("ns/a")
    assert not e.satisfied("ns/a", 11.0)
    e.creation_observed("ns/a")
    assert e.satisfied("ns/a", 11.0)
    e.expect_deletions("ns/a", ["ns/p1", "ns/p2"], now=20.0)
    e.deletion_observed("ns/a", "ns/p1")
    e.deletion_observed("ns/a", "ns/p1")  # counted once
    assert e.get("ns/a") == (0, 1)
    assert not e.satisfied("ns/a", 320.0)
    assert e.satisfied("ns/a", 320.5)  # older than 5 minutes


def _pod(name, node="", phase="Pending", ready=None, created=0, restarts=0, uid=None):
    conds = []
    if ready is not None:
        conds.append({"type": "Ready", "status": "True", "lastTransitionTime": format_time(DEFAULT_EPOCH, ready)})
    return {"metadata": {"name": name, "namespace": NS, "uid": uid or name,
                         "creationTimestamp": format_time(DEFAULT_EPOCH, created)},
            "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": conds,
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


def test_active_pods_order_for_deletion():
    unassigned = _pod("unassigned")
    pending = _pod("pending", node="n1")
    unknown = _pod("unknown", node="n1", phase="Unknown")
    running = _pod("running", node="n1", phase="Running")
    ready_old = _pod("ready-old", node="n1", phase="Running", ready=100)
    ready_new = _pod("ready-new", node="n1", phase="Running", ready=200)
    pods = [ready_old, running, ready_new, unknown, pending, unassigned]
    order = [p["metadata"]["name"] for p in sort_active_pods(pods)]
    assert order == ["unassigned", "pending", "unknown", "running", "ready-new", "ready-old"]
    # restarts: more first; then newer creation first
    a = _pod("a", node="n1", phase="Running", restarts=3, created=5)
    b = _pod("b", node="n1", phase="Running", restarts=0, created=9)
    c = _pod("c", node="n1", phase="Running", restarts=0, created=1)
    assert [p["metadata"]["name"] for p in sort_active_pods([c, b, a])] == ["a", "b", "c"]


def test_deletion_prefers_doubled_up_nodes_and_filters_inactive():
    a1 = _pod("a1", node="n1", phase="Running", ready=10)
    a2 = _pod("a2", node="n1", phase="Running", ready=10)
    b1 = _pod("b1", node="n2", phase="Running", ready=10)
    ranked = rank_pods_for_deletion([b1, a1, a2], [1, 2, 2], now=100.0)
    assert ranked[0]["metadata"]["name"] in ("a1", "a2") and ranked[-1]["metadata"]["name"] == "b1"
    assert [p["metadata"]["name"] for p in pods_to_delete([b1, a1, a2], [b1, a1, a2], 1, 100.0)] == ["a1"]
    done = _pod("done", phase="Succeeded")
    gone = {**_pod("gone"), "metadata": {**_pod("gone")["metadata"], "deletionTimestamp": "x"}}
    assert filter_active_pods([done, gone, a1]) == [a1]


def test_availability_needs_min_ready_seconds_strictly_passed():
    p = _pod("p", node="n1", phase="Running", ready=100)
    assert is_pod_available(p, 0, 100.0)
    assert not is_pod_available(p, 10, 110.0)
    assert is_pod_available(p, 10, 110.5)


def test_pod_from_template_and_status_shape():
    rs = {**rs_manifest(), "metadata": {"name": "web", "namespace": NS, "uid": "u1", "generation": 2}}
    pod = pod_from_template(rs["spec"]["template"], rs)
    assert pod["metadata"]["generateName"] == "web-"
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert pod["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1",
        "controller": True, "blockOwnerDeletion": True}]
    status = calculate_status(rs, [], None, 0.0)
    assert status == {"replicas": 0}
    failed = calculate_status(rs, [], RuntimeError("boom"), 0.0)
    assert failed["conditions"][0]["type"] == "ReplicaFailure"
    assert failed["conditions"][0]["reason"] == "FailedCreate"


# --------------------------------------------------------------------------- the controller


def test_replicaset_creates_pods_with_events_and_status():
    async def body(rt, api):
        api.create("replicasets", rs_manifest(replicas=3), namespace=NS)
        await rt.settle(horizon=30)
        pods = pods_of(api)
        assert len(pods) == 3
        for p in pods:
            assert p["metadata"]["name"].startswith("web-") and len(p["metadata"]["name"]) == 9
            ref = p["metadata"]["ownerReferences"][0]
            assert ref["kind"] == "ReplicaSet" and ref["controller"] and ref["blockOwnerDeletion"]
        created = events(api, "SuccessfulCreate")
        assert sorted(e["message"] for e in created) == sorted(f"Created pod: {p['metadata']['name']}" for p in pods)
        assert all(e["source"]["component"] == "replicaset-controller" for e in created)
        rs = api.get("replicasets", "web", namespace=NS)
        assert rs["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3,
                                "availableReplicas": 3, "observedGeneration": 1}

    run(body, kubelet=lambda api: FakeKubelet(api))


def test_scale_down_deletes_surplus_and_records_events():
    async def body(rt, api):
        api.create("replicasets", rs_manifest(replicas=4), namespace=NS)
        await rt.settle(horizon=30)
        api.update_scale("replicasets", "web", 1, namespace=NS)
        await rt.settle(horizon=30)
        assert len(pods_of(api)) == 1
        deleted = events(api, "SuccessfulDelete")
        assert len(deleted) == 3 and all(e["message"].startswith("Deleted pod: web-") for e in deleted)
        assert api.get("replicasets", "web", namespace=NS)["status"]["replicas"] == 1

    run(body, kubelet=lambda api: FakeKubelet(api))


def test_deleted_pod_is_replaced_with_new_name_and_uid():
    async def body(rt, api):
        api.create("replicasets", rs_manifest(replicas=2), namespace=NS)
        await rt.settle(horizon=30)
        before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(api)}
        victim = sorted(before)[0]
        api.delete("pods", victim, namespace=NS, grace_period_seconds=0)
        await rt.settle(horizon=30)
        after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(api)}
        assert len(after) == 2 and victim not in after
        new = set(after) - set(before)
        assert len(new) == 1 and after[new.pop()] not in before.values()

    run(body, kubelet=lambda api: FakeKubelet(api))


def test_slow_watch_never_overshoots_replicas():
    async def body(rt, api):
        rt.delay_watch("replicaset-controller", 5.0)
        api.create("replicasets", rs_manifest(replicas=5), namespace=NS)
        await rt.advance(30)
        api.update_scale("replicasets", "web", 8, namespace=NS)
        await rt.advance(60)  # delayed watch events are not "scheduled work" for settle()
        assert len(pods_of(api)) == 8

    cluster, _ = run(body, kubelet=lambda api: FakeKubelet(api))
    live: dict[str, bool] = {}
    for rec in cluster.log.records(prefix="/registry/pods/"):
        if rec.type == "DELETED":
            live.pop(rec.key, None)
        else:
            live[rec.key] = not rec.object["metadata"].get("deletionTimestamp")
        assert sum(live.values()) <= 8
        if rec.time < 30:
            assert sum(live.values()) <= 5


def test_adopts_orphans_and_releases_pods_that_stop_matching():
    async def body(rt, api):
        orphan = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "stray", "namespace": NS, "labels": {"app": "web"}},
                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        api.create("pods", orphan, namespace=NS)
        api.create("replicasets", rs_manifest(replicas=2), namespace=NS)
        await rt.settle(horizon=30)
        rs = api.get("replicasets", "web", namespace=NS)
        stray = api.get("pods", "stray", namespace=NS)
        assert stray["metadata"]["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert len(pods_of(api)) == 2  # the orphan counted: only one created
        api.patch("pods", "stray", {"metadata": {"labels": {"app": "other"}}}, namespace=NS)
        await rt.settle(horizon=30)
        assert not api.get("pods", "stray", namespace=NS)["metadata"].get("ownerReferences")
        assert len(pods_of(api)) == 2  # a replacement was made

    run(body, kubelet=lambda api: FakeKubelet(api))


def test_quota_failure_sets_replica_failure_condition():
    async def body(rt, api):
        api.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota",
                                      "metadata": {"name": "q", "namespace": NS}, "spec": {"hard": {"pods": "2"}}},
                   namespace=NS)
        api.create("replicasets", rs_manifest(replicas=3), namespace=NS)
        await rt.advance(5)
        rs = api.get("replicasets", "web", namespace=NS)
        cond = rs["status"]["conditions"][0]
        assert (cond["type"], cond["status"], cond["reason"]) == ("ReplicaFailure", "True", "FailedCreate")
        assert "exceeded quota: q" in cond["message"]
        assert rs["status"]["replicas"] == 2
        failed = events(api, "FailedCreate")
        assert failed and failed[0]["type"] == "Warning" and failed[0]["message"].startswith("Error creating: ")
        api.delete("resourcequotas", "q", namespace=NS)
        await rt.advance(60)
        rs = api.get("replicasets", "web", namespace=NS)
        assert rs["status"]["replicas"] == 3 and "conditions" not in rs["status"]

    run(body, kubelet=lambda api: FakeKubelet(api))


def test_min_ready_seconds_delays_availability_and_requeues():
    async def body(rt, api):
        api.create("replicasets", rs_manifest(replicas=2, min_ready=10), namespace=NS)
        await rt.advance(5)
        st = api.get("replicasets", "web", namespace=NS)["status"]
        assert st.get("readyReplicas") == 2 and "availableReplicas" not in st
        await rt.settle(horizon=30)
        st = api.get("replicasets", "web", namespace=NS)["status"]
        assert st["availableReplicas"] == 2
        assert rt.now < 16  # requeued for the moment availability arrives, not a resync

    run(body, kubelet=lambda api: FakeKubelet(api))


def test_replication_controller_uses_map_selector_and_its_own_event_source():
    async def body(rt, api):
        rc = {"apiVersion": "v1", "kind": "ReplicationController",
              "metadata": {"name": "legacy", "namespace": NS},
              "spec": {"replicas": 2, "selector": {"app": "legacy"},
                       "template": {"metadata": {"labels": {"app": "legacy"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
        api.create("replicationcontrollers", rc, namespace=NS)
        await rt.settle(horizon=30)
        pods = pods_of(api, "app=legacy")
        assert len(pods) == 2
        ref = pods[0]["metadata"]["ownerReferences"][0]
        assert (ref["apiVersion"], ref["kind"]) == ("v1", "ReplicationController")
        assert {e["source"]["component"] for e in events(api, "SuccessfulCreate")} == {"replication-controller"}
        assert api.get("replicationcontrollers", "legacy", namespace=NS)["status"]["replicas"] == 2

    run(body, kubelet=lambda api: FakeKubelet(api), rc=True)


def test_burst_limits_how_many_pods_one_sync_creates():
    async def body(rt, api):
        rt.delay_watch("replicaset-controller", 1.0)
        api.create("replicasets", rs_manifest(replicas=12), namespace=NS)
        await rt.advance(1.5)  # the ReplicaSet reaches the controller at t=1
        # one sync creates at most burstReplicas; the rest wait for the next sync
        assert len(pods_of(api)) == 5
        await rt.advance(10)
        assert len(pods_of(api)) == 12

    cluster = Cluster.create(seed=3)
    run_cluster(cluster, lambda rt: body(rt, cluster.api),
                {"replicaset-controller": lambda: ReplicaSetController(cluster.api, burst_replicas=5)})
    assert ReplicaSetController(cluster.api).burst_replicas == 500
