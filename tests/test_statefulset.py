"""The StatefulSet controller behaves as upstream's statefulset-controller."""

from __future__ import annotations

from k8semu.api.pods import is_pod_ready
from k8semu.client.component import Component
from k8semu.client.informer import EventHandler, meta_namespace_key
from k8semu.controllers.statefulset import StatefulSetController, claim_name
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

STARTUP = 5.0  # virtual seconds the fake kubelet takes to make a pod Ready


class FakeKubelet(Component):
    """Marks every pod Running and Ready STARTUP seconds after it appears."""

    name = "fake-kubelet"

    def __init__(self, api):
        super().__init__(api)
        self.pods = self.informer("pods")
        self.q = self.queue()
        self.pods.add_event_handler(EventHandler(on_add=lambda p: self.q.add_after(meta_namespace_key(p), STARTUP)))

    async def main(self):
        await self.run_workers(self.q, self.sync)

    def sync(self, key):
        ns, name = key.split("/", 1)
        if self.pods.indexer.get_by(ns, name) is None:
            return
        pod = self.api.get("pods", name, namespace=ns, ctx=self.ctx)
        if pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") != "Pending":
            return
        now = self.api.timestamp()
        status = {**pod["status"], "phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}]}
        self.api.update("pods", {**pod, "status": status}, subresource="status", ctx=self.ctx)


def statefulset(name="web", replicas=3, **spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "serviceName": "nginx",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
            **spec,
        },
    }


