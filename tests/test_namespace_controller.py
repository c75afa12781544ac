"""Namespace deletion, the default ServiceAccount and the root CA ConfigMap
(k8semu.controllers.namespace / serviceaccount)."""

from __future__ import annotations

import pytest

from k8semu.api import errors
from k8semu.controllers.namespace import NamespaceController, deletion_conditions, update_conditions
from k8semu.controllers.serviceaccount import (
    DESCRIPTION,
    PLACEHOLDER_CA,
    RootCACertPublisher,
    ServiceAccountsController,
)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

def run(cluster, body):
    api = cluster.api
    return run_cluster(cluster, body, {
        "namespace-controller": lambda: NamespaceController(api),
        "service-account-controller": lambda: ServiceAccountsController(api),
        "root-ca-cert-publisher": lambda: RootCACertPublisher(api),
    })


def ns(api, name):
    return api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def gone(api, name):
    try:
        api.get("namespaces", name)
    except errors.NotFound:
        return True
    return False


def conditions(api, name):
    return {c["type"]: (c["status"], c["reason"], c["message"])
            for c in api.get("namespaces", name)["status"].get("conditions") or ()}


def test_every_namespace_gets_default_sa_and_root_ca_and_they_come_back():
    c = Cluster.create(seed=1)
    api = c.api

    async def body(rt):
        ns(api, "team-a")
        await rt.settle()
        for n in ("default", "kube-system", "kube-public", "kube-node-lease", "team-a"):
            assert api.get("serviceaccounts", "default", namespace=n)["metadata"]["name"] == "default"
            cm = api.get("configmaps", "kube-root-ca.crt", namespace=n)
            assert cm["data"] == {"ca.crt": PLACEHOLDER_CA}
            assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
        assert PLACEHOLDER_CA.startswith("-----BEGIN CERTIFICATE-----\n")
        actors = {r.actor for r in c.log.records() if "/serviceaccounts/" in r.key}
        assert actors == {"service-account-controller"}
        actors = {r.actor for r in c.log.records() if "/configmaps/" in r.key}
        assert actors == {"root-ca-cert-publisher"}
        api.delete("serviceaccounts", "default", namespace="team-a")
        api.delete("configmaps", "kube-root-ca.crt", namespace="team-a")
        cm = api.get("configmaps", "kube-root-ca.crt", namespace="default")
        api.update("configmaps", {**cm, "data": {"ca.crt": "tampered"}})
        await rt.settle()
        assert api.get("serviceaccounts", "default", namespace="team-a")
        assert api.get("configmaps", "kube-root-ca.crt", namespace="team-a")["data"] == {"ca.crt": PLACEHOLDER_CA}
        assert api.get("configmaps", "kube-root-ca.crt", namespace="default")["data"] == {"ca.crt": PLACEHOLDER_CA}

    run(c, body)


def test_deleting_a_namespace_removes_its_content_then_the_namespace():
    c = Cluster.create(seed=2)
    api = c.api

    async def body(rt):
        ns(api, "shop")
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}})
        api.create("services", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
                                "spec": {"ports": [{"port": 80}]}})
        api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        await rt.settle()
        api.delete("namespaces", "shop")
        assert api.get("namespaces", "shop")["status"]["phase"] == "Terminating"
        await rt.settle()
        with pytest.raises(errors.NotFound):
            api.get("namespaces", "shop")
        for res in ("configmaps", "services", "pods", "serviceaccounts"):
            assert api.list(res, namespace="shop")["items"] == []
        last = [r for r in c.log.records() if r.key == "/registry/namespaces/shop"][-1]
        assert last.type == "DELETED" and last.actor == "namespace-controller"

    run(c, body)


def test_terminating_pods_keep_the_namespace_with_content_remaining_conditions():
    c = Cluster.create(seed=3)
    api = c.api

    async def body(rt):
        ns(api, "shop")
        for i in range(2):
            api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "shop"},
                                "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 30,
                                         "containers": [{"name": "c", "image": "nginx"}]}})
        await rt.settle()
        api.delete("namespaces", "shop")
        await rt.advance(5)
        # the pods are bound: they wait for their kubelet, so the namespace stays
        assert api.get("namespaces", "shop")["status"]["phase"] == "Terminating"
        conds = conditions(api, "shop")
        assert conds["NamespaceContentRemaining"] == (
            "True", "SomeResourcesRemain", "Some resources are remaining: pods. has 2 resource instances")
        assert conds["NamespaceFinalizersRemaining"] == ("False", "ContentRemoved", "All content successfully removed")
        assert conds["NamespaceDeletionDiscoveryFailure"] == (
            "False", "ResourcesDiscovered", "All resources successfully discovered")
        assert conds["NamespaceDeletionContentFailure"] == (
            "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization")
        # what the kubelet would do once the containers stopped
        for i in range(2):
            api.delete("pods", f"p{i}", namespace="shop", grace_period_seconds=0)
        # the controller does not watch pods: it looks again after estimate/2 + 1 = 16 s
        t0 = rt.now
        assert await rt.until(lambda: gone(api, "shop"), limit=60)
        assert rt.now - t0 <= 16

    run(c, body)


def test_content_with_a_finalizer_is_reported():
    c = Cluster.create(seed=4)
    api = c.api

    async def body(rt):
        ns(api, "shop")
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "held", "namespace": "shop", "finalizers": ["example.com/hold"]}})
        await rt.settle()
        api.delete("namespaces", "shop")
        await rt.advance(3)
        conds = conditions(api, "shop")
        assert conds["NamespaceContentRemaining"] == (
            "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances")
        assert conds["NamespaceFinalizersRemaining"] == (
            "True", "SomeFinalizerRemain", "Some finalizers are remaining: example.com/hold in 1 resource instances")
        cm = api.get("configmaps", "held", namespace="shop")
        api.update("configmaps", {**cm, "metadata": {**cm["metadata"], "finalizers": []}})
        assert await rt.until(lambda: gone(api, "shop"), limit=60)

    run(c, body)


def test_condition_helpers():
    failing = deletion_conditions({"pods.": 2}, {}, [])
    conds = update_conditions([], failing, "T0")
    assert [c["type"] for c in conds] == [
        "NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
        "NamespaceDeletionContentFailure", "NamespaceContentRemaining", "NamespaceFinalizersRemaining"]
    assert update_conditions(conds, failing, "T1") is None
    again = update_conditions(conds, deletion_conditions({}, {}, []), "T2")
    remaining = next(c for c in again if c["type"] == "NamespaceContentRemaining")
    assert remaining["lastTransitionTime"] == "T2" and remaining["status"] == "False"
    err = deletion_conditions({"pods.": 1}, {}, ["unexpected items still remain in namespace: x for gvr: /v1, Resource=pods"])
    assert err[0]["message"] == ("Failed to delete all resource types, 1 remaining: unexpected items still "
                                 "remain in namespace: x for gvr: /v1, Resource=pods")
