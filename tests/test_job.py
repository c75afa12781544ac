"""The Job controller behaves as upstream's job-controller: pods, counting with
the tracking finalizer, back-off, deadlines, Indexed completion, policies, suspend."""

from __future__ import annotations

from hypothesis import given, strategies as st

from k8semu.api.meta import parse_time
from k8semu.controllers.job import (
    JOB_TRACKING_FINALIZER,
    JobController,
    backoff_remaining,
    format_indexes,
    match_pod_failure_policy,
    parse_indexes,
    with_indexes,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster


def job(name="pi", **spec):
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "main", "image": "perl:5.34"}]}},
            **spec,
        },
    }
    return body


def pods_of(api, name):
    items = api.list("pods", namespace="default")["items"]
    return [p for p in items if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == name]


def active_pods(api, name):
    return [p for p in pods_of(api, name)
            if p["status"].get("phase") not in ("Succeeded", "Failed") and not p["metadata"].get("deletionTimestamp")]


def finish(api, pod, phase, exit_code=None):
    """What a kubelet would write when the pod's only container exits."""
    code = (0 if phase == "Succeeded" else 1) if exit_code is None else exit_code
    now = api.timestamp()
    status = {**pod["status"], "phase": phase, "containerStatuses": [{
        "name": "main", "image": "perl:5.34", "imageID": "", "ready": False, "restartCount": 0,
        "started": False,
        "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                 "startedAt": now, "finishedAt": now}},
    }]}
    return api.update("pods", {**pod, "status": status}, subresource="status")


def events(api, reason=None):
    evs = api.list("events", namespace="default")["items"]
    return [e for e in evs if reason is None or e["reason"] == reason]


def run(cluster, body):
    return run_cluster(cluster, body, {"job-controller": lambda: JobController(cluster.api)})


def condition_types(j):
    return [(c["type"], c.get("reason")) for c in j["status"].get("conditions") or []]


