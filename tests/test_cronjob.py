"""The CronJob controller behaves as upstream's cronjob-controller, on virtual time."""

from __future__ import annotations

from datetime import datetime, timezone

from k8semu.api.meta import parse_time
from k8semu.client.component import Component
from k8semu.client.informer import EventHandler, meta_namespace_key
from k8semu.controllers.cronjob import (
    CronJobController,
    most_recent_schedule,
    parse_schedule,
)
from k8semu.controllers.job import JobController
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster


class FakeKubelet(Component):
    """Runs every pod to success the moment it is created."""

    name = "fake-kubelet"

    def __init__(self, api):
        super().__init__(api)
        self.pods = self.informer("pods")
        self.q = self.queue()
        self.pods.add_event_handler(EventHandler(on_add=lambda p: self.q.add(meta_namespace_key(p))))

    async def main(self):
        await self.run_workers(self.q, self.sync)

    def sync(self, key):
        ns, name = key.split("/", 1)
        pod = self.pods.indexer.get_by(ns, name)
        if pod is None or pod["status"].get("phase") != "Pending" or pod["metadata"].get("deletionTimestamp"):
            return
        pod = self.api.get("pods", name, namespace=ns)
        now = self.api.timestamp()
        status = {**pod["status"], "phase": "Succeeded", "containerStatuses": [{
            "name": "hello", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}}]}
        self.api.update("pods", {**pod, "status": status}, subresource="status", ctx=self.ctx)


def cronjob(name="hello", schedule="*/5 * * * *", **spec):
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "hello", "image": "busybox"}]}}}},
            **spec,
        },
    }


def components(cluster, kubelet=True):
    api = cluster.api
    out = {"cronjob-controller": lambda: CronJobController(api), "job-controller": lambda: JobController(api)}
    if kubelet:
        out["fake-kubelet"] = lambda: FakeKubelet(api)
    return out


def events(api, reason):
    return [e for e in api.list("events", namespace="default")["items"] if e["reason"] == reason]


def jobs(api):
    return api.list("jobs.batch", namespace="default")["items"]


EPOCH_MINUTES = int(datetime(2025, 1, 1, tzinfo=timezone.utc).timestamp()) // 60


