"""``kubectl debug``'s ephemeral containers: the ``pods/NAME/ephemeralcontainers`` subresource (its
validation, upstream's messages) and the kubelet starting them once, never restarting them, with
their own status list, events and logs. (The real kubectl: tests/test_kubectl_exec.py.)"""

from __future__ import annotations

import contextlib
import copy
import io

import pytest

from k8semu.api import errors
from k8semu.cli.main import main
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.config import ClusterConfig
from k8semu.sim.runtime import run_cluster

DEBUGGER = {"name": "debugger-x1", "image": "busybox:1.36", "command": ["sh", "-c", "echo debugging; sleep 5; exit 3"],
            "targetContainerName": "web", "resources": {}, "terminationMessagePolicy": "File"}


def _pod(**spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}], **spec}}


def _get(api):
    return copy.deepcopy(api.get("pods", "web", namespace="default"))  # the store's own otherwise


def _add(api, *containers):
    """What kubectl debug sends: a strategic merge patch of the subresource."""
    return api.patch("pods", "web", {"spec": {"ephemeralContainers": list(containers)}},
                     "application/strategic-merge-patch+json",
                     namespace="default", subresource="ephemeralcontainers")


def test_the_kubelet_runs_an_ephemeral_container_once_beside_the_pod():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        api.create("pods", _pod())
        assert await rt.until(lambda: _get(api)["status"].get("phase") == "Running", limit=60)
        before = _get(api)
        out = _add(api, DEBUGGER)
        # only spec.ephemeralContainers changed, defaulted like any container
        assert out["spec"]["ephemeralContainers"][0]["imagePullPolicy"] == "IfNotPresent"
        assert {k: v for k, v in out["spec"].items() if k != "ephemeralContainers"} == before["spec"]
        assert out["metadata"]["generation"] == before["metadata"]["generation"] + 1  # updatePodGeneration
        assert out["status"] == before["status"]
        assert await rt.until(lambda: "terminated" in (
            (_get(api)["status"].get("ephemeralContainerStatuses") or [{}])[0].get("state") or {}), limit=60)
        p = _get(api)
        st = p["status"]["ephemeralContainerStatuses"][0]
        assert st["name"] == "debugger-x1" and st["ready"] is False and st["restartCount"] == 0
        assert "started" not in st  # ephemeral containers are not probed
        assert st["state"]["terminated"]["exitCode"] == 3
        # its exit changes nothing else: the pod stays Running and Ready, nothing restarts it
        assert p["status"]["phase"] == "Running"
        assert p["status"]["containerStatuses"][0]["ready"] is True
        await rt.advance(60)
        assert _get(api)["status"]["ephemeralContainerStatuses"][0]["restartCount"] == 0
        reasons = [(e["reason"], e["involvedObject"].get("fieldPath")) for e in
                   sorted(api.list("events", namespace="default")["items"],
                          key=lambda e: int(e["metadata"]["resourceVersion"]))]
        assert ("Started", "spec.ephemeralContainers{debugger-x1}") in reasons
        assert ("Pulling", "spec.ephemeralContainers{debugger-x1}") in reasons

    run_cluster(c, body, default_factories(c))




