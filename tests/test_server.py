"""The HTTP front of the emulated kube-apiserver (k8semu.server), in process.

Most tests drive the ASGI app directly (no sockets); the streaming tests run
it under Hypercorn's Trio worker on loopback and talk raw HTTP/1.1, to check
that watch events arrive one chunk per event and that a client going away
ends the watch on the server.
"""

from __future__ import annotations

import copy

import orjson
import pytest
import trio

from k8semu.api import auth
from k8semu.server import discovery, openapi
from k8semu.server.app import APIApp
from k8semu.server.pki import kubeconfig_text, parse_token_file
from k8semu.sim.cluster import Cluster

ADMIN = "admin-token"
JANE = "jane-token"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

DEPLOY = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx:1.30-alpine"}]}}},
}


@pytest.fixture
def app():
    cluster = Cluster.create()
    tokens = {ADMIN: auth.admin(), **parse_token_file(f'{JANE},jane,1001,"dev,qa"\n')}
    return APIApp(cluster.api, tokens)


async def call(app, method, path, body=None, **kw):
    """One request through the ASGI app; returns (status, headers as a dict, body bytes)."""
    code, headers, data = await call_raw(app, method, path, body, **kw)
    return code, dict(headers), data


async def call_raw(app, method, path, body=None, *, token=ADMIN, accept="application/json",
                   ctype="application/json"):
    """One request through the ASGI app; returns (status, header pairs as sent, body bytes)."""
    path, _, qs = path.partition("?")
    headers = [(b"accept", accept.encode()), (b"content-type", ctype.encode())]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    data = body if isinstance(body, bytes) else (orjson.dumps(body) if body is not None else b"")
    scope = {"type": "http", "method": method, "path": path, "query_string": qs.encode(), "headers": headers}
    sent = []
    done = False

    async def receive():
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": data, "more_body": False}
        await trio.sleep_forever()

    async def send(msg):
        sent.append(msg)

    await app(scope, receive, send)
    start = sent[0]
    return start["status"], list(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


async def call_json(app, method, path, body=None, **kw):
    code, _, data = await call(app, method, path, body, **kw)
    return code, orjson.loads(data)


# ---------------------------------------------------------------------------- non-resource


async def test_version_reports_a_real_minor_for_the_kubectl_dispatcher(app):
    code, v = await call_json(app, "GET", "/version?timeout=5s", token=None)
    assert code == 200 and v["major"] == "1" and v["minor"] == "33" and v["gitVersion"].startswith("v1.33.")


async def test_health_endpoints_answer_ok(app):
    for path in ("/healthz", "/livez", "/readyz"):
        code, headers, body = await call(app, "GET", path, token=None)
        assert (code, body) == (200, b"ok")


async def test_unknown_token_is_401_and_no_token_is_anonymous(app):
    code, st = await call_json(app, "GET", "/api/v1/namespaces/default/pods", token="nope")
    assert code == 401 and st["reason"] == "Unauthorized" and st["code"] == 401
    code, st = await call_json(app, "GET", "/api/v1/namespaces/default/pods", token=None)
    assert code == 403
    assert st["message"] == ('pods is forbidden: User "system:anonymous" cannot list resource "pods" '
                             'in API group "" in the namespace "default"')


async def test_rbac_applies_to_token_file_users(app):
    code, st = await call_json(app, "GET", "/apis/apps/v1/namespaces/default/deployments", token=JANE)
    assert code == 403 and st["reason"] == "Forbidden"
    assert 'User "jane" cannot list resource "deployments" in API group "apps"' in st["message"]
    # grant: a RoleBinding to the built-in "view" ClusterRole
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "jane-view", "namespace": "default"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "qa"}]}
    code, _ = await call_json(app, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rb)
    assert code == 201
    code, lst = await call_json(app, "GET", "/apis/apps/v1/namespaces/default/deployments", token=JANE)
    assert code == 200 and lst["kind"] == "DeploymentList"
    code, st = await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY, token=JANE)
    assert code == 403


