"""``k8semu logs``: which run of a container is shown, as the kubelet chooses it.

Upstream's ``validateContainerLogStatus``: a container waiting to restart
(CrashLoopBackOff) shows its last terminated run; only a container that never
ran is "waiting to start"; a pod not bound to a node has an empty log.
"""

from __future__ import annotations


def test_logs_of_a_crash_looping_container_are_its_last_run(kf):
    rc, out, _ = kf("get", "pod", "crasher")
    assert out[1].split()[2] == "CrashLoopBackOff"
    assert kf("logs", "crasher") == (0, ["starting", "fatal: cannot connect to database"], [])
    assert kf("logs", "crasher", "--previous") == (0, ["starting", "fatal: cannot connect to database"], [])
    rc, out, _ = kf("logs", "crasher", "--timestamps", "--tail", "1")
    assert rc == 0 and out[0].endswith("Z fatal: cannot connect to database")


def test_logs_of_a_container_whose_image_cannot_be_pulled(kf):
    pods = [p["metadata"]["name"] for p in kf.objects("pods") if p["metadata"]["name"].startswith("bad-image-")]
    rc, out, err = kf("logs", "deployment/bad-image")
    reason = kf("get", "pod", pods[0], "-o", "jsonpath={.status.containerStatuses[0].state.waiting.reason}")[1][0]
    words = {"ImagePullBackOff": "trying and failing to pull image", "ErrImagePull": "image can't be pulled"}[reason]
    assert (rc, out) == (1, [])
    assert err == [f'Error from server (BadRequest): container "nginx" in pod "{pods[0]}" is waiting to start: '
                   f'{words}']
    rc, _, err = kf("logs", pods[0], "--previous")
    assert rc == 1 and err == [f'Error from server (BadRequest): previous terminated container "nginx" in pod '
                               f'"{pods[0]}" not found']


def test_logs_of_an_unscheduled_pod_are_empty(kf):
    assert kf("logs", "too-big") == (0, [], [])


def test_logs_of_a_container_being_created(kf, tmp_path):
    manifest = tmp_path / "slow.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\n"
                        "spec:\n  containers: [{name: app, image: 'nginx:1.27'}]\n")
    assert kf("apply", "-f", str(manifest), "--for", "1s", "-q")[0] == 0
    assert kf("logs", "slow") == (1, [], ['Error from server (BadRequest): container "app" in pod "slow" is waiting '
                                          'to start: ContainerCreating'])


# --------------------------------------------------------------------------- which of a workload's pods

