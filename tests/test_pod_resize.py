"""In-place pod resize (InPlacePodVerticalScaling, beta and on by default in 1.33): the
``pods/NAME/resize`` subresource's strategy and validation (upstream's messages), the kubelet's
allocation (``PodResizePending`` Infeasible/Deferred, ``PodResizeInProgress``, the container
statuses' ``resources``, ``resizePolicy: RestartContainer``), the
scheduler counting the larger of the spec and the allocation, and ``k8semu patch --subresource
resize``."""

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

SMP = "application/strategic-merge-patch+json"


def _pod(name="web", cpu="500m", memory="128Mi", limits=True, policy=None, **spec):
    res = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        res["limits"] = {"cpu": cpu, "memory": memory}
    c = {"name": "app", "image": "nginx:1.27", "resources": res}
    if policy:
        c["resizePolicy"] = policy
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [c], **spec}}


def _get(api, name="web"):
    return copy.deepcopy(api.get("pods", name, namespace="default"))  # the store's own otherwise


def _resize(api, name="web", **resources):
    return api.patch("pods", name, {"spec": {"containers": [{"name": "app", "resources": resources}]}}, SMP,
                     namespace="default", subresource="resize")


def _cond(pod, type_):
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == type_), None)


def _running(api, name="web"):
    return lambda: _get(api, name)["status"].get("phase") == "Running"


def _cluster():
    return Cluster.create(seed=5, config=ClusterConfig.default(workers=1))


def _history(api, name="web"):
    return [r.object for r in api.log.history(f"/registry/pods/default/{name}") if r.type != "DELETED"]


