"""Server-side apply: managedFields, pruning, shared ownership, conflicts (k8semu.api.apply / fieldpath)."""

from __future__ import annotations

import copy
import json
import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.api import errors, fieldpath
from k8semu.api.apiserver import APIServer
from k8semu.api.apply import apply_config, track_update
from k8semu.api.fieldpath import compare, fields_of, from_fieldsv1, path_string, sort_paths, to_fieldsv1
from k8semu.store import EventLog

APPLY = "application/apply-patch+yaml"
T0 = "2025-01-01T00:00:00Z"
T1 = "2025-01-01T00:01:00Z"
DEPLOY = "apps/v1/Deployment"


def deployment(replicas: int | None = 2, labels: dict | None = None, containers: list | None = None) -> dict:
    d = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": labels if labels is not None else {"app": "web"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers or [
                    {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
                ]},
            },
        },
    }
    if replicas is not None:
        d["spec"]["replicas"] = replicas
    return d


@pytest.fixture
def server() -> APIServer:
    s = APIServer(EventLog(), authorize=False)
    s.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return s


def apply(s: APIServer, obj: dict, manager: str = "kubectl", **kw) -> dict:
    return s.patch("deployments", obj["metadata"]["name"], obj, APPLY, namespace="default",
                   field_manager=manager, **kw)


def entry(obj: dict, manager: str, operation: str = "Apply") -> dict:
    found = [e for e in obj["metadata"].get("managedFields", [])
             if e["manager"] == manager and e["operation"] == operation]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    return found[0]


def owners(obj: dict, *path: str) -> list[str]:
    """Managers whose field set has ``path`` (FieldsV1 keys)."""
    out = []
    for e in obj["metadata"].get("managedFields", []):
        if tuple(path) in from_fieldsv1(e["fieldsV1"]):
            out.append(e["manager"])
    return sorted(out)


# --------------------------------------------------------------------------- apply end to end


def test_apply_creates_object_with_one_apply_entry(server):
    out = apply(server, deployment())
    assert out["metadata"]["uid"] and out["spec"]["replicas"] == 2
    assert out["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"  # defaulted
    assert out["metadata"]["managedFields"] == [{
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                    }}},
                },
            },
        },
    }]
    assert server.get("deployments", "web", namespace="default") == out


def test_reapply_unchanged_is_a_no_op(server):
    first = apply(server, deployment())
    rev = server.log.revision
    again = apply(server, deployment())
    assert server.log.revision == rev
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"]


def test_dry_run_apply_writes_nothing(server):
    apply(server, deployment())
    rev = server.log.revision
    out = apply(server, deployment(replicas=4), dry_run=True)
    assert out["spec"]["replicas"] == 4
    assert server.log.revision == rev
    assert server.get("deployments", "web", namespace="default")["spec"]["replicas"] == 2


def test_removing_a_field_from_the_config_removes_it_from_the_object(server):
    apply(server, deployment(labels={"app": "web", "tier": "front"}, containers=[
        {"name": "nginx", "image": "nginx:1.25"}, {"name": "sidecar", "image": "busybox"},
    ]))
    out = apply(server, deployment(replicas=None, labels={"app": "web"}))
    assert out["metadata"]["labels"] == {"app": "web"}
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["nginx"]
    # replicas no longer applied by anyone: removed, then defaulted back to 1
    assert out["spec"]["replicas"] == 1
    assert ("f:spec", "f:replicas") not in from_fieldsv1(entry(out, "kubectl")["fieldsV1"])


def test_removing_the_last_label_drops_the_labels_map(server):
    apply(server, deployment(labels={"team": "a"}))
    out = apply(server, deployment(labels={}) | {"metadata": {"name": "web"}})
    assert "labels" not in out["metadata"]


def test_two_managers_share_a_field_with_the_same_value(server):
    apply(server, deployment(replicas=3))
    shared = apply(server, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                            "spec": {"replicas": 3}}, manager="hpa-like")
    assert owners(shared, "f:spec", "f:replicas") == ["hpa-like", "kubectl"]
    # the first manager lets go: the value stays, the other manager still owns it
    out = apply(server, deployment(replicas=None))
    assert out["spec"]["replicas"] == 3
    assert owners(out, "f:spec", "f:replicas") == ["hpa-like"]


