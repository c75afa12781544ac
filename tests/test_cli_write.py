"""The k8semu commands that change the cluster, as a kubectl user sees them: the lines printed,
the exit codes, and what the cluster does afterwards.

The ``k`` fixture (a :class:`conftest.Kubectl` on a copy of the prepared lab cluster) is
in ``conftest.py``, shared with ``test_cli_rollout.py`` and ``test_cli_nodes.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest


WEB = str(Path(__file__).resolve().parents[1] / "manifests" / "web.yaml")


# --------------------------------------------------------------------------- resolving targets

def test_target_errors_are_kubectls(k):
    assert k("delete", "foo", "x")[1:] == ([], ['error: the server doesn\'t have a resource type "foo"'])
    assert k("delete", "deployment")[2] == ["error: resource(s) were provided, but no name was specified"]
    rc, _, err = k("delete")
    assert rc == 1 and err[0] == "error: You must provide one or more resources by argument or filename."
    assert err[-1] == "   '<resource>'"
    assert k("delete", "deploy", "svc/web")[2] == [
        "error: there is no need to specify a resource type as a separate argument when passing arguments in "
        "resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of "
        "'kubectl get resource resource/<resource_name>'"]


# --------------------------------------------------------------------------- delete

def test_delete_missing_pod_is_notfound(k):
    assert k("delete", "pod", "x") == (1, [], ['Error from server (NotFound): pods "x" not found'])
    assert k("delete", "pod", "x", "--ignore-not-found") == (0, [], [])


def test_delete_pod_brings_a_replacement_with_a_new_name(k):
    before = sorted(p["metadata"]["name"] for p in k.pods())
    assert len(before) == 2
    rc, out, _ = k("delete", "pod", before[0], "--for", "30s")
    assert (rc, out) == (0, [f'pod "{before[0]}" deleted'])
    after = sorted(p["metadata"]["name"] for p in k.pods())
    assert len(after) == 2 and before[0] not in after and before[1] in after


def test_delete_file_removes_everything_pods_included(k):
    rc, out, err = k("delete", "-f", WEB)
    assert (rc, out, err) == (0, ['deployment.apps "web" deleted', 'service "web" deleted'], [])
    k("advance", "60s")
    assert k.objects("deployments") == [] and k.objects("replicasets") == []
    assert [s["metadata"]["name"] for s in k.objects("services")] == ["kubernetes"]
    assert k.pods(live_only=False) == []
    rc, _, err = k("delete", "-f", WEB)
    assert rc == 1 and err == [
        f'Error from server (NotFound): error when deleting "{WEB}": deployments.apps "web" not found',
        f'Error from server (NotFound): error when deleting "{WEB}": services "web" not found']


def test_delete_by_selector_and_force(k):
    rc, out, err = k("delete", "pods", "-l", "app=web", "--force", "--grace-period=0", "--wait=false")
    assert rc == 0 and len(out) == 2 and all(line.endswith(" force deleted") for line in out)
    assert err == ["Warning: Immediate deletion does not wait for confirmation that the running resource has "
                   "been terminated. The resource may continue to run on the cluster indefinitely."]
    assert k("delete", "pods", "-l", "app=nothing") == (0, ["No resources found"], [])


# --------------------------------------------------------------------------- create / replace

def test_create_from_file_and_already_exists(k):
    rc, _, err = k("create", "-f", WEB)
    assert rc == 1 and err == [
        f'Error from server (AlreadyExists): error when creating "{WEB}": deployments.apps "web" already exists',
        f'Error from server (AlreadyExists): error when creating "{WEB}": services "web" already exists']


def test_create_generators_make_kubectls_objects(k):
    assert k("create", "deployment", "api", "--image=registry.k8s.io/pause:3.9", "--replicas", "2",
             "--port", "8080") == (0, ["deployment.apps/api created"], [])
    assert k("create", "namespace", "team") == (0, ["namespace/team created"], [])
    assert k("create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=b=2") == (
        0, ["configmap/cfg created"], [])
    assert k("create", "job", "once", "--image=busybox", "--", "echo", "hi") == (0, ["job.batch/once created"], [])
    d = next(x for x in k.objects("deployments") if x["metadata"]["name"] == "api")
    assert d["metadata"]["labels"] == {"app": "api"}
    assert d["spec"]["selector"] == {"matchLabels": {"app": "api"}} and d["spec"]["replicas"] == 2
    c = d["spec"]["template"]["spec"]["containers"][0]
    assert (c["name"], c["image"], c["ports"][0]["containerPort"]) == ("pause", "registry.k8s.io/pause:3.9", 8080)
    assert next(x for x in k.objects("configmaps") if x["metadata"]["name"] == "cfg")["data"] == {"a": "1", "b": "2"}
    j = k.objects("jobs")[0]["spec"]["template"]["spec"]
    assert (j["containers"][0]["name"], j["containers"][0]["command"], j["restartPolicy"]) == (
        "once", ["echo", "hi"], "Never")
    assert k("create", "configmap", "bad", "--from-literal=x")[2] == [
        "error: invalid literal source x, expected key=value"]


def test_replace(k, tmp_path):
    doc = tmp_path / "cm.yaml"
    doc.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '2'\n")
    assert k("replace", "-f", str(doc)) == (
        1, [], [f'Error from server (NotFound): error when replacing "{doc}": configmaps "cfg" not found'])
    k("create", "-f", str(doc))
    doc.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '3'\n")
    assert k("replace", "-f", str(doc)) == (0, ["configmap/cfg replaced"], [])
    assert next(c for c in k.objects("configmaps") if c["metadata"]["name"] == "cfg")["data"] == {"a": "3"}


# --------------------------------------------------------------------------- --validate

MIXED = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: one}
data: {a: b}
colour: blue
---
metadata: {name: kindless}
data: {a: b}
---
- not an object
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two}
"""
STOP = "if you choose to ignore these errors, turn validation off with --validate=false"


