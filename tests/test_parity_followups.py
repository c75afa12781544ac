"""Four kubectl 1.33 parity follow-ups, each checked against what the real kubectl printed.

1. ``kubectl top pods --field-selector``: metrics-server's PodMetrics (and NodeMetrics) lists
   honour ``fieldSelector`` on ``metadata.name`` / ``metadata.namespace`` and refuse other fields
   with the generic API server's 400; ``k8semu top`` prints the same.
2. ``replace --field-manager`` of an object read back unchanged: kubectl rewrites an existing
   last-applied-configuration annotation (so the manager comes to own it); without one the PUT
   changes nothing and kube-apiserver writes nothing (no manager entry, same resourceVersion).
3. ``describe``: a container's ``Port:`` / ``Host Port:`` omit the port's name (``80/TCP``).
4. ``-o yaml``: go-yaml's folding of long plain scalars (never onto a line of their own).
"""

from __future__ import annotations

import json
import shutil

import pytest
from test_server import ADMIN, call_json

from k8semu.api import auth
from k8semu.cli.commands.apply import with_last_applied
from k8semu.cli.printing import to_yaml
from k8semu.server.app import APIApp
from k8semu.sim.cluster import Cluster

METRICS = "/apis/metrics.k8s.io/v1beta1"
NOT_A_FIELD = ('"spec.nodeName" is not a known field selector: only "metadata.name", '
               '"metadata.namespace"')
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
def app(base, tmp_path):
    """``k8semu serve``'s app, in process, on a copy of the prepared lab (30 s: metrics scraped)."""
    path = tmp_path / "served.log"
    shutil.copy(base, path)
    cluster = Cluster.open(path)
    try:
        yield APIApp(cluster.api, {ADMIN: auth.admin()})
    finally:
        cluster.close()


def _web_pods(api):
    pods = api.list("pods", namespace="default")["items"]
    return sorted((p["metadata"]["name"], p["spec"]["nodeName"]) for p in pods)


def _names(items):
    return [i["metadata"]["name"] for i in items]


# ----------------------------------------------------------------------------- 1. top --field-selector

async def test_pod_metrics_list_honours_field_selector(app):
    (first, _), (second, _) = _web_pods(app.api)
    code, pm = await call_json(app, "GET", f"{METRICS}/namespaces/default/pods?fieldSelector=metadata.name%3D{first}")
    assert (code, _names(pm["items"])) == (200, [first])
    code, pm = await call_json(app, "GET", f"{METRICS}/pods?fieldSelector=metadata.namespace%3Ddefault,"
                                           f"metadata.name!%3D{first}")
    assert (code, _names(pm["items"])) == (200, [second])
    code, pm = await call_json(app, "GET", f"{METRICS}/pods?fieldSelector=metadata.namespace%3Ddefault")
    assert (code, _names(pm["items"])) == (200, [first, second])
    code, pm = await call_json(app, "GET", f"{METRICS}/pods?fieldSelector=metadata.namespace%3Dkube-system")
    assert (code, pm["items"]) == (200, [])
    code, pm = await call_json(app, "GET", f"{METRICS}/namespaces/default/pods?labelSelector=app%3Dnope")
    assert (code, pm["items"]) == (200, [])


async def test_pod_metrics_refuse_other_fields_as_metrics_server(app):
    code, st = await call_json(app, "GET", f"{METRICS}/namespaces/default/pods?fieldSelector=spec.nodeName%3Dnode-1")
    assert (code, st["reason"], st["message"]) == (400, "BadRequest", NOT_A_FIELD)
    code, st = await call_json(app, "GET", f"{METRICS}/pods?fieldSelector=metadata.name")
    assert (code, st["message"]) == (400, "invalid selector: 'metadata.name'; can't understand 'metadata.name'")


async def test_node_metrics_list_honours_field_selector(app):
    code, nm = await call_json(app, "GET", f"{METRICS}/nodes?fieldSelector=metadata.name%3Dnode-1")
    assert (code, _names(nm["items"])) == (200, ["node-1"])
    code, nm = await call_json(app, "GET", f"{METRICS}/nodes?fieldSelector=metadata.namespace%3Ddefault")
    assert (code, nm["items"]) == (200, [])  # a node's namespace reads as ""