def test_token_file_format():
    users = parse_token_file('# comment\nt1,alice,42,"a,b"\nt2,bob,43\n')
    assert users["t1"].name == "alice" and users["t1"].uid == "42"
    assert users["t1"].groups == ("a", "b", "system:authenticated")
    assert users["t2"].groups == ("system:authenticated",)
    with pytest.raises(ValueError):
        parse_token_file("only,two\n")


def test_kubeconfig_names_the_server_and_token(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    text = kubeconfig_text("https://127.0.0.1:6443", "tok", ca)
    assert "server: https://127.0.0.1:6443" in text and "token: tok" in text
    assert "certificate-authority-data: " in text and "current-context: kubernetes-admin@k8semu" in text


# ---------------------------------------------------------------------------- discovery / openapi


async def test_aggregated_discovery_has_response_kinds_everywhere(app):
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    code, headers, body = await call(app, "GET", "/apis", accept=accept)
    assert headers[b"content-type"] == b"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    doc = orjson.loads(body)
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    apps = next(g for g in doc["items"] if g["metadata"]["name"] == "apps")
    deploy = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["shortNames"] == ["deploy"] and deploy["categories"] == ["all"]
    scale = next(s for s in deploy["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    for g in doc["items"]:
        for v in g["versions"]:
            assert v["freshness"] == "Current"
            for r in v["resources"]:
                assert r["responseKind"]["kind"]
                assert all(s["responseKind"]["kind"] for s in r.get("subresources", ()))
    # kubectl 1.27 asks for v2beta1 first
    code, headers, _ = await call(app, "GET", "/api", accept="application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
    assert b"v=v2beta1" in headers[b"content-type"]


async def test_legacy_discovery_lists_pods_eviction_for_drain(app):
    code, lst = await call_json(app, "GET", "/api/v1")
    ev = next(r for r in lst["resources"] if r["name"] == "pods/eviction")
    assert (ev["group"], ev["version"], ev["kind"], ev["verbs"]) == ("policy", "v1", "Eviction", ["create"])
    code, groups = await call_json(app, "GET", "/apis")
    assert groups["kind"] == "APIGroupList" and "apps" in [g["name"] for g in groups["groups"]]
    code, api = await call_json(app, "GET", "/api")
    assert api == {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}
    assert discovery.api_group("nope") is None


async def test_openapi_v3_tells_kubectl_the_server_validates_fields(app):
    code, index = await call_json(app, "GET", "/openapi/v3")
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    code, doc = await call_json(app, "GET", url)
    op = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert "fieldValidation" in [p["name"] for p in op["parameters"]]
    schemas = doc["components"]["schemas"]
    dep = schemas["io.k8s.api.apps.v1.Deployment"]
    assert dep["x-kubernetes-group-version-kind"] == [{"group": "apps", "version": "v1", "kind": "Deployment"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert strategy["x-kubernetes-patch-strategy"] == "retainKeys"
    assert strategy["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}]
    code, _ = await call_json(app, "GET", "/openapi/v3/apis/nope/v1")
    assert code == 404
    assert openapi.document("", "v1")["paths"]["/api/v1/nodes/{name}"]["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Node"


async def test_openapi_v2_is_an_empty_swagger_document_in_json_and_protobuf(app):
    code, headers, body = await call(app, "GET", "/openapi/v2")
    assert code == 200 and orjson.loads(body) == {
        "swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.33.1"}, "paths": {}, "definitions": {}}
    code, headers, body = await call(app, "GET", "/openapi/v2",
                                     accept="application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert code == 200
    assert dict(headers)[b"content-type"] == b"application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    # Document {1 swagger "2.0", 2 info {1 title, 2 version}, 8 paths {}, 9 definitions {}}
    assert body == (b"\x0a\x032.0" + b"\x12\x15" + b"\x0a\x0aKubernetes" + b"\x12\x07v1.33.1"
                    + b"\x42\x00" + b"\x4a\x00")


async def test_access_reviews_answer_what_rbac_decides_and_store_nothing(app):
    """What ``kubectl auth can-i`` (SelfSubjectAccessReview / SelfSubjectRulesReview) and webhooks
    (SubjectAccessReview / LocalSubjectAccessReview) ask: 201 with the status, nothing stored."""
    base = "/apis/authorization.k8s.io/v1"
    rev = app.api.log.revision
    ssar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}}
    code, out = await call_json(app, "POST", base + "/selfsubjectaccessreviews", ssar)
    assert (code, out["status"]) == (201, {"allowed": True})
    code, out = await call_json(app, "POST", base + "/selfsubjectaccessreviews", ssar, token=JANE)
    assert (code, out["status"]) == (201, {"allowed": False})
    sar = {"kind": "SubjectAccessReview", "spec": {
        "user": "system:kube-scheduler", "resourceAttributes": {"verb": "create", "resource": "pods",
                                                                 "subresource": "binding", "namespace": "default"}}}
    code, out = await call_json(app, "POST", base + "/subjectaccessreviews", sar)
    assert code == 201 and out["status"] == {"allowed": True, "reason": (
        'RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" '
        'to User "system:kube-scheduler"')}
    code, out = await call_json(app, "POST", base + "/subjectaccessreviews", {"kind": "SubjectAccessReview", "spec": {
        "resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert code == 422 and out["message"] == ('SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: '
                                              'Invalid value: "": at least one of user or group must be specified')
    lsar = {"kind": "LocalSubjectAccessReview", "spec": {
        "user": "jane", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "other"}}}
    code, out = await call_json(app, "POST", base + "/namespaces/default/localsubjectaccessreviews", lsar)
    assert code == 400 and out["message"] == "spec.resourceAttributes.namespace must match namespace: default"
    code, out = await call_json(app, "POST", base + "/subjectaccessreviews", sar, token=JANE)
    assert code == 403
    code, out = await call_json(app, "POST", base + "/selfsubjectrulesreviews",
                                {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}}, token=JANE)
    assert code == 201 and {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in \
        out["status"]["resourceRules"]
    code, _ = await call_json(app, "GET", base + "/selfsubjectaccessreviews")
    assert code == 405
    assert app.api.log.revision == rev
    code, lst = await call_json(app, "GET", base)
    assert [r["name"] for r in lst["resources"]] == [
        "localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"]


async def test_impersonation_needs_the_impersonate_verb_and_acts_as_the_named_user(app):
    """``kubectl --as`` / ``--as-group``: the admin may impersonate anyone, the request is then
    authorized as that user; jane may not impersonate, and says so in upstream's words."""
    async def whoami(token, headers):
        path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
        scope_headers = [(b"accept", b"application/json"), (b"content-type", b"application/json"),
                         (b"authorization", f"Bearer {token}".encode()), *headers]
        sent = []

        async def receive():
            return {"type": "http.request", "body": b'{"kind":"SelfSubjectReview"}', "more_body": False}

        async def send(msg):
            sent.append(msg)

        await app({"type": "http", "method": "POST", "path": path, "query_string": b"", "headers": scope_headers},
                  receive, send)
        code = next(m["status"] for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return code, orjson.loads(body)

    code, out = await whoami(ADMIN, [(b"impersonate-user", b"jane"), (b"impersonate-group", b"devs"),
                                     (b"impersonate-group", b"qa")])
    assert code == 201 and out["status"]["userInfo"] == {"username": "jane",
                                                          "groups": ["devs", "qa", "system:authenticated"]}
    code, out = await whoami(ADMIN, [(b"impersonate-user", b"system:serviceaccount:dev:builder")])
    assert out["status"]["userInfo"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:dev",
                                                   "system:authenticated"]
    code, out = await whoami(JANE, [(b"impersonate-user", b"bob")])
    assert (code, out["message"]) == (403, 'users "bob" is forbidden: User "jane" cannot impersonate resource '
                                           '"users" in API group "" at the cluster scope')
    code, out = await whoami(ADMIN, [(b"impersonate-group", b"devs")])
    assert code == 400


# ---------------------------------------------------------------------------- verbs


async def test_crud_status_codes_and_status_bodies(app):
    base = "/apis/apps/v1/namespaces/default/deployments"
    code, st = await call_json(app, "GET", base + "/web")
    assert code == 404 and st == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'deployments.apps "web" not found', "reason": "NotFound",
        "details": {"name": "web", "group": "apps", "kind": "deployments"}, "code": 404}
    code, created = await call_json(app, "POST", base + "?fieldManager=kubectl-client-side-apply&fieldValidation=Strict", DEPLOY)
    assert code == 201 and created["metadata"]["generation"] == 1
    code, st = await call_json(app, "POST", base, DEPLOY)
    assert code == 409 and st["reason"] == "AlreadyExists"
    stale = {**created, "metadata": {**created["metadata"], "resourceVersion": "1"}}
    code, st = await call_json(app, "PUT", base + "/web", stale)
    assert code == 409 and st["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again")
    bad = copy.deepcopy(DEPLOY)
    bad["metadata"]["name"] = "typo"
    bad["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    code, st = await call_json(app, "POST", base + "?fieldValidation=Strict", bad)
    assert code == 400 and 'unknown field "spec.template.spec.containers[0].imagee"' in st["message"]
    code, _ = await call_json(app, "POST", base + "?dryRun=All", {**DEPLOY, "metadata": {"name": "dry"}})
    assert code == 201
    code, _ = await call_json(app, "GET", base + "/dry")
    assert code == 404
    code, out = await call_json(app, "DELETE", base + "/web", {"propagationPolicy": "Background"})
    # deleted at once, and Deployments' registry does not return the deleted object: a Success Status
    assert code == 200 and (out["kind"], out["status"]) == ("Status", "Success")
    assert {k: out["details"][k] for k in ("name", "group", "kind")} == {"name": "web", "group": "apps",
                                                                       "kind": "deployments"}
    code, _ = await call_json(app, "GET", "/apis/apps/v1/namespaces/default/nopes")
    assert code == 404


async def test_field_validation_warn_sends_warning_headers_and_stores_no_unknown_field(app):
    """``kubectl apply --validate=warn`` prints the server's ``Warning`` headers; the stored
    object has no unknown field (kube-apiserver decodes into Go structs), so it can be patched."""
    base = "/apis/apps/v1/namespaces/default/deployments"
    typo = copy.deepcopy(DEPLOY)
    typo["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    code, headers, data = await call(app, "POST", base + "?fieldValidation=Warn", typo)
    assert code == 201 and headers[b"warning"] == (
        b'299 - "unknown field \\"spec.template.spec.containers[0].imagee\\""')
    assert "imagee" not in orjson.loads(data)["spec"]["template"]["spec"]["containers"][0]
    code, _ = await call_json(app, "PATCH", base + "/web", {"metadata": {"labels": {"a": "b"}}},
                              ctype="application/merge-patch+json")
    assert code == 200
    code, headers, _ = await call(app, "POST", base + "?fieldValidation=Ignore",
                                  {**typo, "metadata": {"name": "quiet"}})
    assert code == 201 and b"warning" not in headers


async def test_patch_types_scale_and_null_removes_field(app):
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)
    path = "/apis/apps/v1/namespaces/default/deployments/web"
    code, scale = await call_json(app, "PATCH", path + "/scale", {"spec": {"replicas": 3}}, ctype="application/merge-patch+json")
    assert code == 200 and scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 3} and scale["status"]["selector"] == "app=web"
    code, dep = await call_json(app, "PATCH", path, [{"op": "replace", "path": "/spec/replicas", "value": 5}],
                                ctype="application/json-patch+json")
    assert dep["spec"]["replicas"] == 5
    sm = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "nginx"}],
                                         "containers": [{"name": "nginx", "image": "nginx:1.31"}]}}}}
    code, dep = await call_json(app, "PATCH", path, sm, ctype="application/strategic-merge-patch+json")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.31"
    code, st = await call_json(app, "PATCH", path, {}, ctype="text/plain")
    assert code == 415
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    await call_json(app, "POST", "/api/v1/nodes", node)
    code, n = await call_json(app, "PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": True}},
                              ctype="application/strategic-merge-patch+json")
    assert n["spec"]["unschedulable"] is True
    code, n = await call_json(app, "PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": None}},
                              ctype="application/strategic-merge-patch+json")
    assert "unschedulable" not in n["spec"]


