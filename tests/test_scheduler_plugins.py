"""The default scheduler plugins decide and score like upstream kube-scheduler v1.3x."""

from __future__ import annotations

import random

import pytest

from k8semu.scheduler import Framework, PodInfo, Snapshot, pod_requests
from k8semu.scheduler.framework import Code, new_frameworks
from k8semu.scheduler.plugins import imagelocality


# --- builders --------------------------------------------------------------------------------

def make_node(name, cpu="4", memory="8Gi", pods="110", labels=None, taints=None, unschedulable=False,
              images=None, extra=None):
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
         "spec": {"taints": taints or []}, "status": {"allocatable": alloc}}
    if unschedulable:
        n["spec"]["unschedulable"] = True
    if images:
        n["status"]["images"] = images
    return n


def make_pod(name, cpu=None, memory=None, node=None, priority=None, labels=None, ns="default", **spec):
    req = {}
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels or {}},
         "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                  "resources": {"requests": req}}], **spec}}
    if node:
        p["spec"]["nodeName"] = node
    if priority is not None:
        p["spec"]["priority"] = priority
    return p


def schedule(nodes, pods=(), pod=None, objects=(), config=None, seed=0):
    fw = new_frameworks(config)["default-scheduler"] if config else Framework()
    return fw.schedule_one(pod, Snapshot.of(nodes, list(pods), list(objects)), random.Random(seed))


def scores_of(result, plugin):
    """{node: (raw, normalised)} for one plugin from the explanation record."""
    return {n.name: n.scores[plugin][:2] for n in result.explanation().nodes if plugin in n.scores}


# --- resource requests -----------------------------------------------------------------------------

def test_pod_requests_sidecars_and_init_containers_as_upstream():
    pod = {"spec": {
        "initContainers": [
            {"name": "setup", "resources": {"requests": {"cpu": "2"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}},
            {"name": "late", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "1", "memory": "256Mi"}}}],
        "overhead": {"cpu": "50m"},
    }}
    # sum: app 1 + sidecar 200m = 1200m; init peaks: setup 2000m, late 1000m + sidecar 200m = 1200m
    # memory: sum 256Mi + 64Mi = 320Mi; late 1Gi + 64Mi wins. Overhead is added on top.
    assert pod_requests(pod) == {"cpu": 2050, "memory": 1024 * 2**20 + 64 * 2**20}


def test_non_zero_requests_default_to_100m_and_200mi_for_scoring_only():
    p = make_pod("p")
    assert pod_requests(p) == {}
    assert pod_requests(p, non_missing_defaults=True) == {"cpu": 100, "memory": 200 * 2**20}
    explicit_zero = make_pod("z", cpu="0")
    assert pod_requests(explicit_zero, non_missing_defaults=True)["cpu"] == 0


# --- NodeResourcesFit ----------------------------------------------------------------------------------