def test_conflict_message_and_force_takes_ownership(server):
    apply(server, deployment(replicas=2))
    patch = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}}
    with pytest.raises(errors.Conflict) as exc:
        apply(server, patch, manager="ops")
    status = exc.value.status()
    assert status["code"] == 409 and status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    assert status["details"] == {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "kubectl"', "field": ".spec.replicas"},
    ]}
    assert server.get("deployments", "web", namespace="default")["spec"]["replicas"] == 2

    out = apply(server, patch, manager="ops", force=True)
    assert out["spec"]["replicas"] == 5
    assert owners(out, "f:spec", "f:replicas") == ["ops"]


def test_several_conflicts_are_listed_per_manager(server):
    apply(server, deployment(replicas=2))
    patch = deployment(replicas=4, containers=[{"name": "nginx", "image": "nginx:1.26"}])
    with pytest.raises(errors.Conflict) as exc:
        apply(server, patch, manager="ops")
    assert exc.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="nginx"].image'
    )


def test_controller_status_update_does_not_conflict_with_spec_apply(server):
    apply(server, deployment(replicas=2))
    cur = server.get("deployments", "web", namespace="default")
    server.update("deployments", {**cur, "status": {"replicas": 2, "readyReplicas": 2}},
                  namespace="default", subresource="status")
    out = apply(server, deployment(replicas=3))
    assert out["spec"]["replicas"] == 3
    assert out["status"]["readyReplicas"] == 2


@pytest.mark.skipif("field_manager" not in inspect.signature(APIServer.update_scale).parameters,
                    reason="APIServer.update_scale does not record a field manager yet")
def test_kubectl_scale_then_reapply_conflicts(server):
    apply(server, deployment(replicas=2))
    server.update_scale("deployments", "web", 5, namespace="default", field_manager="kubectl")
    with pytest.raises(errors.Conflict) as exc:
        apply(server, deployment(replicas=2))
    assert exc.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas'
    )


# --------------------------------------------------------------------------- request checks


def test_apply_requires_a_field_manager(server):
    with pytest.raises(errors.Invalid) as exc:
        server.patch("deployments", "web", deployment(), APPLY, namespace="default")
    assert exc.value.code == 422
    assert exc.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(kind="StatefulSet"), "invalid object type: apps/v1, Kind=StatefulSet"),
    (lambda d: d.pop("apiVersion"), "invalid object type: /, Kind=Deployment"),
    (lambda d: d["metadata"].update(name="api"),
     "the name of the object (api) does not match the name on the URL (web)"),
    (lambda d: d["metadata"].update(namespace="prod"),
     "the namespace of the object (prod) does not match the namespace on the URL (default)"),
    (lambda d: d["metadata"].update(managedFields=[]), "metadata.managedFields must be nil"),
])
def test_bad_apply_bodies_are_400(server, mutate, message):
    body = deployment()
    mutate(body)
    with pytest.raises(errors.BadRequest) as exc:
        server.patch("deployments", "web", body, APPLY, namespace="default", field_manager="kubectl")
    assert exc.value.code == 400 and exc.value.message == message


def test_stale_resource_version_in_config_is_a_conflict(server):
    apply(server, deployment())
    body = deployment(replicas=3)
    body["metadata"]["resourceVersion"] = "1"
    with pytest.raises(errors.Conflict) as exc:
        apply(server, body)
    assert "the object has been modified" in exc.value.message


def test_duplicate_list_keys_in_the_config_are_rejected(server):
    body = deployment(containers=[{"name": "a", "image": "x"}, {"name": "a", "image": "y"}])
    with pytest.raises(errors.InternalError) as exc:
        apply(server, body)
    assert exc.value.message == (
        "failed to create typed patch object (/web; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers: duplicate entries for key [name="a"]'
    )


# --------------------------------------------------------------------------- pure apply / update


def stored(obj: dict) -> dict:
    """Pretend the object was stored: identity metadata as the server would set it."""
    obj = copy.deepcopy(obj)
    obj["metadata"].update(namespace="default", uid="u-1", resourceVersion="7")
    return obj


def test_scale_subresource_update_then_reapply_conflicts():
    live = stored(apply_config(None, deployment(replicas=2), "kubectl", time=T0))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    scaled = track_update(live, scaled, "kubectl", DEPLOY, T1, subresource="scale")
    e = entry(scaled, "kubectl", "Update")
    assert e == {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"}
    assert ("f:spec", "f:replicas") not in from_fieldsv1(entry(scaled, "kubectl")["fieldsV1"])
    with pytest.raises(errors.Conflict) as exc:
        apply_config(scaled, deployment(replicas=2), "kubectl", time=T1)
    assert exc.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas'
    )


