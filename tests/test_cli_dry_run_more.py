"""``--dry-run`` and ``-o`` of ``create``, ``replace``, ``taint``, ``drain`` and ``rollout undo``,
as kubectl 1.33 prints them (outputs taken from kubectl 1.33 against ``k8semu serve``).

Every dry run leaves the cluster log byte for byte as it was (:func:`_dry`); the ``k`` fixture
(conftest) is a copy of the prepared lab cluster: 3 workers, Deployment and Service ``web``.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import WEB

INVALID = 'error: Invalid dry-run value (bogus). Must be "none", "server", or "client".'


def _dry(k, *argv: str) -> tuple[int, list[str], list[str]]:
    """Run ``k8semu ARGV`` and check the log did not change by a byte."""
    before = k.path.read_bytes()
    result = k(*argv)
    assert k.path.read_bytes() == before, argv
    return result


# --------------------------------------------------------------------------- create

DEPLOYMENT_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  labels:
    app: web2
  name: web2
spec:
  replicas: 1
  selector:
    matchLabels:
      app: web2
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: web2
    spec:
      containers:
      - image: nginx
        name: nginx
        resources: {}
status: {}
""".splitlines()


def test_create_deployment_client_dry_run_prints_what_kubectl_would_send(k):
    assert _dry(k, "create", "deployment", "web2", "--image=nginx", "--dry-run=client", "-o", "yaml") == (
        0, DEPLOYMENT_YAML, [])
    # -o json: kubectl holds the generated object typed, so Go's struct order (kind first), not sorted keys
    rc, out, _ = _dry(k, "create", "deployment", "web2", "--image=nginx", "--dry-run=client", "-o", "json")
    assert rc == 0 and out[:7] == ['{', '    "kind": "Deployment",', '    "apiVersion": "apps/v1",',
                                   '    "metadata": {', '        "name": "web2",',
                                   '        "creationTimestamp": null,', '        "labels": {']
    obj = json.loads("\n".join(out))
    assert list(obj["spec"]) == ["replicas", "selector", "template", "strategy"]
    assert obj["spec"]["template"]["spec"]["containers"] == [{"name": "nginx", "image": "nginx", "resources": {}}]
    assert _dry(k, "create", "deployment", "web2", "--image=nginx", "--dry-run=client", "-o", "name") == (
        0, ["deployment.apps/web2"], [])


def test_create_deployment_server_dry_run_prints_the_object_as_stored(k):
    rc, out, err = _dry(k, "create", "deployment", "web2", "--image=nginx", "--dry-run=server", "-o", "yaml")
    assert (rc, err) == (0, [])
    text = "\n".join(out)
    for line in ("  generation: 1", "  namespace: default", "  progressDeadlineSeconds: 600",
                 "      maxSurge: 25%", "        imagePullPolicy: Always", "      dnsPolicy: ClusterFirst",
                 "      creationTimestamp: null", "status: {}"):
        assert line in out, line
    assert re.search(r'^  creationTimestamp: "2025-', text, re.M) and "  uid: " in text
    assert "managedFields" not in text and "resourceVersion" not in text  # (a dry-run create has none)
    assert k.objects("deployments")[0]["metadata"]["name"] == "web"  # and only web
    assert len(k.objects("deployments")) == 1


@pytest.mark.parametrize("argv, name", [
    (["deployment", "d1", "--image=nginx"], "deployment.apps/d1"),
    (["namespace", "n1"], "namespace/n1"),
    (["configmap", "c1", "--from-literal=a=1"], "configmap/c1"),
    (["secret", "generic", "s1", "--from-literal=a=1"], "secret/s1"),
    (["service", "clusterip", "s1", "--tcp=80:8080"], "service/s1"),
    (["job", "j1", "--image=busybox"], "job.batch/j1"),
    (["cronjob", "c1", "--image=busybox", "--schedule=*/1 * * * *"], "cronjob.batch/c1"),
])
def test_create_generators_dry_run_lines(k, argv, name):
    assert _dry(k, "create", *argv, "--dry-run=client") == (0, [f"{name} created (dry run)"], [])
    assert _dry(k, "create", *argv, "--dry-run=server") == (0, [f"{name} created (server dry run)"], [])


