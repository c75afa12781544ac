"""The kubelet runs pods as upstream's does: sandbox + IP, pulls, events,
probes, restarts with CrashLoopBackOff, OOM kills, completion, graceful
deletion and admission — all on virtual time."""

from __future__ import annotations

import ipaddress
import re

from hypothesis import given, strategies as st

from k8semu.api.meta import parse_time
from k8semu.node import behaviour
from k8semu.node.cni import HostLocalIPAM
from k8semu.node.status import pod_phase
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig
from k8semu.sim.runtime import run_cluster

IMAGE = "nginx:1.30-alpine"


def small_cluster(workers: int = 1) -> Cluster:
    return Cluster.create(seed=7, config=ClusterConfig.default(workers=workers))


def pod(name, node="node-1", containers=None, **spec):
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": containers or [{"name": "nginx", "image": IMAGE}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def get(api, name):
    return api.get("pods", name, namespace="default")


def gone(api, name):
    return not api.list("pods", namespace="default", field_selector=f"metadata.name={name}")["items"]


def _first(e: dict) -> str:
    """When an Event was first seen, in seconds: ``firstTimestamp``, or the scheduler's (events.k8s.io,
    no firstTimestamp) ``eventTime``."""
    return e.get("firstTimestamp") or e["eventTime"][:19] + "Z"


def events_for(api, name):
    evs = [e for e in api.list("events", namespace="default")["items"] if e["involvedObject"]["name"] == name]
    return sorted(evs, key=lambda e: (_first(e), e["metadata"]["resourceVersion"]))


def cstatus(p, i=0):
    return (p.get("status") or {}).get("containerStatuses", [{}])[i]


def state_of(p, i=0):
    return cstatus(p, i).get("state") or {}


def run(cluster, body):
    return run_cluster(cluster, body, default_factories(cluster))


def vt(api, stamp):
    return parse_time(api.epoch, stamp)


# --------------------------------------------------------------------------- start-up