def test_status_update_is_tracked_without_touching_spec_ownership():
    live = stored(apply_config(None, deployment(replicas=2), "kubectl", time=T0))
    new = {**live, "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}}
    new = track_update(live, new, "kube-controller-manager", DEPLOY, T1, subresource="status")
    e = entry(new, "kube-controller-manager", "Update")
    assert e["subresource"] == "status"
    assert e["fieldsV1"] == {"f:status": {
        "f:conditions": {".": {}, 'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
        "f:replicas": {},
    }}
    out = apply_config(new, deployment(replicas=3), "kubectl", time=T1)
    assert out["spec"]["replicas"] == 3 and out["status"]["replicas"] == 2


def test_client_side_apply_manager_conflict_names_its_api_version():
    created = {**deployment(replicas=2), "metadata": {"name": "web", "labels": {"app": "web"}}}
    live = stored(track_update(None, created, "kubectl-client-side-apply", DEPLOY, T0))
    assert entry(live, "kubectl-client-side-apply", "Update")["fieldsV1"]["f:metadata"] == {
        "f:labels": {".": {}, "f:app": {}},
    }
    with pytest.raises(errors.Conflict) as exc:
        apply_config(live, deployment(replicas=3), "kubectl", time=T1)
    assert exc.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )


def test_first_apply_to_an_untracked_object_meets_before_first_apply():
    live = stored(deployment(replicas=2))
    with pytest.raises(errors.Conflict) as exc:
        apply_config(live, deployment(replicas=3), "kubectl", time=T1)
    assert exc.value.message == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas'
    )
    out = apply_config(live, deployment(replicas=2), "kubectl", time=T1)
    assert [(e["manager"], e["operation"]) for e in out["metadata"]["managedFields"]] == [
        ("kubectl", "Apply"), ("before-first-apply", "Update"),
    ]


def test_update_takes_fields_from_other_managers_and_drops_removed_ones():
    live = stored(apply_config(None, deployment(replicas=2, labels={"app": "web", "x": "1"}), "kubectl", time=T0))
    edited = copy.deepcopy(live)
    edited["spec"]["replicas"] = 4
    del edited["metadata"]["labels"]["x"]
    out = track_update(live, edited, "kubectl-edit", DEPLOY, T1)
    assert owners(out, "f:spec", "f:replicas") == ["kubectl-edit"]
    assert owners(out, "f:metadata", "f:labels", "f:x") == []
    assert entry(out, "kubectl", "Apply")["time"] == T0
    assert entry(out, "kubectl-edit", "Update")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    # an update that changes nothing leaves managedFields exactly as they were
    assert track_update(out, copy.deepcopy(out), "kubectl-edit", DEPLOY, "2025-01-02T00:00:00Z") == out


def test_update_of_an_untracked_object_stays_untracked():
    live = stored(deployment())
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 9
    assert "managedFields" not in track_update(live, new, "kubectl-edit", DEPLOY, T1)["metadata"]


def test_update_managers_sort_after_appliers_by_time():
    live = stored(apply_config(None, deployment(), "kubectl", time=T1))
    new = copy.deepcopy(live)
    new["metadata"]["annotations"] = {"note": "x"}
    out = track_update(live, new, "a-controller", DEPLOY, T0)
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["kubectl", "a-controller"]


# --------------------------------------------------------------------------- field sets


def test_list_map_keys_follow_upstream_markers():
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "finalizers": ["example.com/x"],
                     "ownerReferences": [{"uid": "u1", "name": "rs", "kind": "ReplicaSet", "apiVersion": "apps/v1"}]},
        "spec": {
            "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}],
                            "volumeMounts": [{"name": "v", "mountPath": "/data"}],
                            "ports": [{"containerPort": 53, "protocol": "UDP"}]}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    }
    got = {path_string(p) for p in fields_of(pod, "v1/Pod")}
    assert {
        '.metadata.finalizers[="example.com/x"]',
        '.metadata.ownerReferences[uid="u1"]',
        '.spec.containers[name="c"].env[name="A"].value',
        '.spec.containers[name="c"].volumeMounts[mountPath="/data"].name',
        '.spec.containers[name="c"].ports[containerPort=53,protocol="UDP"]',
        ".spec.tolerations",  # atomic
    } <= got
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}
    got = {path_string(p) for p in fields_of(svc, "v1/Service")}
    assert '.spec.ports[port=80,protocol="TCP"].targetPort' in got
    assert ".spec.selector.app" in got  # a Service selector is a plain map


