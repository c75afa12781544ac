"""The kubelet's bookkeeping stays cheap without changing what a user sees.

The pod workers remember when they next have something to do
(:meth:`~k8semu.node.kubelet.PodWorker.next_due`) instead of recomputing it for
every pod on every pass of the kubelet's loop, and remember their pods'
requests for admission. These tests run a node through the lifecycle paths
whose timing depends on those times (crash-loop back-off, probes on their
periods, image-pull back-off, a missing ConfigMap for the environment and for
a volume, graceful deletion, admission) with every cached time checked against
a fresh computation, and check what a user sees: restart times, events, ready
times, the rejection message, the same log twice.
"""

from __future__ import annotations

import pytest

from k8semu.api.meta import parse_time
from k8semu.node.kubelet import PodWorker
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig
from k8semu.sim.runtime import run_cluster

BUSYBOX = "busybox:1.36"


@pytest.fixture
def checked(monkeypatch):
    """Every cached next-due time is compared with a fresh computation (AssertionError if stale)."""
    monkeypatch.setattr(PodWorker, "check_due_cache", True)


def _pod(name, containers, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "node-1", "containers": containers, **spec}}


def _get(api, name):
    return api.get("pods", name, namespace="default")


def _cs(p, i=0):
    return ((p.get("status") or {}).get("containerStatuses") or [{}])[i]


def _events(api, name):
    evs = [e for e in api.list("events", namespace="default")["items"] if e["involvedObject"]["name"] == name]
    return [(e["reason"], e["message"]) for e in sorted(
        evs, key=lambda e: (e["firstTimestamp"], int(e["metadata"]["resourceVersion"])))]


def _restart_times(cluster, name):
    """(restartCount, virtual time) of each status write that shows a new restart."""
    out = []
    for rec in cluster.log.records(prefix=f"/registry/pods/default/{name}"):
        cs = (rec.object.get("status") or {}).get("containerStatuses") or []
        n = cs[0].get("restartCount", 0) if cs else 0
        if n and (not out or out[-1][0] != n):
            out.append((n, rec.time))
    return out


def _mixed_workload(cluster):
    """Pods on node-1 that exercise every kind of scheduled kubelet work; returns what a user sees."""
    api = cluster.api
    seen = {}

    async def body(rt):
        t0 = rt.now
        api.create("pods", _pod("crash", [{"name": "app", "image": BUSYBOX, "command": ["sh", "-c", "exit 1"]}]))
        api.create("pods", _pod("ready", [
            {"name": "web", "image": "nginx:1.30-alpine", "ports": [{"containerPort": 80}],
             "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 3,
                                "periodSeconds": 4}}]))
        api.create("pods", _pod("badimage", [{"name": "app", "image": "nginx:doesnotexist"}]))
        api.create("pods", _pod("needsenv", [
            {"name": "app", "image": BUSYBOX, "command": ["sleep", "3600"],
             "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "late-env", "key": "a"}}}]}]))
        api.create("pods", _pod("needsvol", [
            {"name": "app", "image": BUSYBOX, "command": ["sleep", "3600"],
             "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]}],
            volumes=[{"name": "cfg", "configMap": {"name": "late-vol"}}]))
        api.create("pods", _pod("stubborn", [{"name": "app", "image": BUSYBOX, "command": ["sleep", "3600"]}],
                                terminationGracePeriodSeconds=7))
        sick = _pod("sick", [{"name": "app", "image": BUSYBOX, "command": ["sleep", "3600"],
                              "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]},
                                                "periodSeconds": 5, "failureThreshold": 2}}])
        sick["metadata"]["annotations"] = {"k8semu.io/behaviour.app": "live false after 10s\nsigterm exit 0\nforever"}
        api.create("pods", sick)
        await rt.advance(25)
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "late-env", "namespace": "default"}, "data": {"a": "1"}})
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "late-vol", "namespace": "default"}, "data": {"f": "x"}})
        t_del = rt.now
        api.delete("pods", "stubborn", namespace="default")
        assert await rt.until(lambda: not api.list("pods", namespace="default",
                                                   field_selector="metadata.name=stubborn")["items"], limit=30)
        seen["stubborn_gone_after"] = rt.now - t_del
        await rt.advance(200)
        for name in ("needsenv", "needsvol", "ready"):
            running = _cs(_get(api, name)).get("state", {}).get("running")
            seen[f"{name}_started"] = parse_time(api.epoch, running["startedAt"]) - t0 if running else None
        ready = next(x for x in _get(api, "ready")["status"]["conditions"] if x["type"] == "Ready")
        seen["ready_at"] = parse_time(api.epoch, ready["lastTransitionTime"]) - t0
        seen["crash_restarts"] = [(n, round(t - t0, 6)) for n, t in _restart_times(cluster, "crash")]
        seen["sick_restarts"] = _cs(_get(api, "sick"))["restartCount"]
        seen["badimage"] = _cs(_get(api, "badimage"))["state"]["waiting"]["reason"]
        seen["events"] = {n: _events(api, n) for n in ("crash", "badimage", "needsenv", "needsvol", "sick")}

    run_cluster(cluster, body, default_factories(cluster))
    return seen


