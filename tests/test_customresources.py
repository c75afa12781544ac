"""CustomResourceDefinitions and custom resources, as a user sees them: through the API server,
the HTTP front kubectl talks to (routing, discovery, OpenAPI, Tables) and the ``k8semu`` CLI.

The CRD is the CronTab example of the Kubernetes docs (``crontabs.stable.example.com``), plus a
``Widget`` with two versions, status and scale subresources, printer columns, defaults and
validation keywords.
"""

from __future__ import annotations

import copy

import orjson
import pytest
from ruamel.yaml import YAML
from test_server import ADMIN, call_json, call_raw

from k8semu.api import errors
from k8semu.api.apiserver import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APIServer, RequestContext
from k8semu.api.auth import admin
from k8semu.server.app import APIApp
from k8semu.store import EventLog

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

CRONTAB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {
                "cronSpec": {"type": "string"}, "image": {"type": "string"}, "replicas": {"type": "integer"}}}}}}}],
        "scope": "Namespaced",
        "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
    },
}
CRONTAB = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "my-new-cron-object"},
           "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}}

WIDGET_CRD = YAML(typ="safe").load("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas,
              labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
              color: {type: string, enum: [red, blue]}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
""")
WIDGET = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w1"},
          "spec": {"color": "red", "extra": {"a": 1}}}

CRD_KEY = "/registry/customresourcedefinitions.apiextensions.k8s.io/"


@pytest.fixture
def api():
    s = APIServer(EventLog(), authorize=False)
    s.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return s


def _with_crontabs(api):
    api.create("customresourcedefinitions", copy.deepcopy(CRONTAB_CRD))
    return api


def _conditions(crd):
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in crd["status"]["conditions"]}


# ---------------------------------------------------------------------------- the CRD kind
def test_a_new_crd_is_defaulted_and_established_by_apiextensions_apiserver(api):
    _with_crontabs(api)
    crd = api.get("crd", "crontabs.stable.example.com")
    assert crd["spec"]["names"]["listKind"] == "CronTabList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["metadata"]["generation"] == 1
    assert crd["status"]["acceptedNames"] == {"plural": "crontabs", "singular": "crontab", "shortNames": ["ct"],
                                              "kind": "CronTab", "listKind": "CronTabList"}
    assert _conditions(crd) == {
        "NamesAccepted": ("True", "NoConflicts", "no conflicts found"),
        "Established": ("True", "InitialNamesAccepted", "the initial names have been accepted"),
    }
    assert crd["status"]["storedVersions"] == ["v1"]
    writes = [(r.type, r.actor) for r in api.log.records() if r.key.startswith(CRD_KEY)]
    assert writes == [("ADDED", "user:kubernetes-admin"), ("MODIFIED", "apiextensions-apiserver")]
    status_entry = [e for e in crd["metadata"]["managedFields"] if e.get("subresource") == "status"]
    assert status_entry[0]["manager"] == "kube-apiserver"


def test_singular_defaults_to_the_lower_case_kind(api):
    crd = copy.deepcopy(CRONTAB_CRD)
    del crd["spec"]["names"]["singular"]
    api.create("crd", crd)
    assert api.get("crds", "crontabs.stable.example.com")["spec"]["names"]["singular"] == "crontab"


def test_crd_validation_uses_upstreams_messages(api):
    crd = copy.deepcopy(CRONTAB_CRD)
    crd["metadata"]["name"] = "tabs.stable.example.com"
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["scope"] = "Global"
    with pytest.raises(errors.Invalid) as e:
        api.create("crd", crd)
    text = str(e.value)
    assert text.startswith('CustomResourceDefinition.apiextensions.k8s.io "tabs.stable.example.com" is invalid: [')
    assert 'metadata.name: Invalid value: "tabs.stable.example.com": must be spec.names.plural+"."+spec.group' in text
    assert 'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"' in text
    assert "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{" in text
    assert ": must have exactly one version marked as storage version" in text
    crd = copy.deepcopy(CRONTAB_CRD)
    del crd["spec"]["names"]["kind"]
    with pytest.raises(errors.Invalid, match=r"spec\.names\.kind: Required value"):
        api.create("crd", crd)
    assert api.list("crd")["items"] == []


def test_unknown_crd_fields_are_refused_by_strict_decoding(api):
    crd = copy.deepcopy(CRONTAB_CRD)
    crd["spec"]["versions"][0]["servd"] = True
    with pytest.raises(errors.BadRequest, match='strict decoding error: unknown field "spec.versions\\[0\\].servd"'):
        api.create("crd", crd)


# ---------------------------------------------------------------------------- custom objects
def test_custom_objects_are_stored_under_their_resource_and_listed(api):
    _with_crontabs(api)
    out = api.create("ct", copy.deepcopy(CRONTAB), namespace="default")
    assert out["metadata"]["generation"] == 1
    assert api.log.get("/registry/crontabs.stable.example.com/default/my-new-cron-object") is not None
    for name in ("crontabs", "crontab", "ct", "CronTab", "crontabs.stable.example.com"):
        assert api.resource(name).kind == "CronTab"
    lst = api.list("crontabs", namespace="default")
    assert (lst["kind"], lst["apiVersion"]) == ("CronTabList", "stable.example.com/v1")
    assert [o["metadata"]["name"] for o in lst["items"]] == ["my-new-cron-object"]


def test_unknown_fields_strict_is_refused_warn_is_pruned(api):
    _with_crontabs(api)
    bad = copy.deepcopy(CRONTAB)
    bad["spec"]["imagee"] = "x"
    with pytest.raises(errors.BadRequest) as e:
        api.create("ct", bad, namespace="default")
    assert str(e.value) == ('CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: '
                            'unknown field "spec.imagee"')
    ctx = RequestContext(admin(), warnings=[])
    out = api.create("ct", bad, namespace="default", field_validation="Warn", ctx=ctx)
    assert "imagee" not in out["spec"]
    assert ctx.warnings == ['unknown field "spec.imagee"']


def test_schema_validation_messages(api):
    _with_crontabs(api)
    bad = copy.deepcopy(CRONTAB)
    bad["spec"]["replicas"] = "string"
    with pytest.raises(errors.Invalid) as e:
        api.create("ct", bad, namespace="default")
    assert str(e.value) == ('CronTab.stable.example.com "my-new-cron-object" is invalid: spec.replicas: '
                            'Invalid value: "string": spec.replicas in body must be of type integer: "string"')
    api.create("crd", copy.deepcopy(WIDGET_CRD))
    bad = {**WIDGET, "spec": {"color": "green", "replicas": 11}}
    with pytest.raises(errors.Invalid) as e:
        api.create("widgets", bad, namespace="default")
    text = str(e.value)
    assert 'spec.color: Unsupported value: "green": supported values: "red", "blue"' in text
    assert "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10" in text
    with pytest.raises(errors.Invalid, match=r"spec\.color: Required value"):
        api.create("widgets", {**WIDGET, "spec": {}}, namespace="default")


def test_schema_defaults_preserved_fields_and_status_subresource(api):
    api.create("crd", copy.deepcopy(WIDGET_CRD))
    w = api.create("widgets", {**WIDGET, "status": {"replicas": 9}}, namespace="default")
    assert w["spec"] == {"color": "red", "extra": {"a": 1}, "replicas": 1}  # defaulted; extra kept
    assert "status" not in w  # only /status writes it
    w = api.patch("widgets", "w1", {"status": {"replicas": 2}}, MERGE_PATCH, namespace="default",
                  subresource="status")
    assert w["status"] == {"replicas": 2} and w["metadata"]["generation"] == 1
    w = api.patch("widgets", "w1", {"spec": {"color": "blue"}, "status": {"replicas": 5}}, MERGE_PATCH,
                  namespace="default")
    assert w["status"] == {"replicas": 2} and w["metadata"]["generation"] == 2
    w = api.patch("widgets", "w1", [{"op": "replace", "path": "/spec/replicas", "value": 3}], JSON_PATCH,
                  namespace="default")
    assert w["spec"]["replicas"] == 3


def test_scale_subresource_follows_the_crd_paths(api):
    api.create("crd", copy.deepcopy(WIDGET_CRD))
    api.create("widgets", copy.deepcopy(WIDGET), namespace="default")
    api.patch("widgets", "w1", {"status": {"replicas": 1, "selector": "app=w"}}, MERGE_PATCH,
              namespace="default", subresource="status")
    scale = api.update_scale("widgets", "w1", 4, namespace="default")
    assert scale["spec"] == {"replicas": 4}
    assert scale["status"] == {"replicas": 1, "selector": "app=w"}
    assert api.get("widgets", "w1", namespace="default")["spec"]["replicas"] == 4


def test_another_served_version_reads_and_writes_with_its_api_version(api):
    api.create("crd", copy.deepcopy(WIDGET_CRD))
    v1beta1 = api.custom.by_resource("example.org", "widgets", "v1beta1")
    out = api.create(v1beta1, {**WIDGET, "apiVersion": "example.org/v1beta1"}, namespace="default")
    assert out["apiVersion"] == "example.org/v1beta1"
    assert api.log.get("/registry/widgets.example.org/default/w1").object["apiVersion"] == "example.org/v1"
    assert api.get("widgets", "w1", namespace="default")["apiVersion"] == "example.org/v1"
    assert api.list(v1beta1, namespace="default")["items"][0]["apiVersion"] == "example.org/v1beta1"


def test_strategic_merge_patch_is_unsupported_for_custom_resources(api):
    _with_crontabs(api)
    api.create("ct", copy.deepcopy(CRONTAB), namespace="default")
    with pytest.raises(errors.UnsupportedMediaType) as e:
        api.patch("ct", "my-new-cron-object", {"spec": {"replicas": 2}}, STRATEGIC_MERGE_PATCH, namespace="default")
    assert e.value.status()["code"] == 415
    assert str(e.value) == ("the body of the request was in an unknown format - accepted media types include: "
                            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")


def test_server_side_apply_creates_and_owns_custom_fields(api):
    _with_crontabs(api)
    out = api.patch("ct", "my-new-cron-object", copy.deepcopy(CRONTAB), "application/apply-patch+yaml",
                    namespace="default", field_manager="kubectl")
    assert out["spec"]["image"] == "my-awesome-cron-image"
    entry = out["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
    assert set(entry["fieldsV1"]["f:spec"]) == {"f:cronSpec", "f:image"}


def test_a_cluster_scoped_custom_resource(api):
    crd = copy.deepcopy(CRONTAB_CRD)
    crd["spec"]["scope"] = "Cluster"
    api.create("crd", crd)
    api.create("ct", copy.deepcopy(CRONTAB))
    assert api.log.get("/registry/crontabs.stable.example.com/my-new-cron-object") is not None
    assert "namespace" not in api.get("ct", "my-new-cron-object")["metadata"]


def test_watch_delivers_custom_objects(api):
    import trio

    _with_crontabs(api)

    async def main():
        w = await api.watch("ct", namespace="default")
        api.create("ct", copy.deepcopy(CRONTAB), namespace="default")
        ev = await w.__anext__()
        await w.aclose()
        return ev

    ev = trio.run(main)
    assert (ev.type, ev.object["kind"]) == ("ADDED", "CronTab")


# ---------------------------------------------------------------------------- deleting a CRD
def test_deleting_a_crd_deletes_its_objects_then_itself(api):
    _with_crontabs(api)
    api.create("ct", copy.deepcopy(CRONTAB), namespace="default")
    api.delete("crd", "crontabs.stable.example.com")
    assert api.list("crd")["items"] == []
    assert api.log.get("/registry/crontabs.stable.example.com/default/my-new-cron-object") is None
    with pytest.raises(errors.NotFound, match='the server doesn\'t have a resource type "ct"'):
        api.resource("ct")
    versions = [r.object for r in api.log.records() if r.key == CRD_KEY + "crontabs.stable.example.com"]
    terminating = [c for v in versions for c in v["status"].get("conditions", ()) if c["type"] == "Terminating"]
    assert [(c["status"], c["reason"]) for c in terminating] == [
        ("True", "InstanceDeletionPending"), ("True", "InstanceDeletionInProgress"),
        ("False", "InstanceDeletionCompleted")]
    assert versions[2]["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]


def test_an_instance_with_a_finalizer_keeps_the_crd_terminating(api):
    _with_crontabs(api)
    held = {**copy.deepcopy(CRONTAB), "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    api.create("ct", held, namespace="default")
    api.delete("crd", "crontabs.stable.example.com")
    crd = api.get("crd", "crontabs.stable.example.com")
    assert _conditions(crd)["Terminating"] == ("True", "InstanceDeletionInProgress",
                                               "CustomResource deletion is in progress")
    with pytest.raises(errors.MethodNotAllowed,
                       match="create not allowed while custom resource definition is terminating"):
        api.create("ct", copy.deepcopy(CRONTAB), namespace="default")
    api.patch("ct", "held", {"metadata": {"finalizers": None}}, MERGE_PATCH, namespace="default")
    assert api.list("crd")["items"] == []


# ---------------------------------------------------------------------------- the HTTP front
@pytest.fixture
def app(api):
    _with_crontabs(api)
    api.create("crd", copy.deepcopy(WIDGET_CRD))
    return APIApp(api, {ADMIN: admin()})


async def test_rest_paths_discovery_and_openapi(app):
    code, out = await call_json(app, "POST", "/apis/stable.example.com/v1/namespaces/default/crontabs", CRONTAB)
    assert code == 201 and out["kind"] == "CronTab"
    code, out = await call_json(app, "GET", "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object")
    assert code == 200 and out["spec"]["cronSpec"] == "* * * * */5"
    code, _ = await call_json(app, "GET", "/apis/stable.example.com/v2/namespaces/default/crontabs")
    assert code == 404
    code, groups = await call_json(app, "GET", "/apis")
    names = [g["name"] for g in groups["groups"]]
    assert "apiextensions.k8s.io" in names and "stable.example.com" in names
    assert names.index("stable.example.com") < names.index("metrics.k8s.io")
    code, g = await call_json(app, "GET", "/apis/example.org")
    assert g["preferredVersion"]["version"] == "v1" and [v["version"] for v in g["versions"]] == ["v1", "v1beta1"]
    code, rl = await call_json(app, "GET", "/apis/stable.example.com/v1")
    assert rl["resources"] == [{"name": "crontabs", "singularName": "crontab", "namespaced": True, "kind": "CronTab",
                                "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                          "watch"], "shortNames": ["ct"]}]
    code, rl = await call_json(app, "GET", "/apis/apiextensions.k8s.io/v1")
    crd = rl["resources"][0]
    assert (crd["name"], crd["shortNames"], crd["categories"]) == (
        "customresourcedefinitions", ["crd", "crds"], ["api-extensions"])
    code, agg = await call_json(app, "GET", "/apis",
                                accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    widget = next(i for i in agg["items"] if i["metadata"]["name"] == "example.org")
    v1 = widget["versions"][0]["resources"][0]
    assert [s["subresource"] for s in v1["subresources"]] == ["status", "scale"]
    code, index = await call_json(app, "GET", "/openapi/v3")
    url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"]
    code, doc = await call_json(app, "GET", url)
    schema = doc["components"]["schemas"]["com.example.stable.v1.CronTab"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "stable.example.com", "version": "v1",
                                                          "kind": "CronTab"}]
    assert schema["properties"]["spec"]["properties"]["replicas"] == {"type": "integer"}
    patch = doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["patch"]
    assert any(p["name"] == "fieldValidation" for p in patch["parameters"])


async def test_server_side_tables_show_printer_columns(app):
    await call_json(app, "POST", "/apis/example.org/v1/namespaces/default/widgets", WIDGET)
    code, t = await call_json(app, "GET", "/apis/example.org/v1/namespaces/default/widgets", accept=TABLE)
    cols = [(c["name"], c["type"], c["priority"]) for c in t["columnDefinitions"]]
    assert cols == [("Name", "string", 0), ("Replicas", "integer", 0), ("Color", "string", 1), ("Age", "date", 0)]
    assert t["rows"][0]["cells"] == ["w1", 1, "red", "0s"]
    await call_json(app, "POST", "/apis/stable.example.com/v1/namespaces/default/crontabs", CRONTAB)
    code, t = await call_json(app, "GET", "/apis/stable.example.com/v1/namespaces/default/crontabs", accept=TABLE)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Age"]
    code, t = await call_json(app, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", accept=TABLE)
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "Created At"]


async def test_strategic_merge_patch_over_http_is_415(app):
    await call_json(app, "POST", "/apis/stable.example.com/v1/namespaces/default/crontabs", CRONTAB)
    code, out = await call_json(app, "PATCH", "/apis/stable.example.com/v1/namespaces/default/crontabs/my-new-cron-object",
                                {"spec": {"replicas": 2}}, ctype=STRATEGIC_MERGE_PATCH)
    assert (code, out["reason"]) == (415, "UnsupportedMediaType")


# ---------------------------------------------------------------------------- the k8semu CLI
def _write(tmp_path, name, *docs):
    p = tmp_path / name
    p.write_text("\n---\n".join(orjson.dumps(d).decode() for d in docs) + "\n")  # JSON is YAML
    return str(p)


def test_cli_apply_in_two_steps_get_describe_delete(k, tmp_path):
    crd = _write(tmp_path, "crd.yaml", CRONTAB_CRD)
    ct = _write(tmp_path, "ct.yaml", CRONTAB)
    rc, _, err = k("get", "ct")
    assert (rc, err) == (1, ['error: the server doesn\'t have a resource type "ct"'])
    rc, out, _ = k("apply", "-f", crd, "-q")
    assert (rc, out) == (0, ["customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"])
    rc, out, _ = k("get", "crd")
    assert out[0].split() == ["NAME", "CREATED", "AT"] and out[1].startswith("crontabs.stable.example.com ")
    rc, out, _ = k("apply", "-f", ct, "-q")
    assert (rc, out) == (0, ["crontab.stable.example.com/my-new-cron-object created"])
    rc, out, _ = k("apply", "-f", ct, "-q")
    assert out == ["crontab.stable.example.com/my-new-cron-object unchanged"]
    for typed in ("ct", "crontabs", "crontab.stable.example.com"):
        rc, out, _ = k("get", typed)
        assert rc == 0 and out[0].split() == ["NAME", "AGE"] and out[1].split()[0] == "my-new-cron-object"
    rc, out, _ = k("get", "ct", "my-new-cron-object", "-o", "jsonpath={.spec.image}")
    assert out == ["my-awesome-cron-image"]
    rc, out, _ = k("describe", "ct", "my-new-cron-object")
    assert rc == 0 and "Kind:         CronTab" in out and "  Image:      my-awesome-cron-image" in out
    rc, out, _ = k("delete", "crd", "crontabs.stable.example.com")
    assert out == ['customresourcedefinition.apiextensions.k8s.io "crontabs.stable.example.com" deleted']
    rc, out, err = k("get", "crontabs")
    assert rc == 1 and err == ['error: the server doesn\'t have a resource type "crontabs"']


def test_cli_apply_crd_and_object_in_one_file_then_replay(k, tmp_path):
    both = _write(tmp_path, "both.yaml", CRONTAB_CRD, CRONTAB)
    rc, out, _ = k("apply", "-f", both, "-q")
    assert (rc, out) == (0, ["customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created",
                             "crontab.stable.example.com/my-new-cron-object created"])
    rc, out, _ = k("delete", "ct", "my-new-cron-object")
    assert out == ['crontab.stable.example.com "my-new-cron-object" deleted']
    rc, out, _ = k("apply", "-f", both, "-q")
    assert out[1] == "crontab.stable.example.com/my-new-cron-object created"
    team = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    in_team = {**CRONTAB, "metadata": {"name": "t1", "namespace": "team"}}
    rc, out, _ = k("apply", "-f", _write(tmp_path, "team.yaml", team, in_team), "-q")
    assert out == ["namespace/team created", "crontab.stable.example.com/t1 created"]
    rc, out, _ = k("delete", "namespace", "team")  # the namespace controller deletes custom objects too
    c = k.api()
    try:
        assert c.api.log.count("/registry/crontabs.stable.example.com/team/") == 0
        assert c.api.log.count("/registry/namespaces/team") == 0
    finally:
        c.close()
    rc, out, err = k("replay", str(k.path))
    assert rc == 0 and out[0].startswith("identical ("), (out, err)


def test_cli_reports_schema_errors_as_kubectl(k, tmp_path):
    crd = _write(tmp_path, "crd.yaml", CRONTAB_CRD)
    k("apply", "-f", crd, "-q")
    bad = copy.deepcopy(CRONTAB)
    bad["spec"]["replicas"] = "three"
    rc, _, err = k("apply", "-f", _write(tmp_path, "bad.yaml", bad))
    assert rc == 1
    assert any('spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"' in line
               for line in err), err


def test_registry_is_per_api_server():
    a = APIServer(EventLog(), authorize=False)
    b = APIServer(EventLog(), authorize=False)
    _with_crontabs(a)
    assert a.resource("ct").kind == "CronTab"
    with pytest.raises(errors.NotFound):
        b.resource("ct")
    assert orjson.dumps(a.custom.lookup("ct")[0].api_version) == b'"stable.example.com/v1"'


def test_the_garbage_collector_follows_owner_references_to_custom_objects(k, tmp_path):
    # an operator's pattern: a ConfigMap owned by a CronTab goes when the CronTab goes, both for a
    # CRD made in the session the collector runs in and for one it finds at start-up
    rc, out, _ = k("apply", "-f", _write(tmp_path, "both.yaml", CRONTAB_CRD, CRONTAB), "-q")
    assert rc == 0
    for round_ in ("a", "b"):
        c = k.api()
        try:
            uid = c.api.get("ct", "my-new-cron-object", namespace="default")["metadata"]["uid"]
        finally:
            c.close()
        owned = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"owned-{round_}", "ownerReferences": [
            {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "name": "my-new-cron-object", "uid": uid}]}}
        assert k("apply", "-f", _write(tmp_path, f"cm-{round_}.yaml", owned), "-q")[0] == 0
        assert k("get", "configmap", f"owned-{round_}", "-o", "name")[1] == [f"configmap/owned-{round_}"]
        rc, out, _ = k("delete", "ct", "my-new-cron-object")
        assert rc == 0
        rc, _, err = k("get", "configmap", f"owned-{round_}")
        assert (rc, err) == (1, [f'Error from server (NotFound): configmaps "owned-{round_}" not found'])
        assert k("apply", "-f", _write(tmp_path, "ct.yaml", CRONTAB), "-q")[0] == 0


def test_a_crd_made_while_the_collector_runs_gets_a_monitor():
    from k8semu.sim.cluster import Cluster
    from k8semu.sim.components import default_factories
    from k8semu.sim.runtime import run_cluster

    cluster = Cluster.create(seed=3)
    api = cluster.api

    async def body(rt):
        await rt.settle()
        api.create("customresourcedefinitions", copy.deepcopy(CRONTAB_CRD))
        await rt.settle()
        ct = api.create("ct", copy.deepcopy(CRONTAB), namespace="default")
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "owned", "namespace": "default", "ownerReferences": [
                {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "name": ct["metadata"]["name"],
                 "uid": ct["metadata"]["uid"]}]}})
        await rt.settle()
        api.delete("ct", "my-new-cron-object", namespace="default")
        await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    with pytest.raises(errors.NotFound):
        api.get("configmaps", "owned", namespace="default")


# ---------------------------------------------------------------------------- deprecated versions, validate=warn,
# ``get all`` and read-time defaulting/pruning (a fresh user's findings)
GADGET_CRD = YAML(typ="safe").load("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget, categories: [all]}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "example.com/v1alpha1 Gadget is going away, use v1"
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              size: {type: integer, default: 3}
""")
GADGET = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"color": "red"}}