def test_pod_is_scheduled_pulled_created_started_with_an_ip_in_the_node_cidr():
    c = small_cluster(2)
    api = c.api

    async def body(rt):
        api.create("pods", pod("web-1", node=None, containers=[
            {"name": "nginx", "image": IMAGE, "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}]))
        assert await rt.until(lambda: get(api, "web-1")["status"].get("phase") == "Running", limit=60)
        p = get(api, "web-1")
        node = api.get("nodes", p["spec"]["nodeName"])
        assert ipaddress.ip_address(p["status"]["podIP"]) in ipaddress.ip_network(node["spec"]["podCIDR"])
        assert p["status"]["podIP"].endswith(".2")  # host-local: first address after the gateway
        assert p["status"]["hostIP"] == node["status"]["addresses"][0]["address"]
        cs = cstatus(p)
        assert cs["ready"] is True and cs["started"] is True and cs["restartCount"] == 0
        assert cs["image"] == "docker.io/library/nginx:1.30-alpine"
        assert re.fullmatch(r"containerd://[0-9a-f]{64}", cs["containerID"])
        pull = behaviour.image_pull_result(IMAGE)
        assert cs["imageID"] == pull.image_id
        conds = {x["type"]: x["status"] for x in p["status"]["conditions"]}
        assert conds == {"PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
                         "ContainersReady": "True", "PodScheduled": "True"}
        evs = events_for(api, "web-1")
        assert [e["reason"] for e in evs] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
        assert evs[0]["message"] == f"Successfully assigned default/web-1 to {p['spec']['nodeName']}"
        # the scheduler records through events.k8s.io: no source, the reporting fields
        assert evs[0]["source"] == {} and evs[0]["reportingComponent"] == "default-scheduler"
        assert evs[1]["message"] == f'Pulling image "{IMAGE}"'
        assert re.fullmatch(r'Successfully pulled image "nginx:1\.30-alpine" in [0-9.]+m?s '
                            r'\([0-9.]+m?s including waiting\)\. Image size: \d+ bytes\.', evs[2]["message"])
        assert f"Image size: {pull.size} bytes." in evs[2]["message"]
        assert evs[3]["message"] == "Created container: nginx"
        assert evs[4]["message"] == "Started container nginx"
        assert evs[4]["involvedObject"]["fieldPath"] == "spec.containers{nginx}"
        assert evs[4]["source"] == {"component": "kubelet", "host": p["spec"]["nodeName"]}
        # the container starts when the pull is done
        started = vt(api, cs["state"]["running"]["startedAt"])
        assert started == int(pull.duration)

        # a second pod on the same node finds the image cached
        api.create("pods", pod("web-2", node=p["spec"]["nodeName"]))
        assert await rt.until(lambda: get(api, "web-2")["status"].get("phase") == "Running", limit=30)
        reasons = [(e["reason"], e["message"]) for e in events_for(api, "web-2")]
        assert ("Pulled", f'Container image "{IMAGE}" already present on machine') in reasons
        assert not any(r == "Pulling" for r, _ in reasons)
        assert get(api, "web-2")["status"]["podIP"].endswith(".3")

    run(c, body)



def test_pods_started_together_pull_a_missing_image_once_then_only_resolve_its_tag():
    """Five pods land on a node at once with an image it does not have. Each pod worker queues a
    pull (five Pulling events), as upstream's kubelet; the serialized puller downloads the image for
    the first, and the four later pulls only resolve the tag (0.25 s each, the content is in
    containerd's store). Before, each one downloaded it again: the fifth pod started ~5 pulls late."""
    c = small_cluster(1)
    api = c.api

    async def body(rt):
        for i in range(5):
            api.create("pods", pod(f"web-{i}"))
        assert await rt.until(lambda: all(get(api, f"web-{i}")["status"].get("phase") == "Running"
                                          for i in range(5)), limit=60)
        pull = behaviour.image_pull_result(IMAGE)
        starts = sorted(vt(api, state_of(get(api, f"web-{i}"))["running"]["startedAt"]) for i in range(5))
        assert starts[-1] == int(pull.duration + 4 * 0.25)
        pulled = [e["message"] for i in range(5) for e in events_for(api, f"web-{i}") if e["reason"] == "Pulled"]
        assert sum(" in 250ms (" in m for m in pulled) == 4

    run(c, body)

def test_image_that_cannot_be_pulled_goes_errimagepull_then_imagepullbackoff():
    c = small_cluster()
    api = c.api
    bad = "nginx:doesnotexist"

    async def body(rt):
        api.create("pods", pod("bad", containers=[{"name": "app", "image": bad}]))
        assert await rt.until(lambda: state_of(get(api, "bad")).get("waiting", {}).get("reason") == "ErrImagePull",
                              limit=30)
        w = state_of(get(api, "bad"))["waiting"]
        assert w["message"].startswith("rpc error: code = NotFound desc = failed to pull and unpack image "
                                       '"docker.io/library/nginx:doesnotexist"')
        assert await rt.until(
            lambda: state_of(get(api, "bad")).get("waiting", {}).get("reason") == "ImagePullBackOff", limit=30)
        p = get(api, "bad")
        assert state_of(p)["waiting"]["message"] == f'Back-off pulling image "{bad}"'
        assert p["status"]["phase"] == "Pending"
        msgs = [(e["type"], e["reason"], e["message"]) for e in events_for(api, "bad")]
        assert ("Warning", "Failed", "Error: ErrImagePull") in msgs
        assert ("Normal", "BackOff", f'Back-off pulling image "{bad}"') in msgs
        assert ("Warning", "Failed", "Error: ImagePullBackOff") in msgs
        assert any(m.startswith(f'Failed to pull image "{bad}": rpc error') for _, _, m in msgs)

    run(c, body)


def test_crashing_container_restarts_on_the_backoff_schedule():
    c = small_cluster()
    api = c.api

    async def body(rt):
        api.create("pods", pod("crash", containers=[
            {"name": "app", "image": "busybox:1.36", "command": ["sh", "-c", "exit 1"]}]))
        await rt.advance(200)
        p = get(api, "crash")
        # every (re)start of the container is one status write with a new startedAt/restartCount
        starts = []
        for rec in c.log.records(prefix="/registry/pods/default/crash"):
            cs = (rec.object.get("status") or {}).get("containerStatuses") or []
            last = (cs[0].get("lastState") or {}).get("terminated") if cs else None
            if last and (not starts or starts[-1][0] != cs[0]["restartCount"]):
                starts.append((cs[0]["restartCount"], rec.time))
        counts = [n for n, _ in starts]
        assert counts[:5] == [1, 2, 3, 4, 5]
        gaps = [round(b[1] - a[1], 6) for a, b in zip(starts, starts[1:])]
        assert gaps[:4] == [10.0, 20.0, 40.0, 80.0]
        w = state_of(p)["waiting"]
        assert w["reason"] == "CrashLoopBackOff"
        assert re.fullmatch(r"back-off (80s|2m40s) restarting failed container=app pod=crash_default\(.+\)",
                            w["message"])
        last = cstatus(p)["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (1, "Error")
        assert p["status"]["phase"] == "Running"
        msgs = [e["message"] for e in events_for(api, "crash") if e["reason"] == "BackOff"]
        uid = p["metadata"]["uid"]
        assert msgs == [f"Back-off restarting failed container app in pod crash_default({uid})"]

    run(c, body)


def test_container_over_its_memory_limit_is_oomkilled():
    c = small_cluster()
    api = c.api

    async def body(rt):
        body_ = pod("hog", restartPolicy="Never", containers=[
            {"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"],
             "resources": {"limits": {"memory": "100Mi"}}}])
        body_["metadata"]["annotations"] = {"k8semu.io/behaviour.app": "sleep 5s\nmemory 200Mi\nforever"}
        api.create("pods", body_)
        assert await rt.until(lambda: get(api, "hog")["status"].get("phase") == "Failed", limit=60)
        t = state_of(get(api, "hog"))["terminated"]
        assert (t["exitCode"], t["reason"]) == (137, "OOMKilled")
        assert vt(api, t["finishedAt"]) - vt(api, t["startedAt"]) == 5

    run(c, body)


def test_job_style_pod_succeeds_with_completed():
    c = small_cluster()
    api = c.api

    async def body(rt):
        api.create("pods", pod("once", restartPolicy="Never", containers=[
            {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "echo done"]}]))
        assert await rt.until(lambda: get(api, "once")["status"].get("phase") == "Succeeded", limit=60)
        p = get(api, "once")
        t = state_of(p)["terminated"]
        assert (t["exitCode"], t["reason"]) == (0, "Completed")
        conds = {x["type"]: x for x in p["status"]["conditions"]}
        assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "PodCompleted"
        assert conds["Initialized"].get("reason") == "PodCompleted"
        # terminal pods never go back, and their IP stays in the status
        await rt.advance(60)
        assert get(api, "once")["status"]["phase"] == "Succeeded"
        assert get(api, "once")["status"]["podIP"]

    run(c, body)


def test_init_containers_run_in_order_before_the_app():
    c = small_cluster()
    api = c.api

    async def body(rt):
        api.create("pods", pod("init", initContainers=[
            {"name": "first", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 3"]},
            {"name": "second", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 2"]}]))
        assert await rt.until(lambda: get(api, "init")["status"].get("phase") == "Pending"
                              and get(api, "init")["status"].get("initContainerStatuses"), limit=10)
        p = get(api, "init")
        conds = {x["type"]: x for x in p["status"]["conditions"]}
        assert conds["Initialized"]["status"] == "False"
        assert conds["Initialized"]["reason"] == "ContainersNotInitialized"
        assert state_of(p)["waiting"]["reason"] == "PodInitializing"
        assert await rt.until(lambda: get(api, "init")["status"].get("phase") == "Running", limit=60)
        p = get(api, "init")
        inits = p["status"]["initContainerStatuses"]
        assert [s["state"]["terminated"]["reason"] for s in inits] == ["Completed", "Completed"]
        first_end = vt(api, inits[0]["state"]["terminated"]["finishedAt"])
        second_start = vt(api, inits[1]["state"]["terminated"]["startedAt"])
        assert second_start >= first_end
        assert vt(api, cstatus(p)["state"]["running"]["startedAt"]) >= vt(
            api, inits[1]["state"]["terminated"]["finishedAt"])

    run(c, body)


# --------------------------------------------------------------------------- probes

def test_readiness_probe_makes_the_pod_ready_at_the_first_tick_after_the_initial_delay():
    c = small_cluster()
    api = c.api

    async def body(rt):
        created = rt.now
        api.create("pods", pod("probed", containers=[
            {"name": "nginx", "image": IMAGE, "ports": [{"containerPort": 80}],
             "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 2,
                                "periodSeconds": 5}}]))
        assert await rt.until(lambda: cstatus(get(api, "probed")).get("state", {}).get("running"), limit=30)
        p = get(api, "probed")
        assert cstatus(p)["ready"] is False and p["status"]["phase"] == "Running"
        started = vt(api, cstatus(p)["state"]["running"]["startedAt"])
        assert await rt.until(lambda: cstatus(get(api, "probed")).get("ready"), limit=30)
        ready = next(x for x in get(api, "probed")["status"]["conditions"] if x["type"] == "Ready")
        # probe ticks run every 5 s from when the pod worker started; the first one
        # at or after startedAt + 2 s finds the container ready
        k = 0
        while created + 5 * k < started + 2:
            k += 1
        assert vt(api, ready["lastTransitionTime"]) == int(created + 5 * k)

    run(c, body)


def test_failing_liveness_probe_restarts_the_container():
    c = small_cluster()
    api = c.api

    async def body(rt):
        body_ = pod("sick", containers=[
            {"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"],
             "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 5,
                               "failureThreshold": 2}}])
        body_["metadata"]["annotations"] = {"k8semu.io/behaviour.app": "live false after 10s\nsigterm exit 0\nforever"}
        api.create("pods", body_)
        assert await rt.until(lambda: cstatus(get(api, "sick")).get("restartCount", 0) >= 1, limit=120)
        msgs = [(e["reason"], e["message"]) for e in events_for(api, "sick")]
        # the exec probe's output is the message, as the runtime returns it (a trailing newline included)
        assert ("Unhealthy", "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n") \
            in msgs
        assert ("Killing", "Container app failed liveness probe, will be restarted") in msgs

    run(c, body)


# --------------------------------------------------------------------------- deletion / admission

def test_graceful_deletion_removes_the_pod_after_its_container_stops():
    c = small_cluster()
    api = c.api

    async def body(rt):
        api.create("pods", pod("web"))
        api.create("pods", pod("stubborn", terminationGracePeriodSeconds=7, containers=[
            {"name": "app", "image": "busybox:1.36", "command": ["sleep", "3600"]}]))
        assert await rt.until(lambda: all(get(api, n)["status"].get("phase") == "Running"
                                          for n in ("web", "stubborn")), limit=60)
        t0 = rt.now
        api.delete("pods", "web", namespace="default")
        api.delete("pods", "stubborn", namespace="default")
        assert await rt.until(lambda: gone(api, "web"), limit=5)
        assert rt.now == t0  # nginx exits on SIGTERM at once
        assert not gone(api, "stubborn")
        assert await rt.until(lambda: gone(api, "stubborn"), limit=30)
        assert rt.now == t0 + 7  # sleep as PID 1 ignores SIGTERM: SIGKILL at the end of the grace period
        kills = [e["message"] for e in api.list("events", namespace="default")["items"] if e["reason"] == "Killing"]
        assert sorted(kills) == ["Stopping container app", "Stopping container nginx"]
        # the last write before the delete is the terminal status, then the DELETED record
        recs = c.log.records(prefix="/registry/pods/default/stubborn")
        assert recs[-1].type == "DELETED" and recs[-1].actor == "kubelet/node-1"
        assert recs[-2].object["status"]["phase"] == "Failed"  # killed: exit 137
        # the released address is not handed out again at once (host-local is round robin)
        api.create("pods", pod("next"))
        assert await rt.until(lambda: get(api, "next")["status"].get("podIP"), limit=10)
        assert get(api, "next")["status"]["podIP"].endswith(".4")

    run(c, body)


def test_pod_that_does_not_fit_is_rejected_with_outofcpu():
    c = small_cluster()
    api = c.api

    async def body(rt):
        api.create("pods", pod("huge", containers=[
            {"name": "app", "image": IMAGE, "resources": {"requests": {"cpu": "5"}}}]))
        assert await rt.until(lambda: get(api, "huge")["status"].get("phase") == "Failed", limit=10)
        st = get(api, "huge")["status"]
        assert st["reason"] == "OutOfcpu"
        assert st["message"] == ("Pod was rejected: Node didn't have enough resource: cpu, "
                                 "requested: 5000, used: 0, capacity: 4000")
        ev = [e for e in events_for(api, "huge") if e["reason"] == "OutOfcpu"]
        assert ev and ev[0]["type"] == "Warning"

    run(c, body)


# --------------------------------------------------------------------------- pure pieces

def test_host_local_skips_gateway_and_allocates_round_robin():
    ipam = HostLocalIPAM("10.244.1.0/24")
    assert [ipam.allocate(f"p{i}") for i in range(3)] == ["10.244.1.2", "10.244.1.3", "10.244.1.4"]
    assert ipam.release("p0") == "10.244.1.2"
    assert ipam.allocate("p3") == "10.244.1.5"
    assert ipam.allocate("p1") == "10.244.1.3"  # same owner, same address


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 20)), max_size=60))
def test_host_local_never_hands_out_an_address_twice(ops):
    ipam = HostLocalIPAM("10.244.7.0/28")  # 13 usable addresses (.2 - .14)
    held: dict[str, str] = {}
    for alloc, n in ops:
        owner = f"p{n}"
        if alloc and (owner in held or len(held) < 13):
            ip = ipam.allocate(owner)
            assert ip not in {v for k, v in held.items() if k != owner}
            assert 2 <= int(ip.rsplit(".", 1)[1]) <= 14
            held[owner] = ip
        elif not alloc:
            assert ipam.release(owner) == held.pop(owner, None)


def test_phase_rules_match_upstream():
    def term(code):
        return {"state": {"terminated": {"exitCode": code}}, "lastState": {}}

    p = {"spec": {"restartPolicy": "Always", "containers": [{"name": "a"}]}}
    assert pod_phase(p, [{"name": "a", **term(0)}]) == "Running"  # restarting
    assert pod_phase(p, [{"name": "a", **term(0)}], terminal=True) == "Succeeded"
    p = {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "a"}]}}
    assert pod_phase(p, [{"name": "a", **term(1)}]) == "Running"
    p = {"spec": {"restartPolicy": "Never", "containers": [{"name": "a"}, {"name": "b"}]}}
    assert pod_phase(p, [{"name": "a", **term(0)}, {"name": "b", **term(2)}]) == "Failed"
    assert pod_phase(p, [{"name": "a", **term(0)}]) == "Pending"  # b unknown