async def test_server_side_apply_is_201_on_create_then_200(app):
    path = "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=kubectl&fieldValidation=Strict&force=false"
    code, dep = await call_json(app, "PATCH", path, DEPLOY, ctype="application/apply-patch+yaml")
    assert code == 201 and dep["metadata"]["managedFields"][0]["manager"] == "kubectl"
    code, dep = await call_json(app, "PATCH", path, DEPLOY, ctype="application/apply-patch+yaml")
    assert code == 200
    code, st = await call_json(app, "PATCH", path.split("?")[0], DEPLOY, ctype="application/apply-patch+yaml")
    assert code == 400


async def test_list_paging_and_tables(app):
    for i in range(3):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}", "labels": {"n": str(i)}}}
        await call_json(app, "POST", "/api/v1/namespaces/default/configmaps", cm)
    code, page = await call_json(app, "GET", "/api/v1/namespaces/default/configmaps?limit=2")
    assert [i["metadata"]["name"] for i in page["items"]] == ["cm0", "cm1"]
    assert page["metadata"]["remainingItemCount"] >= 1
    code, rest = await call_json(app, "GET", "/api/v1/namespaces/default/configmaps?limit=2&continue=" + page["metadata"]["continue"])
    assert "cm2" in [i["metadata"]["name"] for i in rest["items"]]
    code, sel = await call_json(app, "GET", "/api/v1/namespaces/default/configmaps?labelSelector=n%3D1")
    assert [i["metadata"]["name"] for i in sel["items"]] == ["cm1"]
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)
    code, t = await call_json(app, "GET", "/apis/apps/v1/namespaces/default/deployments?limit=500", accept=TABLE)
    assert t["kind"] == "Table" and t["metadata"]["resourceVersion"]
    assert [c["name"] for c in t["columnDefinitions"]] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    assert t["rows"][0]["cells"][:4] == ["web", "0/2", 0, 0]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    code, t = await call_json(app, "GET", "/apis/apps/v1/namespaces/default/deployments/web?includeObject=Object", accept=TABLE)
    assert t["rows"][0]["object"]["kind"] == "Deployment"