def test_fit_filter_reports_every_insufficient_resource():
    nodes = [make_node("n1", cpu="1", memory="1Gi", extra={"example.com/gpu": "1"})]
    pod = make_pod("p", cpu="2", memory="2Gi")
    pod["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "2"
    r = schedule(nodes, pod=pod)
    assert r.message().startswith(
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient example.com/gpu, 1 Insufficient memory.")


def test_fit_filter_too_many_pods():
    nodes = [make_node("n1", pods="1")]
    r = schedule(nodes, [make_pod("a", node="n1")], make_pod("p"))
    assert r.message().startswith("0/1 nodes are available: 1 Too many pods.")


def test_fit_counts_requests_of_pods_already_on_the_node():
    nodes = [make_node("n1", cpu="2"), make_node("n2", cpu="2")]
    r = schedule(nodes, [make_pod("a", cpu="1500m", node="n1")], make_pod("p", cpu="1"))
    assert r.suggested_host == "n2"


def _two_node_scores(config=None):
    # upstream's "differently sized nodes" table: node1 4000m / 10000 bytes, node2 6000m / 10000 bytes,
    # pod requests 3000m / 5000 bytes
    nodes = [make_node("node1", cpu="4", memory="10000"), make_node("node2", cpu="6", memory="10000")]
    return schedule(nodes, pod=make_pod("p", cpu="3", memory="5000"), config=config)


def test_least_allocated_score_matches_upstream_table():
    r = _two_node_scores()
    # node1: cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 -> 37
    assert scores_of(r, "NodeResourcesFit") == {"node1": (37, 37), "node2": (50, 50)}
    assert r.suggested_host == "node2"


def test_balanced_allocation_score_is_one_minus_std_dev():
    r = _two_node_scores()
    # node1: fractions 0.75 and 0.5 -> std 0.125 -> 87; node2: 0.5 and 0.5 -> 100
    assert scores_of(r, "NodeResourcesBalancedAllocation") == {"node1": (87, 87), "node2": (100, 100)}


def _fit_config(strategy):
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler",
                          "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]}]}


def test_most_allocated_prefers_fuller_nodes():
    r = _two_node_scores(_fit_config({"type": "MostAllocated",
                                      "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}))
    # node1: cpu 75, memory 50 -> 62; node2: 50, 50 -> 50
    assert scores_of(r, "NodeResourcesFit") == {"node1": (62, 62), "node2": (50, 50)}


def test_requested_to_capacity_ratio_rounds_the_weighted_mean():
    shape = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
    r = _two_node_scores(_fit_config({"type": "RequestedToCapacityRatio",
                                      "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                                      "requestedToCapacityRatio": {"shape": shape}}))
    # node1: cpu utilisation 75 -> 25, memory 50 -> 50; mean 37.5 rounds half away from zero -> 38
    assert scores_of(r, "NodeResourcesFit")["node1"] == (38, 38)


def test_unknown_scoring_strategy_is_refused():
    with pytest.raises(ValueError, match="scoring strategy Foo is not supported"):
        new_frameworks(_fit_config({"type": "Foo"}))


# --- NodeUnschedulable, NodeName, NodePorts ------------------------------------------------------------

def test_cordoned_node_rejected_unless_tolerated():
    nodes = [make_node("n1", unschedulable=True)]
    assert schedule(nodes, pod=make_pod("p")).message().startswith(
        "0/1 nodes are available: 1 node(s) were unschedulable.")
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert schedule(nodes, pod=make_pod("p", tolerations=tol)).suggested_host == "n1"


def test_node_name_filter():
    nodes = [make_node("n1"), make_node("n2")]
    pod = make_pod("p")
    pod["spec"]["nodeName"] = "n2"
    r = schedule(nodes, pod=pod)
    assert r.suggested_host == "n2"
    pod["spec"]["nodeName"] = "n3"
    assert schedule(nodes, pod=pod).message().startswith(
        "0/2 nodes are available: 2 node(s) didn't match the requested node name.")


def _with_port(p, port, ip=None, proto=None):
    entry = {"containerPort": 80, "hostPort": port}
    if ip:
        entry["hostIP"] = ip
    if proto:
        entry["protocol"] = proto
    p["spec"]["containers"][0]["ports"] = [entry]
    return p


@pytest.mark.parametrize("existing,wanted,conflict", [
    ((None, None), (None, None), True),
    (("10.0.0.1", None), ("10.0.0.2", None), False),
    (("10.0.0.1", None), (None, None), True),           # 0.0.0.0 conflicts with every IP
    ((None, "UDP"), (None, "TCP"), False),
])
def test_node_ports_conflicts(existing, wanted, conflict):
    nodes = [make_node("n1")]
    pods = [_with_port(make_pod("a", node="n1"), 8080, *existing)]
    r = schedule(nodes, pods, _with_port(make_pod("p"), 8080, *wanted))
    if conflict:
        assert r.message().startswith(
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports.")
    else:
        assert r.suggested_host == "n1"


# --- TaintToleration -------------------------------------------------------------------------------------

CP_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def test_taint_filter_message_and_toleration():
    nodes = [make_node("cp", taints=[CP_TAINT])]
    assert schedule(nodes, pod=make_pod("p")).message().startswith(
        "0/1 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.")
    tol = [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]
    assert schedule(nodes, pod=make_pod("p", tolerations=tol)).suggested_host == "cp"
    wrong_value = [{"key": "node-role.kubernetes.io/control-plane", "value": "x", "effect": "NoSchedule"}]
    assert schedule(nodes, pod=make_pod("p", tolerations=wrong_value)).suggested_host is None


def test_taint_score_is_reverse_normalised_count_of_prefer_no_schedule_taints():
    soft = lambda k: {"key": k, "value": "v", "effect": "PreferNoSchedule"}  # noqa: E731
    nodes = [make_node("clean"), make_node("one", taints=[soft("a")]), make_node("two", taints=[soft("a"), soft("b")])]
    r = schedule(nodes, pod=make_pod("p"))
    assert scores_of(r, "TaintToleration") == {"clean": (0, 100), "one": (1, 50), "two": (2, 0)}
    assert r.suggested_host == "clean"
    # a toleration with empty effect tolerates the PreferNoSchedule taint
    tol = [{"key": "a", "operator": "Exists"}]
    r = schedule(nodes, pod=make_pod("p", tolerations=tol))
    assert scores_of(r, "TaintToleration") == {"clean": (0, 100), "one": (0, 100), "two": (1, 0)}


# --- NodeAffinity --------------------------------------------------------------------------------------------

def test_node_selector_and_required_affinity():
    nodes = [make_node("a", labels={"disk": "ssd"}), make_node("b", labels={"disk": "hdd"})]
    assert schedule(nodes, pod=make_pod("p", nodeSelector={"disk": "ssd"})).suggested_host == "a"
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["nvme"]}]}]}}}
    r = schedule(nodes, pod=make_pod("p", affinity=aff))
    assert r.message() == ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
                           "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")


def test_match_fields_narrow_nodes_at_pre_filter():
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}]}}}
    r = schedule(nodes, pod=make_pod("p", affinity=aff))
    assert r.suggested_host == "c"
    assert [n.filter_code for n in r.explanation().nodes[:2]] == ["UnschedulableAndUnresolvable"] * 2