def test_every_five_minutes_for_an_hour_creates_12_jobs_and_keeps_3():
    cluster = Cluster.create(seed=1)
    api = cluster.api

    async def body(rt):
        api.create("cronjobs.batch", cronjob())
        await rt.advance(3600.5)
        await rt.settle()

    run_cluster(cluster, body, components(cluster))
    created = [(e["message"], e["count"]) for e in events(api, "SuccessfulCreate")
               if e["involvedObject"]["kind"] == "CronJob"]
    # client-go's EventAggregator: similar events (same object and reason, other message) less
    # than 10 minutes apart are combined from the 10th on, into one Event whose count grows
    assert created == [(f"Created job hello-{EPOCH_MINUTES + 5 * i}", 1) for i in range(1, 10)] + [
        (f"(combined from similar events): Created job hello-{EPOCH_MINUTES + 60}", 3)]
    left = sorted(j["metadata"]["name"] for j in jobs(api))
    assert left == [f"hello-{EPOCH_MINUTES + 5 * i}" for i in (10, 11, 12)]
    j = api.get("jobs.batch", f"hello-{EPOCH_MINUTES + 60}", namespace="default")
    assert j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2025-01-01T01:00:00Z"
    assert j["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert parse_time(api.epoch, j["metadata"]["creationTimestamp"]) == 3600
    cj = api.get("cronjobs.batch", "hello", namespace="default")
    assert cj["status"]["lastScheduleTime"] == "2025-01-01T01:00:00Z"
    assert cj["status"]["lastSuccessfulTime"] == "2025-01-01T01:00:01Z"
    assert "active" not in cj["status"]
    deleted = [e["message"] for e in events(api, "SuccessfulDelete") if e["involvedObject"]["kind"] == "CronJob"]
    assert deleted == [f"Deleted job hello-{EPOCH_MINUTES + 5 * i}" for i in range(1, 10)]
    saw = [e["message"] for e in events(api, "SawCompletedJob")]
    assert saw[0] == f"Saw completed job: hello-{EPOCH_MINUTES + 5}, status: Complete"
    # every Job appeared at exactly its scheduled minute (the 100 ms requeue delta
    # is below the timestamps' resolution)
    for rec in cluster.log.records():
        if rec.type == "ADDED" and rec.object.get("kind") == "Job":
            assert rec.time % 300 == 0.1 or abs(rec.time % 300 - 0.1) < 1e-6
            assert rec.actor == "cronjob-controller"


def test_forbid_skips_while_a_job_runs():
    cluster = Cluster.create(seed=2)
    api = cluster.api

    async def body(rt):
        api.create("cronjobs.batch", cronjob(concurrencyPolicy="Forbid"))
        await rt.advance(3600.5)

    run_cluster(cluster, body, components(cluster, kubelet=False))
    assert [j["metadata"]["name"] for j in jobs(api)] == [f"hello-{EPOCH_MINUTES + 5}"]
    skipped = events(api, "JobAlreadyActive")
    assert len(skipped) == 1 and skipped[0]["count"] == 11
    assert skipped[0]["message"] == ("Not starting job because prior execution is running and concurrency "
                                     "policy is Forbid")
    cj = api.get("cronjobs.batch", "hello", namespace="default")
    assert [a["name"] for a in cj["status"]["active"]] == [f"hello-{EPOCH_MINUTES + 5}"]


def test_replace_deletes_the_running_job():
    cluster = Cluster.create(seed=3)
    api = cluster.api

    async def body(rt):
        api.create("cronjobs.batch", cronjob(concurrencyPolicy="Replace"))
        await rt.advance(900.5)

    run_cluster(cluster, body, components(cluster, kubelet=False))
    assert [j["metadata"]["name"] for j in jobs(api)] == [f"hello-{EPOCH_MINUTES + 15}"]
    assert [e["message"] for e in events(api, "SuccessfulDelete") if e["involvedObject"]["kind"] == "CronJob"] == [
        f"Deleted job hello-{EPOCH_MINUTES + 5}", f"Deleted job hello-{EPOCH_MINUTES + 10}"]


def test_too_many_missed_start_times_warns_and_runs_the_latest_once():
    cluster = Cluster.create(seed=4)
    api = cluster.api

    async def body(rt):
        api.create("cronjobs.batch", cronjob(suspend=True))
        await rt.advance(1000 * 60 + 30)
        api.patch("cronjobs.batch", "hello", {"spec": {"suspend": False}}, namespace="default")
        await rt.advance(10)

    run_cluster(cluster, body, components(cluster, kubelet=False))
    assert [j["metadata"]["name"] for j in jobs(api)] == [f"hello-{EPOCH_MINUTES + 1000}"]
    warn = events(api, "TooManyMissedTimes")
    assert warn and warn[0]["type"] == "Warning"
    assert warn[0]["message"] == ("too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                                  "or check clock skew")


def test_starting_deadline_skips_a_missed_run():
    cluster = Cluster.create(seed=5)
    api = cluster.api

    async def body(rt):
        api.create("cronjobs.batch", cronjob(suspend=True, startingDeadlineSeconds=10))
        await rt.advance(5 * 60 + 30)  # the 00:05 run is 30 s late when resumed
        api.patch("cronjobs.batch", "hello", {"spec": {"suspend": False}}, namespace="default")
        await rt.advance(60)
        assert jobs(api) == []
        await rt.advance(300)

    run_cluster(cluster, body, components(cluster, kubelet=False))
    assert [j["metadata"]["name"] for j in jobs(api)] == [f"hello-{EPOCH_MINUTES + 10}"]


def test_time_zone_schedule():
    sched = parse_schedule("0 9 * * *", "America/New_York")
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    assert sched.next(start).astimezone(timezone.utc) == datetime(2025, 1, 1, 14, 0, tzinfo=timezone.utc)
    prefixed = parse_schedule("TZ=Asia/Tokyo 0 9 * * *")
    assert prefixed.next(start).astimezone(timezone.utc) == datetime(2025, 1, 2, 0, 0, tzinfo=timezone.utc)
    every = parse_schedule("@every 90s")
    assert (every.next(start) - start).total_seconds() == 90


def test_most_recent_schedule_counts_missed():
    sched = parse_schedule("*/5 * * * *")
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    assert most_recent_schedule(sched, start, datetime(2025, 1, 1, 0, 4, tzinfo=timezone.utc)) == (None, 0)
    recent, missed = most_recent_schedule(sched, start, datetime(2025, 1, 1, 0, 7, tzinfo=timezone.utc))
    assert recent == datetime(2025, 1, 1, 0, 5, tzinfo=timezone.utc) and missed == 1
    recent, missed = most_recent_schedule(sched, start, datetime(2025, 1, 1, 10, 1, tzinfo=timezone.utc))
    assert recent == datetime(2025, 1, 1, 10, 0, tzinfo=timezone.utc) and missed == 120


def test_history_limit_deletes_each_old_job_exactly_once():
    """Regression: a CronJob every minute with ``successfulJobsHistoryLimit: 1`` on a full
    cluster deleted one old Job twice (``SuccessfulDelete`` then Warning ``FailedDelete``
    ``Deleted job: jobs.batch "hello-…" not found``) when a second sync ran before the Jobs
    informer had seen the first sync's delete. Upstream deletes each Job once."""
    from k8semu.sim.components import default_factories

    cluster = Cluster.create(seed=0)
    api = cluster.api

    async def body(rt):
        api.create("cronjobs.batch", cronjob(schedule="* * * * *", successfulJobsHistoryLimit=1))
        await rt.advance(8 * 60 + 30)

    run_cluster(cluster, body, default_factories(cluster))
    mine = [e for e in api.list("events", namespace="default")["items"] if e["involvedObject"]["kind"] == "CronJob"]
    assert [e for e in mine if e["type"] == "Warning"] == []
    deleted = [e["message"] for e in mine if e["reason"] == "SuccessfulDelete"]
    assert deleted == [f"Deleted job hello-{EPOCH_MINUTES + i}" for i in range(1, 8)]
    assert all(e["count"] == 1 for e in mine if e["reason"] == "SuccessfulDelete")
    assert [j["metadata"]["name"] for j in jobs(api)] == [f"hello-{EPOCH_MINUTES + 8}"]