def test_cpu_resize_is_allocated_then_actuated_in_place():
    c = _cluster()
    api = c.api

    async def body(rt):
        api.create("pods", _pod())
        assert await rt.until(_running(api), limit=60)
        await rt.settle()
        before = _get(api)
        cs = before["status"]["containerStatuses"][0]
        # every running resizable container's status says what it runs with (1.33; no
        # allocatedResources: its feature gate is off by default)
        assert "allocatedResources" not in cs
        assert cs["resources"] == {"requests": {"cpu": "500m", "memory": "128Mi"},
                                   "limits": {"cpu": "500m", "memory": "128Mi"}}
        out = _resize(api, requests={"cpu": "800m"}, limits={"cpu": "800m"})
        assert out["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "800m", "memory": "128Mi"}
        assert out["status"] == before["status"]  # the subresource never writes status
        assert out["metadata"]["generation"] == before["metadata"]["generation"] + 1
        await rt.settle()
        after = _get(api)
        cs = after["status"]["containerStatuses"][0]
        assert cs["resources"]["requests"] == {"cpu": "800m", "memory": "128Mi"}
        assert cs["resources"]["limits"] == {"cpu": "800m", "memory": "128Mi"}
        assert cs["restartCount"] == 0 and cs["containerID"] == before["status"]["containerStatuses"][0]["containerID"]
        assert _cond(after, "PodResizeInProgress") is None and _cond(after, "PodResizePending") is None
        # the condition sequence: allocated first (InProgress, the old values still applied), then done
        seen = []
        for p in _history(api):
            st = p.get("status") or {}
            if not st.get("containerStatuses"):
                continue
            cur = st["containerStatuses"][0]
            step = (((cur.get("resources") or {}).get("requests") or {}).get("cpu"),
                    _cond(p, "PodResizeInProgress") is not None)
            if not seen or seen[-1] != step:
                seen.append(step)
        assert seen[-3:] == [("500m", False), ("500m", True), ("800m", False)]
        conds = [c["type"] for c in _history(api)[-2]["status"]["conditions"]]
        assert conds[0] == "PodResizeInProgress"  # the resize conditions come first, as upstream's
        # no resize events in 1.33, and no restart
        reasons = {e["reason"] for e in api.list("events", namespace="default")["items"]}
        assert "Killing" not in reasons

    run_cluster(c, body, default_factories(c))


def test_infeasible_resize_is_pending_with_upstreams_message():
    c = _cluster()
    api = c.api

    async def body(rt):
        api.create("pods", _pod())
        assert await rt.until(_running(api), limit=60)
        alloc = api.get("nodes", "node-1")["status"]["allocatable"]
        _resize(api, requests={"cpu": "100"}, limits={"cpu": "100"})
        await rt.settle()
        p = _get(api)
        cond = _cond(p, "PodResizePending")
        assert cond is not None and cond["status"] == "True" and cond["reason"] == "Infeasible"
        from k8semu.api.quantity import cpu_millis
        assert cond["message"] == (f"Node didn't have enough capacity: cpu, requested: 100000, "
                                   f"capacity: {cpu_millis(alloc['cpu'])}")
        cs = p["status"]["containerStatuses"][0]
        assert cs["resources"]["requests"]["cpu"] == "500m"  # nothing allocated
        # reverting the spec clears the condition
        _resize(api, requests={"cpu": "500m"}, limits={"cpu": "500m"})
        await rt.settle()
        assert _cond(_get(api), "PodResizePending") is None

    run_cluster(c, body, default_factories(c))


def test_deferred_resize_is_allocated_when_another_pod_goes():
    c = _cluster()
    api = c.api

    async def body(rt):
        api.create("pods", _pod("web", cpu="1"))
        api.create("pods", _pod("hog", cpu="2"))
        assert await rt.until(lambda: _running(api, "web")() and _running(api, "hog")(), limit=60)
        from k8semu.api.quantity import cpu_millis
        cap = cpu_millis(api.get("nodes", "node-1")["status"]["allocatable"]["cpu"])
        used = sum(cpu_millis(((c_.get("resources") or {}).get("requests") or {}).get("cpu", "0"))
                   for p in api.list("pods", namespace=None)["items"] if p["spec"].get("nodeName") == "node-1"
                   and p["status"].get("phase") not in ("Succeeded", "Failed")
                   for c_ in p["spec"]["containers"])
        want = cap - (used - 1000) + 500  # fits the node, not beside hog; fits once hog is gone
        assert 1000 < want < cap
        _resize(api, requests={"cpu": f"{want}m"}, limits={"cpu": f"{want}m"})
        await rt.settle()
        cond = _cond(_get(api), "PodResizePending")
        assert cond is not None and cond["reason"] == "Deferred"
        assert cond["message"] == (f"Node didn't have enough resource: cpu, requested: {want}, "
                                   f"used: {used - 1000}, capacity: {cap}")
        api.delete("pods", "hog", namespace="default")
        await rt.settle()
        p = _get(api)
        assert _cond(p, "PodResizePending") is None and _cond(p, "PodResizeInProgress") is None
        assert p["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] == f"{want}m"

    run_cluster(c, body, default_factories(c))


def test_restart_container_policy_restarts_the_container():
    c = _cluster()
    api = c.api
    policy = [{"resourceName": "cpu", "restartPolicy": "NotRequired"},
              {"resourceName": "memory", "restartPolicy": "RestartContainer"}]

    async def body(rt):
        api.create("pods", _pod(policy=policy))
        assert await rt.until(_running(api), limit=60)
        await rt.settle()
        _resize(api, requests={"cpu": "600m"}, limits={"cpu": "600m"})  # cpu: in place
        await rt.settle()
        assert _get(api)["status"]["containerStatuses"][0]["restartCount"] == 0
        _resize(api, requests={"memory": "64Mi"}, limits={"memory": "64Mi"})  # memory: a restart (and may go down)
        await rt.settle()
        p = _get(api)
        cs = p["status"]["containerStatuses"][0]
        assert cs["restartCount"] == 1 and "running" in cs["state"] and cs["ready"] is True
        assert cs["resources"]["limits"] == {"cpu": "600m", "memory": "64Mi"}
        assert "terminated" in cs["lastState"]
        assert _cond(p, "PodResizeInProgress") is None
        msgs = [e["message"] for e in api.list("events", namespace="default")["items"] if e["reason"] == "Killing"]
        assert msgs == ["Container app resize requires restart"]

    run_cluster(c, body, default_factories(c))


def test_subresource_validation_mirrors_upstream():
    c = _cluster()
    api = c.api
    api.create("pods", _pod())
    api.create("pods", _pod("burst", limits=False))
    with pytest.raises(errors.Invalid) as e:  # Guaranteed: requests alone would make it Burstable
        _resize(api, requests={"cpu": "300m"})
    assert str(e.value) == ('Pod "web" is invalid: spec: Invalid value: "Guaranteed": '
                            'Pod QOS Class may not change as a result of resizing')
    with pytest.raises(errors.Invalid) as e:
        _resize(api, limits={"memory": "64Mi"}, requests={"memory": "64Mi"})
    assert str(e.value) == ('Pod "web" is invalid: spec.containers[0].resources.limits[memory]: Forbidden: '
                            'memory limits cannot be decreased unless resizePolicy is RestartContainer')
    with pytest.raises(errors.Invalid) as e:
        _resize(api, requests={"ephemeral-storage": "1Gi"})
    assert str(e.value) == 'Pod "web" is invalid: spec: Forbidden: only cpu and memory resources are mutable'
    with pytest.raises(errors.Invalid) as e:
        api.patch("pods", "burst", {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": None}}}]}},
                  SMP, namespace="default", subresource="resize")
    assert "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed" in str(e.value)
    with pytest.raises(errors.Invalid) as e:
        api.patch("pods", "web", [{"op": "replace", "path": "/spec/containers/0/name", "value": "x"}],
                  "application/json-patch+json", namespace="default", subresource="resize")
    assert str(e.value) == ('Pod "web" is invalid: spec.containers[0].name: Forbidden: '
                            'containers may not be renamed or reordered on resize')
    with pytest.raises(errors.Invalid) as e:  # resizePolicy is immutable in 1.33
        api.patch("pods", "web", {"spec": {"containers": [{"name": "app", "resizePolicy": [
            {"resourceName": "cpu", "restartPolicy": "RestartContainer"}]}]}}, SMP, namespace="default",
            subresource="resize")
    assert str(e.value) == 'Pod "web" is invalid: spec: Forbidden: only cpu and memory resources are mutable'
    # everything but resources is ignored: the image, labels, status
    before = _get(api)
    out = api.patch("pods", "web", {"metadata": {"labels": {"x": "y"}},
                                    "spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}},
                    SMP, namespace="default", subresource="resize")
    assert out["metadata"].get("labels") == before["metadata"].get("labels")
    assert out["spec"] == before["spec"] and out["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # a merge patch and an update work too; the main resource still refuses resource changes
    # (a merge patch replaces the whole list: what it leaves out of a container is kept, as the
    # strategy takes only resources and resizePolicy, but requests it leaves out are removed)
    with pytest.raises(errors.Invalid) as e:
        api.patch("pods", "burst", {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "7"}}}]}},
                  "application/merge-patch+json", namespace="default", subresource="resize")
    assert str(e.value) == ('Pod "burst" is invalid: spec.containers[0].resources.requests: Forbidden: '
                            'resource requests cannot be removed')
    out = api.patch("pods", "burst", {"spec": {"containers": [{"name": "app", "resources": {
        "requests": {"cpu": "700m", "memory": "256Mi"}}}]}}, "application/merge-patch+json", namespace="default",
        subresource="resize")
    assert out["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "700m", "memory": "256Mi"}}
    assert out["spec"]["containers"][0]["image"] == "nginx:1.27"
    obj = _get(api)
    obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "900m", "memory": "128Mi"},
                                                 "limits": {"cpu": "900m", "memory": "128Mi"}}
    assert api.update("pods", obj, namespace="default", subresource="resize")["spec"]["containers"][0][
        "resources"]["limits"]["cpu"] == "900m"
    obj = _get(api)
    obj["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1"
    obj["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    with pytest.raises(errors.Invalid) as e:
        api.update("pods", obj, namespace="default")
    assert "pod updates may not change fields other than" in str(e.value)
    # static pods cannot be resized
    static = _pod("mirror")
    static["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    api.create("pods", static)
    with pytest.raises(errors.Invalid) as e:
        _resize(api, "mirror", requests={"cpu": "1"}, limits={"cpu": "1"})
    assert "static pods cannot be resized" in str(e.value)


def test_scheduler_counts_the_larger_of_spec_and_allocation():
    c = _cluster()
    api = c.api

    async def body(rt):
        api.create("pods", _pod("web", cpu="1"))
        assert await rt.until(_running(api, "web"), limit=60)
        from k8semu.api.quantity import cpu_millis
        cap = cpu_millis(api.get("nodes", "node-1")["status"]["allocatable"]["cpu"])
        _resize(api, "web", requests={"cpu": "3"}, limits={"cpu": "3"})
        await rt.settle()
        assert api.get("pods", "web", namespace="default")["status"]["containerStatuses"][0][
            "resources"]["requests"]["cpu"] == "3"
        # fits only beside the 1-cpu pod, not the 3-cpu one
        free = cap - 3000
        api.create("pods", _pod("late", cpu=f"{free + 500}m"))
        await rt.settle()
        late = _get(api, "late")
        assert not late["spec"].get("nodeName")
        msgs = [e["message"] for e in api.list("events", namespace="default")["items"]
                if e["reason"] == "FailedScheduling"]
        assert msgs and msgs[-1].startswith("0/2 nodes are available: 1 Insufficient cpu")
        # resized back down: the pending pod fits now
        _resize(api, "web", requests={"cpu": "1"}, limits={"cpu": "1"})
        await rt.settle()
        assert _get(api, "late")["spec"].get("nodeName") == "node-1"

    run_cluster(c, body, default_factories(c))


def test_cli_patch_subresource_resize(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n"
        "    image: nginx:1.27\n    resources:\n      requests: {cpu: 500m, memory: 128Mi}\n"
        "      limits: {cpu: 500m, memory: 128Mi}\n")

    def run(*argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()

    assert run("cluster", "create", "--nodes", "1")[0] == 0
    assert run("apply", "-f", str(manifest))[0] == 0
    code, out, err = run("patch", "pod", "web", "--subresource", "resize", "-p",
                         '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"800m"},'
                         '"limits":{"cpu":"800m"}}}]}}')
    assert (code, out, err) == (0, "pod/web patched\n", "")
    code, out, _ = run("get", "pod", "web", "-o", "jsonpath={.status.containerStatuses[0].resources.limits.cpu}")
    assert out == "800m"
    code, out, err = run("patch", "pod", "web", "--subresource", "resize", "-p",
                         '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"700m"}}}]}}')
    assert code == 1 and err == ('The Pod "web" is invalid: spec: Invalid value: "Guaranteed": '
                                 'Pod QOS Class may not change as a result of resizing\n')


# ---------------------------------------------------------------------------- the real kubectl

def test_kubectl_patch_subresource_resize(tmp_path):
    from test_kubectl_e2e import KUBECTL, Server, _versioned

    if KUBECTL is None:
        pytest.skip("kubectl is not on the PATH")
    exe = _versioned("1.33")  # kubectl ≥ 1.32 has --subresource resize
    srv = Server(tmp_path)
    try:
        k = lambda *a, **kw: srv.kubectl(*a, binary=exe, **kw)  # noqa: E731
        manifest = srv.write("web.yaml", (
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n"
            "    image: nginx:1.27\n    resources:\n      requests: {cpu: 500m, memory: 128Mi}\n"
            "      limits: {cpu: 500m, memory: 128Mi}\n"))
        assert k("apply", "-f", manifest).stdout == "pod/web created\n"
        k("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
        out = k("patch", "pod", "web", "--subresource", "resize", "--patch",
                '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"800m"},'
                '"limits":{"cpu":"800m"}}}]}}')
        assert out.stdout == "pod/web patched\n"
        want = '{"limits":{"cpu":"800m","memory":"128Mi"},"requests":{"cpu":"800m","memory":"128Mi"}}'
        k("wait", "--for=jsonpath={.status.containerStatuses[0].resources.limits.cpu}=800m", "pod/web",
          "--timeout=60s")
        got = k("get", "pod", "web", "-o", "jsonpath={.status.containerStatuses[0].resources}").stdout
        assert got == want
        bad = k("patch", "pod", "web", "--subresource", "resize", "--patch",
                '{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"700m"}}}]}}', ok=False)
        assert bad.returncode == 1
        assert bad.stderr == ('The Pod "web" is invalid: spec: Invalid value: "Guaranteed": '
                              'Pod QOS Class may not change as a result of resizing\n')
    finally:
        assert srv.stop() == 0