async def test_eviction_and_binding(app):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await call_json(app, "POST", "/api/v1/namespaces/default/pods", pod)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    await call_json(app, "POST", "/api/v1/nodes", node)
    b = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    code, st = await call_json(app, "POST", "/api/v1/namespaces/default/pods/p/binding", b)
    assert code == 201 and st["status"] == "Success"
    code, p = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p")
    assert p["spec"]["nodeName"] == "n1"
    ev = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"}}
    # kubectl drain --dry-run=server: the dry run is in the Eviction's deleteOptions only
    dry = {**ev, "deleteOptions": {"dryRun": ["All"]}}
    code, st = await call_json(app, "POST", "/api/v1/namespaces/default/pods/p/eviction", dry)
    assert code == 201 and st["status"] == "Success"
    code, p = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p")
    assert "deletionTimestamp" not in p["metadata"]
    code, st = await call_json(app, "POST", "/api/v1/namespaces/default/pods/p/eviction", ev)
    assert code == 201 and st["status"] == "Success"
    code, p = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p")
    assert p["metadata"]["deletionTimestamp"]  # bound pods go gracefully


async def test_log_of_a_waiting_container_is_kubelets_error(app):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    await call_json(app, "POST", "/api/v1/namespaces/default/pods", pod)
    code, _, body = await call(app, "GET", "/api/v1/namespaces/default/pods/p/log?container=c")
    assert (code, body) == (200, b"")  # not bound yet: upstream's LogLocation is empty
    _bind(app.api, "p", {"waiting": {"reason": "ContainerCreating"}})  # on a node, never ran
    code, st = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p/log?container=c")
    assert code == 400 and st["message"] == 'container "c" in pod "p" is waiting to start: ContainerCreating'
    code, st = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p/log?container=x")
    assert code == 400 and st["message"] == "container x is not valid for pod p"