def test_preferred_node_affinity_score_normalised_to_best():
    nodes = [make_node("a", labels={"x": "1"}), make_node("b", labels={"x": "1", "y": "1"}), make_node("c")]
    aff = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 2, "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}},
        {"weight": 3, "preference": {"matchExpressions": [{"key": "y", "operator": "In", "values": ["1"]}]}}]}}
    r = schedule(nodes, pod=make_pod("p", affinity=aff))
    assert scores_of(r, "NodeAffinity") == {"a": (2, 40), "b": (5, 100), "c": (0, 0)}
    assert r.suggested_host == "b"


# --- PodTopologySpread -------------------------------------------------------------------------------------

def _zones_cluster():
    # The docs' example: zoneA = node1, node2; zoneB = node3, node4; pods foo=bar on node1..node3.
    nodes = [make_node(f"node{i}", labels={"zone": "zoneA" if i <= 2 else "zoneB"}) for i in range(1, 5)]
    pods = [make_pod(f"p{i}", node=f"node{i}", labels={"foo": "bar"}) for i in range(1, 4)]
    return nodes, pods


def _spread(key, max_skew=1, **extra):
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"foo": "bar"}}, **extra}


def test_topology_spread_docs_example_one_constraint_goes_to_zone_b():
    nodes, pods = _zones_cluster()
    pod = make_pod("mypod", labels={"foo": "bar"}, topologySpreadConstraints=[_spread("zone")])
    r = schedule(nodes, pods, pod)
    assert r.suggested_host in ("node3", "node4")
    verdicts = {n.name: n.filter_code for n in r.explanation().nodes}
    assert verdicts["node1"] == verdicts["node2"] == "Unschedulable"


