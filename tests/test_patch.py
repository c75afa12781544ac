"""Patches as kube-apiserver applies them, and the patches kubectl builds."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.api import errors
from k8semu.api.patch import (
    PATCH_TYPES,
    PatchFailed,
    PatchMeta,
    PatchRejected,
    RequestEntityTooLarge,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
    patch_meta,
)

DEPLOY = "apps/v1/Deployment"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def deployment(containers=None, strategy=None, **spec):
    """A wire-form Deployment the way the server stores it."""
    tpl_spec = {"containers": containers or [{"name": "web", "image": "nginx:1.25"}]}
    out = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": strategy or {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": tpl_spec},
            **spec,
        },
    }
    return out


def node(**spec):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": dict(spec)}


# ----------------------------------------------------------------- merge patch (RFC 7386)


def test_merge_patch_null_deletes_and_lists_replace():
    obj = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"ports": [1, 2]}}
    out = apply_merge_patch(obj, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"ports": [3]}})
    assert out == {"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"ports": [3]}}
    assert obj["metadata"]["labels"] == {"a": "1", "b": "2"}  # input untouched


def test_merge_patch_new_object_has_nested_nulls_dropped():
    out = apply_merge_patch({"a": 1}, {"b": {"c": None, "d": 1}})
    assert out == {"a": 1, "b": {"d": 1}}


def test_merge_patch_rejects_non_object():
    with pytest.raises(errors.BadRequest) as ei:
        apply_merge_patch({}, [1])
    assert ei.value.code == 400
    with pytest.raises(errors.BadRequest, match="Invalid JSON Patch"):
        apply_merge_patch({}, None)


# ----------------------------------------------------------------- JSON patch (RFC 6902)


def test_json_patch_ops_apply_in_order():
    obj = deployment()
    out = apply_json_patch(obj, [
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/labels", "value": {"tier": "fe"}},
        {"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-v"]},
        {"op": "remove", "path": "/spec/strategy/rollingUpdate"},
    ])
    assert out["spec"]["replicas"] == 3
    assert out["metadata"]["labels"] == {"tier": "fe"}
    assert out["spec"]["template"]["spec"]["containers"][0]["args"] == ["-v"]
    assert "rollingUpdate" not in out["spec"]["strategy"]
    assert obj == deployment()


def test_json_patch_failed_test_is_422_with_upstream_message():
    obj = {"metadata": {"labels": {"A": "true"}}}
    ops = [
        {"op": "test", "path": "/metadata/labels/A", "value": "false"},
        {"op": "replace", "path": "/metadata/labels/A", "value": "x"},
    ]
    with pytest.raises(PatchRejected) as ei:
        apply_json_patch(obj, ops)
    err = ei.value
    assert isinstance(err, errors.Invalid)
    assert err.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }
    assert obj["metadata"]["labels"]["A"] == "true"


@pytest.mark.parametrize("op", [
    {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "x"},
    {"op": "remove", "path": "/metadata/labels"},
    {"op": "add", "path": "/no/such/parent", "value": 1},
    {"op": "frobnicate", "path": "/spec"},
])
def test_json_patch_missing_path_or_bad_op_is_422(op):
    with pytest.raises(PatchRejected) as ei:
        apply_json_patch({"spec": {}, "metadata": {}}, [op])
    assert ei.value.code == 422 and ei.value.reason == "Invalid"


def test_json_patch_body_must_be_a_list_of_objects():
    with pytest.raises(errors.BadRequest) as ei:
        apply_json_patch({}, {"op": "add", "path": "/a", "value": 1})
    assert ei.value.message == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"


def test_json_patch_operation_limit_is_413():
    ops = [{"op": "test", "path": "/a", "value": 1}] * 10001
    with pytest.raises(RequestEntityTooLarge) as ei:
        apply_json_patch({"a": 1}, ops)
    assert ei.value.code == 413
    assert ei.value.message == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")


# ----------------------------------------------------------------- strategic merge patch


def test_cordon_and_uncordon_patches():
    cordoned = apply_strategic_merge_patch(node(podCIDR="10.244.0.0/24"), {"spec": {"unschedulable": True}}, "v1/Node")
    assert cordoned["spec"] == {"podCIDR": "10.244.0.0/24", "unschedulable": True}
    uncordoned = apply_strategic_merge_patch(cordoned, {"spec": {"unschedulable": None}}, "v1/Node")
    assert uncordoned["spec"] == {"podCIDR": "10.244.0.0/24"}
    # a null for a field that is not there is simply dropped
    assert apply_strategic_merge_patch(node(), {"spec": {"unschedulable": None}}, "v1/Node")["spec"] == {}


def test_kubectl_set_image_patch_changes_only_that_container():
    obj = deployment([{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
                      {"name": "sidecar", "image": "envoy:1"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"]["template"]["spec"]["containers"] == [
        {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
        {"name": "sidecar", "image": "envoy:1"},
    ]


def test_apply_image_change_with_set_element_order():
    obj = deployment([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"image": "b:2", "name": "b"}],
    }}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"]["template"]["spec"] == {
        "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]}


def test_set_element_order_reorders_and_inserts_new_items():
    obj = deployment([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
        "containers": [{"name": "c", "image": "c"}],
    }}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["b", "c", "a"]


def test_new_merge_list_items_go_first_without_set_element_order():
    obj = deployment([{"name": "a", "image": "a"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "z", "image": "z"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["z", "a"]


def test_env_vars_added_and_removed_by_name():
    obj = deployment([{"name": "web", "image": "x", "env": [
        {"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "web",
        "$setElementOrder/env": [{"name": "A"}, {"name": "C"}],
        "env": [{"name": "C", "value": "3"}, {"$patch": "delete", "name": "B"}],
    }]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"}, {"name": "C", "value": "3"}]


def test_patch_delete_directive_removes_one_container():
    obj = deployment([{"name": "web", "image": "x"}, {"name": "debug", "image": "busybox"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"$patch": "delete", "name": "debug"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "x"}]


def test_patch_replace_directive_in_list_and_on_map():
    obj = deployment([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "c"}]}}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "c"}]

    patch = {"spec": {"selector": {"$patch": "replace", "matchLabels": {"app": "new"}}}}
    out = apply_strategic_merge_patch({"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}}}}, patch, DEPLOY)
    assert out["spec"]["selector"] == {"matchLabels": {"app": "new"}}

    patch = {"metadata": {"labels": {"$patch": "delete"}}}
    out = apply_strategic_merge_patch({"metadata": {"labels": {"a": "b"}, "name": "x"}}, patch, DEPLOY)
    assert out["metadata"] == {"labels": {}, "name": "x"}


def test_patch_merge_directive_is_rejected_as_upstream():
    with pytest.raises(PatchFailed) as ei:
        apply_strategic_merge_patch({"spec": {"a": {"b": 1}}}, {"spec": {"a": {"$patch": "merge", "c": 1}}}, DEPLOY)
    assert ei.value.message == "unknown patch type: merge in map: map[$patch:merge c:1]"
    assert ei.value.code == 500 and "reason" not in ei.value.status()


def test_retain_keys_switching_strategy_to_recreate_removes_rolling_update():
    obj = deployment()
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    # without the directive the old rollingUpdate stays (and validation would then refuse it)
    out = apply_strategic_merge_patch(obj, {"spec": {"strategy": {"type": "Recreate"}}}, DEPLOY)
    assert out["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}


def test_retain_keys_must_list_every_patched_key():
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}
    with pytest.raises(errors.BadRequest) as ei:
        apply_strategic_merge_patch(deployment(), patch, DEPLOY)
    assert ei.value.message == "invalid patch format of retainKeys"


def test_retain_keys_on_volumes_switches_volume_source():
    pod = {"spec": {"containers": [{"name": "c", "image": "x"}],
                    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]}}
    patch = {"spec": {"volumes": [{"$retainKeys": ["name", "hostPath"], "name": "data", "hostPath": {"path": "/d"}}]}}
    out = apply_strategic_merge_patch(pod, patch, "v1/Pod")
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/d"}},
                                      {"name": "cfg", "configMap": {"name": "c"}}]


def test_finalizers_merge_as_ordered_set_and_delete_from_primitive_list():
    obj = {"metadata": {"name": "x", "finalizers": ["a", "b"]}}
    out = apply_strategic_merge_patch(obj, {"metadata": {"finalizers": ["b", "c"]}}, "v1/ConfigMap")
    assert sorted(out["metadata"]["finalizers"]) == ["a", "b", "c"]
    assert len(out["metadata"]["finalizers"]) == 3
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    out = apply_strategic_merge_patch(obj, patch, "v1/ConfigMap")
    assert out["metadata"]["finalizers"] == ["b"]
    patch = {"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}
    out = apply_strategic_merge_patch(obj, patch, "v1/ConfigMap")
    assert out["metadata"]["finalizers"] == ["c", "b", "a"]


def test_tolerations_and_taints_have_no_merge_strategy():
    pod = {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}
    out = apply_strategic_merge_patch(pod, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}, "v1/Pod")
    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    n = node(taints=[{"key": "a", "effect": "NoSchedule"}])
    out = apply_strategic_merge_patch(n, {"spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]}}, "v1/Node")
    assert out["spec"]["taints"] == [{"key": "b", "effect": "NoSchedule"}]


def test_status_conditions_merge_by_type():
    n = {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}}
    out = apply_strategic_merge_patch(n, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "v1/Node")
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "False"},
                                           {"type": "DiskPressure", "status": "False"}]


def test_service_ports_merge_by_port():
    svc = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}}
    out = apply_strategic_merge_patch(svc, {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}, "v1/Service")
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 9090}, {"port": 443, "targetPort": 8443}]


def test_cronjob_pod_template_containers_merge():
    cj = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
        {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}}}}}
    patch = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:2"}]}}}}}}
    out = apply_strategic_merge_patch(cj, patch, "batch/v1/CronJob")
    assert out["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"] == [
        {"name": "a", "image": "a:2"}, {"name": "b", "image": "b:1"}]


def test_unknown_kind_replaces_lists_and_merges_maps():
    obj = {"spec": {"items": [{"name": "a"}], "m": {"x": 1}}}
    out = apply_strategic_merge_patch(obj, {"spec": {"items": [{"name": "b"}], "m": {"y": 2}}}, "example.com/v1/Widget")
    assert out == {"spec": {"items": [{"name": "b"}], "m": {"x": 1, "y": 2}}}


def test_missing_merge_key_is_500_with_go_message():
    with pytest.raises(PatchFailed) as ei:
        apply_strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, DEPLOY)
    assert ei.value.message == "map: map[image:x] does not contain declared merge key: name"
    assert ei.value.status()["code"] == 500


def test_list_of_lists_is_422():
    with pytest.raises(PatchRejected):
        apply_strategic_merge_patch({"metadata": {"finalizers": [["a"]]}}, {"metadata": {"finalizers": [["b"]]}}, "v1/Pod")


def test_leftover_directives_never_reach_the_object():
    obj = {"metadata": {"name": "x"}, "spec": {}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    assert out["spec"] == {"strategy": {"type": "Recreate"}}


def test_strategic_patch_does_not_mutate_inputs():
    obj, patch = deployment(), {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "b"}]}}}}
    saved = copy.deepcopy((obj, patch))
    out = apply_strategic_merge_patch(obj, patch, DEPLOY)
    out["spec"]["template"]["spec"]["containers"][0]["image"] = "mutated"
    assert (obj, patch) == saved


# ----------------------------------------------------------------- patch builders


def test_two_way_patch_for_image_change_has_set_element_order():
    a = deployment([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    b = deployment([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}])
    patch = create_two_way_merge_patch(a, b, DEPLOY)
    assert patch == {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"image": "b:2", "name": "b"}],
    }}}}
    assert apply_strategic_merge_patch(a, patch, DEPLOY) == b


def test_two_way_patch_removed_container_and_env():
    a = deployment([{"name": "web", "image": "x", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "debug", "image": "busybox"}])
    b = deployment([{"name": "web", "image": "x", "env": [{"name": "A", "value": "1"}]}])
    patch = create_two_way_merge_patch(a, b, DEPLOY)
    assert patch == {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [
            {"name": "web", "$setElementOrder/env": [{"name": "A"}],
             "env": [{"name": "B", "$patch": "delete"}]},
            {"name": "debug", "$patch": "delete"},
        ],
    }}}}
    assert apply_strategic_merge_patch(a, patch, DEPLOY) == b


def test_two_way_patch_finalizers_use_delete_from_primitive_list():
    a = {"metadata": {"finalizers": ["a", "b"]}}
    b = {"metadata": {"finalizers": ["b"]}}
    patch = create_two_way_merge_patch(a, b, "v1/ConfigMap")
    assert patch == {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"],
                                  "$setElementOrder/finalizers": ["b"]}}
    assert apply_strategic_merge_patch(a, patch, "v1/ConfigMap") == b


def test_three_way_apply_switching_to_recreate_sends_retain_keys():
    last = deployment(strategy={"type": "RollingUpdate"})
    new = deployment(strategy={"type": "Recreate"})
    live = deployment()  # server defaulted rollingUpdate
    patch = create_three_way_merge_patch(last, new, live, DEPLOY)
    assert patch == {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert apply_strategic_merge_patch(live, patch, DEPLOY)["spec"]["strategy"] == {"type": "Recreate"}


def test_three_way_keeps_fields_added_by_others():
    last = deployment(replicas=None)
    del last["spec"]["replicas"]
    live = deployment()
    live["spec"]["replicas"] = 5  # kubectl scale / an HPA
    live["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    new = copy.deepcopy(last)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    patch = create_three_way_merge_patch(last, new, live, DEPLOY)
    assert patch == {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [{"image": "nginx:1.27", "name": "web"}],
    }}}}
    out = apply_strategic_merge_patch(live, patch, DEPLOY)
    assert out["spec"]["replicas"] == 5
    assert out["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


def test_three_way_deletes_only_what_last_applied_had():
    last = {"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}, "annotations": {LAST_APPLIED: "{}"}}}
    live = {"metadata": {"name": "x", "labels": {"a": "1", "b": "2", "added-by-controller": "y"},
                         "annotations": {LAST_APPLIED: "{}"}}}
    new = {"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {LAST_APPLIED: "{}"}}}
    patch = create_three_way_merge_patch(last, new, live, "v1/ConfigMap")
    assert patch == {"metadata": {"labels": {"b": None}}}
    out = apply_strategic_merge_patch(live, patch, "v1/ConfigMap")
    assert out["metadata"]["labels"] == {"a": "1", "added-by-controller": "y"}


def test_three_way_container_removed_from_config_is_deleted():
    last = deployment([{"name": "web", "image": "x"}, {"name": "debug", "image": "busybox"}])
    live = copy.deepcopy(last)
    live["spec"]["template"]["spec"]["containers"][1]["terminationMessagePath"] = "/dev/termination-log"
    new = deployment([{"name": "web", "image": "x"}])
    patch = create_three_way_merge_patch(last, new, live, DEPLOY)
    assert patch == {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [{"$patch": "delete", "name": "debug"}],
    }}}}
    out = apply_strategic_merge_patch(live, patch, DEPLOY)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "web", "image": "x"}]


def test_identical_documents_give_empty_patch():
    d = deployment()
    assert create_two_way_merge_patch(d, copy.deepcopy(d), DEPLOY) == {}
    assert create_three_way_merge_patch(d, d, d, DEPLOY) == {}


# ----------------------------------------------------------------- metadata table


def test_patch_meta_matches_upstream_tags():
    pod = patch_meta("v1/Pod")
    assert pod["spec.containers"] == PatchMeta("merge", "name")
    assert pod["spec.volumes"] == PatchMeta("merge,retainKeys", "name")
    assert pod["spec.containers[].ports"] == PatchMeta("merge", "containerPort")
    assert pod["spec.containers[].volumeMounts"] == PatchMeta("merge", "mountPath")
    assert pod["spec.hostAliases"] == PatchMeta("merge", "ip")
    assert pod["metadata.finalizers"] == PatchMeta("merge", None)
    assert pod["metadata.ownerReferences"] == PatchMeta("merge", "uid")
    assert "spec.tolerations" not in pod
    assert patch_meta("v1/Node")["status.addresses"] == PatchMeta("merge", "type")
    assert "spec.taints" not in patch_meta("v1/Node")
    assert patch_meta("v1/Service")["spec.ports"] == PatchMeta("merge", "port")
    assert patch_meta(DEPLOY)["spec.strategy"] == PatchMeta("retainKeys", None)
    assert "spec.volumeClaimTemplates" not in patch_meta("apps/v1/StatefulSet")
    assert patch_meta("apps/v1/StatefulSet")["spec.template.spec.containers[].env"] == PatchMeta("merge", "name")
    assert patch_meta("batch/v1/CronJob")["spec.jobTemplate.spec.template.spec.initContainers"] == PatchMeta("merge", "name")
    assert patch_meta("core/v1/Pod") == pod
    assert patch_meta("example.com/v1/Widget") == {}
    assert all(isinstance(fields, dict) for fields in PATCH_TYPES.values())


# ----------------------------------------------------------------- properties

_keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
_scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text(alphabet="xyz", max_size=3))
_docs = st.recursive(
    st.dictionaries(_keys, _scalars, max_size=4),
    lambda children: st.dictionaries(_keys, st.one_of(_scalars, children), max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(_docs, _docs)
def test_two_way_patch_turns_original_into_modified(original, modified):
    patch = create_two_way_merge_patch(original, modified, "v1/ConfigMap")
    assert apply_strategic_merge_patch(original, patch, "v1/ConfigMap") == modified


@settings(max_examples=100, deadline=None)
@given(_docs, _docs, st.dictionaries(st.text(alphabet="XYZ", min_size=1, max_size=2), _scalars, max_size=3))
def test_three_way_patch_keeps_foreign_fields(original, modified, foreign):
    # live = last-applied plus top-level fields nobody's config mentions
    live = {**original, **foreign}
    patch = create_three_way_merge_patch(original, modified, live, "v1/ConfigMap")
    assert apply_strategic_merge_patch(live, patch, "v1/ConfigMap") == {**modified, **foreign}
