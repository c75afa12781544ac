"""Kinds every v1.33 cluster serves that a fresh user looked for: podtemplates, componentstatuses,
runtimeclasses and apiservices — their discovery rows (what ``kubectl api-resources`` prints),
Tables (what ``kubectl get`` prints), validation errors and, for the two computed kinds, what
the server answers without storing anything."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from k8semu.api import errors, resources
from k8semu.api.apiserver import APIServer
from k8semu.api.tables import render_table, table_for
from k8semu.server import discovery
from k8semu.sim.cluster import Cluster

NOW = datetime(2025, 1, 1, 0, 10, tzinfo=timezone.utc)
CREATED = "2025-01-01T00:00:00Z"

#: the rows of ``kubectl api-resources`` on a v1.33 cluster (NAME SHORTNAMES APIVERSION NAMESPACED KIND)
UPSTREAM_ROWS = {
    "podtemplates": ("", "v1", True, "PodTemplate"),
    "componentstatuses": ("cs", "v1", False, "ComponentStatus"),
    "runtimeclasses": ("", "node.k8s.io/v1", False, "RuntimeClass"),
    "apiservices": ("", "apiregistration.k8s.io/v1", False, "APIService"),
}

# the API server's hook for computed kinds (k8semu.api.apiserver); absent, they list as empty
hooked = pytest.mark.skipif(not hasattr(APIServer, "_writable"),
                            reason="APIServer does not serve computed kinds yet (see resources.computed_list)")


@pytest.fixture(scope="module")
def cluster():
    return Cluster.create(seed=1)


@pytest.fixture
def api(cluster):
    return cluster.api


def _render(items, kind, **kw):
    return render_table(table_for(items, kind, NOW), kind=kind, **kw)


def test_api_resources_rows_match_upstream():
    for plural, (short, api_version, namespaced, kind) in UPSTREAM_ROWS.items():
        (info,) = resources.lookup(plural)
        assert (",".join(info.short_names), info.api_version, info.namespaced, info.kind) == \
            (short, api_version, namespaced, kind)
        group, version = resources.split_api_version(api_version)
        row = next(r for r in discovery.resource_list(group, version)["resources"] if r["name"] == plural)
        assert (row["namespaced"], row["kind"], ",".join(row.get("shortNames", []))) == (namespaced, kind, short)
    cs = next(r for r in discovery.resource_list("", "v1")["resources"] if r["name"] == "componentstatuses")
    assert cs["verbs"] == ["get", "list"]
    assert resources.lookup("cs")[0].plural == "componentstatuses"
    groups = [g["name"] for g in discovery.api_group_list()["groups"]]
    assert "node.k8s.io" in groups and "apiregistration.k8s.io" in groups


def test_podtemplate_crud_and_table(api):
    tmpl = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "web", "namespace": "default"},
            "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                 {"name": "side", "image": "busybox"}]}}}
    created = api.create("podtemplates", tmpl)
    spec = created["template"]["spec"]
    assert spec["restartPolicy"] == "Always" and spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    out = _render(api.list("podtemplates", namespace="default")["items"], "podtemplates")
    assert out.splitlines() == [
        "NAME   CONTAINERS   IMAGES               POD LABELS",
        "web    nginx,side   nginx:1.27,busybox   app=web,tier=fe",
    ]
    with pytest.raises(errors.Invalid) as e:
        api.create("podtemplates", {"apiVersion": "v1", "kind": "PodTemplate",
                                    "metadata": {"name": "bad", "namespace": "default"}, "template": {}})
    assert "template.spec.containers: Required value" in e.value.message
    api.delete("podtemplates", "web", namespace="default")
    assert api.list("podtemplates", namespace="default")["items"] == []


def test_runtimeclass_create_table_and_validation(api):
    rc = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
          "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m"}}}
    api.create("runtimeclasses", rc)
    out = _render(api.list("runtimeclasses")["items"], "runtimeclasses")
    assert out.splitlines()[0].split() == ["NAME", "HANDLER", "AGE"]
    assert out.splitlines()[1].split()[:2] == ["gvisor", "runsc"]
    with pytest.raises(errors.Invalid) as e:
        api.create("runtimeclasses", {**rc, "metadata": {"name": "bad"}, "handler": "Run_SC"})
    assert e.value.message.startswith('RuntimeClass.node.k8s.io "bad" is invalid: handler: Invalid value: '
                                      '"Run_SC": a lowercase RFC 1123 label must consist of')
    with pytest.raises(errors.Invalid) as e:
        api.create("runtimeclasses", {**rc, "metadata": {"name": "nohandler"}, "handler": None})
    assert 'handler: Invalid value: ""' in e.value.message
    with pytest.raises(errors.BadRequest) as e:
        api.create("runtimeclasses", {**rc, "metadata": {"name": "typo"}, "handlr": "x"})
    assert 'unknown field "handlr"' in e.value.message
    cur = api.get("runtimeclasses", "gvisor")
    with pytest.raises(errors.Invalid) as e:
        api.update("runtimeclasses", {**cur, "handler": "runc"})
    assert "handler: Invalid value: \"runc\": field is immutable" in e.value.message


def test_componentstatuses_table():
    out = _render(resources.component_statuses(), "componentstatuses")
    assert out.splitlines() == [
        "NAME                 STATUS    MESSAGE                         ERROR",
        "scheduler            Healthy   ok                              ",
        "controller-manager   Healthy   ok                              ",
        'etcd-0               Healthy   {"health":"true","reason":""}   ',
    ]
    unhealthy = {"metadata": {"name": "x"}, "conditions": [{"type": "Healthy", "status": "False",
                                                             "message": "", "error": "dial tcp: refused"}]}
    assert _render([unhealthy], "cs").splitlines()[1].split() == ["x", "Unhealthy", "dial", "tcp:", "refused"]


def test_apiservices_one_per_served_group_version():
    svcs = resources.api_services(CREATED)
    names = [s["metadata"]["name"] for s in svcs]
    assert names == sorted(names) and names[0] == "v1."
    assert {"v1.apps", "v2.autoscaling", "v1.node.k8s.io", "v1.authorization.k8s.io",
            "v1beta1.metrics.k8s.io"} <= set(names)
    assert "v1.apiregistration.k8s.io" not in names  # not in upstream's apiVersionPriorities
    by = {s["metadata"]["name"]: s for s in svcs}
    assert by["v1."]["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert by["v1.apps"]["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
                                     "versionPriority": 15}
    assert by["v2.autoscaling"]["spec"]["versionPriority"] == 30
    out = _render(svcs, "apiservices").splitlines()
    assert out[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert out[1].split() == ["v1.", "Local", "True", "10m"]
    assert next(line for line in out if line.startswith("v1beta1.metrics")).split() == \
        ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "True", "10m"]
    # every group-version the HTTP front serves on its own is listed
    assert set(resources.SERVED_ELSEWHERE_GROUP_VERSIONS) == {(g, v) for g, v, *_ in discovery.SERVED_ELSEWHERE}


def test_apiservice_table_not_available():
    svc = {"metadata": {"name": "v1beta1.custom.io", "creationTimestamp": CREATED},
           "spec": {"service": {"namespace": "ns", "name": "api"}},
           "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}}
    assert _render([svc], "apiservices").splitlines()[1].split() == \
        ["v1beta1.custom.io", "ns/api", "False", "(MissingEndpoints)", "10m"]


@hooked
def test_computed_kinds_are_served_and_never_stored(api):
    rev = api.log.revision
    lst = api.list("cs")
    assert [o["metadata"]["name"] for o in lst["items"]] == ["scheduler", "controller-manager", "etcd-0"]
    assert lst["kind"] == "ComponentStatusList" and lst["metadata"] == {}
    assert api.get("componentstatuses", "etcd-0")["conditions"][0]["message"] == '{"health":"true","reason":""}'
    with pytest.raises(errors.StatusError) as e:
        api.get("componentstatuses", "kube-proxy")
    assert (e.value.code, e.value.message) == (500, "Component not found: kube-proxy")
    svcs = api.list("apiservices")["items"]
    assert "v1.node.k8s.io" in [s["metadata"]["name"] for s in svcs]
    assert api.get("apiservices", "v1.apps")["spec"]["groupPriorityMinimum"] == 17800
    with pytest.raises(errors.NotFound):
        api.get("apiservices", "v1.nope")
    with pytest.raises(errors.MethodNotAllowed):
        api.create("componentstatuses", {"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "x"}})
    with pytest.raises(errors.MethodNotAllowed):
        api.delete("apiservices", "v1.apps")
    assert api.log.revision == rev