async def call_with_headers(app, method, path, body=None):
    """One JSON request as the admin; returns (status, body, the Warning header values)."""
    code, headers, data = await call_raw(app, method, path, body)
    return code, orjson.loads(data), [v.decode() for k_, v in headers if k_.lower() == b"warning"]


def test_deprecation_warning_texts_follow_upstreams_crd_handler():
    """``defaultDeprecationWarning``: ``<group>/<version> <Kind> is deprecated``, plus ``; use …``
    naming the best served non-deprecated version that outranks it; else the CRD's own text."""
    from k8semu.api.customresources import deprecation_warning

    versions = {v["name"]: v for v in GADGET_CRD["spec"]["versions"]}
    assert deprecation_warning(GADGET_CRD, versions["v1"]) == ""
    assert deprecation_warning(GADGET_CRD, versions["v1beta1"]) == \
        "example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget"
    assert deprecation_warning(GADGET_CRD, versions["v1alpha1"]) == "example.com/v1alpha1 Gadget is going away, use v1"
    alone = copy.deepcopy(GADGET_CRD)
    alone["spec"]["versions"] = [{**versions["v1beta1"], "storage": True}]
    assert deprecation_warning(alone, alone["spec"]["versions"][0]) == "example.com/v1beta1 Gadget is deprecated"


