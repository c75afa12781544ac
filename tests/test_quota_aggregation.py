"""ResourceQuota's compute constraints, LimitRanger's annotation and ClusterRole aggregation,
as a user meets them (upstream messages and behaviour, in virtual time)."""

from __future__ import annotations

import pytest

from k8semu.api import errors
from k8semu.api.apiserver import RequestContext
from k8semu.api.auth import user
from k8semu.controllers.clusterroleaggregation import ClusterRoleAggregationController
from k8semu.server import reviews
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import controller_factories
from k8semu.sim.runtime import run_cluster

CR = "clusterroles.rbac.authorization.k8s.io"
RBAC = "rbac.authorization.k8s.io/v1"


def pod(name, *containers, init=(), **spec):
    def c(x):
        if isinstance(x, str):
            return {"name": x, "image": "nginx"}
        n, req, lim = x
        res = {}
        if req:
            res["requests"] = req
        if lim:
            res["limits"] = lim
        return {"name": n, "image": "nginx", "resources": res}

    body = {"containers": [c(x) for x in containers], **spec}
    if init:
        body["initContainers"] = [c(x) for x in init]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body}


@pytest.fixture
def api():
    c = Cluster.create(seed=3)
    c.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "q"}})
    return c.api


def quota(api, name, hard, **spec):
    api.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
                                  "spec": {"hard": hard, **spec}}, namespace="q")


def forbidden(api, obj):
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", obj, namespace="q")
    return e.value.message


# ------------------------------------------------------------------ ResourceQuota constraints


def test_compute_quota_requires_every_container_to_set_what_it_limits(api):
    """Upstream's pod evaluator ``Constraints``, wrapped as ``failed quota: <quota>: <err>``:
    missing resources sorted, joined with ``; ``, each with its containers sorted, joined by ``,``."""
    quota(api, "qq", {"pods": "2", "requests.cpu": "200m", "limits.memory": "512Mi"})
    assert forbidden(api, pod("p1", "p1")) == (
        'pods "p1" is forbidden: failed quota: qq: must specify limits.memory for: p1; requests.cpu for: p1')
    # init containers count too; a container setting only some is named for the rest
    msg = forbidden(api, pod("p2", ("web", {"cpu": "100m"}, None), "sidecar", init=["setup"]))
    assert msg == ('pods "p2" is forbidden: failed quota: qq: must specify limits.memory for: '
                   'setup,sidecar,web; requests.cpu for: setup,sidecar')
    # nothing is charged for a refused pod; one that sets both is admitted and counted
    full = ({"cpu": "100m"}, {"memory": "256Mi"})
    api.create("pods", pod("ok", ("web", *full)), namespace="q")
    assert forbidden(api, pod("big", ("web", {"cpu": "150m"}, {"memory": "256Mi"}))) == (
        'pods "big" is forbidden: exceeded quota: qq, requested: requests.cpu=150m, '
        'used: requests.cpu=100m, limited: requests.cpu=200m')


def test_object_count_quota_and_limits_cpu_only(api):
    """Only cpu/memory quotas constrain pods (``validationSet``); ``pods`` alone does not; a
    limit set on a container also counts as its request (API defaulting runs first)."""
    quota(api, "count", {"pods": "5", "count/configmaps": "3"})
    api.create("pods", pod("plain", "c"), namespace="q")
    quota(api, "cpu", {"limits.cpu": "1"})
    assert forbidden(api, pod("p", "c")) == 'pods "p" is forbidden: failed quota: cpu: must specify limits.cpu for: c'
    api.create("pods", pod("limited", ("c", None, {"cpu": "500m"})), namespace="q")


