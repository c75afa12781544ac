"""The in-process kube-apiserver behaves as upstream's for what users and controllers notice."""

from __future__ import annotations

import ipaddress

import pytest
import trio

from k8semu.api import errors
from k8semu.api.apiserver import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    RequestContext,
)
from k8semu.api.auth import user
from k8semu.sim.cluster import Cluster


@pytest.fixture
def cluster():
    return Cluster.create(seed=1)


@pytest.fixture
def api(cluster):
    return cluster.api


def deployment(name="web", replicas=2, labels=None, image="nginx:1.27"):
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": image}]},
            },
        },
    }


def pod(name="p", node=None, **spec):
    s = {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec}
    if node:
        s["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "x"}}, "spec": s}


# ---------------------------------------------------------------- bootstrap


def test_new_cluster_has_kubeadm_namespaces_and_the_kubernetes_service(api):
    names = [n["metadata"]["name"] for n in api.list("namespaces")["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    svc = api.get("services", "kubernetes", namespace="default")
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"][0]["port"] == 443
    assert api.get("clusterroles.rbac.authorization.k8s.io", "cluster-admin")["rules"]
    ns = api.get("namespaces", "default")
    assert ns["status"] == {"phase": "Active"} and ns["spec"]["finalizers"] == ["kubernetes"]


# ---------------------------------------------------------------- create / get


def test_create_fills_metadata_and_defaults(api, cluster):
    cluster.time = 90.0
    d = api.create("deployments", deployment(), namespace="default")
    m = d["metadata"]
    assert m["namespace"] == "default" and m["generation"] == 1
    assert m["creationTimestamp"] == "2025-01-01T00:01:30Z"
    assert len(m["uid"]) == 36 and m["uid"][14] == "4"
    assert m["resourceVersion"] == str(cluster.log.revision)
    assert d["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}
    }
    assert d["spec"]["revisionHistoryLimit"] == 10 and d["spec"]["progressDeadlineSeconds"] == 600
    c = d["spec"]["template"]["spec"]["containers"][0]
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert d["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert api.get("deployments", "web", namespace="default") == d


def test_stored_objects_share_equal_parts_without_changing_what_is_stored(api):
    import orjson

    from k8semu.api.meta import share_equal_parts

    a = api.create("pods", pod("a", tolerations=[{"key": "k", "operator": "Exists"}]), namespace="default")
    b = api.create("pods", pod("b", tolerations=[{"key": "k", "operator": "Exists"}]), namespace="default")
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]  # one object for two pods (memory)
    labelled = {**b, "metadata": {**b["metadata"], "labels": {"app": "x", "new": "1"}}}
    c = api.update("pods", labelled, namespace="default")
    assert c["spec"] is b["spec"] and c["metadata"]["labels"] == {"app": "x", "new": "1"}
    # equal in Python is not equal in JSON: 1 == 1.0 == True must not be swapped for one another
    new = {"spec": {"a": {"n": 1}, "b": [{"f": 1.0}]}, "status": {"ok": True}}
    old = {"spec": {"a": {"n": True}, "b": [{"f": 1}]}, "status": {"ok": 1}}
    assert orjson.dumps(share_equal_parts(new, old)) == b'{"spec":{"a":{"n":1},"b":[{"f":1.0}]},"status":{"ok":true}}'


def test_same_seed_gives_same_uids_and_names():
    a, b = Cluster.create(seed=5), Cluster.create(seed=5)
    pa = a.api.create("pods", {**pod(), "metadata": {"generateName": "web-"}}, namespace="default")
    pb = b.api.create("pods", {**pod(), "metadata": {"generateName": "web-"}}, namespace="default")
    assert pa["metadata"]["uid"] == pb["metadata"]["uid"]
    assert pa["metadata"]["name"] == pb["metadata"]["name"]
    assert pa["metadata"]["name"].startswith("web-") and len(pa["metadata"]["name"]) == 9
    c = Cluster.create(seed=6)
    pc = c.api.create("pods", {**pod(), "metadata": {"generateName": "web-"}}, namespace="default")
    assert pc["metadata"]["uid"] != pa["metadata"]["uid"]


def test_already_exists_and_not_found_messages(api):
    api.create("deployments", deployment(), namespace="default")
    with pytest.raises(errors.AlreadyExists) as e:
        api.create("deployments", deployment(), namespace="default")
    assert e.value.message == 'deployments.apps "web" already exists'
    with pytest.raises(errors.NotFound) as e:
        api.get("deployments", "nope", namespace="default")
    assert e.value.status()["message"] == 'deployments.apps "nope" not found'
    assert e.value.status()["code"] == 404 and e.value.status()["details"]["kind"] == "deployments"


def test_create_in_a_missing_namespace_is_not_found(api):
    with pytest.raises(errors.NotFound) as e:
        api.create("pods", pod(), namespace="nowhere")
    assert e.value.message == 'namespaces "nowhere" not found'


def test_namespace_mismatch_is_a_bad_request(api):
    obj = {**pod(), "metadata": {"name": "p", "namespace": "kube-system"}}
    with pytest.raises(errors.BadRequest, match="does not match the namespace sent on the request"):
        api.create("pods", obj, namespace="default")


def test_unknown_field_is_rejected_strictly(api):
    d = deployment()
    d["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    with pytest.raises(errors.BadRequest) as e:
        api.create("deployments", d, namespace="default")
    assert 'unknown field "spec.template.spec.containers[0].imagee"' in e.value.message


def test_selector_must_match_template_labels(api):
    with pytest.raises(errors.Invalid) as e:
        api.create("deployments", deployment(labels={"app": "other"}), namespace="default")
    msg = e.value.message
    assert msg.startswith('Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value:')
    assert "`selector` does not match template `labels`" in msg
    assert e.value.status()["code"] == 422
    assert e.value.status()["details"]["causes"][0]["field"] == "spec.template.metadata.labels"


# ---------------------------------------------------------------- update / patch


def test_stale_resource_version_is_a_conflict(api):
    d = api.create("deployments", deployment(), namespace="default")
    api.update("deployments", {**d, "spec": {**d["spec"], "replicas": 3}}, namespace="default")
    with pytest.raises(errors.Conflict) as e:
        api.update("deployments", {**d, "spec": {**d["spec"], "replicas": 4}}, namespace="default")
    assert e.value.message == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_generation_moves_on_spec_changes_only(api):
    d = api.create("deployments", deployment(), namespace="default")
    d2 = api.patch("deployments", "web", {"metadata": {"labels": {"tier": "front"}}},
                   MERGE_PATCH, namespace="default")
    assert d2["metadata"]["generation"] == 1
    d3 = api.patch("deployments", "web", {"spec": {"replicas": 5}}, MERGE_PATCH, namespace="default")
    assert d3["metadata"]["generation"] == 2
    assert d3["metadata"]["uid"] == d["metadata"]["uid"]


def test_noop_update_writes_nothing(api, cluster):
    d = api.create("deployments", deployment(), namespace="default")
    rev = cluster.log.revision
    same = api.update("deployments", d, namespace="default")
    assert cluster.log.revision == rev and same["metadata"]["resourceVersion"] == str(rev)


def test_status_subresource_separates_spec_and_status(api):
    d = api.create("deployments", deployment(), namespace="default")
    # a main-resource update cannot change status
    d2 = api.update("deployments", {**d, "status": {"replicas": 9}}, namespace="default")
    assert d2["status"] == {}
    # a status update cannot change spec, and does not bump generation
    d3 = api.update("deployments", {**d2, "spec": {**d2["spec"], "replicas": 7}, "status": {"replicas": 2}},
                    namespace="default", subresource="status")
    assert d3["status"] == {"replicas": 2} and d3["spec"]["replicas"] == 2
    assert d3["metadata"]["generation"] == 1


def test_strategic_merge_cordon_and_uncordon_null(api):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}
    api.create("nodes", node)
    n = api.patch("nodes", "node-1", {"spec": {"unschedulable": True}}, STRATEGIC_MERGE_PATCH)
    assert n["spec"]["unschedulable"] is True
    n = api.patch("nodes", "node-1", {"spec": {"unschedulable": None}}, STRATEGIC_MERGE_PATCH)
    assert "unschedulable" not in n.get("spec", {})


def test_json_patch_and_failed_test_op(api):
    api.create("deployments", deployment(), namespace="default")
    d = api.patch("deployments", "web", [{"op": "replace", "path": "/spec/replicas", "value": 4}],
                  JSON_PATCH, namespace="default")
    assert d["spec"]["replicas"] == 4
    with pytest.raises(errors.Invalid):
        api.patch("deployments", "web", [{"op": "test", "path": "/spec/replicas", "value": 1}],
                  JSON_PATCH, namespace="default")


def test_unknown_patch_type_is_415(api):
    with pytest.raises(errors.UnsupportedMediaType):
        api.patch("deployments", "web", {}, "application/xml", namespace="default")


def test_immutable_selector_and_cluster_ip(api):
    api.create("deployments", deployment(), namespace="default")
    with pytest.raises(errors.Invalid, match="field is immutable"):
        api.patch("deployments", "web", {"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                                                  "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}},
                  MERGE_PATCH, namespace="default")
    svc = api.create("services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
                     namespace="default")
    assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
    assert svc["spec"]["ports"][0]["targetPort"] == 80
    with pytest.raises(errors.Invalid, match=r"spec.clusterIPs\[0\]: Invalid value: .*may not change once set"):
        api.patch("services", "s", {"spec": {"clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"]}},
                  MERGE_PATCH, namespace="default")


def test_node_port_allocated_in_range(api):
    svc = api.create("services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
                                  "spec": {"type": "NodePort", "selector": {"a": "b"}, "ports": [{"port": 80}]}},
                     namespace="default")
    assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"