def test_topology_spread_docs_example_two_constraints_only_node4():
    nodes, pods = _zones_cluster()
    pod = make_pod("mypod", labels={"foo": "bar"},
                   topologySpreadConstraints=[_spread("zone"), _spread("kubernetes.io/hostname")])
    r = schedule(nodes, pods, pod)
    assert r.suggested_host == "node4"


def test_topology_spread_missing_label_and_message():
    nodes = [make_node("a", labels={"zone": "z1"}), make_node("nolabel")]
    pods = [make_pod("x", node="a", labels={"foo": "bar"})]
    pod = make_pod("p", labels={"foo": "bar"}, topologySpreadConstraints=[_spread("zone")])
    r = schedule(nodes, pods, pod)
    assert r.suggested_host == "a"  # skew 1 + 1 - 1 = 1 <= 1
    verdict = {n.name: n.reasons for n in r.explanation().nodes}
    assert verdict["nolabel"] == ("node(s) didn't match pod topology spread constraints (missing required label)",)


def test_topology_spread_min_domains_treats_global_minimum_as_zero():
    nodes = [make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"})]
    pods = [make_pod("x", node="a", labels={"foo": "bar"}), make_pod("y", node="b", labels={"foo": "bar"})]
    pod = make_pod("p", labels={"foo": "bar"}, topologySpreadConstraints=[_spread("zone", minDomains=3)])
    r = schedule(nodes, pods, pod)
    # two eligible zones < minDomains 3: global minimum 0, skew 1 + 1 - 0 = 2 > 1 everywhere
    assert r.message().startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints.")


def test_topology_spread_match_label_keys_only_counts_same_revision():
    nodes = [make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"})]
    pods = [make_pod("old1", node="a", labels={"foo": "bar", "rev": "1"}),
            make_pod("old2", node="a", labels={"foo": "bar", "rev": "1"})]
    c = _spread("zone", matchLabelKeys=["rev"])
    pod = make_pod("p", labels={"foo": "bar", "rev": "2"}, topologySpreadConstraints=[c])
    r = schedule(nodes, pods, pod)
    assert {n.name for n in r.explanation().nodes if n.filter_code == "Success"} == {"a", "b"}


def test_default_spreading_uses_service_selector():
    nodes = [make_node("a", labels={"topology.kubernetes.io/zone": "z1"}),
             make_node("b", labels={"topology.kubernetes.io/zone": "z1"})]
    pods = [make_pod(f"w{i}", node="a", labels={"app": "web"}) for i in range(3)]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}}}
    r = schedule(nodes, pods, make_pod("p", labels={"app": "web"}), objects=[svc])
    s = scores_of(r, "PodTopologySpread")
    # hostname counts: a 3, b 0; zone z1 counts 3 on both; so b scores the maximum
    assert s["b"][1] == 100 and s["a"][1] < 100
    assert r.suggested_host == "b"
    r = schedule(nodes, pods, make_pod("p", labels={"app": "web"}))
    assert "PodTopologySpread" not in r.explanation().nodes[0].scores  # no selector: skipped


