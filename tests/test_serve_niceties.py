"""What a user of ``k8semu serve`` sees on the edges of kube-apiserver's API (v1.33).

- ``/healthz``, ``/livez``, ``/readyz``: ``ok``; ``?verbose`` lists every check and ends with
  ``readyz check passed``; ``?exclude=`` and ``/readyz/<check>`` as upstream's healthz handlers;
- ``GET /``: the index of the server's paths;
- a cluster made by ``k8semu cluster create`` and first run by ``serve``: its Nodes are as old
  as its namespaces, as a real cluster's kubelets register within seconds of its API server;
- the service proxy resolves ``NAME:PORT`` by port number or name, and skips addresses without
  a pod ``targetRef`` (the ``kubernetes`` service's), as upstream's ``ResourceLocation``;
- managedFields times of ``kubectl apply`` (client-side: ``kubectl-client-side-apply``, an
  ``Update`` with a ``time``).
"""

from __future__ import annotations

import copy
from datetime import timedelta

import orjson
import pytest
import trio
from test_server import ADMIN, call

from k8semu.api import auth, errors
from k8semu.server.app import APIApp
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster


@pytest.fixture
def app():
    cluster = Cluster.create()
    return APIApp(cluster.api, {ADMIN: auth.admin()})


# ---------------------------------------------------------------------------- health


async def test_readyz_verbose_lists_each_check_of_a_1_33_apiserver_then_passed(app):
    """``kubectl get --raw '/readyz?verbose'``: one ``[+]NAME ok`` line per check, the readyz-only
    ones (``etcd-readiness``, ``informer-sync``, ``shutdown``) included, then ``readyz check passed``."""
    code, headers, body = await call(app, "GET", "/readyz?verbose", token=None)
    assert code == 200 and headers[b"content-type"] == b"text/plain; charset=utf-8"
    lines = body.decode().split("\n")
    assert lines[:5] == ["[+]ping ok", "[+]log ok", "[+]etcd ok", "[+]etcd-readiness ok", "[+]informer-sync ok"]
    assert "[+]poststarthook/rbac/bootstrap-roles ok" in lines
    assert "[+]poststarthook/start-apiserver-admission-initializer ok" in lines
    assert "[+]autoregister-completion ok" in lines
    assert lines[-3:] == ["[+]shutdown ok", "readyz check passed", ""]
    assert all(line.startswith("[+]") and line.endswith(" ok") for line in lines[:-2])


@pytest.mark.parametrize("endpoint", ["livez", "healthz"])
async def test_livez_and_healthz_verbose_leave_out_the_readyz_only_checks(app, endpoint):
    code, _, body = await call(app, "GET", f"/{endpoint}?verbose", token=None)
    text = body.decode()
    assert code == 200 and text.startswith("[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/")
    assert text.endswith(f"[+]poststarthook/apiservice-openapiv3-controller ok\n{endpoint} check passed\n")
    for readyz_only in ("etcd-readiness", "informer-sync", "shutdown"):
        assert f"]{readyz_only} " not in text


async def test_without_verbose_the_answer_is_ok(app):
    for path in ("/healthz", "/livez", "/readyz", "/readyz/"):
        assert (await call(app, "GET", path, token=None))[::2] == (200, b"ok")


async def test_exclude_skips_checks_and_warns_about_names_that_match_none(app):
    code, _, body = await call(app, "GET", "/readyz?verbose&exclude=etcd&exclude=nope&exclude=informer-sync")
    lines = body.decode().split("\n")
    assert code == 200
    assert lines[2:5] == ["[+]etcd excluded: ok", "[+]etcd-readiness ok", "[+]informer-sync excluded: ok"]
    assert lines[-3:] == ['warn: some health checks cannot be excluded: no matches for "nope"',
                          "readyz check passed", ""]
    assert (await call(app, "GET", "/readyz?exclude=etcd"))[::2] == (200, b"ok")


async def test_a_single_check_has_its_own_path(app):
    """``/readyz/ping``, ``/livez/etcd``, ``/readyz/poststarthook/rbac/bootstrap-roles``: ``ok``;
    a check the endpoint does not have is 404 (``/livez/informer-sync`` is readyz-only)."""
    for path in ("/readyz/ping", "/livez/etcd", "/healthz/log", "/readyz/poststarthook/rbac/bootstrap-roles",
                 "/readyz/shutdown"):
        assert (await call(app, "GET", path))[::2] == (200, b"ok"), path
    assert (await call(app, "GET", "/livez/informer-sync"))[0] == 404
    assert (await call(app, "GET", "/readyz/nope"))[0] == 404