# --------------------------------------------------------------------------- node status images

def _images(api, node):
    return (api.get("nodes", node).get("status") or {}).get("images") or []


def test_node_reports_the_size_of_pulled_images_even_across_a_kubelet_restart():
    """The scheduler's ImageLocality scores from these sizes; a 0 would make every score 0."""
    c = small_cluster(1)
    api = c.api
    pull = behaviour.image_pull_result(IMAGE)
    want = {"names": [pull.image_id, "docker.io/library/nginx:1.30-alpine"], "sizeBytes": pull.size}

    async def until_running(rt):
        api.create("pods", pod("web-1"))
        # stop as soon as the container runs: before the next node status update (every 10 s)
        assert await rt.until(lambda: get(api, "web-1")["status"].get("phase") == "Running", limit=60)
        assert want not in _images(api, "node-1")

    async def later(rt):
        await rt.advance(30)

    run(c, until_running)
    run(c, later)  # a new session: the kubelet restarts and rebuilds its image store
    images = _images(api, "node-1")
    assert pull.size > 0 and want in images
    sizes = [img["sizeBytes"] for img in images]
    assert all(s > 0 for s in sizes) and sizes == sorted(sizes, reverse=True) and len(images) <= 50


def test_node_status_images_are_the_largest_50_with_digest_then_tags():
    from k8semu.node.runtime import ContainerRuntime

    rt = ContainerRuntime("node-9")
    sizes = {i: behaviour.image_pull_result(f"app{i}:1.0").size for i in range(60)}
    for i in range(60):
        rt.images.add(rt.known_image(f"docker.io/library/app{i}:1.0", f"docker.io/library/app{i}@sha256:{i:064x}"))
    big = max(sizes, key=sizes.get)  # a second tag of the largest image: one entry, both names
    rt.images.add(rt.known_image(f"docker.io/library/app{big}:latest", f"docker.io/library/app{big}@sha256:{big:064x}",
                                 sizes[big]))
    listed = rt.images.node_images()
    assert [img["sizeBytes"] for img in listed] == sorted(sizes.values(), reverse=True)[:50]
    assert listed[0] == {"names": [f"docker.io/library/app{big}@sha256:{big:064x}", f"docker.io/library/app{big}:1.0",
                                   f"docker.io/library/app{big}:latest"], "sizeBytes": sizes[big]}