CLAIM = {"metadata": {"name": "www"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def components(cluster):
    return {"statefulset-controller": lambda: StatefulSetController(cluster.api),
            "fake-kubelet": lambda: FakeKubelet(cluster.api)}


def pod_names(api):
    return sorted(p["metadata"]["name"] for p in api.list("pods", namespace="default")["items"])


def test_ordered_ready_creates_in_order_and_scales_down_from_the_top():
    cluster = Cluster.create(seed=1)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("statefulsets.apps", statefulset(volumeClaimTemplates=[CLAIM]))
        await rt.settle(horizon=2 * STARTUP)
        seen["up"] = pod_names(api)
        seen["status"] = api.get("statefulsets.apps", "web", namespace="default")["status"]
        api.patch("statefulsets.apps", "web", {"spec": {"replicas": 1}}, namespace="default")
        await rt.settle(horizon=2 * STARTUP)

    run_cluster(cluster, body, components(cluster))
    assert seen["up"] == ["web-0", "web-1", "web-2"]
    st = seen["status"]
    assert (st["replicas"], st["readyReplicas"], st["currentReplicas"], st["updatedReplicas"],
            st["availableReplicas"]) == (3, 3, 3, 3, 3)
    assert st["currentRevision"] == st["updateRevision"]
    assert pod_names(api) == ["web-0"]

    # over every revision of the log: each pod was created only once its
    # predecessor was Ready, each claim before its pod, deletions from the top
    state, created, deleted, claims = {}, [], [], []
    for rec in cluster.log.records():
        obj = rec.object or {}
        if obj.get("kind") == "PersistentVolumeClaim" and rec.type == "ADDED":
            claims.append(obj["metadata"]["name"])
        if obj.get("kind") != "Pod":
            continue
        name = obj["metadata"]["name"]
        if rec.type == "ADDED":
            ordinal = int(name.rsplit("-", 1)[1])
            if ordinal:
                assert is_pod_ready(state[f"web-{ordinal - 1}"]), f"{name} created before web-{ordinal - 1} was Ready"
            assert claim_name("www", "web", ordinal) in claims
            created.append((name, rec.time))
        if rec.type == "DELETED":
            deleted.append(name)
            state.pop(name, None)
        else:
            state[name] = obj
    assert created == [("web-0", 0.0), ("web-1", STARTUP), ("web-2", 2 * STARTUP)]
    assert deleted == ["web-2", "web-1"]

    pod = api.get("pods", "web-0", namespace="default")
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "web-0"
    assert labels["apps.kubernetes.io/pod-index"] == "0"
    assert labels["controller-revision-hash"] == st["updateRevision"]
    assert pod["spec"]["hostname"] == "web-0" and pod["spec"]["subdomain"] == "nginx"
    assert {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}} in pod["spec"]["volumes"]
    # claims are retained by default (whenScaled: Retain)
    pvcs = sorted(c["metadata"]["name"] for c in api.list("persistentvolumeclaims", namespace="default")["items"])
    assert pvcs == ["www-web-0", "www-web-1", "www-web-2"]
    messages = [e["message"] for e in api.list("events", namespace="default")["items"]]
    assert "create Pod web-0 in StatefulSet web successful" in messages
    assert "create Claim www-web-0 Pod web-0 in StatefulSet web success" in messages
    assert "delete Pod web-2 in StatefulSet web successful" in messages


def test_parallel_creates_all_at_once_and_ordinals_start():
    cluster = Cluster.create(seed=2)
    api = cluster.api

    async def body(rt):
        api.create("statefulsets.apps", statefulset(podManagementPolicy="Parallel", ordinals={"start": 5}))
        await rt.settle(horizon=2 * STARTUP)

    run_cluster(cluster, body, components(cluster))
    created = [(r.object["metadata"]["name"], r.time) for r in cluster.log.records()
               if r.type == "ADDED" and (r.object or {}).get("kind") == "Pod"]
    assert created == [("web-5", 0.0), ("web-6", 0.0), ("web-7", 0.0)]


def test_rolling_update_with_partition_updates_from_the_top_down_to_it():
    cluster = Cluster.create(seed=3)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("statefulsets.apps", statefulset(
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}))
        await rt.settle(horizon=2 * STARTUP)
        old = api.get("statefulsets.apps", "web", namespace="default")
        seen["old_rev"] = old["status"]["currentRevision"]
        tmpl = old["spec"]["template"]
        tmpl = {**tmpl, "spec": {**tmpl["spec"], "containers": [{"name": "nginx", "image": "nginx:1.28"}]}}
        api.update("statefulsets.apps", {**old, "spec": {**old["spec"], "template": tmpl}})
        await rt.settle(horizon=2 * STARTUP)

    run_cluster(cluster, body, components(cluster))
    sts = api.get("statefulsets.apps", "web", namespace="default")
    st = sts["status"]
    assert st["currentRevision"] == seen["old_rev"] != st["updateRevision"]
    assert (st["replicas"], st["updatedReplicas"], st["currentReplicas"], st["readyReplicas"]) == (3, 2, 1, 3)
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
              for p in api.list("pods", namespace="default")["items"]}
    assert images == {"web-0": "nginx:1.27", "web-1": "nginx:1.28", "web-2": "nginx:1.28"}
    deleted = [r.object["metadata"]["name"] for r in cluster.log.records()
               if r.type == "DELETED" and (r.object or {}).get("kind") == "Pod"]
    assert deleted == ["web-2", "web-1"]
    revs = sorted(api.list("controllerrevisions.apps", namespace="default")["items"], key=lambda r: r["revision"])
    assert [r["metadata"]["name"] for r in revs] == [seen["old_rev"], st["updateRevision"]]
    assert [r["revision"] for r in revs] == [1, 2]


def test_when_scaled_delete_makes_the_pod_own_its_claim():
    cluster = Cluster.create(seed=4)
    api = cluster.api

    async def body(rt):
        api.create("statefulsets.apps", statefulset(
            replicas=2, volumeClaimTemplates=[CLAIM],
            persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"}))
        await rt.settle(horizon=2 * STARTUP)
        uid = api.get("pods", "web-1", namespace="default")["metadata"]["uid"]
        api.patch("statefulsets.apps", "web", {"spec": {"replicas": 1}}, namespace="default")
        await rt.settle(horizon=2 * STARTUP)
        return uid

    uid = run_cluster(cluster, body, components(cluster))
    sts = api.get("statefulsets.apps", "web", namespace="default")
    c0 = api.get("persistentvolumeclaims", "www-web-0", namespace="default")
    assert [r["uid"] for r in c0["metadata"]["ownerReferences"]] == [sts["metadata"]["uid"]]
    c1 = api.get("persistentvolumeclaims", "www-web-1", namespace="default")
    assert [r["uid"] for r in c1["metadata"]["ownerReferences"]] == [sts["metadata"]["uid"], uid]