async def test_single_check_paths_are_not_public(app):
    """RBAC's ``system:public-info-viewer`` lets anonymous users get ``/readyz`` but not ``/readyz/ping``."""
    code, _, body = await call(app, "GET", "/readyz/ping", token=None)
    assert code == 403
    assert orjson.loads(body)["message"] == 'forbidden: User "system:anonymous" cannot get path "/readyz/ping"'


async def test_readyz_fails_while_the_server_shuts_down(app):
    """Upstream's ``shutdown`` check: ``/readyz`` answers 500, always verbose, once shutdown began;
    ``/livez`` stays ok."""
    app.shutting_down.set()
    code, _, body = await call(app, "GET", "/readyz", token=None)
    assert code == 500
    assert body.decode().endswith("[-]shutdown failed: reason withheld\nreadyz check failed\n")
    assert (await call(app, "GET", "/readyz/shutdown"))[::2] == (500, b"internal server error: process is shutting down\n")
    assert (await call(app, "GET", "/livez", token=None))[::2] == (200, b"ok")


# ---------------------------------------------------------------------------- root


async def test_root_lists_the_served_paths(app):
    """``kubectl get --raw /``: kube-apiserver's ``{"paths": [...]}``, sorted, indented."""
    code, headers, body = await call(app, "GET", "/")
    assert code == 200 and headers[b"content-type"] == b"application/json"
    assert body.startswith(b'{\n  "paths": [\n    "/api",\n    "/api/v1",\n    "/apis",\n    "/apis/",\n')
    paths = orjson.loads(body)["paths"]
    assert paths == sorted(paths)
    for p in ("/apis/apps", "/apis/apps/v1", "/healthz", "/livez/ping", "/readyz/shutdown", "/metrics",
              "/openapi/v2", "/openapi/v3", "/version"):
        assert p in paths
    assert "/livez/shutdown" not in paths
    code, _, body = await call(app, "GET", "/", token=None)
    assert code == 403 and orjson.loads(body)["message"] == 'forbidden: User "system:anonymous" cannot get path "/"'


# ---------------------------------------------------------------------------- service proxy


async def test_kubernetes_service_proxy_has_no_endpoints_as_upstream(app):
    """Upstream's service ``ResourceLocation`` maps ``:443`` to the port name ``https`` and then
    only takes an address whose ``targetRef`` is a pod with that IP (``isValidAddress``); the
    ``kubernetes`` service's address is the API server's, with no ``targetRef``, so a real
    v1.33 cluster answers 503 for it too."""
    for port in ("443", "https"):
        code, _, body = await call(app, "GET", f"/api/v1/namespaces/default/services/kubernetes:{port}/proxy/")
        st = orjson.loads(body)
        assert (code, st["reason"]) == (503, "ServiceUnavailable")
        assert st["message"] == f'no endpoints available for service "kubernetes:{port}"'
    code, _, body = await call(app, "GET", "/api/v1/namespaces/default/services/kubernetes:80/proxy/")
    assert code == 503 and orjson.loads(body)["message"] == 'no service port 80 found for service "kubernetes"'