async def test_log_of_a_container_in_crash_loop_back_off_is_its_last_run(app):
    # the kubelet serves lastState.terminated's log while the container waits to restart
    api = app.api
    api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"containers": [{"name": "c", "image": "busybox",
                                                 "command": ["sh", "-c", "echo starting; sleep 2; echo fatal; exit 1"]}]}},
               namespace="default")
    t0 = api.timestamp()
    last = {"exitCode": 1, "reason": "Error", "startedAt": t0, "finishedAt": api.timestamp(api.now + 2),
            "containerID": "containerd://abc"}
    _bind(api, "p", {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}},
          last)
    for path in ("log?container=c", "log", "log?previous=true"):
        code, _, body = await call(app, "GET", f"/api/v1/namespaces/default/pods/p/{path}")
        assert (code, body) == (200, b"starting\nfatal\n")


async def test_log_of_a_container_whose_image_cannot_be_pulled(app):
    api = app.api
    api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"containers": [{"name": "c", "image": "nginx:nope"}]}}, namespace="default")
    _bind(api, "p", {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "nginx:nope"'}})
    code, st = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p/log")
    assert code == 400 and st["message"] == ('container "c" in pod "p" is waiting to start: '
                                             'trying and failing to pull image')
    code, st = await call_json(app, "GET", "/api/v1/namespaces/default/pods/p/log?previous=true")
    assert code == 400 and st["message"] == 'previous terminated container "c" in pod "p" not found'


def _bind(api, name, state, last=None):
    """Bind pod ``name`` to a new node and give its container ``c`` the status ``state``/``lastState``."""
    api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    api.bind(name, {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                    "target": {"kind": "Node", "name": "n1"}}, namespace="default")
    pod = api.get("pods", name, namespace="default")
    cs = {"name": "c", "ready": False, "restartCount": 1 if last else 0, "image": "busybox", "imageID": "",
          "state": state, "lastState": {"terminated": last} if last else {}}
    api.update("pods", {**pod, "status": {"phase": "Running" if last else "Pending", "containerStatuses": [cs]}},
               namespace="default", subresource="status")


async def test_log_lines_of_a_running_container(app):
    api = app.api
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox",
                                    "command": ["sh", "-c", "echo one; echo two; echo three; sleep 3600"]}]}}
    api.create("pods", pod, namespace="default")
    _bind(api, "p", {"running": {"startedAt": api.timestamp()}})
    code, headers, body = await call(app, "GET", "/api/v1/namespaces/default/pods/p/log?container=c")
    assert code == 200 and headers[b"content-type"] == b"text/plain"
    assert body == b"one\ntwo\nthree\n"
    code, _, body = await call(app, "GET", "/api/v1/namespaces/default/pods/p/log?container=c&tailLines=1")
    assert body == b"three\n"