def test_top_pods_field_selector_as_kubectl_1_33(k):
    (first, _), _ = _web_pods_of(k)
    assert k("top", "pods", "--field-selector", f"metadata.name={first}") == (0, [
        "NAME                   CPU(cores)   MEMORY(bytes)   ",
        f"{first}   1m           4Mi             "], [])
    assert k("top", "pods", "--field-selector", "spec.nodeName=node-1") == (
        1, [], [f"Error from server (BadRequest): {NOT_A_FIELD}"])
    assert k("top", "pods", "--field-selector", "metadata.name=nope") == (
        0, [], ["No resources found in default namespace."])
    assert k("top", "pods", "--field-selector", "metadata.name") == (
        1, [], ["error: invalid selector: 'metadata.name'; can't understand 'metadata.name'"])
    assert k("top", "pods", first, "--field-selector", f"metadata.name={first}") == (
        1, [], ["error: only one of NAME or selector can be provided"])
    assert k("top", "nodes", "node-1", "-l", "a=b") == (
        1, [], ["error: only one of NAME or --selector can be provided"])


def _web_pods_of(k):
    return sorted((p["metadata"]["name"], p["spec"]["nodeName"]) for p in k.pods())


# ----------------------------------------------------------------------------- 2. replace --field-manager

def _managers(obj):
    return [(m["manager"], m["operation"], m["fieldsV1"]) for m in obj["metadata"]["managedFields"]]


def _get(k, *what):
    rc, out, err = k("get", *what, "-o", "json", "--show-managed-fields")
    assert rc == 0, err
    return json.loads("\n".join(out))


def test_replace_unchanged_object_without_last_applied_is_not_written(k, tmp_path):
    assert k("create", "configmap", "plain", "--from-literal=a=b")[0] == 0
    before = _get(k, "configmap", "plain")
    rc, out, _ = k("get", "configmap", "plain", "-o", "yaml")
    (tmp_path / "plain.yaml").write_text("\n".join(out) + "\n")
    assert k("replace", "--field-manager=bob", "-f", str(tmp_path / "plain.yaml")) == (
        0, ["configmap/plain replaced"], [])
    after = _get(k, "configmap", "plain")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert _managers(after) == [("kubectl-create", "Update", {"f:data": {".": {}, "f:a": {}}})]


def test_replace_unchanged_applied_object_rewrites_last_applied(k, tmp_path):
    before = _get(k, "deployment", "web")
    rc, out, _ = k("get", "deployment", "web", "-o", "yaml")
    (tmp_path / "web.yaml").write_text("\n".join(out) + "\n")
    sent = json.loads(json.dumps(before))
    del sent["metadata"]["managedFields"]
    assert k("replace", "--field-manager=bob", "-f", str(tmp_path / "web.yaml")) == (
        0, ["deployment.apps/web replaced"], [])
    after = _get(k, "deployment", "web")
    assert after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    text = after["metadata"]["annotations"][LAST_APPLIED]
    # kubectl's UpdateApplyAnnotation: the object as read, less the annotation itself
    sent["metadata"]["annotations"] = {k_: v for k_, v in sent["metadata"]["annotations"].items()
                                       if k_ != LAST_APPLIED}
    assert text.endswith("}\n") and json.loads(text) == sent
    assert text.startswith('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":'
                           '{"deployment.kubernetes.io/revision":"1"},"creationTimestamp":"2025-01-01T00:00:00Z",')
    assert _managers(after)[-1] == (
        "bob", "Update", {"f:metadata": {"f:annotations": {f"f:{LAST_APPLIED}": {}}}})
    csa = next(m for m in _managers(after) if m[0] == "kubectl-client-side-apply")
    assert csa[2]["f:metadata"] == {"f:annotations": {}}