def test_subresource_validation_mirrors_upstream():
    c = Cluster.create(seed=3, config=ClusterConfig.default(workers=1))
    api = c.api
    with pytest.raises(errors.Invalid) as e:
        api.create("pods", _pod(ephemeralContainers=[DEBUGGER]))
    assert str(e.value).endswith("spec.ephemeralContainers: Forbidden: cannot be set on create")
    api.create("pods", _pod())

    with pytest.raises(errors.Invalid) as e:
        _add(api, {**DEBUGGER, "ports": [{"containerPort": 80}], "readinessProbe": {"exec": {"command": ["true"]}}})
    assert str(e.value) == (
        'Pod "web" is invalid: [spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral '
        "Container, spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container]")
    with pytest.raises(errors.Invalid) as e:
        _add(api, {**DEBUGGER, "name": "web"})
    assert str(e.value) == 'Pod "web" is invalid: spec.ephemeralContainers[0].name: Duplicate value: "web"'
    with pytest.raises(errors.Invalid) as e:
        _add(api, {**DEBUGGER, "targetContainerName": "nope"})
    assert str(e.value) == ('Pod "web" is invalid: spec.ephemeralContainers[0].targetContainerName: '
                            'Not found: "nope"')

    _add(api, DEBUGGER)
    # a second one is added beside the first (strategic merge on name) ...
    out = _add(api, {**DEBUGGER, "name": "debugger-x2"})
    assert sorted(e["name"] for e in out["spec"]["ephemeralContainers"]) == ["debugger-x1", "debugger-x2"]
    # ... but none may change or go
    with pytest.raises(errors.Invalid) as e:
        _add(api, {**DEBUGGER, "image": "alpine"})
    assert 'spec.ephemeralContainers.debugger-x1: Forbidden: existing ephemeral containers "debugger-x1" may ' \
           "not be changed" in str(e.value)
    cur = _get(api)
    cur["spec"]["ephemeralContainers"] = [e for e in cur["spec"]["ephemeralContainers"] if e["name"] == "debugger-x1"]
    with pytest.raises(errors.Invalid) as e:
        api.update("pods", cur, namespace="default", subresource="ephemeralcontainers")
    assert 'existing ephemeral containers "debugger-x2" may not be removed' in str(e.value)
    # the main resource cannot add them
    cur = _get(api)
    cur["spec"]["ephemeralContainers"].append({**DEBUGGER, "name": "debugger-x3", "imagePullPolicy": "Always",
                                               "terminationMessagePath": "/dev/termination-log"})
    with pytest.raises(errors.Invalid):
        api.update("pods", cur, namespace="default")
    # what else an update of the subresource says is ignored
    cur = _get(api)
    cur["metadata"]["labels"] = {"x": "y"}
    cur["spec"]["activeDeadlineSeconds"] = 5
    out = api.update("pods", cur, namespace="default", subresource="ephemeralcontainers")
    assert "labels" not in out["metadata"] and "activeDeadlineSeconds" not in out["spec"]


def test_describe_and_logs_show_the_ephemeral_container(tmp_path):
    log = str(tmp_path / "c.log")
    c = Cluster.create(log, seed=3, config=ClusterConfig.default(workers=1))
    api = c.api

    async def body(rt):
        api.create("pods", _pod())
        assert await rt.until(lambda: _get(api)["status"].get("phase") == "Running", limit=60)
        _add(api, DEBUGGER)
        await rt.advance(30)

    run_cluster(c, body, default_factories(c))
    c.close()

    def k8semu(*argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["--cluster", log, *argv])
        return code, out.getvalue()

    code, out = k8semu("describe", "pod", "web")
    section = out[out.index("Ephemeral Containers:"):out.index("Conditions:")]
    assert "  debugger-x1:\n" in section
    assert "    State:          Terminated\n      Reason:       Error\n      Exit Code:    3\n" in section
    assert k8semu("logs", "web", "-c", "debugger-x1") == (0, "debugging\n")


def test_cli_patch_and_get_take_any_subresource_as_kubectl(k):
    """kubectl 1.33 sends any ``--subresource``: the server answers one the kind lacks with NotFound."""
    pod = k.pods()[0]["metadata"]["name"]
    patch = '{"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox", "command": ["true"]}]}}'
    assert k("patch", "pod", pod, "--subresource", "ephemeralcontainers", "-p", patch) == (
        0, [f"pod/{pod} patched"], [])
    assert k("patch", "pod", pod, "--subresource", "foo", "-p", "{}") == (
        1, [], ["Error from server (NotFound): the server could not find the requested resource"])
    rc, out, _ = k("get", "pod", pod, "--subresource", "resize", "-o", "jsonpath={.spec.ephemeralContainers[0].name}")
    assert (rc, out) == (0, ["dbg"])