# ---------------------------------------------------------------- list / selectors


def test_list_with_label_and_field_selectors(api):
    for i in range(4):
        p = pod(f"p{i}", node=f"node-{i % 2}")
        p["metadata"]["labels"] = {"app": "web" if i < 3 else "db"}
        api.create("pods", p, namespace="default")
    names = lambda lst: [o["metadata"]["name"] for o in lst["items"]]  # noqa: E731
    assert names(api.list("pods", namespace="default", label_selector="app=web")) == ["p0", "p1", "p2"]
    assert names(api.list("pods", namespace="default", label_selector="app in (db)")) == ["p3"]
    assert names(api.list("pods", field_selector="spec.nodeName=node-1")) == ["p1", "p3"]
    assert names(api.list("pods", label_selector="app=web", field_selector="spec.nodeName!=node-1")) == ["p0", "p2"]
    with pytest.raises(errors.BadRequest) as e:
        api.list("pods", field_selector="spec.image=nginx")
    assert "field label not supported: spec.image" in e.value.message


def test_list_pagination_is_a_consistent_snapshot(api):
    for i in range(5):
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}},
                   namespace="default")
    first = api.list("configmaps", namespace="default", limit=2)
    assert [o["metadata"]["name"] for o in first["items"]] == ["c0", "c1"]
    assert first["metadata"]["remainingItemCount"] == 3
    api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c9"}},
               namespace="default")
    rest = api.list("configmaps", namespace="default", limit=10, continue_=first["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in rest["items"]] == ["c2", "c3", "c4"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert "continue" not in rest["metadata"]


def test_list_carries_kind_and_store_revision(api, cluster):
    lst = api.list("deployments", namespace="default")
    assert lst["kind"] == "DeploymentList" and lst["apiVersion"] == "apps/v1"
    assert lst["metadata"]["resourceVersion"] == str(cluster.log.revision)
    assert lst["items"] == []


# ---------------------------------------------------------------- watch


async def test_watch_from_resource_version_and_selector_transitions(api):
    rv = api.list("pods", namespace="default")["metadata"]["resourceVersion"]
    stream = await api.watch("pods", namespace="default", resource_version=rv, label_selector="app=web")
    p = pod("a")
    p["metadata"]["labels"] = {"app": "web"}
    api.create("pods", p, namespace="default")
    api.patch("pods", "a", {"metadata": {"labels": {"app": "db"}}}, MERGE_PATCH, namespace="default")
    api.patch("pods", "a", {"metadata": {"labels": {"app": "web"}}}, MERGE_PATCH, namespace="default")
    api.delete("pods", "a", namespace="default")
    got = []
    with trio.move_on_after(1):
        async for ev in stream:
            got.append(ev.type)
            if len(got) == 4:
                break
    assert got == ["ADDED", "DELETED", "ADDED", "DELETED"]


async def test_watch_on_one_name_sees_only_that_object(api):
    """metadata.name=X watches (served from the name index) get X's events and nothing else."""
    rv = api.list("configmaps", namespace="default")["metadata"]["resourceVersion"]
    stream = await api.watch("configmaps", namespace="default", resource_version=rv,
                             field_selector="metadata.name=a")
    for name in ("b", "a", "c"):
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
                   namespace="default")
    api.patch("configmaps", "a", {"data": {"k": "v"}}, MERGE_PATCH, namespace="default")
    api.delete("configmaps", "b", namespace="default")
    api.delete("configmaps", "a", namespace="default")
    got = []
    with trio.move_on_after(1):
        async for ev in stream:
            got.append((ev.type, ev.object["metadata"]["name"]))
            if len(got) == 3:
                break
    assert got == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_watch_without_resource_version_starts_with_current_state(api):
    api.create("pods", pod("a"), namespace="default")
    stream = await api.watch("pods", namespace="default")
    ev = await stream.__anext__()
    assert (ev.type, ev.object["metadata"]["name"]) == ("ADDED", "a")


async def test_watch_from_compacted_revision_is_410_expired(api, cluster):
    api.create("pods", pod("a"), namespace="default")
    cluster.log.compact(cluster.log.revision)
    with pytest.raises(errors.Expired) as e:
        await api.watch("pods", resource_version="3")
    st = e.value.status()
    assert (st["code"], st["reason"]) == (410, "Expired")
    assert st["message"] == f"too old resource version: 3 ({cluster.log.revision})"


# ---------------------------------------------------------------- delete


def test_unscheduled_pod_is_deleted_at_once_bound_pod_gracefully(api, cluster):
    api.create("pods", pod("free"), namespace="default")
    api.delete("pods", "free", namespace="default")
    with pytest.raises(errors.NotFound):
        api.get("pods", "free", namespace="default")
    api.create("pods", pod("bound", node="node-1"), namespace="default")
    cluster.time = 10
    p = api.delete("pods", "bound", namespace="default")
    assert p["metadata"]["deletionGracePeriodSeconds"] == 30
    assert p["metadata"]["deletionTimestamp"] == "2025-01-01T00:00:40Z"
    assert api.get("pods", "bound", namespace="default")["metadata"]["deletionTimestamp"]
    # the kubelet finishes it with grace 0
    api.delete("pods", "bound", namespace="default", grace_period_seconds=0)
    with pytest.raises(errors.NotFound):
        api.get("pods", "bound", namespace="default")


def test_finalizers_hold_an_object_until_removed(api):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["example.com/x"]}}
    api.create("configmaps", cm, namespace="default")
    held = api.delete("configmaps", "c", namespace="default")
    assert held["metadata"]["deletionTimestamp"]
    api.patch("configmaps", "c", {"metadata": {"finalizers": None}}, MERGE_PATCH, namespace="default")
    with pytest.raises(errors.NotFound):
        api.get("configmaps", "c", namespace="default")


