"""``k8semu cordon|uncordon|drain|taint|advance|node stop|start`` as kubectl users see them."""

from __future__ import annotations


import pytest

from k8semu.cli.durations import go_duration
from k8semu.sim.components import MACHINES_CONFIGMAP, MACHINES_NAMESPACE, stopped_nodes
from k8semu.cli.commands.taint import parse_taints
from k8semu.cli.targets import TargetError
from k8semu.timeline import open_log, replay


def _node_of_a_web_pod(k) -> str:
    return sorted(p["spec"]["nodeName"] for p in k.pods())[0]


def _node(k, name: str) -> dict:
    return next(n for n in k.objects("nodes", None) if n["metadata"]["name"] == name)


def _machines(k) -> dict:
    """The stopped machines as the log records them (the ConfigMap ``kube-system/k8semu-machines``)."""
    cm = next(c for c in k.objects("configmaps", MACHINES_NAMESPACE) if c["metadata"]["name"] == MACHINES_CONFIGMAP)
    return cm.get("data") or {}


def test_cordon_drain_uncordon_moves_the_pods(k):
    node = _node_of_a_web_pod(k)
    on_node = sorted(p["metadata"]["name"] for p in k.pods() if p["spec"]["nodeName"] == node)
    assert k("cordon", node) == (0, [f"node/{node} cordoned"], [])
    assert k("cordon", node) == (0, [f"node/{node} already cordoned"], [])
    assert _node(k, node)["spec"]["unschedulable"] is True
    rc, out, err = k("drain", node, "--ignore-daemonsets", "--for", "30s")
    assert (rc, err) == (0, [])
    assert out == ([f"node/{node} already cordoned"] + [f"evicting pod default/{p}" for p in on_node]
                   + [f"pod/{p} evicted" for p in on_node] + [f"node/{node} drained"])
    pods = k.pods()
    assert len(pods) == 2 and all(p["spec"]["nodeName"] != node for p in pods)
    assert k("uncordon", node) == (0, [f"node/{node} uncordoned"], [])
    assert "unschedulable" not in _node(k, node)["spec"]
    assert k("uncordon", node) == (0, [f"node/{node} already uncordoned"], [])
    assert k("cordon", "nope") == (1, [], ['Error from server (NotFound): nodes "nope" not found'])


def test_drain_refuses_bare_pods_without_force(k, tmp_path):
    node = _node_of_a_web_pod(k)
    bare = tmp_path / "bare.yaml"
    bare.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bare\nspec:\n"
                    f"  nodeName: {node}\n  containers:\n  - name: c\n    image: busybox\n")
    k("apply", "-f", str(bare), "-q")
    rc, out, err = k("drain", node)
    assert rc == 1 and out == [f"node/{node} cordoned"]
    why = ("cannot delete cannot delete Pods that declare no controller (use --force to override): "
           "default/bare")
    assert err == [f'error: unable to drain node "{node}" due to error: {why}, continuing command...',
                   "There are pending nodes to be drained:", f" {node}", f"error: {why}"]
    rc, out, err = k("drain", node, "--force", "--for", "30s")
    assert rc == 0 and out[-1] == f"node/{node} drained" and "pod/bare evicted" in out
    assert err == ["Warning: deleting Pods that declare no controller: default/bare"]


def test_drain_retries_while_a_budget_forbids(k, tmp_path):
    node = _node_of_a_web_pod(k)
    pdb = tmp_path / "pdb.yaml"
    pdb.write_text("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n"
                   "spec:\n  minAvailable: 2\n  selector:\n    matchLabels:\n      app: web\n")
    k("apply", "-f", str(pdb), "-q", "--for", "5s")
    rc, out, err = k("drain", node, "--timeout", "12s")
    victim = sorted(p["metadata"]["name"] for p in k.pods() if p["spec"]["nodeName"] == node)[0]
    retry = (f'error when evicting pods/"{victim}" -n "default" (will retry after 5s): '
             "Cannot evict pod as it would violate the pod's disruption budget.")
    assert rc == 1 and out[1] == f"evicting pod default/{victim}"
    assert err[:3] == [retry] * 3
    assert err[-1] == "error: drain did not complete within 12s"