def test_quota_scopes_decide_which_pods_are_constrained(api):
    """A quota only applies to pods in its scopes: ``NotTerminating`` skips a pod with
    ``activeDeadlineSeconds``; ``NotBestEffort`` skips a pod with no requests or limits."""
    quota(api, "long-running", {"requests.memory": "1Gi"}, scopes=["NotTerminating"])
    api.create("pods", pod("batch", "c", activeDeadlineSeconds=60), namespace="q")
    assert forbidden(api, pod("svc", "c")) == (
        'pods "svc" is forbidden: failed quota: long-running: must specify requests.memory for: c')
    quota(api, "burst", {"limits.cpu": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "NotBestEffort", "operator": "Exists"}]})
    assert forbidden(api, pod("half", ("c", {"memory": "64Mi"}, None))) == (
        'pods "half" is forbidden: failed quota: burst: must specify limits.cpu for: c')
    api.create("pods", pod("best-effort", "c", activeDeadlineSeconds=30), namespace="q")


def test_scoped_quota_counts_and_limits_only_its_pods():
    """A ``BestEffort`` quota charges best-effort pods only (upstream's ``podMatchesScopeFunc``),
    in admission and in the resource-quota controller's ``status.used``."""
    from k8semu.controllers.resourcequota import ResourceQuotaController

    c = Cluster.create(seed=3)
    api = c.api
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "q"}})
    quota(api, "be", {"pods": "1"}, scopes=["BestEffort"])
    out = {}

    async def body(rt):
        api.create("pods", pod("free", "c"), namespace="q")
        api.create("pods", pod("burst", ("c", {"cpu": "10m"}, None)), namespace="q")
        out["refused"] = forbidden(api, pod("free-2", "c"))
        await rt.settle()
        out["status"] = api.get("resourcequotas", "be", namespace="q")["status"]

    run_cluster(c, body, {"resourcequota-controller": lambda: ResourceQuotaController(api)})
    assert out["refused"] == ('pods "free-2" is forbidden: exceeded quota: be, requested: pods=1, '
                              'used: pods=1, limited: pods=1')
    assert out["status"] == {"hard": {"pods": "1"}, "used": {"pods": "1"}}


# ------------------------------------------------------------------ LimitRanger


def limit_range(api, name, item):
    api.create("limitranges", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name},
                               "spec": {"limits": [{"type": "Container", **item}]}}, namespace="q")