def test_foreground_and_orphan_propagation_add_finalizers(api):
    api.create("deployments", deployment("a"), namespace="default")
    api.create("deployments", deployment("b"), namespace="default")
    a = api.delete("deployments", "a", namespace="default", propagation_policy="Foreground")
    b = api.delete("deployments", "b", namespace="default", propagation_policy="Orphan")
    assert a["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert b["metadata"]["finalizers"] == ["orphan"]
    with pytest.raises(errors.BadRequest, match="Unsupported value"):
        api.delete("deployments", "a", namespace="default", propagation_policy="Sideways")


def test_delete_precondition_uid(api):
    api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
               namespace="default")
    with pytest.raises(errors.Conflict, match="Precondition failed: UID in precondition: nope"):
        api.delete("configmaps", "c", namespace="default", preconditions={"uid": "nope"})


def test_namespace_delete_goes_terminating_and_blocks_new_content(api):
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}})
    ns = api.delete("namespaces", "dev")
    assert ns["status"]["phase"] == "Terminating"
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", pod(), namespace="dev")
    assert "unable to create new content in namespace dev because it is being terminated" in e.value.message
    with pytest.raises(errors.Forbidden, match="this namespace may not be deleted"):
        api.delete("namespaces", "kube-system")


# ---------------------------------------------------------------- subresources