def test_backoff_limit_2_fails_after_exactly_3_failed_pods():
    cluster = Cluster.create(seed=1)
    api = cluster.api
    created_at = []

    async def body(rt):
        api.create("jobs.batch", job(backoffLimit=2))
        while True:
            ok = await rt.until(lambda: bool(active_pods(api, "pi")) or _finished(api), limit=1000)
            assert ok
            if _finished(api):
                break
            pod = active_pods(api, "pi")[0]
            assert JOB_TRACKING_FINALIZER in pod["metadata"]["finalizers"]
            created_at.append(parse_time(api.epoch, pod["metadata"]["creationTimestamp"]))
            finish(api, pod, "Failed")
            await rt.settle()
        await rt.settle()

    run(cluster, body)
    j = api.get("jobs.batch", "pi", namespace="default")
    assert len(created_at) == 3
    assert len(events(api, "SuccessfulCreate")) == 3
    # the replacement pods wait out the failure back-off: 10 s, then 20 s
    assert created_at[1] - created_at[0] >= 10
    assert created_at[2] - created_at[1] >= 20
    assert j["status"]["failed"] == 3
    assert j["status"].get("succeeded", 0) == 0
    assert j["status"]["active"] == 0
    assert condition_types(j) == [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
    assert j["status"]["conditions"][-1]["message"] == "Job has reached the specified backoff limit"
    ev = events(api, "BackoffLimitExceeded")
    assert [e["type"] for e in ev] == ["Warning"]
    assert ev[0]["source"]["component"] == "job-controller"
    # every counted pod had its finalizer removed (and, unbound and finished, is gone or kept finished)
    assert all(JOB_TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in pods_of(api, "pi"))
    assert j["status"]["uncountedTerminatedPods"] == {}


def _finished(api, name="pi"):
    j = api.get("jobs.batch", name, namespace="default")
    return any(c["type"] in ("Complete", "Failed") for c in j["status"].get("conditions") or [])


def test_indexed_job_completes_with_completed_indexes():
    cluster = Cluster.create(seed=2)
    api = cluster.api
    seen_indexes = []

    async def body(rt):
        api.create("jobs.batch", job(completions=5, parallelism=2, completionMode="Indexed"))
        while not _finished(api):
            assert await rt.until(lambda: bool(active_pods(api, "pi")) or _finished(api))
            act = active_pods(api, "pi")
            assert len(act) <= 2
            for pod in act:
                ix = pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == ix
                assert pod["metadata"]["name"].startswith(f"pi-{ix}-")
                assert pod["spec"]["hostname"] == f"pi-{ix}"
                env = pod["spec"]["containers"][0]["env"]
                assert env[0]["name"] == "JOB_COMPLETION_INDEX"
                seen_indexes.append(int(ix))
                finish(api, pod, "Succeeded")
            await rt.settle()
            j = api.get("jobs.batch", "pi", namespace="default")
            seen_indexes.append(j["status"].get("completedIndexes"))

    run(cluster, body)
    j = api.get("jobs.batch", "pi", namespace="default")
    assert j["status"]["completedIndexes"] == "0-4"
    assert j["status"]["succeeded"] == 5
    assert seen_indexes[:3] == [0, 1, "0,1"]
    assert condition_types(j) == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert j["status"]["conditions"][1]["message"] == "Reached expected number of succeeded pods"
    assert j["status"]["completionTime"] >= j["status"]["startTime"]
    assert [e["message"] for e in events(api, "Completed")] == ["Job completed"]
    created = [e["message"] for e in events(api, "SuccessfulCreate")]
    assert len(created) == 5 and all(m.startswith("Created pod: pi-") for m in created)


def test_active_deadline_fails_the_job_at_30_seconds():
    cluster = Cluster.create(seed=3)
    api = cluster.api

    async def body(rt):
        api.create("jobs.batch", job(activeDeadlineSeconds=30, parallelism=2, completions=4))
        assert await rt.until(lambda: _finished(api), limit=100)
        await rt.settle()

    run(cluster, body)
    j = api.get("jobs.batch", "pi", namespace="default")
    assert condition_types(j) == [("FailureTarget", "DeadlineExceeded"), ("Failed", "DeadlineExceeded")]
    failed = j["status"]["conditions"][-1]
    assert failed["message"] == "Job was active longer than specified deadline"
    assert parse_time(api.epoch, failed["lastTransitionTime"]) == 30
    assert j["status"]["active"] == 0 and j["status"]["failed"] == 2
    assert active_pods(api, "pi") == []
    assert [e["message"] for e in events(api, "DeadlineExceeded")] == ["Job was active longer than specified deadline"]


def test_pod_failure_policy_fail_job_on_exit_code():
    cluster = Cluster.create(seed=4)
    api = cluster.api
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In",
                                                                "values": [42]}}]}

    async def body(rt):
        api.create("jobs.batch", job(podFailurePolicy=policy))
        assert await rt.until(lambda: bool(active_pods(api, "pi")))
        pod = active_pods(api, "pi")[0]
        finish(api, pod, "Failed", exit_code=42)
        assert await rt.until(lambda: _finished(api))
        await rt.settle()
        return pod["metadata"]["name"]

    pod_name = run(cluster, body)
    j = api.get("jobs.batch", "pi", namespace="default")
    msg = f"Container main for pod default/{pod_name} failed with exit code 42 matching FailJob rule at index 0"
    assert condition_types(j) == [("FailureTarget", "PodFailurePolicy"), ("Failed", "PodFailurePolicy")]
    assert j["status"]["conditions"][-1]["message"] == msg
    assert j["status"]["failed"] == 1


def test_suspended_job_creates_nothing_until_resumed():
    cluster = Cluster.create(seed=5)
    api = cluster.api

    async def body(rt):
        api.create("jobs.batch", job(suspend=True, parallelism=2, completions=2))
        await rt.settle()
        j = api.get("jobs.batch", "pi", namespace="default")
        assert pods_of(api, "pi") == []
        assert condition_types(j) == [("Suspended", "JobSuspended")]
        assert "startTime" not in j["status"]
        api.patch("jobs.batch", "pi", {"spec": {"suspend": False}}, namespace="default")
        await rt.settle()
        assert len(active_pods(api, "pi")) == 2
        j = api.get("jobs.batch", "pi", namespace="default")
        cond = j["status"]["conditions"][0]
        assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
            "Suspended", "False", "JobResumed", "Job resumed")
        assert j["status"]["active"] == 2
        # suspending again deletes the active pods without counting them as failed
        api.patch("jobs.batch", "pi", {"spec": {"suspend": True}}, namespace="default")
        await rt.settle()
        assert active_pods(api, "pi") == []
        j = api.get("jobs.batch", "pi", namespace="default")
        assert j["status"]["active"] == 0 and j["status"].get("failed", 0) == 0

    run(cluster, body)
    # the second "Suspended" is folded into the first by the event correlator
    assert [(e["reason"], e["count"]) for e in events(api) if e["reason"] in ("Suspended", "Resumed")] == [
        ("Suspended", 2), ("Resumed", 1)]


