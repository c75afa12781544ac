"""The garbage collector (k8semu.controllers.garbagecollector)."""

from __future__ import annotations

from k8semu.controllers.garbagecollector import GarbageCollector, classify_owners, deletion_policy
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def ref(owner, block=True):
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": block}


def make_tree(api, pods=2):
    """A Deployment -> ReplicaSet -> Pods tree as the controllers would have built it."""
    d = api.create("deployments.apps", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}})
    rs = api.create("replicasets.apps", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-7c9f8", "namespace": "default", "ownerReferences": [ref(d)]},
        "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}})
    for i in range(pods):
        api.create("pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-7c9f8-{i}", "namespace": "default", "labels": {"app": "web"},
                         "ownerReferences": [ref(rs)]},
            "spec": TEMPLATE["spec"]})
    return d, rs


def names(api, resource):
    return [o["metadata"]["name"] for o in api.list(resource, namespace="default")["items"]]


def run(cluster, body):
    return run_cluster(cluster, body, {"generic-garbage-collector": lambda: GarbageCollector(cluster.api)})


def test_background_deletes_the_whole_tree():
    c = Cluster.create(seed=1)
    api = c.api

    async def body(rt):
        make_tree(api)
        await rt.settle()
        api.delete("deployments.apps", "web", namespace="default", propagation_policy="Background")
        await rt.settle()
        assert names(api, "deployments.apps") == []
        assert names(api, "replicasets.apps") == []
        assert names(api, "pods") == []
        deleters = {r.actor for r in c.log.records() if r.type == "DELETED" and "/web-7c9f8" in r.key}
        assert deleters == {"generic-garbage-collector"}

    run(c, body)


def test_foreground_owner_stays_until_dependents_are_gone():
    c = Cluster.create(seed=2)
    api = c.api

    async def body(rt):
        make_tree(api)
        await rt.settle()
        rt.pause("generic-garbage-collector")
        api.delete("deployments.apps", "web", namespace="default", propagation_policy="Foreground")
        d = api.get("deployments.apps", "web", namespace="default")
        assert d["metadata"]["finalizers"] == ["foregroundDeletion"] and d["metadata"]["deletionTimestamp"]
        rt.resume("generic-garbage-collector")
        await rt.settle()
        assert names(api, "deployments.apps") == []
        assert names(api, "replicasets.apps") == [] and names(api, "pods") == []
        # order over the log: every pod and the RS were gone before the Deployment
        order = [r.key.rsplit("/", 1)[1] for r in c.log.records() if r.type == "DELETED"]
        assert order.index("web") == len(order) - 1
        assert order.index("web-7c9f8") > max(order.index("web-7c9f8-0"), order.index("web-7c9f8-1"))
        # the ReplicaSet itself went in the foreground too
        rs_writes = [r.object for r in c.log.records() if r.key.endswith("/replicasets.apps/default/web-7c9f8")]
        assert any("foregroundDeletion" in (o["metadata"].get("finalizers") or ()) for o in rs_writes)

    run(c, body)


def test_foreground_waits_for_a_blocking_dependent_with_a_finalizer():
    c = Cluster.create(seed=3)
    api = c.api

    async def body(rt):
        d, rs = make_tree(api, pods=0)
        rs = api.get("replicasets.apps", "web-7c9f8", namespace="default")
        api.update("replicasets.apps", {**rs, "metadata": {**rs["metadata"], "finalizers": ["example.com/hold"]}})
        await rt.settle()
        api.delete("deployments.apps", "web", namespace="default", propagation_policy="Foreground")
        await rt.advance(60)
        await rt.settle()
        assert names(api, "deployments.apps") == ["web"]  # blocked by the RS
        rs = api.get("replicasets.apps", "web-7c9f8", namespace="default")
        assert rs["metadata"]["deletionTimestamp"]
        api.update("replicasets.apps", {**rs, "metadata": {**rs["metadata"], "finalizers": [
            f for f in rs["metadata"]["finalizers"] if f != "example.com/hold"]}})
        await rt.settle()
        assert names(api, "deployments.apps") == [] and names(api, "replicasets.apps") == []

    run(c, body)


def test_orphan_leaves_dependents_without_the_reference():
    c = Cluster.create(seed=4)
    api = c.api

    async def body(rt):
        d, rs = make_tree(api)
        await rt.settle()
        api.delete("deployments.apps", "web", namespace="default", propagation_policy="Orphan")
        await rt.settle()
        assert names(api, "deployments.apps") == []
        assert names(api, "replicasets.apps") == ["web-7c9f8"]
        assert names(api, "pods") == ["web-7c9f8-0", "web-7c9f8-1"]
        rs_now = api.get("replicasets.apps", "web-7c9f8", namespace="default")
        assert "ownerReferences" not in rs_now["metadata"]
        pod = api.get("pods", "web-7c9f8-0", namespace="default")
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]

    run(c, body)


def test_owner_not_yet_observed_is_verified_live_and_never_deleted_for_it():
    c = Cluster.create(seed=5)
    api = c.api

    async def body(rt):
        # the GC's cache never sees the Deployment (its events are dropped), yet the RS stays
        rt.drop_watch("generic-garbage-collector", lambda t, o: o.get("kind") == "Deployment")
        make_tree(api, pods=1)
        await rt.settle()
        assert names(api, "replicasets.apps") == ["web-7c9f8"]
        assert names(api, "pods") == ["web-7c9f8-0"]

    run(c, body)


def test_owner_with_a_different_uid_counts_as_gone():
    c = Cluster.create(seed=6)
    api = c.api

    async def body(rt):
        d, rs = make_tree(api, pods=1)
        await rt.settle()
        rt.pause("generic-garbage-collector")
        api.delete("deployments.apps", "web", namespace="default")
        api.create("deployments.apps", {**{k: v for k, v in d.items() if k != "status"},
                                        "metadata": {"name": "web", "namespace": "default"}})
        rt.resume("generic-garbage-collector")
        await rt.settle()
        assert names(api, "deployments.apps") == ["web"]
        assert names(api, "replicasets.apps") == [] and names(api, "pods") == []

    run(c, body)


def test_dangling_reference_is_dropped_when_another_owner_is_solid():
    c = Cluster.create(seed=7)
    api = c.api

    async def body(rt):
        cm1 = api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
        cm2 = api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})
        own = lambda o: {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],  # noqa: E731
                         "uid": o["metadata"]["uid"]}
        api.create("secrets", {"apiVersion": "v1", "kind": "Secret",
                               "metadata": {"name": "s", "ownerReferences": [own(cm1), own(cm2)]}})
        await rt.settle()
        api.delete("configmaps", "a", namespace="default")
        await rt.settle()
        s = api.get("secrets", "s", namespace="default")
        assert [r["name"] for r in s["metadata"]["ownerReferences"]] == ["b"]

    run(c, body)


def test_classification_and_policy_helpers():
    refs = [{"uid": "1"}, {"uid": "2"}, {"uid": "3"}, {"uid": "4"}]
    owners = [None, {"metadata": {"uid": "other"}},
              {"metadata": {"uid": "3", "deletionTimestamp": "t", "finalizers": ["foregroundDeletion"]}},
              {"metadata": {"uid": "4"}}]
    solid, dangling, waiting = classify_owners(refs, owners)
    assert (solid, dangling, waiting) == ([refs[3]], refs[:2], [refs[2]])
    assert deletion_policy({"metadata": {"finalizers": ["orphan"]}}) == "Orphan"
    assert deletion_policy({"metadata": {"finalizers": ["foregroundDeletion"]}}) == "Foreground"
    assert deletion_policy({"metadata": {}}) == "Background"