def test_binding_sets_node_and_pod_scheduled(api):
    api.create("pods", pod("p"), namespace="default")
    p = api.bind("p", {"target": {"kind": "Node", "name": "node-2"}}, namespace="default")
    assert p["spec"]["nodeName"] == "node-2"
    assert p["status"]["conditions"][0]["type"] == "PodScheduled"
    assert p["status"]["conditions"][0]["status"] == "True"
    with pytest.raises(errors.Conflict, match='pod p is already assigned to node "node-2"'):
        api.bind("p", {"target": {"kind": "Node", "name": "node-3"}}, namespace="default")


def test_scale_subresource(api):
    api.create("deployments", deployment(), namespace="default")
    s = api.get_scale("deployments", "web", namespace="default")
    assert s["kind"] == "Scale" and s["apiVersion"] == "autoscaling/v1"
    assert s["spec"]["replicas"] == 2 and s["status"]["selector"] == "app=web"
    s = api.update_scale("deployments", "web", 5, namespace="default")
    assert s["spec"]["replicas"] == 5
    assert api.get("deployments", "web", namespace="default")["spec"]["replicas"] == 5


# ---------------------------------------------------------------- admission


def test_pod_admission_defaults(api):
    p = api.create("pods", pod("p"), namespace="default")
    spec = p["spec"]
    assert spec["serviceAccountName"] == "default" and spec["priority"] == 0
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in spec["tolerations"]
    assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300} in spec["tolerations"]
    mounts = spec["containers"][0]["volumeMounts"]
    assert mounts[0]["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount"
    assert spec["volumes"][0]["name"].startswith("kube-api-access-")
    assert p["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_priority_class_sets_priority(api):
    api.create("priorityclasses", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                   "metadata": {"name": "high"}, "value": 1000})
    p = api.create("pods", pod("p", priorityClassName="high"), namespace="default")
    assert p["spec"]["priority"] == 1000
    crit = api.create("pods", pod("q", priorityClassName="system-node-critical"), namespace="default")
    assert crit["spec"]["priority"] == 2000001000
    with pytest.raises(errors.Forbidden, match="no PriorityClass with name nope was found"):
        api.create("pods", pod("r", priorityClassName="nope"), namespace="default")


def test_resource_quota_refuses_with_upstream_message(api):
    api.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                                  "spec": {"hard": {"pods": "2"}}}, namespace="default")
    api.create("pods", pod("a"), namespace="default")
    api.create("pods", pod("b"), namespace="default")
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", pod("c"), namespace="default")
    assert e.value.message == (
        'pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2'
    )