def _configmaps(k) -> dict:
    return {c["metadata"]["name"]: c for c in k.objects("configmaps") if c["metadata"]["name"] in ("one", "two")}


def test_apply_validates_strictly_by_default(k, tmp_path):
    f = tmp_path / "mixed.yaml"
    f.write_text(MIXED)
    for flags in ([], ["--validate"], ["--validate=true"], ["--validate=strict"]):
        rc, out, err = k("apply", "-f", str(f), "-q", *flags)
        assert (rc, out) == (1, []), flags
        assert err == [
            f'Error from server (BadRequest): error when creating "{f}": ConfigMap in version "v1" cannot be '
            'handled as a ConfigMap: strict decoding error: unknown field "colour"',
            f'error: error validating "{f}": error validating data: [apiVersion not set, kind not set]; {STOP}',
        ], flags
    assert _configmaps(k) == {}


@pytest.mark.parametrize("flag", ["--validate=false", "--validate=ignore"])
def test_apply_validate_false_skips_client_validation_as_its_hint_says(k, tmp_path, flag):
    f = tmp_path / "mixed.yaml"
    f.write_text(MIXED)
    rc, out, err = k("apply", "-f", str(f), "-q", flag)
    # the rest of the file is read; documents that are no objects are kubectl's decode errors
    assert (rc, out) == (1, ["configmap/one created", "configmap/two created"])
    assert err == [
        f'error: unable to decode "{f}": Object \'Kind\' is missing in \'{{"data":{{"a":"b"}},'
        '"metadata":{"name":"kindless"}}\'',
        f'error: unable to decode "{f}": json: cannot unmarshal array into Go value of type unstructured.detector',
    ]
    assert set(_configmaps(k)) == {"one", "two"}


def test_apply_validate_warn_warns_about_unknown_fields_and_applies(k, tmp_path):
    f = tmp_path / "cm.yaml"
    f.write_text(MIXED.split("---")[0])
    assert k("apply", "-f", str(f), "-q", "--validate=warn") == (
        0, ["configmap/one created"], ['Warning: unknown field "colour"'])


def test_validate_warn_and_ignore_store_no_unknown_field(k, tmp_path):
    """As kube-apiserver decodes into Go structs: the unknown fields are dropped, so later
    writes (label, patch) and a replay of the log work (they failed on the stored fields)."""
    f = tmp_path / "pod.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: unk}\nspec:\n"
                 "  containers: [{name: a, image: busybox, command: [sleep, '3600'], foo: bar}]\n  bogus: 1\n")
    assert k("apply", "-f", str(f), "-q", "--validate=warn") == (0, ["pod/unk created"], [
        'Warning: unknown field "spec.containers[0].foo"', 'Warning: unknown field "spec.bogus"'])
    pod = next(p for p in k.pods() if p["metadata"]["name"] == "unk")
    assert "bogus" not in pod["spec"] and "foo" not in pod["spec"]["containers"][0]
    assert k("label", "pod", "unk", "a=b")[:2] == (0, ["pod/unk labeled"])
    assert k("replay", str(k.path))[0] == 0


def test_create_and_replace_take_validate_too(k, tmp_path):
    f = tmp_path / "cm.yaml"
    f.write_text(MIXED.split("---")[0])
    rc, _, err = k("create", "-f", str(f))
    assert rc == 1 and err[0].endswith('strict decoding error: unknown field "colour"')
    assert k("create", "-f", str(f), "--validate=false") == (0, ["configmap/one created"], [])
    assert k("replace", "-f", str(f), "--validate=warn") == (
        0, ["configmap/one replaced"], ['Warning: unknown field "colour"'])
    rc, _, err = k("replace", "-f", str(f))
    assert rc == 1 and err[0].endswith('strict decoding error: unknown field "colour"')


def test_commands_without_validate_do_not_name_it(k, tmp_path):
    # kubectl delete -f has no --validate and no client-side validation: a kind-less document
    # is its decode error, not a hint at a flag delete does not have
    f = tmp_path / "kindless.yaml"
    f.write_text("metadata: {name: kindless}\n")
    assert k("delete", "-f", str(f)) == (
        1, [], [f'error: unable to decode "{f}": Object \'Kind\' is missing in \'{{"metadata":{{"name":"kindless"}}}}\''])