async def test_serve_put_agrees_with_the_cli_replace(app):
    path = "/api/v1/namespaces/default/configmaps"
    code, _ = await call_json(app, "POST", f"{path}?fieldManager=kubectl-create",
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"},
                               "data": {"a": "b"}})
    assert code == 201
    code, live = await call_json(app, "GET", f"{path}/plain")
    del live["metadata"]["managedFields"]
    code, out = await call_json(app, "PUT", f"{path}/plain?fieldManager=bob", live)
    assert code == 200 and out["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    assert _managers(out) == [("kubectl-create", "Update", {"f:data": {".": {}, "f:a": {}}})]
    # what kubectl replace sends for an applied object: the annotation written anew
    dpath = "/apis/apps/v1/namespaces/default/deployments/web"
    code, web = await call_json(app, "GET", dpath)
    del web["metadata"]["managedFields"]
    code, out = await call_json(app, "PUT", f"{dpath}?fieldManager=bob", with_last_applied(web, "default"))
    assert code == 200 and out["metadata"]["resourceVersion"] != web["metadata"]["resourceVersion"]
    assert _managers(out)[-1] == ("bob", "Update", {"f:metadata": {"f:annotations": {f"f:{LAST_APPLIED}": {}}}})


# ----------------------------------------------------------------------------- 3. describe ports

def test_describe_container_ports_omit_the_port_name(k):
    (pod, _), _ = _web_pods_of(k)
    rc, out, _ = k("describe", "pod", pod)
    assert rc == 0 and "    Port:           80/TCP" in out and "    Host Port:      0/TCP" in out
    rc, out, _ = k("describe", "deployment", "web")
    assert rc == 0 and "    Port:       80/TCP" in out and "    Host Port:  0/TCP" in out
    rc, out, _ = k("describe", "rs")
    assert rc == 0 and "    Port:       80/TCP" in out
    rc, out, _ = k("describe", "service", "web")  # a Service's port keeps its name first
    assert "Port:                     http  80/TCP" in out and "TargetPort:               http/TCP" in out
    assert not [line for line in out if "(http)" in line]


# ----------------------------------------------------------------------------- 4. -o yaml folding

def test_get_yaml_keeps_long_values_without_spaces_on_the_key_line(k):
    (pod, _), _ = _web_pods_of(k)
    rc, out, _ = k("get", "pod", pod, "-o", "yaml")
    status = _get(k, "pod", pod)["status"]["containerStatuses"][0]
    assert rc == 0 and f"  - containerID: {status['containerID']}" in out
    assert f"    imageID: {status['imageID']}" in out
    assert not [line for line in out if line.endswith(" ")]


# kubectl 1.33's `get configmap -o yaml` of this object (sigs.k8s.io/yaml), byte for byte
EDGE = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "edge", "annotations": {
        "x.io/" + "k" * 60: "value of a long key annotation with spaces that should be folded as well"}},
    "data": {
        "b79": "a" * 67 + " bbb ccc ddd",
        "b80": "a" * 68 + " bbb ccc ddd",
        "b82": "a" * 70 + " bbb ccc ddd",
        "colon": "this: has a colon-space in it and it is long enough to be folded past the width limit here",
        "dbl": "two  spaces  between  words  everywhere  so  that  folding  is  interesting  when  long  enough ok",
        "lead": " a value with a leading space that is long enough to need folding past eighty columns yes",
        "long": "a long value with spaces that goes on and on past the eighty column limit for sure, yes it does indeed",
        "multi": "line one\nline two with some spaces and a very long tail that goes on and on past the eighty "
                 "column limit for sure\n",
        "nospace": "b" * 104,
        "num": "1234567890" * 10,
        "tab": "a\ttab inside a value that is long enough to need folding past the eighty columns limit yes",
        "trail": "a value with a trailing space that is long enough to need folding past eighty columns ",
        "unicode": "héllo wörld ünïcödé text that is long enough to need folding past the eighty columns limit",
    },
}
EDGE_YAML = """\
apiVersion: v1
data:
  b79: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbb ccc
    ddd
  b80: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbb ccc
    ddd
  b82: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa bbb
    ccc ddd
  colon: 'this: has a colon-space in it and it is long enough to be folded past the
    width limit here'
  dbl: two  spaces  between  words  everywhere  so  that  folding  is  interesting  when  long  enough
    ok
  lead: ' a value with a leading space that is long enough to need folding past eighty
    columns yes'
  long: a long value with spaces that goes on and on past the eighty column limit
    for sure, yes it does indeed
  multi: |
    line one
    line two with some spaces and a very long tail that goes on and on past the eighty column limit for sure
  nospace: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
  num: "1234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
  tab: "a\\ttab inside a value that is long enough to need folding past the eighty
    columns limit yes"
  trail: 'a value with a trailing space that is long enough to need folding past eighty
    columns '
  unicode: héllo wörld ünïcödé text that is long enough to need folding past the eighty
    columns limit
kind: ConfigMap
metadata:
  annotations:
    x.io/kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: value of a
      long key annotation with spaces that should be folded as well
  name: edge
"""


def test_yaml_folds_long_scalars_as_go_yaml():
    assert to_yaml(EDGE) == EDGE_YAML
    assert to_yaml({"status": {"containerStatuses": [{"containerID": "containerd://" + "f" * 64}]}}) == (
        "status:\n  containerStatuses:\n  - containerID: containerd://" + "f" * 64 + "\n")


def test_yaml_single_quotes_what_cannot_be_plain_as_go_yaml():
    """go-yaml (kubectl -o yaml) single-quotes a string that cannot be plain, doubling its quotes,
    and folds it at a space past column 80; double quotes only for strings read as other types."""
    from k8semu.cli.printing import to_yaml

    msg = "Node didn't have enough resource: cpu, requested: 100000, used: 1950, capacity: 3800"
    assert to_yaml({"conditions": [{"message": msg, "reason": "Deferred"}], "flag": "true", "x": "a: b"}) == (
        "conditions:\n"
        "- message: 'Node didn''t have enough resource: cpu, requested: 100000, used: 1950,\n"
        "    capacity: 3800'\n"
        "  reason: Deferred\n"
        "flag: \"true\"\n"
        "x: 'a: b'\n")