def test_scheduled_work_runs_at_the_same_virtual_times_with_cached_due_times(checked):
    c = Cluster.create(seed=7, config=ClusterConfig.default(workers=1))
    seen = _mixed_workload(c)
    gaps = [round(b[1] - a[1], 6) for a, b in zip(seen["crash_restarts"], seen["crash_restarts"][1:])]
    assert gaps[:4] == [10.0, 20.0, 40.0, 80.0]  # CrashLoopBackOff: 10 s doubling
    # readiness: the first 4 s tick after startedAt + 3 s (the ticker starts with the pod worker)
    started = seen["ready_started"]
    assert seen["ready_at"] == min(4 * k for k in range(100) if 4 * k >= started + 3)
    assert seen["stubborn_gone_after"] == 7  # sleep ignores SIGTERM: SIGKILL at the end of the grace period
    assert seen["sick_restarts"] >= 1
    assert seen["badimage"] == "ImagePullBackOff"
    # the missing ConfigMaps were created at 25 s: the container starts on the next retry after that
    assert 25 <= seen["needsenv_started"] <= 25 + 10 + 5
    assert seen["needsvol_started"] >= 25
    assert ("Failed", 'Error: configmap "late-env" not found') in seen["events"]["needsenv"]
    assert any(r == "FailedMount" for r, _ in seen["events"]["needsvol"])
    assert ("Killing", "Container app failed liveness probe, will be restarted") in seen["events"]["sick"]


def test_the_same_workload_writes_the_same_log_twice(checked):
    logs = []
    for _ in range(2):
        c = Cluster.create(seed=7, config=ClusterConfig.default(workers=1))
        _mixed_workload(c)
        logs.append([(r.key, r.type, r.actor, r.time, r.object) for r in c.log.records(0)])
    assert logs[0] == logs[1]


def test_idle_pods_are_not_synced_while_another_pod_crash_loops(monkeypatch):
    """A node with many settled pods does work only for the pod that has something due: the idle
    pods are not synced again, and their next-due times are not recomputed on every pass."""
    c = Cluster.create(seed=7, config=ClusterConfig.default(workers=1))
    api = c.api
    syncs: dict[str, int] = {}
    computed: dict[str, int] = {}
    real_sync, real_due = PodWorker.sync, PodWorker._due_times

    def sync(self, now):
        syncs[self.pod["metadata"]["name"]] = syncs.get(self.pod["metadata"]["name"], 0) + 1
        return real_sync(self, now)

    def due(self, significance):
        if not significance:
            computed[self.pod["metadata"]["name"]] = computed.get(self.pod["metadata"]["name"], 0) + 1
        return real_due(self, significance)

    monkeypatch.setattr(PodWorker, "sync", sync)
    monkeypatch.setattr(PodWorker, "_due_times", due)

    async def body(rt):
        for i in range(20):
            api.create("pods", _pod(f"idle-{i}", [{"name": "app", "image": BUSYBOX, "command": ["sleep", "infinity"]}]))
        api.create("pods", _pod("crash", [{"name": "app", "image": BUSYBOX, "command": ["sh", "-c", "exit 1"]}]))
        await rt.advance(30)
        before_syncs, before_computed = dict(syncs), dict(computed)
        restarts = _cs(_get(api, "crash"))["restartCount"]
        await rt.advance(300)
        assert _cs(_get(api, "crash"))["restartCount"] > restarts  # the crash loop went on
        for i in range(20):
            name = f"idle-{i}"
            assert syncs[name] == before_syncs[name]
            assert computed[name] == before_computed[name]

    run_cluster(c, body, default_factories(c))


def test_admission_counts_the_requests_of_every_admitted_pod(checked):
    c = Cluster.create(seed=7, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        for name, cpu in (("a", "1500m"), ("b", "2")):
            api.create("pods", _pod(name, [{"name": "app", "image": BUSYBOX, "command": ["sleep", "3600"],
                                            "resources": {"requests": {"cpu": cpu}}}]))
        assert await rt.until(lambda: all(_get(api, n)["status"].get("phase") == "Running" for n in "ab"),
                              limit=30)
        api.create("pods", _pod("c", [{"name": "app", "image": BUSYBOX, "resources": {"requests": {"cpu": "1"}}}]))
        assert await rt.until(lambda: _get(api, "c")["status"].get("phase") == "Failed", limit=10)
        st = _get(api, "c")["status"]
        assert (st["reason"], st["message"]) == (
            "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 3500, "
                        "capacity: 4000")
        # once a pod is gone its requests no longer count
        api.delete("pods", "b", namespace="default", grace_period_seconds=0)
        await rt.advance(1)
        api.create("pods", _pod("d", [{"name": "app", "image": BUSYBOX, "command": ["sleep", "3600"],
                                       "resources": {"requests": {"cpu": "1"}}}]))
        ok = await rt.until(lambda: _get(api, "d")["status"].get("phase") == "Running", limit=30)
        assert ok, _get(api, "d")["status"]

    run_cluster(c, body, default_factories(c))