# ---------------------------------------------------------------------------- watch


async def _watch_lines(app, path, *, accept="application/json", disconnect_after=None):
    """Run a watch through the ASGI app; returns (status, decoded event lines, chunks)."""
    headers = [(b"accept", accept.encode()), (b"authorization", f"Bearer {ADMIN}".encode())]
    p, _, qs = path.partition("?")
    scope = {"type": "http", "method": "GET", "path": p, "query_string": qs.encode(), "headers": headers}
    sent = []
    first = True
    gone = trio.Event()

    async def receive():
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(msg):
        sent.append(msg)
        if disconnect_after is not None and sum(1 for m in sent if m.get("body")) >= disconnect_after:
            gone.set()

    with trio.fail_after(5):
        await app(scope, receive, send)
    stream = b"".join(m["body"] for m in sent[1:] if m.get("body"))  # events may share a chunk
    return sent[0]["status"], [orjson.loads(line) for line in stream.splitlines()], sent


async def test_watch_initial_events_timeout_and_every_object_typed(app):
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)
    code, events, sent = await _watch_lines(app, "/apis/apps/v1/namespaces/default/deployments?watch=true&timeoutSeconds=1")
    assert code == 200
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "web")]
    assert all(e["object"]["kind"] == "Deployment" and e["object"]["apiVersion"] == "apps/v1" for e in events)
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}  # ended cleanly