def test_non_parallel_job_completes_once_one_pod_succeeds():
    cluster = Cluster.create(seed=6)
    api = cluster.api

    async def body(rt):
        api.create("jobs.batch", job())
        assert await rt.until(lambda: bool(active_pods(api, "pi")))
        finish(api, active_pods(api, "pi")[0], "Succeeded")
        assert await rt.until(lambda: _finished(api))
        await rt.settle()

    run(cluster, body)
    j = api.get("jobs.batch", "pi", namespace="default")
    assert j["status"]["succeeded"] == 1 and j["status"]["active"] == 0
    assert condition_types(j)[-1] == ("Complete", "CompletionsReached")
    # the job status was never counted twice over every revision of the log
    for rec in cluster.log.records():
        if rec.object and rec.object.get("kind") == "Job":
            assert (rec.object.get("status") or {}).get("succeeded", 0) <= 1


@given(st.sets(st.integers(0, 40)))
def test_indexes_round_trip(indexes):
    ivs = with_indexes([], indexes)
    text = format_indexes(ivs)
    assert parse_indexes(text, 41) == ivs
    assert sorted(i for a, b in ivs for i in range(a, b + 1)) == sorted(indexes)


def test_indexes_format_as_upstream():
    assert format_indexes(with_indexes([], [0, 1, 2, 4])) == "0-2,4"
    assert format_indexes(with_indexes([], [0, 1, 3, 4, 5])) == "0,1,3-5"


def test_backoff_doubles_and_caps_at_six_minutes():
    assert backoff_remaining(1, 100.0, 100.0) == 10
    assert backoff_remaining(3, 100.0, 105.0) == 35
    assert backoff_remaining(20, 0.0, 0.0) == 360
    assert backoff_remaining(0, None, 5.0) == 0


def test_pod_failure_policy_ignore_on_condition():
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}
    pod = {"metadata": {"name": "p", "namespace": "default"},
           "status": {"phase": "Failed", "conditions": [{"type": "DisruptionTarget", "status": "True"}]}}
    assert match_pod_failure_policy(policy, pod) == (None, False, "Ignore")


def test_ttl_after_finished_deletes_the_job_ttl_seconds_after_it_completed():
    from k8semu.controllers.ttlafterfinished import TTLAfterFinishedController

    cluster = Cluster.create(seed=7)
    api = cluster.api

    async def body(rt):
        api.create("jobs.batch", job(ttlSecondsAfterFinished=100))
        assert await rt.until(lambda: bool(active_pods(api, "pi")))
        finish(api, active_pods(api, "pi")[0], "Succeeded")
        assert await rt.until(lambda: _finished(api))
        await rt.settle()
        done = api.get("jobs.batch", "pi", namespace="default")["status"]["completionTime"]
        await rt.advance(parse_time(api.epoch, done) + 99 - rt.now)
        assert api.list("jobs.batch", namespace="default")["items"]
        await rt.advance(2)
        return parse_time(api.epoch, done)

    done_at = run_cluster(cluster, body, {
        "job-controller": lambda: JobController(cluster.api),
        "ttl-after-finished-controller": lambda: TTLAfterFinishedController(cluster.api),
    })
    assert api.list("jobs.batch", namespace="default")["items"] == []
    deletes = [r for r in cluster.log.records() if r.type == "DELETED" and r.object.get("kind") == "Job"]
    assert len(deletes) == 1
    assert deletes[0].actor == "ttl-after-finished-controller"
    assert deletes[0].time == done_at + 100