@pytest.mark.parametrize("argv, want", [
    (["secret", "generic", "s1", "--from-literal=a=1"],
     ["apiVersion: v1", "data:", "  a: MQ==", "kind: Secret", "metadata:", "  creationTimestamp: null",
      "  name: s1", "  namespace: kube-system"]),
    (["service", "clusterip", "s1", "--tcp=80:8080"],
     ["apiVersion: v1", "kind: Service", "metadata:", "  creationTimestamp: null", "  labels:", "    app: s1",
      "  name: s1", "  namespace: kube-system", "spec:", "  ports:", "  - name: 80-8080", "    port: 80",
      "    protocol: TCP", "    targetPort: 8080", "  selector:", "    app: s1", "  type: ClusterIP", "status:",
      "  loadBalancer: {}"]),
])
def test_create_secret_and_service_take_dry_run_and_namespace(k, argv, want):
    assert _dry(k, "create", *argv, "-n", "kube-system", "--dry-run=client", "-o", "yaml") == (0, want, [])


def test_create_from_file_dry_run(k):
    # the manifest's objects as written, each given its namespace; yaml documents separated by ---
    rc, out, err = _dry(k, "create", "-f", WEB, "--dry-run=client", "-o", "yaml")
    assert (rc, err) == (0, [])
    assert out[:5] == ["apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: web", "  namespace: default"]
    assert out.count("---") == 1 and out[out.index("---") + 1:out.index("---") + 6] == [
        "apiVersion: v1", "kind: Service", "metadata:", "  name: web", "  namespace: default"]
    assert _dry(k, "create", "-f", WEB, "--dry-run=client", "-o", "name") == (
        0, ["deployment.apps/web", "service/web"], [])
    assert _dry(k, "create", "-f", WEB, "--dry-run=client") == (
        0, ["deployment.apps/web created (dry run)", "service/web created (dry run)"], [])
    # the server still says what it would refuse
    assert _dry(k, "create", "-f", WEB, "--dry-run=server") == (1, [], [
        f'Error from server (AlreadyExists): error when creating "{WEB}": deployments.apps "web" already exists',
        f'Error from server (AlreadyExists): error when creating "{WEB}": services "web" already exists'])


def test_create_with_output_but_no_dry_run_prints_the_created_object(k):
    rc, out, _ = k("create", "--for", "0s", "configmap", "cfg", "--from-literal=a=1", "-o", "json")
    obj = json.loads("\n".join(out))
    assert rc == 0 and list(obj)[:2] == ["kind", "apiVersion"] and obj["metadata"]["uid"]
    assert [c["metadata"]["name"] for c in k.objects("configmaps")] == ["cfg", "kube-root-ca.crt"]


def test_an_unknown_output_format_is_kubectls_error(k):
    assert _dry(k, "create", "deployment", "d", "--image=nginx", "--dry-run=client", "-o", "wide") == (1, [], [
        'error: unable to match a printer suitable for the output format "wide", allowed formats are: '
        "go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"])
    assert _dry(k, "create", "cm", "c", "--dry-run=client", "-o", "jsonpath={.metadata.name}") == (0, ["c"], [])


# --------------------------------------------------------------------------- the flag's values

@pytest.mark.parametrize("argv", [
    ["create", "deployment", "d", "--image=nginx"],
    ["create", "-f", WEB],
    ["replace", "-f", WEB],
    ["taint", "nodes", "node-1", "k=v:NoSchedule"],
    ["drain", "node-1"],
    ["rollout", "undo", "deployment/web"],
    # every other command with --dry-run reads it the same way
    ["apply", "-f", WEB],
    ["delete", "deployment", "web"],
    ["scale", "deployment", "web", "--replicas=3"],
    ["patch", "deployment", "web", "-p", '{"spec":{"replicas":3}}'],
    ["label", "deployment", "web", "a=b"],
    ["set", "image", "deployment/web", "nginx=nginx:1.27"],
    ["cordon", "node-1"],
])
def test_an_invalid_dry_run_value_is_kubectls_error(k, argv):
    assert _dry(k, *argv, "--dry-run=bogus") == (1, [], [INVALID])


def test_a_bare_dry_run_is_client_on_every_command(k):
    rc, out, err = _dry(k, "scale", "deployment", "web", "--replicas=3", "--dry-run")
    assert (rc, out) == (0, ["deployment.apps/web scaled (dry run)"])
    assert err == ["Warning: --dry-run is deprecated and can be replaced with --dry-run=client."]