def test_limit_ranger_notes_the_defaults_it_set(api):
    """Upstream's ``mergePodResourceRequirements``: ``LimitRanger plugin set: `` then, per
    container and then per init container, ``<sorted names> request for container X`` and
    ``… limit for container X`` (``init container X``), joined with ``; ``."""
    limit_range(api, "lr", {"default": {"memory": "512Mi", "cpu": "500m"}, "defaultRequest": {"cpu": "100m"}})
    p = api.create("pods", pod("web", "nginx"), namespace="q")
    assert p["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container nginx; cpu, memory limit for container nginx")
    assert p["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "512Mi", "cpu": "500m"}}
    p = api.create("pods", pod("mixed", ("app", {"cpu": "1"}, {"cpu": "2"}), init=["init"]), namespace="q")
    assert p["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: memory request for container app; memory limit for container app; "
        "cpu, memory request for init container init; cpu, memory limit for init container init")
    assert p["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"cpu": "2", "memory": "512Mi"}}


def test_limit_ranger_leaves_a_complete_pod_unannotated_and_feeds_the_quota(api):
    """No annotation when nothing was defaulted; LimitRanger (mutating) runs before
    ResourceQuota (validating), so its defaults satisfy a compute quota."""
    limit_range(api, "lr", {"default": {"cpu": "200m"}})
    p = api.create("pods", pod("set", ("c", {"cpu": "50m"}, {"cpu": "100m"})), namespace="q")
    assert "kubernetes.io/limit-ranger" not in (p["metadata"].get("annotations") or {})
    quota(api, "qq", {"requests.cpu": "1", "limits.cpu": "1"})
    p = api.create("pods", pod("p1", "p1"), namespace="q")
    assert p["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}}


# ------------------------------------------------------------------ ClusterRole aggregation


def can_i(api, who, verb, resource, group=""):
    """``kubectl auth can-i VERB RESOURCE --as=WHO``: a SelfSubjectAccessReview as that user."""
    review = reviews.handle(api, RequestContext(user(who)), "POST", reviews.GROUP, "v1",
                            ["selfsubjectaccessreviews"], {
                                "kind": "SelfSubjectAccessReview",
                                "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                                                "group": group}}})
    return review["status"]["allowed"]


def role(name, labels=None, rules=None, selectors=None):
    obj = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name, "labels": labels or {}}}
    if rules is not None:
        obj["rules"] = rules
    if selectors is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return obj


NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}
PVS = {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["get"]}


def test_aggregated_role_gets_the_rules_of_the_roles_it_selects():
    """Upstream's clusterrole-aggregation controller: the union of the selected roles' rules,
    by role name and deduplicated, applied (field manager and actor
    ``clusterrole-aggregation-controller``) as each ClusterRole changes."""
    c = Cluster.create(seed=3)
    api = c.api
    out = {}

    async def body(rt):
        api.create(CR, role("reader", selectors=[{"matchLabels": {"team": "ops"}}]))
        api.create("clusterrolebindings.rbac.authorization.k8s.io", {
            "apiVersion": RBAC, "kind": "ClusterRoleBinding", "metadata": {"name": "jane-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]})
        await rt.settle()
        out["before"] = can_i(api, "jane", "get", "nodes")
        api.create(CR, role("z-pvs", {"team": "ops"}, [PVS, NODES]))
        api.create(CR, role("a-nodes", {"team": "ops"}, [NODES]))
        api.create(CR, role("other", {"team": "dev"}, [{"apiGroups": [""], "resources": ["secrets"],
                                                        "verbs": ["get"]}]))
        await rt.settle()
        out["after"] = can_i(api, "jane", "get", "nodes")
        out["rules"] = api.get(CR, "reader")["rules"]
        api.patch(CR, "a-nodes", {"metadata": {"labels": {"team": None}}}, "application/merge-patch+json")
        api.delete(CR, "z-pvs")
        await rt.settle()
        out["emptied"] = api.get(CR, "reader").get("rules")

    run_cluster(c, body, {"clusterrole-aggregation-controller": lambda: ClusterRoleAggregationController(api)})
    assert (out["before"], out["after"]) == (False, True)
    assert out["rules"] == [NODES, PVS]
    assert not out["emptied"]
    writes = list(api.log.history(f"/registry/{CR}/reader"))[1:]  # after the user's create
    assert len(writes) == 2
    assert {r.actor for r in writes} == {"clusterrole-aggregation-controller"}
    managers = [m["manager"] for m in writes[0].object["metadata"]["managedFields"]]
    assert "clusterrole-aggregation-controller" in managers


def test_bootstrap_aggregates_stay_as_they_are_and_pick_up_new_parts():
    """``admin``/``edit``/``view`` are aggregated already (no write on a new cluster); a role
    labelled ``aggregate-to-view`` reaches view, then edit and admin, whose other rules stay."""
    c = Cluster.create(seed=3)
    api = c.api
    names = ("admin", "edit", "view")
    before = {n: api.get(CR, n)["rules"] for n in names}
    widgets = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}
    out = {}

    async def body(rt):
        await rt.settle()
        out["settled"] = {n: api.get(CR, n)["rules"] for n in names}
        api.create(CR, role("widgets-view", {"rbac.authorization.k8s.io/aggregate-to-view": "true"}, [widgets]))
        await rt.settle()
        out["after"] = {n: api.get(CR, n)["rules"] for n in names}

    factories = controller_factories(api, c.nodes)
    run_cluster(c, body, {"clusterrole-aggregation-controller": factories["clusterrole-aggregation-controller"]})
    assert out["settled"] == before
    for n in names:
        rules = out["after"][n]
        assert widgets in rules and [r for r in rules if r != widgets] == before[n], n
