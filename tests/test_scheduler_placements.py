"""Placements on a mixed workload are pinned, so performance work on the scheduler cannot change them.

A 150-node, three-zone cluster (some tainted, one cordoned, a few small or
with images) receives 240 pods of every kind the default plugins care about:
plain requests, no requests (the 100m / 200Mi scoring defaults), init
containers, host ports, node selectors and preferred node affinity,
tolerations, required and preferred pod (anti-)affinity, hard and soft
topology spread, default spreading through a Service, images. Each pod goes
through the library's loop (snapshot → ``schedule_one`` → assume → bind →
finish binding) with a seeded RNG. The decisions — the chosen node or the
failure message of every pod — were recorded once; any change to them fails
this test.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from k8semu.scheduler import Cache, CycleState, PodInfo, SchedulingQueue, new_frameworks
from k8semu.scheduler.framework import Code

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _node(i: int) -> dict:
    name = f"n{i:03d}"
    zone = ("za", "zb", "zc")[i % 3]
    cpu, mem = ("2", "4Gi") if i % 7 == 0 else ("4", "16Gi")
    spec: dict = {}
    if i % 11 == 0:
        spec["taints"] = [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    if i % 13 == 5:
        spec["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
    if i == 17:
        spec["unschedulable"] = True
    status = {"allocatable": {"cpu": cpu, "memory": mem, "pods": "110" if i % 5 else "8"}}
    if i % 9 == 0:
        status["images"] = [{"names": ["registry.k8s.io/big:1"], "sizeBytes": 600 * 1024 * 1024}]
    labels = {HOST: name, ZONE: zone, "disk": "ssd" if i % 4 == 0 else "hdd"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": status}


def _pod(i: int) -> dict:
    kind = i % 12
    ns = "team-a" if i % 2 else "team-b"
    labels = {"app": f"app{i % 5}"}
    c = {"name": "c", "image": "registry.k8s.io/pause:3.10",
         "resources": {"requests": {"cpu": f"{100 + 50 * (i % 6)}m", "memory": f"{128 * (1 + i % 4)}Mi"}}}
    spec: dict = {"containers": [c], "priority": (i % 3) * 10}
    if kind == 1:
        c["resources"] = {}
    elif kind == 2:
        spec["initContainers"] = [{"name": "i", "image": "busybox",
                                   "resources": {"requests": {"cpu": "900m", "memory": "64Mi"}}}]
    elif kind == 3:
        c["ports"] = [{"containerPort": 80, "hostPort": 8000 + i % 3}]
    elif kind == 4:
        spec["nodeSelector"] = {"disk": "ssd"}
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 40, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zb"]}]}}]}}
    elif kind == 5:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"},
                               {"key": "spot", "operator": "Exists"}]
    elif kind == 6:
        labels["tier"] = "cache"
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"tier": "cache"}}, "topologyKey": HOST}]}}
    elif kind == 7:
        spec["affinity"] = {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"tier": "cache"}}, "topologyKey": ZONE,
                 "namespaces": ["team-a", "team-b"]}],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "app1"}},
                                                   "topologyKey": HOST}}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": labels["app"]}},
                                                   "topologyKey": ZONE, "namespaceSelector": {}}}]}}
    elif kind == 8:
        labels["spread"] = "hard"
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"spread": "hard"}}},
            {"maxSkew": 2, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"spread": "hard"}}}]
    elif kind == 9:
        labels["svc"] = "web"  # default spreading through the Service below
    elif kind == 10:
        c["image"] = "registry.k8s.io/big:1"
    elif kind == 11:
        c["resources"] = {"requests": {"cpu": "1500m", "memory": "3Gi"}}
    if i % 40 == 38:  # needs (nearly) a whole node: preemption picks victims
        c["resources"] = {"requests": {"cpu": "3900m", "memory": "1Gi"}}
        spec["priority"] = 1000
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{i:03d}", "namespace": ns, "uid": f"uid-{i}", "labels": labels},
            "spec": spec}


class _SlowPathNominator:
    """The queue as nominator, but claiming nominated pods exist: the framework then filters
    node by node (upstream's loop) instead of in batches."""

    def __init__(self, queue: SchedulingQueue) -> None:
        self.queue = queue

    def has_nominated_pods(self) -> bool:
        return True

    def nominated_pods_for_node(self, node_name: str) -> list:
        return self.queue.nominated_pods_for_node(node_name)


def _run(explain: list[str] | None = None, one_by_one: bool = False,
         check: Any = None) -> dict[str, str]:
    cache = Cache()
    for i in range(150):
        cache.add_node(_node(i))
    for ns in ("team-a", "team-b"):
        cache.upsert_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"t": ns}}})
        cache.upsert_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": ns},
                             "spec": {"selector": {"svc": "web"}}})
    fw = new_frameworks(None)["default-scheduler"]
    queue = SchedulingQueue(fw.queue_sort_less(), fw.run_pre_enqueue)
    rng = random.Random(42)
    out: dict[str, str] = {}
    for i in range(240):
        queue.add(_pod(i), 0.0)
        if i % 40 != 39:
            continue
        while (qpi := queue.pop(0.0)) is not None:
            pod = qpi.pod
            snap = cache.snapshot()
            if check is not None:
                check(fw, pod, snap)
            r = fw.schedule_one(pod, snap, rng, nominator=_SlowPathNominator(queue) if one_by_one else queue)
            name = pod["metadata"]["name"]
            queue.done(pod)
            if explain is not None and int(name[1:]) % 20 == 0:
                explain.extend(r.explanation().lines())
            if r.suggested_host is None:
                pf = r.post_filter
                out[name] = r.message() + (f" -> {pf.nominated_node_name}: {len(pf.victims)} victim(s)"
                                           if pf is not None and pf.nominated_node_name else "")
                continue
            out[name] = r.suggested_host
            assumed = {**pod, "spec": {**pod["spec"], "nodeName": r.suggested_host}}
            cache.assume_pod(assumed)
            fw.run_bind(r.state, pod, r.suggested_host)
            cache.finish_binding(assumed, 0.0)
            if i % 80 == 79:  # half the batches are confirmed by the "informer"
                cache.add_pod(assumed)
    return out