def test_limit_range_defaults_container_resources(api):
    api.create("limitranges", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                               "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"},
                                                    "defaultRequest": {"cpu": "100m"}}]}},
               namespace="default")
    p = api.create("pods", pod("a"), namespace="default")
    assert p["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}}
    assert p["status"]["qosClass"] == "Burstable"


# ---------------------------------------------------------------- RBAC


def test_rbac_denies_then_allows_with_a_role_binding(api):
    jane = RequestContext(user("jane"))
    with pytest.raises(errors.Forbidden) as e:
        api.list("pods", namespace="default", ctx=jane)
    assert e.value.message == (
        'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"'
    )
    assert e.value.status()["code"] == 403
    api.create("rolebindings.rbac.authorization.k8s.io", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "jane-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}],
    }, namespace="default")
    assert api.list("pods", namespace="default", ctx=jane)["items"] == []
    with pytest.raises(errors.Forbidden):
        api.list("pods", namespace="kube-system", ctx=jane)
    with pytest.raises(errors.Forbidden):
        api.create("pods", pod(), namespace="default", ctx=jane)


def test_a_role_with_resource_names_allows_only_those_objects_however_often_asked(api):
    """The API server remembers allowed decisions; one allowed by a rule with ``resourceNames`` must not
    stand for other names (one allowed by a rule without them does)."""
    for name in ("a", "b"):
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
                   namespace="default")
    api.create("roles.rbac.authorization.k8s.io", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "only-a"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a"]},
                  {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}, namespace="default")
    api.create("rolebindings.rbac.authorization.k8s.io", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "jane-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "only-a"},
        "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}],
    }, namespace="default")
    api.create("pods", pod("p"), namespace="default")
    api.create("pods", pod("q"), namespace="default")
    jane = RequestContext(user("jane"))
    for _ in range(2):
        assert api.get("configmaps", "a", namespace="default", ctx=jane)["metadata"]["name"] == "a"
        with pytest.raises(errors.Forbidden) as e:
            api.get("configmaps", "b", namespace="default", ctx=jane)
        assert e.value.message.startswith('configmaps "b" is forbidden: User "jane" cannot get resource')
        assert [api.get("pods", n, namespace="default", ctx=jane)["metadata"]["name"] for n in "pq"] == ["p", "q"]