async def test_requests_to_a_deprecated_version_carry_a_warning_header(api):
    """apiextensions-apiserver adds the version's warning to every request for it (kubectl
    prints ``Warning: …``); the other versions' requests carry none."""
    api.create("crd", copy.deepcopy(GADGET_CRD))
    app = APIApp(api, {ADMIN: admin()})
    beta = "/apis/example.com/v1beta1/namespaces/default/gadgets"
    code, _, warnings = await call_with_headers(app, "POST", beta, {**GADGET, "apiVersion": "example.com/v1beta1"})
    assert (code, warnings) == (201, ['299 - "example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget"'])
    for path in (beta, beta + "/g1"):
        code, _, warnings = await call_with_headers(app, "GET", path)
        assert (code, warnings) == (200, ['299 - "example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget"'])
    code, _, warnings = await call_with_headers(app, "GET", "/apis/example.com/v1alpha1/namespaces/default/gadgets/g1")
    assert warnings == ['299 - "example.com/v1alpha1 Gadget is going away, use v1"']
    code, _, warnings = await call_with_headers(app, "GET", "/apis/example.com/v1/namespaces/default/gadgets/g1")
    assert (code, warnings) == (200, [])


def test_cli_apply_and_get_of_a_deprecated_version_print_the_warning(k, tmp_path):
    """k8semu prints the server's deprecation warning as kubectl does: ``Warning: …`` on stderr, once."""
    k("apply", "-f", _write(tmp_path, "crd.yaml", GADGET_CRD), "-q")
    beta = [{**GADGET, "apiVersion": "example.com/v1beta1", "metadata": {"name": n}} for n in ("g1", "g2")]
    rc, out, err = k("apply", "-f", _write(tmp_path, "g.yaml", *beta), "-q")
    assert (rc, out) == (0, ["gadget.example.com/g1 created", "gadget.example.com/g2 created"])
    assert err == ["Warning: example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget"]
    rc, out, err = k("get", "gadgets.v1beta1.example.com")
    assert rc == 0 and [line.split()[0] for line in out] == ["NAME", "g1", "g2"]
    assert err == ["Warning: example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget"]
    rc, out, err = k("get", "gadgets")  # the preferred version, v1: no warning
    assert rc == 0 and err == []


