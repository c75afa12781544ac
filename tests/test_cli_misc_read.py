"""``events``, ``logs``, ``top``, ``wait``, ``explain-scheduling`` and the printers' JSONPath/YAML."""

from __future__ import annotations

from test_cli_get import k, lab, lab_file, pod_names  # noqa: F401  (fixtures)

from k8semu.api.jsonpath import jsonpath_text
from k8semu.cli.printing import to_json, to_yaml
from k8semu.sim.cluster import Cluster


def test_events_table(capsys, lab):
    names = pod_names(capsys, lab)
    code, out, _ = k(capsys, lab, "events", "--for", f"pod/{names[0]}")
    lines = out.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [l.split()[2] for l in lines[1:]] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    assert lines[1].startswith("30s         Normal   Scheduled   Pod/")
    code, out, err = k(capsys, lab, "events", "--types=Warning")
    assert out == "" and err == "No events found in default namespace.\n"


def _make_echo_pod(lab):
    c = Cluster.open(lab)
    c.api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "echo"},
                          "spec": {"containers": [{"name": "c", "image": "busybox",
                                                   "command": ["sh", "-c", "echo one; echo two; sleep 3600"]}]}},
                 namespace="default")
    c.close()


def test_logs_are_derived_from_the_program(capsys, lab):
    _make_echo_pod(lab)
    code, out, err = k(capsys, lab, "logs", "echo")  # not bound to a node yet: an empty log, as upstream
    assert (code, out, err) == (0, "", "")
    assert k(capsys, lab, "wait", "--for=condition=Ready", "pod/echo", "--timeout=60s")[1] == \
        "pod/echo condition met\n"
    code, out, _ = k(capsys, lab, "logs", "echo")
    assert (code, out) == (0, "one\ntwo\n")
    _, out, _ = k(capsys, lab, "logs", "echo", "--tail", "1", "--timestamps")
    assert out.endswith("Z two\n") and out.startswith("2025-01-01T00:00:")
    code, _, err = k(capsys, lab, "logs", "echo", "--previous")
    assert err == 'Error from server (BadRequest): previous terminated container "c" in pod "echo" not found\n'


def test_wait_available_and_timeout(capsys, lab):
    code, out, _ = k(capsys, lab, "wait", "--for=condition=Available", "deployment/web", "--timeout=60s")
    assert (code, out) == (0, "deployment.apps/web condition met\n")
    code, out, err = k(capsys, lab, "wait", "--for=delete", "deployment/web", "--timeout=5s")
    assert code == 1 and err == "error: timed out waiting for the condition on deployments/web\n"


def test_top_pods_and_nodes(capsys, lab):
    _, out, _ = k(capsys, lab, "top", "pods")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert all(l.split()[1].endswith("m") and l.split()[2].endswith("Mi") for l in lines[1:])
    _, out, _ = k(capsys, lab, "top", "nodes")
    assert out.splitlines()[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]


def test_explain_scheduling_rederives_the_binding(capsys, lab):
    name = pod_names(capsys, lab)[0]
    _, node, _ = k(capsys, lab, "get", "pod", name, "-o", "jsonpath={.spec.nodeName}")
    code, out, _ = k(capsys, lab, "explain-scheduling", name)
    lines = out.splitlines()
    assert code == 0
    assert lines[0].startswith(f"pod default/{name}: bound to {node} at revision ")
    assert lines[1] == ("  control-plane: filtered by TaintToleration (UnschedulableAndUnresolvable): "
                        "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }")
    assert all("feasible; total" in l for l in lines[2:5])
    assert lines[-1].startswith("chosen: ")


def test_jsonpath_dialect():
    obj = {"items": [{"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                     {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}]}
    assert jsonpath_text("{.items[*].metadata.name}", obj) == "a b"
    assert jsonpath_text("{.items[-1].metadata.name}", obj) == "b"
    assert jsonpath_text("{..name}", obj) == "a b"
    assert jsonpath_text('{.items[?(@.status.conditions[0].status=="True")].metadata.name}', obj) == "a"
    assert jsonpath_text('{range .items[*]}[{.metadata.name}]{end}', obj) == "[a][b]"
    assert jsonpath_text("{.items[0].metadata}", obj) == '{"name":"a"}'
    assert jsonpath_text("{.missing}", obj) == ""


def test_yaml_and_json_styles():
    obj = {"b": ["x", {"k": "80"}], "a": "", "c": "yes", "d": "multi\nline\n"}
    assert to_yaml(obj) == 'a: ""\nb:\n- x\n- k: "80"\nc: "yes"\nd: |\n  multi\n  line\n'
    assert to_json({"b": 1, "a": "<x>"}) == '{\n    "a": "\\u003cx\\u003e",\n    "b": 1\n}\n'