def test_compare_marks_new_maps_and_items_but_not_zero_structs():
    added = compare(None, deployment(), DEPLOY).added
    doc = to_fieldsv1(added)
    assert doc["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    assert "." not in doc["f:spec"] and "." not in doc["f:spec"]["f:template"]
    assert "." not in doc["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert doc["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']["f:ports"]["."] == {}


def test_conflict_paths_sort_fields_before_keys():
    paths = [("f:spec", "f:containers", 'k:{"name":"a"}'), ("f:spec", "f:containers", "f:x")]
    assert sort_paths(paths)[0] == ("f:spec", "f:containers", "f:x")


_names = st.text(alphabet="abcdefgh", min_size=1, max_size=4)
_elements = st.one_of(
    _names.map(lambda n: "f:" + n),
    _names.map(lambda n: 'k:{"name":"%s"}' % n),
    _names.map(lambda n: 'v:"%s"' % n),
)


@settings(max_examples=200, deadline=None)
@given(st.frozensets(st.lists(_elements, min_size=1, max_size=4).map(tuple), max_size=12))
def test_fieldsv1_round_trips(paths):
    assert from_fieldsv1(to_fieldsv1(paths)) == paths


def test_equal_managed_fields_are_shared_between_objects_and_after_a_reopen(tmp_path):
    """Memory: the pods of one ReplicaSet carry equal managedFields; they are one document."""
    from k8semu.sim.cluster import Cluster

    path = tmp_path / "cluster.log"
    api = APIServer(EventLog(path=path))
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    for name in ("a", "b"):
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                  "data": {"k": "v"}}, namespace="default")
    docs = [api.get("configmaps", n, namespace="default")["metadata"]["managedFields"][0]["fieldsV1"]
            for n in ("a", "b")]
    assert docs[0] == {"f:data": {".": {}, "f:k": {}}} and docs[0] is docs[1]
    api.log.close()
    again = Cluster.open(path, read_only=True)
    docs = [again.api.get("configmaps", n, namespace="default")["metadata"]["managedFields"][0]["fieldsV1"]
            for n in ("a", "b")]
    assert docs[0] == {"f:data": {".": {}, "f:k": {}}} and docs[0] is docs[1]


@given(st.one_of(
    st.text(), st.integers(min_value=-(1 << 70), max_value=1 << 70), st.booleans(), st.floats(allow_nan=False),
    st.dictionaries(st.text(max_size=5), st.one_of(st.text(), st.integers(), st.booleans()), max_size=3)))
def test_list_item_path_elements_are_spelled_as_the_standard_json_encoder_spells_them(value):
    """``k:{...}`` / ``v:...`` elements must be byte-identical however they are encoded: they are
    compared with the ones in stored managedFields."""
    standard = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    assert fieldpath._json(value) == standard.encode(value)


def test_managed_fields_documents_share_equal_subtrees_between_pods():
    # two pods' kubelet-owned status sets differ only in the pod IP: everything else in their
    # FieldsV1 documents is one object (it was ~15 KB of every running pod's memory)
    def status_set(ip: str) -> frozenset:
        cond = ("f:status", "f:conditions")
        return frozenset([
            ("f:status",), cond, ("f:status", "f:podIP"), ("f:status", "f:podIPs"),
            ("f:status", "f:podIPs", f'k:{{"ip":"{ip}"}}'),
            *[(*cond, f'k:{{"type":"{t}"}}', *f) for t in ("Ready", "PodScheduled")
              for f in ((), ("f:status",), ("f:type",), ("f:lastTransitionTime",))],
        ])

    a = fieldpath.to_fieldsv1(status_set("10.244.1.5"))
    b = fieldpath.to_fieldsv1(status_set("10.244.2.7"))
    assert a != b and a["f:status"]["f:conditions"] is b["f:status"]["f:conditions"]
    assert json.loads(json.dumps(a))["f:status"]["f:conditions"]['k:{"type":"Ready"}'] == {
        ".": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}
    assert fieldpath.from_fieldsv1(b) == status_set("10.244.2.7")