def _preemption_run() -> list[str]:
    """12 small nodes filled with low-priority pods, then high-priority pods that must preempt."""
    cache = Cache()
    for i in range(12):
        n = _node(i * 3 + 1)  # no taints, mixed zones
        n["status"]["allocatable"] = {"cpu": "2", "memory": "8Gi", "pods": "110"}
        cache.add_node(n)
    fw = new_frameworks(None)["default-scheduler"]
    rng = random.Random(7)
    out = []
    for i in range(60):
        pod = _pod(i * 12)  # kind 0: plain requests
        pod["spec"]["priority"] = i % 4
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "400m"
        if i >= 48:
            pod["spec"]["priority"] = 100
            pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1500m"
        r = fw.schedule_one(pod, cache.snapshot(), rng)
        if r.suggested_host is not None:
            out.append(r.suggested_host)
            cache.assume_pod({**pod, "spec": {**pod["spec"], "nodeName": r.suggested_host}})
            continue
        pf = r.post_filter
        victims = sorted(v["metadata"]["name"] for v in pf.victims) if pf is not None else []
        out.append(f"{r.message()} -> {pf.nominated_node_name if pf else ''} {victims}")
        for v in (pf.victims if pf is not None else ()):
            cache.remove_pod(v)
    return out


def test_preemption_decisions_are_pinned():
    out = _preemption_run()
    assert out[47:50] == PREEMPTION_PINNED
    assert hashlib.sha256(json.dumps(out).encode()).hexdigest() == PREEMPTION_DIGEST


def test_mixed_workload_placements_are_pinned():
    out = _run()
    assert len(out) == 240
    assert {k: out[k] for k in ("p000", "p001", "p006", "p007", "p008", "p011", "p130", "p239")} == PINNED
    digest = hashlib.sha256(json.dumps(sorted(out.items())).encode()).hexdigest()
    assert digest == DIGEST