async def test_watch_too_old_resource_version_is_an_error_event(app):
    api = app.api
    api.log.compact(api.log.revision)
    code, events, _ = await _watch_lines(app, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1")
    assert code == 200 and events[0]["type"] == "ERROR"
    st = events[0]["object"]
    assert (st["code"], st["reason"]) == (410, "Expired")
    assert st["message"].startswith("too old resource version: 1 (")


async def test_watch_in_table_mode_sends_columns_once(app):
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", {**DEPLOY, "metadata": {"name": "api"}})
    code, events, _ = await _watch_lines(app, "/apis/apps/v1/namespaces/default/deployments?watch=true&timeoutSeconds=1",
                                         accept=TABLE)
    assert [e["object"]["kind"] for e in events] == ["Table", "Table"]
    assert "columnDefinitions" in events[0]["object"] and "columnDefinitions" not in events[1]["object"]
    assert [e["object"]["rows"][0]["cells"][0] for e in events] == ["api", "web"]


async def test_watch_ends_when_the_client_disconnects(app):
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)
    code, events, sent = await _watch_lines(app, "/apis/apps/v1/namespaces/default/deployments?watch=true",
                                            disconnect_after=1)
    assert len(events) == 1 and sent[-1].get("more_body") is True  # no final chunk after the client left