def test_cli_apply_validate_warn_reports_a_custom_objects_unknown_fields(k, tmp_path):
    """``--validate=warn`` (``fieldValidation=Warn``): kubectl prints ``Warning: unknown field
    "spec.bogus"`` and the object is created without it; the default (strict) refuses it."""
    k("apply", "-f", _write(tmp_path, "crd.yaml", CRONTAB_CRD), "-q")
    bogus = copy.deepcopy(CRONTAB)
    bogus["spec"]["bogus"] = 1
    f = _write(tmp_path, "bogus.yaml", bogus)
    rc, _, err = k("apply", "-f", f, "-q")
    assert rc == 1 and err == ['Error from server (BadRequest): error when creating "' + f + '": CronTab in version '
                               '"v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.bogus"']
    rc, out, err = k("apply", "-f", f, "-q", "--validate=warn")
    assert (rc, out, err) == (0, ["crontab.stable.example.com/my-new-cron-object created"],
                              ['Warning: unknown field "spec.bogus"'])
    rc, out, _ = k("get", "ct", "my-new-cron-object", "-o", "jsonpath={.spec}")
    assert "bogus" not in out[0]
    # create -f and replace -f warn the same way
    rc, _, err = k("replace", "-f", f, "--validate=warn")
    assert rc == 0 and err == ['Warning: unknown field "spec.bogus"']
    k("delete", "ct", "my-new-cron-object")
    rc, _, err = k("create", "-f", f, "--validate=warn")
    assert rc == 0 and err == ['Warning: unknown field "spec.bogus"']