def test_soft_topology_spread_score_formula():
    nodes = [make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"})]
    pods = [make_pod("x", node="a", labels={"foo": "bar"}), make_pod("y", node="a", labels={"foo": "bar"})]
    c = {**_spread("zone"), "whenUnsatisfiable": "ScheduleAnyway"}
    r = schedule(nodes, pods, make_pod("p", labels={"foo": "bar"}, topologySpreadConstraints=[c]))
    # raw = count * log(2 domains + 2) + (maxSkew - 1): a = round(2 * 1.386) = 3, b = 0
    # normalised = 100 * (max + min - s) / max: a -> 0, b -> 100
    assert scores_of(r, "PodTopologySpread") == {"a": (3, 0), "b": (0, 100)}


def test_soft_topology_spread_counts_only_included_nodes():
    # zone z1 holds two matching pods, on nodes a (disk=ssd) and c (tainted); z2 one, on b
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [make_node("a", labels={"zone": "z1", "disk": "ssd"}), make_node("b", labels={"zone": "z2", "disk": "ssd"}),
             make_node("c", labels={"zone": "z1"}, taints=taint)]
    pods = [make_pod("x", node="a", labels={"foo": "bar"}), make_pod("y", node="c", labels={"foo": "bar"}),
            make_pod("z", node="b", labels={"foo": "bar"})]
    soft = {**_spread("zone"), "whenUnsatisfiable": "ScheduleAnyway"}

    def raw(constraint, **spec):
        r = schedule(nodes, pods, make_pod("p", labels={"foo": "bar"}, topologySpreadConstraints=[constraint], **spec))
        return {n: v[0] for n, v in scores_of(r, "PodTopologySpread").items()}

    # defaults (nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore), no node selector: z1 counts 2, z2 1
    assert raw(soft) == {"a": 3, "b": 1}  # round(2 * log 4), round(1 * log 4)
    # taints honoured: c's pod no longer counts for z1
    assert raw({**soft, "nodeTaintsPolicy": "Honor"}) == {"a": 1, "b": 1}
    # node affinity honoured: only disk=ssd nodes count (c has no disk label)
    assert raw(soft, nodeSelector={"disk": "ssd"}) == {"a": 1, "b": 1}
    assert raw({**soft, "nodeAffinityPolicy": "Ignore"}, nodeSelector={"disk": "ssd"}) == {"a": 3, "b": 1}


# --- InterPodAffinity ---------------------------------------------------------------------------------------

def _term(labels, key="kubernetes.io/hostname", **extra):
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def test_required_anti_affinity_keeps_replicas_apart():
    nodes = [make_node("a"), make_node("b")]
    pods = [make_pod("web-0", node="a", labels={"app": "web"})]
    aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "web"})]}}
    r = schedule(nodes, pods, make_pod("web-1", labels={"app": "web"}, affinity=aff))
    assert r.suggested_host == "b"
    pods.append(make_pod("web-2", node="b", labels={"app": "web"}))
    r = schedule(nodes, pods, make_pod("web-3", labels={"app": "web"}, affinity=aff))
    assert r.message().startswith("0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")


def test_existing_pods_anti_affinity_is_honoured():
    nodes = [make_node("a"), make_node("b")]
    aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "noisy"})]}}
    pods = [make_pod("loner", node="a", affinity=aff)]
    r = schedule(nodes, pods, make_pod("n", labels={"app": "noisy"}))
    assert r.suggested_host == "b"
    assert r.explanation().nodes[0].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)


def test_required_affinity_and_first_pod_exception():
    nodes = [make_node("a", labels={"zone": "z1"}), make_node("b", labels={"zone": "z2"})]
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "cache"}, "zone")]}}
    # no pod matches anywhere, and the pod matches its own term: allowed anywhere
    r = schedule(nodes, [], make_pod("c0", labels={"app": "cache"}, affinity=aff))
    assert r.suggested_host in ("a", "b")
    # a pod that does not match its own term must wait
    r = schedule(nodes, [], make_pod("web", labels={"app": "web"}, affinity=aff))
    assert r.message().startswith("0/2 nodes are available: 2 node(s) didn't match pod affinity rules.")
    r = schedule(nodes, [make_pod("c0", node="b", labels={"app": "cache"})],
                 make_pod("web", labels={"app": "web"}, affinity=aff))
    assert r.suggested_host == "b"


def test_namespace_selector_uses_namespace_labels():
    nodes = [make_node("a"), make_node("b")]
    pods = [make_pod("db", node="a", labels={"app": "db"}, ns="prod")]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}}
    term = _term({"app": "db"}, namespaceSelector={"matchLabels": {"env": "prod"}})
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    assert schedule(nodes, pods, make_pod("api", affinity=aff), objects=[ns]).suggested_host == "a"
    # without the namespace-by-default rule the pod in "default" would look only in "default"
    plain = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "db"})]}}
    assert schedule(nodes, pods, make_pod("api", affinity=plain), objects=[ns]).suggested_host is None