async def test_watch_list_ends_initial_events_with_a_bookmark(app):
    await call_json(app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY)
    code, events, _ = await _watch_lines(
        app, "/apis/apps/v1/namespaces/default/deployments?watch=true&sendInitialEvents=true"
             "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1")
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watches_from_one_resource_version_share_one_encoded_stream(app):
    """Clients of the same watch read one shared stream (one filter and encoding per event);
    a client from an older resourceVersion gets a watch of its own; each gets every event once."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    await call_json(app, "POST", "/api/v1/namespaces/default/configmaps", cm)
    older = app.api.log.revision - 1
    rv = app.api.log.revision
    got = {}

    async def client(i, since):
        path = f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={since}&timeoutSeconds=1"
        got[i] = (await _watch_lines(app, path))[1]

    async with trio.open_nursery() as background:
        app.background = background
        async with trio.open_nursery() as clients:
            for i in range(3):
                clients.start_soon(client, i, rv)
            await trio.sleep(0.05)
            (shared,) = app._shared.values()
            assert len(shared.clients) == 3
            clients.start_soon(client, "older", older)  # before what the shared one holds: its own watch
            await trio.sleep(0.05)
            assert len(shared.clients) == 3
            for name in ("b", "c"):
                await call_json(app, "POST", "/api/v1/namespaces/default/configmaps",
                                {**cm, "metadata": {"name": name}})
            await call_json(app, "DELETE", "/api/v1/namespaces/default/configmaps/b")
    assert app._shared == {}  # the last client to leave stopped it
    expected = [("ADDED", "b"), ("ADDED", "c"), ("DELETED", "b")]
    for i in range(3):
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in got[i]] == expected
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got["older"]] == [("ADDED", "a")] + expected


# ---------------------------------------------------------------------------- over a real socket


async def test_hypercorn_streams_watch_events_as_they_happen_and_notices_disconnects(app):
    from k8semu.server import run

    ended = trio.Event()

    class Tracked(APIApp):
        async def _stream(self, *a, **k):
            try:
                await super()._stream(*a, **k)
            finally:
                ended.set()

    orig = run.APIApp
    run.APIApp = Tracked
    try:
        async with trio.open_nursery() as nursery:
            stop = trio.Event()
            url = await nursery.start(lambda task_status: run.serve_api(
                app.api, app.tokens, port=0, shutdown_trigger=stop.wait, task_status=task_status))
            port = int(url.rsplit(":", 1)[1])
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            req = (f"GET /apis/apps/v1/namespaces/default/deployments?watch=true HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: Bearer {ADMIN}\r\n\r\n").encode()
            await stream.send_all(req)
            buf = b""
            with trio.fail_after(5):
                while b"\r\n\r\n" not in buf:
                    buf += await stream.receive_some()
            head = buf.split(b"\r\n\r\n")[0]
            assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()
            app.api.create("deployments", DEPLOY, namespace="default")
            with trio.fail_after(5):  # the event arrives while the response is still open
                while b'"ADDED"' not in buf:
                    buf += await stream.receive_some()
            assert b'"name":"web"' in buf and not ended.is_set()
            await stream.aclose()
            with trio.fail_after(5):  # hypercorn delivers http.disconnect: the server-side watch ends
                await ended.wait()
            stop.set()
    finally:
        run.APIApp = orig


async def test_a_shared_watch_trims_what_all_have_read_and_drops_a_client_too_far_behind(monkeypatch):
    import trio.testing

    from k8semu.server import watchcache
    from k8semu.server.watchcache import SharedWatch

    monkeypatch.setattr(watchcache, "_TRIM_SLACK", 4)
    monkeypatch.setattr(watchcache, "MAX_LAG", 20)

    class Ev:
        def __init__(self, rev):
            self.revision = rev

    send, recv = trio.open_memory_channel(100)

    async def source():
        async for ev in recv:
            yield ev

    shared = SharedWatch(("configmaps", "default", None, None, False), after=0)
    fast, slow = shared.join(0), shared.join(0)
    got = []
    async with trio.open_nursery() as n:
        n.start_soon(shared.pump, source(), lambda ev: b"%d\n" % ev.revision)
        for rev in range(1, 31):
            await send.send(Ev(rev))
            await trio.testing.wait_all_tasks_blocked()
            got.append(await shared.next_chunk(fast))
        assert b"".join(got) == b"".join(b"%d\n" % r for r in range(1, 31))  # every event once, in order
        assert slow.dropped and shared.clients == [fast]  # 20 behind: its stream ends
        assert await shared.next_chunk(slow) is None
        assert len(shared._lines) < 12 and shared.after > 0  # what everyone read is gone
        late = shared.join(shared.after)  # a client from a resourceVersion still held
        await send.send(Ev(31))
        await trio.testing.wait_all_tasks_blocked()
        assert (await shared.next_chunk(late)).endswith(b"31\n")
        shared.cancel_scope.cancel()


async def test_a_scale_asked_as_a_table_has_upstreams_scale_columns(app):
    # kubectl get deploy web --subresource=scale asks the server for a Table
    app.api.create("deployments", DEPLOY, namespace="default")
    code, _, data = await call(app, "GET", "/apis/apps/v1/namespaces/default/deployments/web/scale", accept=TABLE)
    table = orjson.loads(data)
    assert code == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Desired", "Available", "Age"]
    assert table["rows"][0]["cells"][:3] == ["web", DEPLOY["spec"]["replicas"], 0]
