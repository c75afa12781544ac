"""The scheduling framework, cache and queue behave like upstream kube-scheduler v1.3x."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from k8semu.scheduler import (Cache, Framework, PodInfo, SchedulingQueue, Snapshot, load_configuration,
                              new_frameworks, num_feasible_nodes_to_find, select_host)
from k8semu.scheduler.framework import Code, Diagnosis, FitError, Status
from k8semu.scheduler.queue import ASSIGNED_POD_DELETE, NODE_ADD, PVC_ADD

from test_scheduler_plugins import CP_TAINT, make_node, make_pod


def _assume(cache, pod, node):
    p = dict(pod)
    p["spec"] = dict(pod["spec"], nodeName=node)
    cache.assume_pod(p)
    return p


# --- FitError ---------------------------------------------------------------------------------------------

def test_fit_error_message_is_upstreams_exact_text():
    nodes = [make_node("cp", taints=[CP_TAINT])] + [make_node(f"w{i}", cpu="1") for i in range(3)]
    pods = [make_pod(f"x{i}", cpu="1", node=f"w{i}") for i in range(3)]
    r = Framework().schedule_one(make_pod("p", cpu="500m"), Snapshot.of(nodes, pods), random.Random(0))
    assert r.message() == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
        "3 No preemption victims found for incoming pod.")
    assert r.fit_error.diagnosis.unschedulable_plugins == {"TaintToleration", "NodeResourcesFit"}
    assert r.evaluated_nodes == 4 and r.feasible_nodes == 0


def test_fit_error_histogram_sorts_the_count_prefixed_strings():
    statuses = {f"n{i}": Status.unschedulable("Insufficient cpu") for i in range(10)}
    statuses.update({f"m{i}": Status.unschedulable("Insufficient memory", "Too many pods") for i in range(2)})
    msg = FitError({}, 12, Diagnosis(node_to_status=statuses)).message()
    # sort.Strings on "10 …" and "2 …": "1" < "2"
    assert msg == "0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory, 2 Too many pods."


def test_no_nodes_is_an_error():
    r = Framework().schedule_one(make_pod("p"), Snapshot.of([]), random.Random(0))
    assert r.error.code == Code.ERROR and r.message() == "no nodes available to schedule pods"


# --- node sampling ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("nodes,pct,expected", [
    (50, 0, 50), (100, 0, 100), (1000, 0, 420), (5000, 0, 500), (6000, 0, 300), (100000, 0, 5000),
    (1000, 30, 300), (200, 10, 100),
])
def test_num_feasible_nodes_to_find(nodes, pct, expected):
    assert num_feasible_nodes_to_find(pct, nodes) == expected


def test_round_robin_start_index_carries_between_cycles():
    nodes = [make_node(f"n{i:03}") for i in range(250)]
    snap = Snapshot.of(nodes)
    fw = Framework()
    r1 = fw.schedule_one(make_pod("a"), snap, random.Random(0))
    e1 = r1.explanation()
    # 250 nodes: 50 - 250/125 = 48 % -> 120 feasible nodes are enough
    assert e1.num_nodes_to_find == 120 and e1.start_index == 0 and r1.evaluated_nodes == 120
    assert e1.nodes[0].name == "n000" and e1.nodes[-1].name == "n119"
    e2 = fw.schedule_one(make_pod("b"), snap, random.Random(0)).explanation()
    assert e2.start_index == 120 and e2.nodes[0].name == "n120"
    e3 = fw.schedule_one(make_pod("c"), snap, random.Random(0)).explanation()
    assert e3.start_index == 240 and [n.name for n in e3.nodes][9:11] == ["n249", "n000"]


def test_select_host_breaks_ties_uniformly_with_the_seeded_rng():
    names, totals = ["a", "b", "c", "d"], [10, 30, 30, 30]
    picks = Counter(select_host(names, totals, random.Random(seed))[0] for seed in range(3000))
    assert set(picks) == {"b", "c", "d"} and min(picks.values()) > 900
    assert select_host(names, totals, random.Random(7)) == select_host(names, totals, random.Random(7))
    assert select_host(["x", "y"], [1, 2], random.Random(0)) == ("y", 1)


def test_nominated_node_is_tried_first():
    nodes = [make_node(f"n{i}") for i in range(5)]
    pod = make_pod("p")
    pod["status"] = {"nominatedNodeName": "n3"}
    r = Framework().schedule_one(pod, Snapshot.of(nodes), random.Random(0))
    assert r.suggested_host == "n3" and r.evaluated_nodes == 1


# --- configuration -------------------------------------------------------------------------------------

def test_default_profile_weights_and_filter_order():
    fw = Framework()
    assert fw.score_weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                                "PodTopologySpread": 2, "InterPodAffinity": 2,
                                "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert [p.name for p in fw.filter_plugins][:6] == ["NodeUnschedulable", "NodeName", "TaintToleration",
                                                       "NodeAffinity", "NodePorts", "NodeResourcesFit"]


def test_configuration_disables_and_reweights_score_plugins():
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [
               {"schedulerName": "default-scheduler"},
               {"schedulerName": "packer",
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                                      "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
                "pluginConfig": [{"name": "NodeResourcesFit",
                                  "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}
    fws = new_frameworks(cfg)
    assert set(fws) == {"default-scheduler", "packer"}
    packer = fws["packer"]
    assert packer.score_weights["NodeResourcesFit"] == 5
    assert "NodeResourcesBalancedAllocation" not in packer.score_weights
    assert [p.name for p in packer.score_plugins][0] == "NodeResourcesFit"  # explicit override first
    nodes = [make_node("empty", cpu="4"), make_node("busy", cpu="4")]
    pods = [make_pod("x", cpu="2", memory="1Gi", node="busy")]
    snap = Snapshot.of(nodes, pods)
    assert packer.schedule_one(make_pod("p", cpu="1"), snap, random.Random(0)).suggested_host == "busy"
    assert fws["default-scheduler"].schedule_one(make_pod("p", cpu="1"), snap, random.Random(0)).suggested_host == "empty"


def test_disable_all_filters_keeps_every_node_feasible():
    cfg = {"profiles": [{"plugins": {"filter": {"disabled": [{"name": "*"}]},
                                     "preFilter": {"disabled": [{"name": "*"}]}}}]}
    fw = new_frameworks(cfg)["default-scheduler"]
    r = fw.schedule_one(make_pod("p", cpu="100"), Snapshot.of([make_node("a", cpu="1")]), random.Random(0))
    assert r.suggested_host == "a"


def test_configuration_errors():
    with pytest.raises(ValueError, match='plugin "Nope" does not exist'):
        new_frameworks({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]})
    with pytest.raises(ValueError, match="Duplicate value"):
        load_configuration({"profiles": [{"schedulerName": "x"}, {"schedulerName": "x"}]})
    with pytest.raises(ValueError, match="not in valid range"):
        load_configuration({"percentageOfNodesToScore": 101})
    assert load_configuration().pod_max_backoff_seconds == 10


# --- cache --------------------------------------------------------------------------------------------------

def test_assumed_pods_count_until_confirmed_or_forgotten():
    cache = Cache()
    cache.add_node(make_node("a", cpu="1"))
    fw = Framework()
    p = make_pod("p", cpu="1")
    r = fw.schedule_one(p, cache.snapshot(), random.Random(0))
    bound = _assume(cache, p, r.suggested_host)
    r2 = fw.schedule_one(make_pod("q", cpu="1"), cache.snapshot(), random.Random(0))
    assert r2.suggested_host is None and "Insufficient cpu" in r2.message()
    cache.finish_binding(bound, now=5.0)
    cache.add_pod(bound)  # informer confirms: still counted once
    assert cache.pod_count() == 1 and not cache.is_assumed(bound)
    cache.remove_pod(bound)
    assert fw.schedule_one(make_pod("q", cpu="1"), cache.snapshot(), random.Random(0)).suggested_host == "a"
    other = _assume(cache, make_pod("z", cpu="1"), "a")
    cache.forget_pod(other)
    assert cache.pod_count() == 0
    with pytest.raises(ValueError, match="wasn't assumed"):
        cache.forget_pod(other)


def test_assumed_pod_expires_after_ttl_when_binding_is_never_observed():
    cache = Cache(assumed_pod_ttl=30)
    cache.add_node(make_node("a"))
    p = _assume(cache, make_pod("p"), "a")
    cache.finish_binding(p, now=10)
    assert cache.cleanup_assumed_pods(now=39) == []
    assert cache.cleanup_assumed_pods(now=40) == [p["metadata"]["uid"]]


def test_snapshots_are_isolated_from_later_changes():
    cache = Cache()
    cache.add_node(make_node("a"))
    cache.add_node(make_node("b"))
    s1 = cache.snapshot()
    cache.add_pod(make_pod("x", cpu="1", node="a"))
    cache.update_node(None, make_node("b", labels={"new": "1"}))
    s2 = cache.snapshot()
    assert len(s1.get("a").pods) == 0 and len(s2.get("a").pods) == 1
    assert "new" not in s1.get("b").labels and s2.get("b").labels["new"] == "1"
    assert s2.get("b") is not s1.get("b") and cache.snapshot().get("a") is s2.get("a")


def test_terminal_pods_free_their_resources_and_deleted_nodes_disappear():
    cache = Cache()
    cache.add_node(make_node("a"))
    p = make_pod("x", cpu="1", node="a")
    cache.add_pod(p)
    cache.update_pod(p, {**p, "status": {"phase": "Succeeded"}})
    assert cache.snapshot().get("a").requested.milli_cpu == 0
    cache.add_pod(p)
    cache.remove_node(make_node("a"))
    assert len(cache.snapshot()) == 0
    cache.remove_pod(p)
    assert cache.pod_count() == 0


def test_node_order_interleaves_zones():
    cache = Cache()
    for name, zone in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")):
        cache.add_node(make_node(name, labels={"topology.kubernetes.io/zone": zone}))
    assert [n.name for n in cache.snapshot().node_infos] == ["a1", "b1", "c1", "a2", "c2", "a3"]


@settings(max_examples=40, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(1, 8), st.integers(1, 16), st.integers(1, 6)), min_size=1, max_size=6),
       pods=st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 4096)), min_size=1, max_size=30),
       seed=st.integers(0, 2**16))
def test_back_to_back_decisions_never_overcommit(nodes, pods, seed):
    cache = Cache()
    for i, (cpu, mem_gi, max_pods) in enumerate(nodes):
        cache.add_node(make_node(f"n{i}", cpu=str(cpu), memory=f"{mem_gi}Gi", pods=str(max_pods)))
    fw, rng = Framework(), random.Random(seed)
    for j, (cpu_m, mem_mi) in enumerate(pods):
        p = make_pod(f"p{j}", cpu=f"{cpu_m}m", memory=f"{mem_mi}Mi")
        r = fw.schedule_one(p, cache.snapshot(), rng)
        if r.suggested_host:
            _assume(cache, p, r.suggested_host)
        else:
            assert r.fit_error is not None
    for ni in cache.snapshot().node_infos:
        assert ni.requested.milli_cpu <= ni.allocatable.milli_cpu
        assert ni.requested.memory <= ni.allocatable.memory
        assert len(ni.pods) <= ni.allocatable.allowed_pod_number


def test_nominated_pods_reserve_room_for_the_preemptor():
    cache = Cache()
    cache.add_node(make_node("a", cpu="2"))
    cache.add_pod(make_pod("low", cpu="2", node="a", priority=1))
    queue = SchedulingQueue()
    fw = Framework()
    hi = make_pod("hi", cpu="2", priority=100)
    r = fw.schedule_one(hi, cache.snapshot(), random.Random(0), nominator=queue)
    assert r.post_filter.nominated_node_name == "a"
    queue.add_nominated_pod(PodInfo.of(hi), "a")
    for v in r.post_filter.victims:
        cache.remove_pod(v)
    # a lower-priority pod must not take the room freed for the preemptor
    r2 = fw.schedule_one(make_pod("mid", cpu="1", priority=50), cache.snapshot(), random.Random(0), nominator=queue)
    assert r2.suggested_host is None
    hi_nominated = {**hi, "status": {"nominatedNodeName": "a"}}
    assert fw.schedule_one(hi_nominated, cache.snapshot(), random.Random(0), nominator=queue).suggested_host == "a"


def test_bind_produces_a_binding_for_the_api():
    fw = Framework()
    pod = make_pod("p")
    r = fw.schedule_one(pod, Snapshot.of([make_node("a")]), random.Random(0))
    assert fw.run_reserve(r.state, pod, "a") is None and fw.run_pre_bind(r.state, pod, "a") is None
    binding, st_ = fw.run_bind(r.state, pod, "a")
    assert st_ is None
    assert binding == {"apiVersion": "v1", "kind": "Binding",
                       "metadata": {"namespace": "default", "name": "p", "uid": "uid-default-p"},
                       "target": {"kind": "Node", "name": "a"}}


def test_explanation_records_filter_verdicts_and_weighted_scores():
    nodes = [make_node("cp", taints=[CP_TAINT]), make_node("a"), make_node("b")]
    r = Framework().schedule_one(make_pod("p", cpu="1"), Snapshot.of(nodes, [make_pod("x", cpu="2", node="a")]),
                                 random.Random(0))
    e = r.explanation()
    by = {n.name: n for n in e.nodes}
    assert by["cp"].filter_plugin == "TaintToleration" and by["cp"].filter_code == "UnschedulableAndUnresolvable"
    assert by["b"].scores["TaintToleration"] == (0, 100, 300)
    assert by["b"].total == sum(v[2] for v in by["b"].scores.values())
    assert e.chosen == "b" == r.suggested_host
    assert e.lines()[-1] == "chosen: b (1 tied)"


def test_explanations_keep_only_the_latest_pods_and_build_on_read():
    from k8semu.scheduler.framework import Explanations

    nodes = [make_node("a")]
    kept = Explanations(limit=2)
    for name in ("p1", "p2", "p3"):
        kept.record(name, Framework().schedule_one(make_pod(name, cpu="1"), Snapshot.of(nodes, []),
                                                   random.Random(0)))
    assert list(kept) == ["p2", "p3"]  # a scheduler running for days does not keep every pod's
    assert kept["p3"].chosen == "a"


def test_memos_across_cycles_keep_no_superseded_node_alive():
    import gc

    from k8semu.scheduler.types import NodeInfo, NodeMemo

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, NodeInfo) and o.name == "memo-node")

    memo = NodeMemo(keys=2)
    cache = Cache()
    cache.add_node(make_node("memo-node"))
    for i in range(5):  # one cycle per new pod: each snapshot has a new NodeInfo for the node
        cache.add_pod(make_pod(f"x{i}", cpu="1", node="memo-node"))
        key = "first pod's requests" if i == 0 else "later pods' requests"
        assert memo.map(key, [cache.snapshot().get("memo-node")], lambda ni: len(ni.pods)) == [i + 1]
    # the one the cache and its latest snapshot share, not also the one the first key last saw
    assert alive() == 1


# --- queue ---------------------------------------------------------------------------------------------------

def test_queue_pops_by_priority_then_arrival():
    q = SchedulingQueue()
    q.add(make_pod("late-low", priority=1), now=0)
    q.add(make_pod("hi", priority=10), now=2)
    q.add(make_pod("early-low", priority=1), now=1)
    q.add(make_pod("first-low", priority=1), now=0)
    order = [q.pop(now=3).pod["metadata"]["name"] for _ in range(4)]
    assert order == ["hi", "late-low", "first-low", "early-low"]
    assert q.pop(now=3) is None


def test_backoff_doubles_from_one_to_ten_seconds():
    q = SchedulingQueue()
    q.add(make_pod("p"), now=0)
    durations = []
    now = 0.0
    for _ in range(6):
        qpi = q.pop(now)
        assert qpi is not None
        q.add_unschedulable_if_not_present(qpi, now)  # error: no rejecting plugin -> backoffQ
        durations.append(q.backoff_duration(qpi))
        assert q.pop(now + durations[-1] - 0.001) is None
        now += durations[-1]
    assert durations == [1, 2, 4, 8, 10, 10]


def test_unschedulable_pods_move_on_relevant_events_only():
    q = SchedulingQueue()
    q.add(make_pod("p"), now=0)
    qpi = q.pop(now=0)
    q.add_unschedulable_if_not_present(qpi, now=0, unschedulable_plugins={"NodeResourcesFit"})
    assert q.pending_pods()["unschedulable"] and q.pop(now=100) is None
    assert q.move_all_to_active_or_backoff(PVC_ADD, now=100) == 0
    assert q.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, now=100) == 1
    assert q.pop(now=100).pod["metadata"]["name"] == "p"


def test_event_during_cycle_sends_failed_pod_to_backoff_and_timeout_after_five_minutes():
    q = SchedulingQueue()
    q.add(make_pod("p"), now=0)
    qpi = q.pop(now=0)
    q.move_all_to_active_or_backoff(NODE_ADD, now=0.5)  # arrives while p is in flight
    q.add_unschedulable_if_not_present(qpi, now=1, unschedulable_plugins={"TaintToleration"})
    assert q.pending_pods()["backoff"] and q.next_wakeup() == 2
    qpi = q.pop(now=2)
    q.add_unschedulable_if_not_present(qpi, now=3, unschedulable_plugins={"TaintToleration"})
    assert q.pop(now=300) is None
    assert q.next_wakeup() == 303
    assert q.pop(now=303.5).pod["metadata"]["name"] == "p"


def test_gated_pods_wait_for_their_own_update():
    fw = Framework()
    q = SchedulingQueue(fw.queue_sort_less(), fw.run_pre_enqueue)
    gated = make_pod("g", schedulingGates=[{"name": "example.com/wait"}])
    q.add(gated, now=0)
    assert q.pop(now=0) is None
    assert q.move_all_to_active_or_backoff("*", now=1) == 0
    ungated = {**gated, "spec": {k: v for k, v in gated["spec"].items() if k != "schedulingGates"}}
    q.update(gated, ungated, now=2)
    assert q.pop(now=2).pod["metadata"]["name"] == "g"


def test_delete_removes_pod_and_nomination():
    q = SchedulingQueue()
    p = {**make_pod("p"), "status": {"nominatedNodeName": "n1"}}
    q.add(p, now=0)
    assert [x.key for x in q.nominated_pods_for_node("n1")] == [p["metadata"]["uid"]]
    q.delete(p)
    assert len(q) == 0 and q.nominated_pods_for_node("n1") == []


# --- scheduling gates on a running cluster -------------------------------------------------------------

def _gated_cluster():
    from k8semu.sim.cluster import Cluster

    cluster = Cluster.create(seed=21)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod", "namespace": "default"},
           "spec": {"schedulingGates": [{"name": "example.com/foo"}, {"name": "example.com/bar"}],
                    "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.6"}]}}
    return cluster, pod


def _pod_events(api, name):
    return [(e["type"], e["reason"]) for e in api.list("events", namespace="default")["items"]
            if e["involvedObject"]["name"] == name]


def test_gated_pod_is_never_tried_until_its_gates_are_removed():
    """The SchedulingGates PreEnqueue keeps a gated pod out of activeQ: no attempt, no
    FailedScheduling, no Unschedulable condition; removing the gates (an update) schedules it."""
    from k8semu.sim.components import default_factories
    from k8semu.sim.runtime import run_cluster

    cluster, pod = _gated_cluster()
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("pods", pod, namespace="default")
        await rt.advance(400)  # past the 5-minute unschedulable flush: gated pods are not flushed
        p = api.get("pods", "test-pod", namespace="default")
        seen["gated"] = (p["spec"].get("nodeName"), p["status"]["phase"],
                         [c for c in p["status"].get("conditions") or () if c.get("reason") == "Unschedulable"],
                         _pod_events(api, "test-pod"))
        sched = rt.components["default-scheduler"]
        seen["queue"] = {k: [x["metadata"]["name"] for x in v] for k, v in sched.sched_queue.pending_pods().items()}
        ungated = {**p, "spec": {k: v for k, v in p["spec"].items() if k != "schedulingGates"}}
        api.update("pods", ungated, namespace="default")
        await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    assert seen["gated"] == (None, "Pending", [], [])
    assert seen["queue"] == {"active": [], "backoff": [], "unschedulable": ["test-pod"]}
    p = api.get("pods", "test-pod", namespace="default")
    assert p["spec"]["nodeName"].startswith("node-")
    assert p["status"]["phase"] == "Running"
    scheduled = next(c for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "True" and "reason" not in scheduled
    assert ("Normal", "Scheduled") in _pod_events(api, "test-pod")
    assert ("Warning", "FailedScheduling") not in _pod_events(api, "test-pod")


def test_gated_pod_gets_the_scheduling_gated_condition_and_status():
    """Upstream a pod created with schedulingGates has ``PodScheduled=False`` reason
    ``SchedulingGated`` from the create response on, and ``kubectl get pod`` shows STATUS
    ``SchedulingGated`` (printPod reads that condition)."""
    from k8semu.api.tables import pod_status_reason

    cluster, pod = _gated_cluster()
    created = cluster.api.create("pods", pod, namespace="default")
    [cond] = created["status"].get("conditions") or [{}]
    assert {k: cond.get(k) for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
        "message": "Scheduling is blocked due to non-empty scheduling gates"}
    assert pod_status_reason(created) == "SchedulingGated"