def test_taint_and_untaint(k):
    assert k("taint", "nodes", "node-1", "dedicated=web:NoSchedule") == (0, ["node/node-1 tainted"], [])
    assert _node(k, "node-1")["spec"]["taints"] == [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    assert k("taint", "nodes", "node-1", "dedicated=db:NoSchedule") == (
        1, [], ["error: node node-1 already has dedicated taint(s) with same effect(s) and "
                "--overwrite is false"])
    assert k("taint", "nodes", "node-1", "dedicated=db:NoSchedule", "--overwrite") == (
        0, ["node/node-1 modified"], [])
    assert k("taint", "node/node-1", "dedicated:NoSchedule-") == (0, ["node/node-1 untainted"], [])
    assert "taints" not in _node(k, "node-1")["spec"]
    assert k("taint", "nodes", "node-1", "dedicated-") == (
        1, [], ['error: taint "dedicated" not found'])
    assert k("taint", "pods", "x", "a=b:NoSchedule")[2] == [
        "error: invalid resource type pods, only node types are supported"]


def test_noexecute_taint_evicts_and_pods_land_elsewhere(k):
    node = _node_of_a_web_pod(k)
    assert k("taint", "nodes", node, "maintenance:NoExecute", "--for", "30s")[1] == [f"node/{node} tainted"]
    pods = k.pods()
    assert len(pods) == 2 and all(p["spec"]["nodeName"] != node for p in pods)


def test_node_stop_then_advance_node_unknown_pods_replaced(k):
    node = _node_of_a_web_pod(k)
    assert k("node", "stop", node) == (0, [f"node/{node} stopped"], [])
    assert _machines(k) == {node: "stopped"}
    c = k.api()
    try:
        assert stopped_nodes(c) == {node}
    finally:
        c.close()
    rc, out, _ = k("advance", "6m")
    assert rc == 0 and out[0].startswith("advanced 6m0s: virtual time is now 6m")
    ready = next(x for x in _node(k, node)["status"]["conditions"] if x["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
    live = k.pods()
    assert len(live) == 2 and all(p["spec"]["nodeName"] != node for p in live)
    assert k("node", "start", node) == (0, [f"node/{node} started"], [])
    # start settles: the kubelet is back and the node lifecycle controller lifted its taints
    ready = next(x for x in _node(k, node)["status"]["conditions"] if x["type"] == "Ready")
    assert ready["status"] == "True" and _machines(k) == {}
    assert not any(t["key"].startswith("node.kubernetes.io/") for t in _node(k, node)["spec"].get("taints") or ())


def _node_names(k) -> list[str]:
    rc, out, err = k("get", "nodes", "-o", "name")
    assert (rc, err) == (0, [])
    return out


def _ready(k, node: str) -> str:
    return next(x["status"] for x in _node(k, node)["status"]["conditions"] if x["type"] == "Ready")


def test_deleted_node_stays_deleted_and_podgc_collects_its_pods(k):
    node = _node_of_a_web_pod(k)
    on_node = sorted(p["metadata"]["name"] for p in k.pods() if p["spec"]["nodeName"] == node)
    # left to settle, the command would run until podgc's 40 s quarantine ends (the EndpointSlice
    # controller retries the pods on the missing node until then, as upstream): stop it at 30 s
    assert k("delete", "node", node, "--for", "30s") == (0, [f'node "{node}" deleted'], [])
    # within the 40 s quarantine the pods bound to the missing node are kept ...
    assert sorted(p["metadata"]["name"] for p in k.pods() if p["spec"]["nodeName"] == node) == on_node
    # the kubelet runs on (it registered once, in an earlier command): it does not recreate its Node,
    # neither in this command nor in the next ones, and its Lease (collected with the Node) stays gone
    assert f"node/{node}" not in _node_names(k)
    assert node not in {x["metadata"]["name"] for x in k.objects("leases", "kube-node-lease")}
    assert k("advance", "1m")[0] == 0
    # ... then the pod garbage collector deletes them and their ReplicaSet replaces them elsewhere
    assert f"node/{node}" not in _node_names(k)
    pods = k.pods(live_only=False)
    assert all(p["spec"].get("nodeName") != node for p in pods)
    assert not {p["metadata"]["name"] for p in pods} & set(on_node)
    assert sum(p["status"].get("phase") == "Running" for p in k.pods()) == 2
    not_found = f'Error from server (NotFound): nodes "{node}" not found'
    assert k("get", "node", node) == (1, [], [not_found])
    assert k("describe", "node", node) == (1, [], [not_found])
    # the machine is still running, so starting it changes nothing; a reboot registers the Node again
    assert k("node", "start", node) == (0, [f"node/{node} already started"], [])
    assert f"node/{node}" not in _node_names(k)
    assert k("node", "stop", node) == (0, [f"node/{node} stopped"], [])
    assert k("node", "start", node, "--for", "20s") == (0, [f"node/{node} started"], [])
    assert f"node/{node}" in _node_names(k) and _ready(k, node) == "True"


def test_stopped_then_deleted_node_stays_stopped_until_started(k):
    node = _node_of_a_web_pod(k)
    old_uid = _node(k, node)["metadata"]["uid"]
    assert k("node", "stop", node) == (0, [f"node/{node} stopped"], [])
    assert k("node", "stop", node) == (0, [f"node/{node} already stopped"], [])
    assert k("delete", "node", node) == (0, [f'node "{node}" deleted'], [])
    assert k("advance", "1m")[0] == 0
    assert f"node/{node}" not in _node_names(k)
    assert _machines(k) == {node: "stopped"}  # the machine outlives its Node
    assert all(p["spec"]["nodeName"] != node for p in k.pods(live_only=False))
    assert len(k.pods()) == 2
    assert k("advance", "1m")[0] == 0
    assert f"node/{node}" not in _node_names(k)
    # starting the machine boots a fresh kubelet, which registers a new Node at once
    assert k("node", "start", node) == (0, [f"node/{node} started"], [])
    assert f"node/{node}" in _node_names(k)
    assert k("advance", "20s")[0] == 0
    assert _ready(k, node) == "True"
    assert _node(k, node)["metadata"]["uid"] != old_uid and _machines(k) == {}
    assert k("node", "start", node) == (0, [f"node/{node} already started"], [])
    # every command of this history re-executes record for record
    log = open_log(k.path)
    assert replay(log).identical


def test_node_stop_start_of_an_unknown_machine(k):
    not_found = 'Error from server (NotFound): nodes "nope" not found'
    assert k("node", "stop", "nope") == (1, [], [not_found])
    assert k("node", "start", "nope") == (1, [], [not_found])
    assert k("get", "nodes", "nope") == (1, [], [not_found])
    assert k("describe", "node", "nope") == (1, [], [not_found])


# --------------------------------------------------------------------------- pure helpers

@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (0.5, "500ms"), (1.5, "1.5s"), (30, "30s"), (300, "5m0s"), (750, "12m30s"), (3600, "1h0m0s"),
    (5430.25, "1h30m30.25s"),
])
def test_go_duration(seconds, text):
    assert go_duration(seconds) == text


def test_taint_specs():
    assert parse_taints(["a=b:NoSchedule", "c:NoExecute-", "d-"]) == (
        [{"key": "a", "value": "b", "effect": "NoSchedule"}],
        [{"key": "c", "effect": "NoExecute"}, {"key": "d"}])
    with pytest.raises(TargetError, match="invalid taint spec: a=b"):
        parse_taints(["a=b"])
    with pytest.raises(TargetError, match="invalid taint effect: Never"):
        parse_taints(["a=b:Never"])


def test_crash_back_off_carries_on_across_commands(tmp_path):
    # the kubelet's crash back-off (10 s doubling to 5 min) is the cluster's, not one command's:
    # three `advance 5m` restart a crash-looping container as often as one `advance 15m`
    from k8semu.cli.main import main

    pod = tmp_path / "crasher.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: crasher}\nspec:\n  containers:\n"
                   "  - {name: app, image: 'busybox:1.37', command: [sh, -c, 'sleep 2; exit 1']}\n")

    def restarts(steps):
        log = tmp_path / f"c{len(steps)}.log"
        for argv in (["cluster", "create"], ["create", "-f", str(pod)], *[["advance", s] for s in steps]):
            assert main(["--cluster", str(log), *argv]) == 0
        from k8semu.timeline import open_log, state_at

        view = open_log(log)
        st = state_at(view, view.revision).get("pods", "crasher", namespace="default")["status"]
        return st["containerStatuses"][0]["restartCount"]

    assert restarts(["5m", "5m", "5m"]) == restarts(["15m"])


def test_logs_and_exec_of_a_pod_on_a_stopped_machine_fail_dialing_its_kubelet(k):
    # kube-apiserver proxies logs and exec to the node's kubelet, which a powered-off machine
    # does not answer: kubectl shows the dial error, without a reason, and exits 1
    node = _node_of_a_web_pod(k)
    pod = next(p["metadata"]["name"] for p in k.pods() if p["spec"]["nodeName"] == node)
    ip = next(a["address"] for a in _node(k, node)["status"]["addresses"] if a["type"] == "InternalIP")
    assert k("node", "stop", node)[0] == 0
    dial = f"dial tcp {ip}:10250: i/o timeout"
    assert k("logs", pod, "--tail", "5") == (1, [], [
        f'Error from server: Get "https://{node}:10250/containerLogs/default/{pod}/nginx?tailLines=5": {dial}'])
    assert k("exec", pod, "--", "true") == (1, [], [f"Error from server: error dialing backend: {dial}"])