def test_bare_and_boolean_dry_run_values_warn_as_kubectl(k):
    rc, out, err = _dry(k, "create", "configmap", "c", "--dry-run", "-o", "name")
    assert (rc, out, len(err)) == (0, ["configmap/c"], 1)
    assert err[0] == "Warning: --dry-run is deprecated and can be replaced with --dry-run=client."
    rc, out, err = _dry(k, "create", "configmap", "c", "--dry-run=true")
    assert (rc, out) == (0, ["configmap/c created (dry run)"])
    assert err[0] == "Warning: --dry-run=true is deprecated (boolean value) and can be replaced with --dry-run=client."
    # false is no dry run at all
    rc, out, err = k("create", "--for", "0s", "configmap", "c", "--dry-run=false")
    assert (rc, out) == (0, ["configmap/c created"])
    assert err[0] == "Warning: --dry-run=false is deprecated (boolean value) and can be replaced with --dry-run=none."


# --------------------------------------------------------------------------- replace

def test_replace_dry_run(k):
    assert _dry(k, "replace", "-f", WEB, "--dry-run=client") == (
        0, ["deployment.apps/web replaced (dry run)", "service/web replaced (dry run)"], [])
    assert _dry(k, "replace", "-f", WEB, "--dry-run=server") == (
        0, ["deployment.apps/web replaced (server dry run)", "service/web replaced (server dry run)"], [])
    assert _dry(k, "replace", "-f", WEB, "--dry-run=server", "-o", "name") == (
        0, ["deployment.apps/web", "service/web"], [])
    rc, out, _ = _dry(k, "replace", "-f", WEB, "--dry-run=server", "-o", "yaml")
    assert rc == 0 and "      maxSurge: 25%" in out and "  type: ClusterIP" in out and out.count("---") == 1
    assert _dry(k, "replace", "-f", WEB, "--force", "--dry-run=client") == (
        1, [], ["error: --dry-run can not be used when --force is set"])


# --------------------------------------------------------------------------- taint

def test_taint_dry_run_says_tainted_as_kubectl_without_a_dry_run_mark(k):
    # kubectl's taint does not add "(dry run)" to its line
    for mode in ("client", "server"):
        assert _dry(k, "taint", "nodes", "node-1", "k=v:NoSchedule", f"--dry-run={mode}") == (
            0, ["node/node-1 tainted"], [])
    assert _dry(k, "taint", "node", "node-1", "node-2", "k=v:NoSchedule", "--dry-run=server", "-o", "name") == (
        0, ["node/node-1", "node/node-2"], [])
    # client: the node patched here, held unstructured (keys sorted); server: the answer, typed
    rc, out, _ = _dry(k, "taint", "nodes", "node-1", "k=v:NoSchedule", "--dry-run=client", "-o", "json")
    node = json.loads("\n".join(out))
    assert rc == 0 and list(node)[:2] == ["apiVersion", "kind"]
    assert node["spec"]["taints"] == [{"effect": "NoSchedule", "key": "k", "value": "v"}]
    rc, out, _ = _dry(k, "taint", "nodes", "node-1", "k=v:NoSchedule", "--dry-run=server", "-o", "json")
    node = json.loads("\n".join(out))
    assert rc == 0 and list(node)[:2] == ["kind", "apiVersion"]
    assert node["spec"]["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    assert "taints" not in k.api().api.get("nodes", "node-1")["spec"]


# --------------------------------------------------------------------------- drain

def _web_pod_on(k, node: str) -> str:
    return next(p["metadata"]["name"] for p in k.pods() if p["spec"].get("nodeName") == node)


def test_drain_dry_run(k):
    used = [p["spec"]["nodeName"] for p in k.pods()]
    node = used[0]  # a node the lab's first web pod runs on, and one without web pods
    free = next(n for n in ("node-1", "node-2", "node-3") if n not in used)
    pod = _web_pod_on(k, node)
    assert _dry(k, "drain", node, "--ignore-daemonsets", "--dry-run=client") == (0, [
        f"node/{node} cordoned (dry run)", f"evicting pod default/{pod} (dry run)", f"node/{node} drained (dry run)"], [])
    assert _dry(k, "drain", node, "--ignore-daemonsets", "--dry-run=server") == (0, [
        f"node/{node} cordoned (server dry run)", f"evicting pod default/{pod} (server dry run)",
        f"node/{node} drained (server dry run)"], [])
    assert _dry(k, "drain", free, "--dry-run=server") == (0, [
        f"node/{free} cordoned (server dry run)", f"node/{free} drained (server dry run)"], [])
    assert _web_pod_on(k, node) == pod and not k.api().api.get("nodes", node)["spec"].get("unschedulable")


def test_drain_dry_run_still_refuses_what_drain_refuses(k, tmp_path):
    bare = tmp_path / "bare.yaml"
    bare.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\nspec:\n  nodeName: node-3\n"
                    "  containers:\n  - name: c\n    image: busybox\n    command: [sleep, '3600']\n")
    assert k("create", "-f", str(bare), "--for", "5s")[0] == 0
    rc, out, err = _dry(k, "drain", "node-3", "--dry-run=client")
    assert (rc, out) == (1, ["node/node-3 cordoned (dry run)"])
    assert err[0] == ('error: unable to drain node "node-3" due to error: cannot delete cannot delete Pods that '
                      'declare no controller (use --force to override): default/bare, continuing command...')
    assert err[-1] == ("error: cannot delete cannot delete Pods that declare no controller (use --force to "
                       "override): default/bare")