def test_events_about_one_object_at_one_instant_are_all_kept():
    # virtual time puts many events about one object at the same nanosecond: each gets the
    # next free name (<object>.<hex ns>) instead of failing creates and, after 8, being dropped
    from k8semu.api.apiserver import RequestContext
    from k8semu.client.events import NORMAL, EventRecorder

    cluster = Cluster.create(None, seed=1)
    api = cluster.api
    rec = EventRecorder(api, RequestContext(actor="test-controller"), "test-controller")
    pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "default", "uid": "u"}}
    names = [rec.event(pod, NORMAL, f"Reason{i}", f"message {i}")["metadata"]["name"] for i in range(12)]
    assert len(set(names)) == 12
    first = int(names[0].split(".")[1], 16)
    assert names == [f"p.{first + i:x}" for i in range(12)]
    assert len(api.list("events", namespace="default")["items"]) == 12


def test_container_statuses_list_their_volume_mounts_as_1_33():
    """RecursiveReadOnlyMounts (on in 1.33): each container status lists its mounts; read-only ones
    say whether they are recursively read-only (the service account token's: Disabled)."""
    c = small_cluster()
    api = c.api

    async def body(rt):
        api.create("pods", pod("mounts", containers=[{"name": "nginx", "image": IMAGE, "volumeMounts": [
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "cfg", "mountPath": "/cfg", "readOnly": True, "recursiveReadOnly": "IfPossible"}]}],
            volumes=[{"name": "scratch", "emptyDir": {}}, {"name": "cfg", "emptyDir": {}}]))
        assert await rt.until(lambda: get(api, "mounts")["status"].get("phase") == "Running", limit=60)
        mounts = cstatus(get(api, "mounts"))["volumeMounts"]
        assert mounts[:2] == [{"name": "scratch", "mountPath": "/scratch"},
                              {"name": "cfg", "mountPath": "/cfg", "readOnly": True, "recursiveReadOnly": "Enabled"}]
        token = mounts[2]
        assert token["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
        assert (token["readOnly"], token["recursiveReadOnly"]) == (True, "Disabled")

    run(c, body)