def test_mixed_workload_scores_are_pinned():
    """Per node filter verdicts and every plugin's raw / normalised / weighted score, for 12 pods."""
    lines: list[str] = []
    _run(lines)
    assert lines[1] == EXPLAIN_LINE_1
    assert hashlib.sha256("\n".join(lines).encode()).hexdigest() == EXPLAIN_DIGEST


def test_batched_filtering_decides_exactly_as_the_node_by_node_loop():
    """Every verdict, score and message is the same on the node-by-node path."""
    fast: list[str] = []
    slow: list[str] = []
    assert _run(fast) == _run(slow, one_by_one=True)
    assert fast == slow


def test_batch_plugin_forms_agree_with_per_node_forms():
    """filter_nodes / score_nodes / normalize_scores give, node for node, what filter / score /
    normalize_score give, for every pod of the mixed workload on the snapshot it meets."""
    from k8semu.scheduler.framework import NodeScore

    seen = {"filter": 0, "score": 0}

    def check(fw, pod, snap):
        pi = PodInfo.of(pod)
        state = CycleState(snap, None, random.Random(0))
        _, st = fw.run_pre_filter(state, pi)
        if st is not None and st.code != Code.SUCCESS:
            return
        nodes = list(snap.node_infos)
        for pl in fw.filter_plugins:
            if pl.name in state.skip_filter_plugins or not hasattr(pl, "filter_nodes"):
                continue
            batch = pl.filter_nodes(state, pi, nodes)
            one = [pl.filter(state, pi, ni) for ni in nodes]
            assert (batch if batch is not None else [None] * len(nodes)) == one, pl.name
            seen["filter"] += 1
        feasible = [ni for ni in nodes if fw.run_filter(state, pi, ni) is None]
        if len(feasible) < 2:
            return
        for pl in fw.points["preScore"]:
            pl.pre_score(state, pi, feasible)
        for pl in fw.score_plugins:
            if not hasattr(pl, "score_nodes"):
                continue
            raw = pl.score_nodes(state, pi, feasible)
            assert raw == [pl.score(state, pi, ni)[0] for ni in feasible], pl.name
            if hasattr(pl, "normalize_scores"):
                scores = [NodeScore(ni.name, s) for ni, s in zip(feasible, raw)]
                pl.normalize_score(state, pi, scores)
                assert pl.normalize_scores(state, pi, [ni.name for ni in feasible], raw) == [x.score for x in scores]
            seen["score"] += 1

    _run(check=check)
    assert seen["filter"] > 500 and seen["score"] > 500


PINNED: dict[str, str] = {
    'p000': 'n134',
    'p001': 'n013',
    'p006': 'n027',
    'p007': "0/150 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable, 13 node(s) had untolerated taint {dedicated: db}, 135 node(s) didn't match pod affinity rules. preemption: 0/150 nodes are available: 1 No preemption victims found for incoming pod, 149 Preemption is not helpful for scheduling.",
    'p008': 'n102',
    'p011': 'n076',
    'p130': 'n146',
    'p239': 'n026',
}
DIGEST = "740b397416e6da0387a5b1d12660f2c49585d1010b3f02b460b659607867d242"
PREEMPTION_PINNED: list[str] = [
    'n007',
    'n031',
    "0/12 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 11 Insufficient cpu. -> n010 ['p096', 'p192', 'p336', 'p480']",
]
PREEMPTION_DIGEST = "8d98a87f113a3890a790686b0da8e55df03a3e5c6f7c894464b7f4afb5b97851"
EXPLAIN_LINE_1 = '  n026: feasible; total 694: TaintToleration=0->100x3=300, NodeResourcesFit=97->97x1=97, PodTopologySpread=1->100x2=200, NodeResourcesBalancedAllocation=97->97x1=97, ImageLocality=0->0x1=0'
EXPLAIN_DIGEST = "8d736b0651a1463ec9ec330cd4740fad040391b8c8fbe0ede5d11a31ffa52951"