# --------------------------------------------------------------------------- rollout undo

def test_rollout_undo_dry_run(k):
    assert k("set", "image", "deployment/web", "nginx=nginx:1.31")[0] == 0
    # client: the template of the revision it would roll back to, as kubectl's rollbacker prints it
    rc, out, err = _dry(k, "rollout", "undo", "deployment/web", "--dry-run=client")
    assert (rc, err) == (0, [])
    assert out[:3] == ["deployment.apps/web Pod Template:", "  Labels:\tapp=web", "\tpod-template-hash=678b6b6dc8"]
    assert "    Image:\tnginx:1.30-alpine" in out and out[-2:] == ["  Tolerations:\t<none>", " (dry run)"]
    assert _dry(k, "rollout", "undo", "deployment/web", "--dry-run=server") == (
        0, ["deployment.apps/web rolled back (server dry run)"], [])
    assert _dry(k, "rollout", "undo", "deployment/web", "--to-revision=2", "--dry-run=server") == (0, [
        "deployment.apps/web skipped rollback (current template already matches revision 2) (server dry run)"], [])
    assert _dry(k, "rollout", "undo", "deployment/web", "--to-revision=9", "--dry-run=client") == (
        1, [], ["error: unable to find specified revision 9 in history"])
    # -o: the Deployment as read (not rolled back), typed
    assert _dry(k, "rollout", "undo", "deployment/web", "--dry-run=client", "-o", "name") == (
        0, ["deployment.apps/web"], [])
    rc, out, _ = _dry(k, "rollout", "undo", "deployment/web", "--dry-run=server", "-o", "json")
    obj = json.loads("\n".join(out))
    assert rc == 0 and list(obj)[:2] == ["kind", "apiVersion"]
    assert obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.31"
    assert obj["spec"]["template"]["metadata"]["creationTimestamp"] is None
    assert {p["spec"]["containers"][0]["image"] for p in k.pods()} == {"nginx:1.31"}


def test_rollout_undo_client_dry_run_of_a_paused_deployment_still_prints_the_template(k):
    assert k("set", "image", "deployment/web", "nginx=nginx:1.31")[0] == 0
    assert k("rollout", "pause", "deployment/web")[0] == 0
    assert _dry(k, "rollout", "undo", "deployment/web", "--dry-run=client")[1][0] == (
        "deployment.apps/web Pod Template:")
    assert _dry(k, "rollout", "undo", "deployment/web", "--dry-run=server") == (1, [], [
        "error: you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and "
        "try again"])


@pytest.mark.parametrize("argv", [
    ["create", "deployment", "d", "--image=nginx", "--dry-run=client"],
    ["apply", "-f", WEB, "--dry-run=server"],
])
def test_a_dry_run_on_a_missing_cluster_leaves_no_cluster_behind(tmp_path, capsys, argv):
    from k8semu.cli.main import main

    path = tmp_path / "none" / "c.log"
    path.parent.mkdir()
    assert main(["--cluster", str(path), *map(str, argv)]) == 0
    assert "dry run)" in capsys.readouterr().out
    assert list(path.parent.iterdir()) == []
