"""``k8semu set image`` / ``rollout status|history|undo|restart|pause|resume`` as kubectl prints them."""

from __future__ import annotations


import pytest

from k8semu.cli.commands.rollout import rollout_status, tabwrite


WAITING = 'Waiting for deployment "web" rollout to finish: '


def _images(k) -> set[str]:
    return {p["spec"]["containers"][0]["image"] for p in k.pods()}


def test_set_image_status_undo_history(k):
    assert k("set", "image", "deployment/web", "nginx=nginx:1.31", "--for", "0s") == (
        0, ["deployment.apps/web image updated"], [])
    rc, out, err = k("rollout", "status", "deployment/web")
    assert (rc, err) == (0, [])
    assert out[-1] == 'deployment "web" successfully rolled out'
    assert all(line.startswith(WAITING) for line in out[:-1]) and out[:-1]
    assert any("new replicas have been updated..." in line for line in out)
    assert _images(k) == {"nginx:1.31"}
    assert k("rollout", "history", "deployment/web") == (
        0, ["deployment.apps/web ", "REVISION  CHANGE-CAUSE", "1         <none>", "2         <none>", ""], [])
    assert k("rollout", "undo", "deployment/web") == (0, ["deployment.apps/web rolled back"], [])
    assert k("rollout", "status", "deploy/web")[1][-1] == 'deployment "web" successfully rolled out'
    assert _images(k) == {"nginx:1.30-alpine"}
    assert k("rollout", "history", "deployment/web")[1][2:4] == ["2         <none>", "3         <none>"]
    assert k("rollout", "undo", "deployment/web", "--to-revision=9") == (
        1, [], ["error: unable to find specified revision 9 in history"])


def test_history_revision_shows_the_pod_template(k):
    rc, out, _ = k("rollout", "history", "deployment", "web", "--revision", "1")
    # kubectl prints describe's pod template without a tabwriter: the tabs stay
    assert rc == 0 and out[:4] == ["deployment.apps/web with revision #1", "Pod Template:",
                                   "  Labels:\tapp=web", out[3]]
    assert out[3].startswith("\tpod-template-hash=")
    assert "    Image:\tnginx:1.30-alpine" in out and "    Port:\t80/TCP" in out
    assert k("rollout", "history", "deployment/web", "--revision", "7")[2] == [
        "error: unable to find the specified revision"]


def test_set_image_of_a_missing_container(k):
    assert k("set", "image", "deployment/web", "php=php:8") == (
        1, [], ['error: unable to find container named "php"'])


def test_restart_stamps_the_template_with_virtual_time(k):
    assert k("rollout", "restart", "deployment/web") == (0, ["deployment.apps/web restarted"], [])
    d = k.objects("deployments")[0]
    stamp = d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
    assert stamp.startswith("2025-01-01T00:00:") and stamp.endswith("Z")


def test_pause_and_resume(k):
    assert k("rollout", "pause", "deployment/web") == (0, ["deployment.apps/web paused"], [])
    assert k("rollout", "pause", "deployment/web") == (
        1, [], ['error: deployments.apps "web" is already paused'])
    assert k("rollout", "restart", "deployment/web")[2] == [
        'error: deployments.apps "web" can\'t restart paused deployment (run rollout resume first)']
    assert k("rollout", "resume", "deployment/web") == (0, ["deployment.apps/web resumed"], [])
    assert "paused" not in k.objects("deployments")[0]["spec"]
    assert k("rollout", "resume", "deployment/web")[2] == ['error: deployments.apps "web" is not paused']


def test_status_of_a_kind_without_viewer(k):
    assert k("rollout", "status", "svc/web")[2] == ["error: no status viewer has been implemented for Service"]


# --------------------------------------------------------------------------- pure helpers

def _deploy(gen=2, observed=2, replicas=2, updated=2, total=2, available=2):
    return {"kind": "Deployment", "metadata": {"name": "web", "generation": gen},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "replicas": total,
                       "availableReplicas": available}}


@pytest.mark.parametrize("obj, want", [
    (_deploy(gen=3), ("Waiting for deployment spec update to be observed...", False)),
    (_deploy(updated=1, total=3), (WAITING + "1 out of 2 new replicas have been updated...", False)),
    (_deploy(total=3), (WAITING + "1 old replicas are pending termination...", False)),
    (_deploy(available=1), (WAITING + "1 of 2 updated replicas are available...", False)),
    (_deploy(), ('deployment "web" successfully rolled out', True)),
])
def test_deployment_status_messages(obj, want):
    assert rollout_status(obj) == want


def test_daemonset_and_statefulset_messages():
    ds = {"kind": "DaemonSet", "metadata": {"name": "agent", "generation": 1}, "spec": {},
          "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 2}}
    assert rollout_status(ds) == (
        'Waiting for daemon set "agent" rollout to finish: 2 out of 3 new pods have been updated...', False)
    sts = {"kind": "StatefulSet", "metadata": {"name": "db", "generation": 1}, "spec": {"replicas": 3},
           "status": {"observedGeneration": 1, "readyReplicas": 1}}
    assert rollout_status(sts) == ("Waiting for 2 pods to be ready...", False)


def test_tabwrite_is_gos_tabwriter():
    assert tabwrite("REVISION\tCHANGE-CAUSE\n1\t<none>\n12\tkubectl set image") == (
        "REVISION  CHANGE-CAUSE\n1         <none>\n12        kubectl set image")
    # a line without a cell in the column ends the block
    assert tabwrite("a:\t1\nheader\nlonger:\t2") == "a:  1\nheader\nlonger:  2"