def test_preferred_pod_affinity_score_scaled_between_min_and_max():
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    pods = [make_pod("x", node="a", labels={"app": "db"}), make_pod("y", node="b", labels={"app": "db"}),
            make_pod("z", node="b", labels={"app": "db"})]
    aff = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": _term({"app": "db"})}]}}
    r = schedule(nodes, pods, make_pod("p", affinity=aff))
    assert scores_of(r, "InterPodAffinity") == {"a": (10, 50), "b": (20, 100), "c": (0, 0)}


# --- ImageLocality, SchedulingGates, VolumeBinding -----------------------------------------------------------

def test_image_locality_scales_by_spread():
    size = 500 * 1024 * 1024
    img = [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": size}]
    nodes = [make_node("has", images=img), make_node("hasnt")]
    r = schedule(nodes, pod=make_pod("p"))
    # 500 MiB * (1 of 2 nodes) = 250 MiB; 100 * (250 - 23) / (1000 - 23) = 23
    assert scores_of(r, "ImageLocality") == {"has": (23, 23), "hasnt": (0, 0)}
    assert imagelocality.calculate_priority(2000 * 1024 * 1024, 1) == 100


def test_scheduling_gates_pre_enqueue_message():
    fw = Framework()
    st = fw.run_pre_enqueue(make_pod("p", schedulingGates=[{"name": "a"}, {"name": "b"}]))
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "waiting for scheduling gates: [a b]" and st.plugin == "SchedulingGates"
    assert fw.run_pre_enqueue(make_pod("q")) is None


def test_unbound_immediate_claim_blocks_scheduling():
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "data", "namespace": "default"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    pod = make_pod("p", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    r = schedule([make_node("a")], pod=pod, objects=[pvc])
    assert r.message().startswith("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    # a claim that names its volume is bound only once the PV controller says so (isPVCFullyBound)
    named = {**pvc, "spec": {**pvc["spec"], "volumeName": "pv-1"}}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"},
                   "claimRef": {"namespace": "default", "name": "data"}}}
    for objects in ([named], [named, pv]):
        r = schedule([make_node("a")], pod=pod, objects=objects)
        assert r.message().startswith("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    bound = {**named, "metadata": {**named["metadata"], "annotations": {"pv.kubernetes.io/bind-completed": "yes"}}}
    assert schedule([make_node("a")], pod=pod, objects=[bound, pv]).suggested_host == "a"
    r = schedule([make_node("a")], pod=pod)
    assert r.message().startswith('0/1 nodes are available: persistentvolumeclaim "data" not found.')


# --- DefaultPreemption ----------------------------------------------------------------------------------------

def test_preemption_picks_node_with_lowest_priority_victims():
    nodes = [make_node("a", cpu="2"), make_node("b", cpu="2")]
    pods = [make_pod("a-mid", cpu="2", node="a", priority=50),
            make_pod("b-low", cpu="2", node="b", priority=10)]
    r = schedule(nodes, pods, make_pod("hi", cpu="1", priority=100))
    assert r.suggested_host is None
    assert r.post_filter.nominated_node_name == "b"
    assert [v["metadata"]["name"] for v in r.post_filter.victims] == ["b-low"]
    assert r.message() == "0/2 nodes are available: 2 Insufficient cpu."


def test_preemption_reprieves_as_many_pods_as_possible():
    nodes = [make_node("a", cpu="3")]
    pods = [make_pod(n, cpu="1", node="a", priority=p) for n, p in (("p1", 1), ("p2", 2), ("p3", 3))]
    r = schedule(nodes, pods, make_pod("hi", cpu="2", priority=100))
    # two must go; the most important (p3) is reprieved first
    assert sorted(v["metadata"]["name"] for v in r.post_filter.victims) == ["p1", "p2"]


def test_preemption_prefers_nodes_without_pdb_violations():
    nodes = [make_node("a", cpu="1"), make_node("b", cpu="1")]
    pods = [make_pod("guarded", cpu="1", node="a", priority=1, labels={"app": "db"}),
            make_pod("free", cpu="1", node="b", priority=5)]
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "db", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "db"}}}, "status": {"disruptionsAllowed": 0}}
    r = schedule(nodes, pods, make_pod("hi", cpu="1", priority=100), objects=[pdb])
    assert r.post_filter.nominated_node_name == "b"