def test_cli_get_all_includes_custom_resources_of_the_all_category(k, tmp_path):
    """kubectl expands ``all`` from discovery: a CRD with ``categories: [all]`` is in it, after the
    built-in kinds; CronTab (no categories) is not."""
    k("apply", "-f", _write(tmp_path, "crds.yaml", GADGET_CRD, CRONTAB_CRD, GADGET, CRONTAB), "-q")
    rc, out, err = k("get", "all")
    assert rc == 0 and err == []
    names = [line.split()[0] for line in out if line and not line.startswith("NAME")]
    assert names[-1] == "gadget.example.com/g1" and not any(n.startswith("crontab") for n in names)
    assert any(n.startswith("deployment.apps/") for n in names)


async def test_kubectl_get_all_sees_the_category_in_discovery(api):
    api.create("crd", copy.deepcopy(GADGET_CRD))
    app = APIApp(api, {ADMIN: admin()})
    code, rl, _ = await call_with_headers(app, "GET", "/apis/example.com/v1")
    assert rl["resources"][0]["categories"] == ["all"]


def test_reads_apply_the_stored_versions_defaults_and_the_read_versions_pruning(api):
    """Upstream's storage codec: decoded from etcd, a custom object is pruned and defaulted by the
    schema of the version it is stored in, then pruned by the schema of the version read. A
    Gadget created through v1beta1 (which preserves unknown fields) reads through v1 with v1's
    default and without the field v1 does not declare; the stored record is left as it is."""
    api.create("crd", copy.deepcopy(GADGET_CRD))
    beta = api.custom.by_resource("example.com", "gadgets", "v1beta1")
    api.create(beta, {**GADGET, "apiVersion": "example.com/v1beta1", "spec": {"color": "red", "junk": 1}},
               namespace="default")
    stored = api.log.get("/registry/gadgets.example.com/default/g1").object
    assert stored["spec"] == {"color": "red", "junk": 1}
    for read in (api.get("gadgets", "g1", namespace="default"), api.list("gadgets", namespace="default")["items"][0],
                 api.get(beta, "g1", namespace="default")):
        assert read["spec"] == {"color": "red", "size": 3}
    assert api.get(beta, "g1", namespace="default")["apiVersion"] == "example.com/v1beta1"
    assert api.log.get("/registry/gadgets.example.com/default/g1").object == stored
    # a default added to the storage version's schema later shows on the next read
    crd = api.get("crd", "gadgets.example.com")
    crd["spec"]["versions"][2]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] = {
        "type": "string", "default": "round"}
    api.update("crd", crd)
    assert api.get("gadgets", "g1", namespace="default")["spec"] == {"color": "red", "size": 3, "shape": "round"}