def test_actor_is_recorded(api, cluster):
    api.create("pods", pod("p"), namespace="default", ctx=RequestContext(actor="replicaset-controller"))
    assert cluster.log.get("/registry/pods/default/p").actor == "replicaset-controller"
    api.create("pods", pod("q"), namespace="default")
    assert cluster.log.get("/registry/pods/default/q").actor == "user:kubernetes-admin"


def test_dry_run_writes_nothing(api, cluster):
    rev = cluster.log.revision
    d = api.create("deployments", deployment(), namespace="default", dry_run=True)
    assert d["metadata"]["name"] == "web" and cluster.log.revision == rev
    with pytest.raises(errors.NotFound):
        api.get("deployments", "web", namespace="default")


def test_reopened_cluster_continues_deterministically(tmp_path):
    def run(path):
        c = Cluster.create(path, seed=3)
        c.api.create("deployments", deployment(), namespace="default")
        c.close()
        c = Cluster.open(path)
        c.api.create("pods", {**pod(), "metadata": {"generateName": "x-"}}, namespace="default")
        c.close()
        return path.read_bytes()

    assert run(tmp_path / "a.log") == run(tmp_path / "b.log")


def test_eviction_honours_the_disruption_budget(api):
    p = pod("a")
    p["metadata"]["labels"] = {"app": "web"}
    api.create("pods", p, namespace="default")
    api.create("poddisruptionbudgets", {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web-pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}, namespace="default")
    pdb = api.get("poddisruptionbudgets", "web-pdb", namespace="default")
    api.update("poddisruptionbudgets", {**pdb, "status": {
        "observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
        "expectedPods": 1}}, namespace="default", subresource="status")
    with pytest.raises(errors.TooManyRequests) as e:
        api.evict("a", {"apiVersion": "policy/v1", "kind": "Eviction"}, namespace="default")
    st = e.value.status()
    assert st["code"] == 429 and st["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert st["details"]["causes"][0]["message"] == "The disruption budget web-pdb needs 1 healthy pods and has 1 currently"
    pdb = api.get("poddisruptionbudgets", "web-pdb", namespace="default")
    api.update("poddisruptionbudgets", {**pdb, "status": {**pdb["status"], "disruptionsAllowed": 1}},
               namespace="default", subresource="status")
    assert api.evict("a", {}, namespace="default")["status"] == "Success"
    with pytest.raises(errors.NotFound):
        api.get("pods", "a", namespace="default")
    assert api.get("poddisruptionbudgets", "web-pdb", namespace="default")["status"]["disruptionsAllowed"] == 0


def test_namespace_finalize_removes_a_terminating_namespace(api):
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dev"}})
    api.delete("namespaces", "dev")
    api.finalize_namespace("dev", [])
    with pytest.raises(errors.NotFound):
        api.get("namespaces", "dev")


def test_dry_run_does_not_move_the_rng():
    a, b = Cluster.create(seed=9), Cluster.create(seed=9)
    a.api.create("pods", {**pod(), "metadata": {"generateName": "x-"}}, namespace="default", dry_run=True)
    pa = a.api.create("pods", {**pod(), "metadata": {"generateName": "x-"}}, namespace="default")
    pb = b.api.create("pods", {**pod(), "metadata": {"generateName": "x-"}}, namespace="default")
    assert (pa["metadata"]["name"], pa["metadata"]["uid"]) == (pb["metadata"]["name"], pb["metadata"]["uid"])


def test_event_field_selectors_on_a_file_backed_cluster(tmp_path):
    """Events of a file-backed cluster stay JSON bytes; a field selector still finds exactly its
    events (describe's query), before and after a reopen."""
    path = tmp_path / "cluster.log"
    c = Cluster.create(seed=1, path=path)

    def event(name, kind, obj_name, reason):
        c.api.create("events", {"apiVersion": "v1", "kind": "Event",
                                "metadata": {"name": name, "namespace": "default"},
                                "involvedObject": {"kind": kind, "name": obj_name, "namespace": "default"},
                                "reason": reason, "source": {"component": "kubelet"}, "type": "Normal"},
                     namespace="default")

    event("web-1.1", "Pod", "web-1", "Pulled")
    event("web-1.2", "Pod", "web-1", "Started")
    event("web-10.1", "Pod", "web-10", "Pulled")  # its name contains "web-1" but not "\"web-1\""
    event("node-web-1.1", "Node", "web-1", "Pulled")  # a Node of the same name

    def names(c, selector):
        return [e["metadata"]["name"] for e in
                c.api.list("events", namespace="default", field_selector=selector)["items"]]

    for cl in (c, None):
        if cl is None:
            c.log.close()
            cl = Cluster.open(path, read_only=True)
        assert names(cl, "involvedObject.name=web-1,involvedObject.kind=Pod") == ["web-1.1", "web-1.2"]
        assert names(cl, "involvedObject.name=web-1,reason!=Pulled") == ["web-1.2"]
        assert names(cl, "reason=Pulled,source=kubelet") == ["node-web-1.1", "web-1.1", "web-10.1"]
        assert names(cl, "involvedObject.name=web-2") == []


def test_lists_by_node_name_and_by_name_come_from_indexes_and_stay_right(api):
    """A kubelet's LIST (spec.nodeName=X) and an informer's on one object (metadata.name=X)
    read an index, not every pod; they must answer exactly what a scan would."""
    def names(**kw):
        return [p["metadata"]["name"] for p in api.list("pods", **kw)["items"]]

    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    for name, node in (("a1", "node-a"), ("b1", "node-b"), ("a2", "node-a"), ("u", None)):
        api.create("pods", pod(name, node), namespace="default")
    api.create("pods", pod("a3", "node-a"), namespace="other")
    assert names(namespace="default", field_selector="spec.nodeName=node-a") == ["a1", "a2"]
    assert names(field_selector="spec.nodeName=node-a") == ["a1", "a2", "a3"]
    assert names(field_selector="spec.nodeName=node-a,metadata.namespace=other") == ["a3"]
    assert names(namespace="default", field_selector="spec.nodeName=") == ["u"]
    api.delete("pods", "a1", namespace="default", grace_period_seconds=0)
    api.create("pods", pod("a4", "node-a"), namespace="default")
    assert names(namespace="default", field_selector="spec.nodeName=node-a") == ["a2", "a4"]
    assert names(namespace="default", field_selector="spec.nodeName=node-a", label_selector="app=y") == []
    page = api.list("pods", namespace="default", field_selector="spec.nodeName=node-a", limit=1)
    assert [p["metadata"]["name"] for p in page["items"]] == ["a2"]
    rest = api.list("pods", namespace="default", field_selector="spec.nodeName=node-a",
                    continue_=page["metadata"]["continue"])
    assert [p["metadata"]["name"] for p in rest["items"]] == ["a4"]
    assert names(namespace="default", field_selector="metadata.name=b1") == ["b1"]
    assert names(namespace="default", field_selector="metadata.name=zz") == []
    assert names(field_selector="metadata.name=a3") == ["a3"]  # every namespace: a scan