def test_preemption_not_eligible_with_never_policy():
    nodes = [make_node("a", cpu="1")]
    pods = [make_pod("low", cpu="1", node="a", priority=1)]
    r = schedule(nodes, pods, make_pod("hi", cpu="1", priority=100, preemptionPolicy="Never"))
    assert r.message() == ("0/1 nodes are available: 1 Insufficient cpu. "
                           "preemption: not eligible due to preemptionPolicy=Never.")


def test_preemption_reports_filter_reason_when_removal_does_not_help():
    nodes = [make_node("a", cpu="1")]
    pods = [make_pod("low", cpu="500m", node="a", priority=1)]
    r = schedule(nodes, pods, make_pod("huge", cpu="2", priority=100))
    assert r.message() == ("0/1 nodes are available: 1 Insufficient cpu. "
                           "preemption: 0/1 nodes are available: 1 Insufficient cpu.")


def test_pick_one_node_prefers_latest_start_on_full_tie():
    from k8semu.scheduler.plugins.defaultpreemption import Candidate, pick_one_node_for_preemption

    def victim(name, start):
        p = make_pod(name, priority=1)
        p["status"] = {"startTime": start}
        return PodInfo.of(p)

    old = Candidate("old", [victim("o", "2024-01-01T00:00:00Z")], 0)
    new = Candidate("new", [victim("n", "2024-06-01T00:00:00Z")], 0)
    assert pick_one_node_for_preemption([old, new]).name == "new"


# --- PodTopologySpread counts the matching pods of a node through its label buckets ---------

from hypothesis import given, strategies as st  # noqa: E402

_labels = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"]), max_size=2)


@given(st.lists(st.tuples(st.sampled_from(["default", "dev"]), _labels, st.booleans()), max_size=8),
       st.sampled_from(["app=a", "app=a,tier=b", "tier in (a,b)", "app", "!tier", "app=a,app=b"]),
       st.sampled_from(["default", "dev"]), st.integers(0, 7))
def test_topology_spread_counts_what_a_scan_of_the_node_counts(pods, selector, ns, removed):
    """Counting via the node's label buckets gives upstream's countPodsMatchSelector, before
    and after the node's pods change (a pod removed from a copy of the NodeInfo)."""
    from k8semu.api.selectors import parse_label_selector
    from k8semu.scheduler.plugins.podtopologyspread import _pod_counter
    from k8semu.scheduler.types import NodeInfo

    ni = NodeInfo("node-1")
    for i, (pod_ns, labels, deleting) in enumerate(pods):
        meta = {"name": f"p{i}", "namespace": pod_ns, "labels": labels}
        if deleting:
            meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        ni.add_pod(PodInfo.of({"metadata": meta, "spec": {"nodeName": "node-1", "containers": []}}))
    sel = parse_label_selector(selector)

    def scan(node):
        return sum(1 for p in node.pods if p.namespace == ns and not p.terminating and sel.matches(p.labels))

    count = _pod_counter(sel, ns)
    assert count(ni) == scan(ni)
    copy = ni.clone()
    if removed < len(pods):
        copy.remove_pod(f"{pods[removed][0]}/p{removed}")
    assert (count(copy), count(ni)) == (scan(copy), scan(ni))