# --------------------------------------------------------------------------- scale / patch

def test_scale_to_four_then_four_pods(k):
    assert k("scale", "deployment", "web", "--replicas=4", "--for", "30s") == (0, ["deployment.apps/web scaled"], [])
    assert len(k.pods()) == 4
    d = k.objects("deployments")[0]
    assert (d["spec"]["replicas"], d["status"]["availableReplicas"]) == (4, 4)
    assert k("scale", "deploy/web", "--replicas=2", "--current-replicas=3")[2] == [
        "error: Expected replicas to be 3, was 4"]
    assert k("scale", "deploy", "nope", "--replicas=1")[2] == [  # kubectl 1.33's words
        'error: no objects passed to scale deployments.apps "nope" not found']


def test_patch_and_no_change(k):
    assert k("patch", "deployment", "web", "-p", '{"spec":{"replicas":3}}') == (
        0, ["deployment.apps/web patched"], [])
    assert k("patch", "deployment/web", "-p", '{"spec":{"replicas":3}}') == (
        0, ["deployment.apps/web patched (no change)"], [])
    assert k("patch", "svc", "web", "--type", "merge", "-p", "metadata: {labels: {tier: front}}") == (
        0, ["service/web patched"], [])
    web = next(s for s in k.objects("services") if s["metadata"]["name"] == "web")
    assert web["metadata"]["labels"] == {"tier": "front"}


# --------------------------------------------------------------------------- label / annotate

def test_label_overwrite_and_remove(k):
    assert k("label", "deployment", "web", "tier=front") == (0, ["deployment.apps/web labeled"], [])
    assert k("label", "deployment", "web", "tier=back") == (
        1, [], ["error: 'tier' already has a value (front), and --overwrite is false"])
    assert k("label", "deployment", "web", "tier=back", "--overwrite") == (0, ["deployment.apps/web labeled"], [])
    assert k("label", "deployment", "web", "tier=back") == (0, ["deployment.apps/web not labeled"], [])
    assert k("label", "deployment", "web", "tier-")[1] == ["deployment.apps/web unlabeled"]  # kubectl 1.33: the object got shorter
    assert "tier" not in (k.objects("deployments")[0]["metadata"].get("labels") or {})
    rc, out, _ = k("label", "pods", "--all", "canary=no")
    assert rc == 0 and len(out) == 2 and all(line.startswith("pod/web-") and line.endswith(" labeled") for line in out)


def test_annotate(k):
    assert k("annotate", "svc", "web", "owner=team-a") == (0, ["service/web annotated"], [])
    assert k("annotate", "svc", "web", "owner=team-b") == (
        1, [], ["error: --overwrite is false but found the following declared annotation(s): "
                "'owner' already has a value (team-a)"])
    assert k("annotate", "svc", "web", "owner-") == (0, ["service/web annotated"], [])


def test_apply_creates_a_namespace_and_what_goes_in_it_from_one_file(k, tmp_path):
    # kubectl applies documents in order, so the ConfigMap's Namespace exists when it is sent;
    # a namespace nothing creates still fails, naming it, and the exit code says so
    f = tmp_path / "ns.yaml"
    f.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: team}\ndata: {a: b}\n---\n"
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg2, namespace: nope}\n")
    rc, out, err = k("apply", "-f", str(f), "-q")
    assert rc == 1
    assert out[:2] == ["namespace/team created", "configmap/cfg created"]
    assert err == [f'Error from server (NotFound): error when creating "{f}": namespaces "nope" not found']
    assert k("get", "configmap", "cfg", "-n", "team", "-o", "name")[1] == ["configmap/cfg"]


def test_apply_dry_run_lines_are_kubectls(k, tmp_path):
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry}\ndata: {a: b}\n")
    rc, out, _ = k("apply", "-f", str(cm), "--dry-run=client")
    assert rc == 0 and out[0] == "configmap/dry created (dry run)"  # kubectl: not "(client dry run)"
    rc, out, _ = k("apply", "-f", str(cm), "--dry-run=server")
    assert rc == 0 and out[0] == "configmap/dry created (server dry run)"


def test_apply_refuses_a_document_without_a_name_as_kubectl(k, tmp_path):
    """kubectl's own refusals, before any request (checked against kubectl 1.33 through serve)."""
    gen, anon = tmp_path / "g.yaml", tmp_path / "n.yaml"
    gen.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n")
    anon.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n")
    assert k("apply", "-f", str(gen)) == (1, [], ["error: from x-: cannot use generate name with apply"])
    assert k("apply", "-f", str(anon), "--server-side") == (1, [], ["error: resource name may not be empty"])
    assert k("apply", "-f", str(anon)) == (1, [], [
        "error: error when retrieving current configuration of:",
        'Resource: "/v1, Resource=configmaps", GroupVersionKind: "/v1, Kind=ConfigMap"',
        'Name: "", Namespace: "default"',
        f'from server for: "{anon}": resource name may not be empty'])