def test_service_proxy_resolves_port_numbers_and_names_to_the_pods_port():
    """``web:80`` and ``web:http`` reach the pod's port 8080 (the Endpoints port of that name);
    an address whose pod has another IP is skipped (``no endpoints available``)."""
    from k8semu.api.apiserver import RequestContext
    from k8semu.server import proxy

    c = Cluster.create(seed=1)
    api = c.api
    api.create("services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                            "spec": {"selector": {"app": "web"},
                                     "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
               namespace="default")
    api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, namespace="default")
    pod = copy.deepcopy(api.get("pods", "web-0", namespace="default"))
    pod["status"] = {"phase": "Running", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}]}
    api.update("pods", pod, namespace="default", subresource="status")
    eps = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
           "subsets": [{"addresses": [{"ip": "10.244.1.5", "targetRef": {"kind": "Pod", "name": "web-0",
                                                                          "namespace": "default"}}],
                        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}
    api.create("endpoints", eps, namespace="default")  # no controller runs here
    ctx = RequestContext(user=auth.admin())
    for id_ in ("web:80", "web:http", "http:web:80"):
        got, port = proxy.locate(api, ctx, "GET", "default", "services", id_)
        assert (got["metadata"]["name"], port) == ("web-0", 8080), id_
    cur = api.get("endpoints", "web", namespace="default")
    cur["subsets"][0]["addresses"][0]["ip"] = "10.244.9.9"
    api.update("endpoints", cur, namespace="default")
    with pytest.raises(errors.StatusError) as e:
        proxy.locate(api, ctx, "GET", "default", "services", "web:80")
    assert (e.value.code, e.value.status()["message"]) == (503, 'no endpoints available for service "web:80"')


# ---------------------------------------------------------------------------- nodes' age


def test_a_cluster_first_run_by_serve_registers_its_nodes_at_its_own_time():
    """``k8semu cluster create`` runs no kubelet; ``serve`` then boots the cluster at its own
    (old) time before its clock catches up with the wall clock, so Nodes are as old as the
    namespaces and ``svc/kubernetes`` (a real cluster's kubelets register seconds after its API
    server), and keep that ``creationTimestamp`` afterwards (the kubelet only creates a missing
    Node)."""
    from k8semu.cli.commands.serve import boot_before_catching_up, catch_up_with_wall_clock

    c = Cluster.create(seed=2, kubeadm_addons=True)
    assert c.api.list("nodes")["items"] == []
    wall = c.api.epoch + timedelta(days=300)
    assert boot_before_catching_up(c, wall) is True
    booted_at = c.time
    assert 0 < booted_at < 600
    assert catch_up_with_wall_clock(c, wall) == booted_at
    assert boot_before_catching_up(c, wall + timedelta(days=1)) is False  # registered before: nothing to do

    async def resumed(rt):
        await rt.advance(30)

    run_cluster(c, resumed, default_factories(c))
    ns = c.api.get("namespaces", "default")["metadata"]["creationTimestamp"]
    nodes = c.api.list("nodes")["items"]
    assert len(nodes) == len(c.nodes.nodes)
    for n in nodes:
        assert n["metadata"]["creationTimestamp"][:10] == ns[:10] == c.api.epoch.strftime("%Y-%m-%d")
    start, end = c.log.marks[:2]
    assert (start["event"], start["boot"], start["settle"], start["t"]) == ("start", True, True, 0.0)
    assert (end["event"], end["settled"], end["t"]) == ("end", True, booted_at)


def test_a_cluster_serve_creates_or_that_ran_before_is_not_booted_again():
    from k8semu.cli.commands.serve import boot_before_catching_up

    c = Cluster.create(seed=2)
    assert boot_before_catching_up(c, c.api.epoch) is False  # not behind the wall clock
    rev = c.log.revision

    async def first(rt):
        assert await rt.settle()

    run_cluster(c, first, default_factories(c))
    created = {n["metadata"]["name"]: n["metadata"]["creationTimestamp"] for n in c.api.list("nodes")["items"]}
    assert created and c.log.revision > rev
    rev = c.log.revision
    assert boot_before_catching_up(c, c.api.epoch + timedelta(days=5)) is False
    assert c.log.revision == rev


# ---------------------------------------------------------------------------- managedFields


async def test_client_side_apply_entry_is_an_update_with_a_time(app):
    """``kubectl apply`` (client-side) creates with ``fieldManager=kubectl-client-side-apply``:
    an ``Update`` entry with ``time`` (RFC 3339, seconds)."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t1", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap"}'}},
          "data": {"k": "v"}}
    code, _, body = await call(app, "POST", "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-client-side-apply",
                               cm)
    assert code == 201
    (entry,) = orjson.loads(body)["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-client-side-apply", "Update")
    assert len(entry["time"]) == 20 and entry["time"].endswith("Z")


async def test_a_no_op_apply_by_a_new_manager_has_no_time_as_upstream(app):
    """Upstream's ``managedFieldsUpdater.Apply`` sets the manager's time only when the apply
    changed the object: ``kubectl apply --server-side``'s ``kubectl-last-applied`` apply of an
    unchanged annotation leaves that entry without ``time`` on a real v1.33 cluster too
    (kubernetes/kubernetes#127938)."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t2"}, "data": {"k": "v"}}
    path = "/api/v1/namespaces/default/configmaps/t2?fieldManager={}"
    code, _, _ = await call(app, "PATCH", path.format("first"), cm, ctype="application/apply-patch+yaml")
    assert code == 201
    code, _, body = await call(app, "PATCH", path.format("second"), cm, ctype="application/apply-patch+yaml")
    assert code == 200
    entries = {e["manager"]: e for e in orjson.loads(body)["metadata"]["managedFields"]}
    assert "time" in entries["first"] and "time" not in entries["second"]