def _pod(name, node="node-1", phase="Running", ready=None, restarts=0, created="2025-01-01T00:00:00Z"):
    conditions = [] if ready is None else [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": ready or created}]
    return {"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


def test_logs_and_exec_order_a_workloads_pods_as_kubectl_podutils():
    from k8semu.cli.commands.logs import active_pods_less, by_logging_less, first_pod

    def logs_pick(*pods):
        return first_pod(list(pods), by_logging_less)["metadata"]["name"]

    def exec_pick(*pods):
        return first_pod(list(pods), lambda a, b: active_pods_less(b, a))["metadata"]["name"]

    for pick in (logs_pick, exec_pick):
        # on a node before unassigned; Running before Unknown before Pending; Ready before not
        assert pick(_pod("a", node=""), _pod("b")) == "b"
        assert pick(_pod("a", phase="Pending"), _pod("b", phase="Unknown"), _pod("c")) == "c"
        assert pick(_pod("a", phase="Pending"), _pod("b", phase="Unknown")) == "b"
        assert pick(_pod("a", ready=False), _pod("b", ready="2025-01-01T00:00:09Z")) == "b"
        # ready for longest first
        assert pick(_pod("a", ready="2025-01-01T00:06:01Z"), _pod("b", ready="2025-01-01T00:00:05Z")) == "b"
        # ties keep the server's (name) order
        assert pick(_pod("a"), _pod("b")) == "a"
    # then logs prefers more restarts and the older pod; exec fewer restarts and the older pod
    assert logs_pick(_pod("a"), _pod("b", restarts=3)) == "b"
    assert exec_pick(_pod("a"), _pod("b", restarts=3)) == "a"
    assert logs_pick(_pod("a", created="2025-01-01T00:01:00Z"), _pod("b")) == "b"
    assert exec_pick(_pod("a", created="2025-01-01T00:01:00Z"), _pod("b")) == "b"
    # a phase podutils does not rank counts as Running for logs, as Pending for exec (a Go map's zero)
    assert logs_pick(_pod("a", phase="Pending"), _pod("b", phase="Succeeded")) == "b"
    assert exec_pick(_pod("a", phase="Succeeded"), _pod("b", phase="Unknown")) == "b"


def test_logs_of_a_deployment_after_its_node_died_use_a_live_ready_pod(k):
    """kubectl logs deployment/web picks by ``podutils.ByLogging``, not by name: never the
    Terminating pod left on a stopped node (which fails with the kubelet's dial error)."""
    before = {p["metadata"]["name"]: p for p in k.pods(live_only=False)}
    dead = before[min(before)]["spec"]["nodeName"]  # the node of the pod first by name
    assert k("node", "stop", dead)[0] == 0
    assert k("advance", "6m")[0] == 0
    pods = {p["metadata"]["name"]: p for p in k.pods(live_only=False)}
    first = pods[min(before)]  # the one first by name, picked before: evicted, stuck Terminating
    assert first["spec"]["nodeName"] == dead and first["metadata"].get("deletionTimestamp")

    def ready_since(p):
        return next(c["lastTransitionTime"] for c in p["status"]["conditions"] if c["type"] == "Ready")

    alive = [p for p in pods.values() if p["spec"]["nodeName"] != dead]
    expected = min(alive, key=lambda p: (ready_since(p), p["metadata"]["name"]))["metadata"]["name"]
    rc, out, err = k("logs", "deployment/web")
    assert (rc, err) == (0, [f"Found {len(pods)} pods, using pod/{expected}"])
    # exec (kubectl's AttachablePodForObject: ActivePods, reversed) also takes a live pod
    rc, out, err = k("exec", "deploy/web", "--", "printenv", "HOSTNAME")
    assert (rc, out, err) == (0, [expected], [])


# --------------------------------------------------------------------------- -f / --follow

def test_logs_follow_prints_up_to_the_clusters_now_and_returns(kf, tmp_path):
    """The CLI's cluster does not run while a command does: ``-f`` streams what is there and ends."""
    assert kf("logs", "-f", "crasher") == kf("logs", "crasher")
    manifest = tmp_path / "ticker.yaml"
    manifest.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: ticker\n"
                        "  annotations:\n    k8semu.io/behaviour: |\n      log one\n      sleep 20s\n      log two\n"
                        "spec:\n  containers: [{name: app, image: 'busybox:1.36'}]\n")
    assert kf("apply", "-f", str(manifest), "--for", "5s", "-q")[0] == 0
    assert kf("logs", "--follow", "ticker") == (0, ["one"], [])
    assert kf("advance", "30s")[0] == 0
    assert kf("logs", "-f", "ticker") == (0, ["one", "two"], [])
    assert kf("logs", "-f", "ticker", "--tail", "1") == (0, ["two"], [])


def test_logs_follow_from_a_stopped_node_asks_the_kubelet_to_follow(k):
    pod = sorted(p["metadata"]["name"] for p in k.pods())[0]
    node = next(p["spec"]["nodeName"] for p in k.pods() if p["metadata"]["name"] == pod)
    assert k("node", "stop", node)[0] == 0
    rc, out, err = k("logs", "-f", pod)
    assert (rc, out) == (1, [])
    assert err[0].startswith("Error from server: Get \"https://") and "follow=true" in err[0]
    rc, _, err = k("logs", pod)
    assert rc == 1 and "follow=true" not in err[0]
