"""The node lifecycle controller's events, as ``kubectl describe node`` and ``events`` show them.

Upstream's node-controller records ``RegisteredNode`` when it first sees a Node,
``RemovingNode`` when one is gone, ``NodeNotReady`` on the Node when it marks
Ready Unknown, and a Warning ``NodeNotReady`` on each pod it marks not ready.
The controllers restart with every k8semu command but stand for one
controller-manager that keeps running: each Node is registered once.
"""

from __future__ import annotations


def _events(k, reason):
    return [e for e in k.objects("events") if e["reason"] == reason]


def test_stopped_node_is_registered_once_and_reported_not_ready(k):
    pods = [p for p in k.pods() if p["metadata"]["name"].startswith("web-")]
    node = pods[0]["spec"]["nodeName"]
    assert k("node", "stop", node)[0] == 0
    assert k("advance", "6m")[0] == 0
    rc, out, _ = k("describe", "node", node)
    events = out[out.index("Events:") + 3:]
    ours = [line.split(None, 4) for line in events if "node-controller" in line]
    assert [(t, r, src, msg) for t, r, _, src, msg in ours] == [
        ("Normal", "RegisteredNode", "node-controller", f"Node {node} event: Registered Node {node} in Controller"),
        ("Normal", "NodeNotReady", "node-controller", f"Node {node} status is now: NodeNotReady")]
    # 40 s after the last heartbeat (within one 5 s monitor pass): the Node, then its pods
    (nn,) = [e for e in _events(k, "NodeNotReady") if e["involvedObject"]["kind"] == "Node"]
    assert nn["source"] == {"component": "node-controller"} and nn["involvedObject"]["name"] == node
    on_node = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == node}
    warned = [e for e in _events(k, "NodeNotReady") if e["involvedObject"]["kind"] == "Pod"]
    assert {e["involvedObject"]["name"] for e in warned} == on_node
    assert all((e["type"], e["message"], e["source"]["component"]) == ("Warning", "Node is not ready", "node-controller")
               for e in warned)
    assert all(e["firstTimestamp"] == nn["firstTimestamp"] for e in warned)

    # more commands, more controller starts: still one RegisteredNode per Node
    for args in (["get", "pods"], ["advance", "30s"], ["scale", "deployment", "web", "--replicas=3"],
                 ["node", "start", node], ["advance", "1m"]):
        assert k(*args)[0] == 0
    registered = sorted((e["involvedObject"]["name"], e["count"]) for e in _events(k, "RegisteredNode"))
    assert registered == [(n, 1) for n in ("control-plane", "node-1", "node-2", "node-3")]
    assert all(e["message"] == f"Node {n} event: Registered Node {n} in Controller"
               for e in _events(k, "RegisteredNode") for n in [e["involvedObject"]["name"]])
    assert len([e for e in _events(k, "NodeNotReady") if e["involvedObject"]["kind"] == "Node"]) == 1


def test_deleted_node_is_removed_and_a_new_one_registered(k):
    assert k("delete", "node", "node-3")[1] == ['node "node-3" deleted']
    assert k("advance", "10s")[0] == 0
    (removing,) = _events(k, "RemovingNode")
    assert removing["message"] == "Node node-3 event: Removing Node node-3 from Controller"
    # the machine restarted: its kubelet registers a new Node object, registered again
    for args in (["node", "stop", "node-3"], ["node", "start", "node-3"], ["advance", "10s"]):
        assert k(*args)[0] == 0
    uids = [e["involvedObject"]["uid"] for e in _events(k, "RegisteredNode") if e["involvedObject"]["name"] == "node-3"]
    node = k.objects("nodes", namespace=None)
    assert len(uids) == 2 and uids[1] == next(n["metadata"]["uid"] for n in node if n["metadata"]["name"] == "node-3")
    assert len(_events(k, "RemovingNode")) == 1
