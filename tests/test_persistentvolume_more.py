"""PVC/PV describers (kubectl 1.33 layout), the pvc/pv protection controllers, and
WaitForFirstConsumer binding by the scheduler's VolumeBinding plugin."""

from __future__ import annotations

from datetime import timedelta

from k8semu.api.admission import StorageObjectInUseProtection
from k8semu.api.resources import ResourceInfo  # noqa: F401  (type of info in the admission test)
from k8semu.cli.describe import describe
from k8semu.controllers.persistentvolume import PersistentVolumeController
from k8semu.controllers.pvprotection import PVCProtectionController, PVProtectionController
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

NS = "default"
WFFC = "waiting for first consumer to be created before binding"


def pv(name, size="1Gi", **spec):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/mnt/data/{name}"}, **spec}}


def local_pv(name, node, size="1Gi", cls="local"):
    body = pv(name, size, storageClassName=cls, persistentVolumeReclaimPolicy="Retain",
              local={"path": "/mnt/disks/ssd1"},
              nodeAffinity={"required": {"nodeSelectorTerms": [{"matchExpressions": [
                  {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}})
    del body["spec"]["hostPath"]
    return body


def pvc(name, size="1Gi", **spec):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def pod(name, claim):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]}}


LOCAL_CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
               "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}


def now_of(cluster):
    return cluster.api.epoch + timedelta(seconds=cluster.time)


def claim_events(api, name):
    return [e for e in api.list("events", namespace=NS)["items"]
            if e["involvedObject"]["kind"] == "PersistentVolumeClaim" and e["involvedObject"]["name"] == name]


# --- describe ---------------------------------------------------------------------------------------------------

def test_describe_pvc_and_pv_in_kubectl_layout():
    cluster = Cluster.create(seed=31)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("vol", "2Gi", hostPath={"path": "/mnt/data", "type": "DirectoryOrCreate"}))
        api.create("persistentvolumeclaims", pvc("data", storageClassName=""))
        api.create("pods", pod("user", "data"))
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    now = now_of(cluster)
    claim = {"kind": "PersistentVolumeClaim", **api.get("persistentvolumeclaims", "data", namespace=NS)}
    assert describe(api, claim, now).splitlines() == [
        "Name:          data",
        "Namespace:     default",
        "StorageClass:  ",
        "Status:        Bound",
        "Volume:        vol",
        "Labels:        <none>",
        "Annotations:   pv.kubernetes.io/bind-completed: yes",
        "               pv.kubernetes.io/bound-by-controller: yes",
        "Finalizers:    [kubernetes.io/pvc-protection]",
        "Capacity:      2Gi",
        "Access Modes:  RWO",
        "VolumeMode:    Filesystem",
        "Used By:       user",
        "Events:        <none>",
    ]
    volume = {"kind": "PersistentVolume", **api.get("persistentvolumes", "vol")}
    assert describe(api, volume, now).splitlines() == [
        "Name:            vol",
        "Labels:          <none>",
        "Annotations:     pv.kubernetes.io/bound-by-controller: yes",
        "Finalizers:      [kubernetes.io/pv-protection]",
        "StorageClass:    ",
        "Status:          Bound",
        "Claim:           default/data",
        "Reclaim Policy:  Retain",
        "Access Modes:    RWO",
        "VolumeMode:      Filesystem",
        "Capacity:        2Gi",
        "Node Affinity:   <none>",
        "Message:         ",
        "Source:",
        "    Type:          HostPath (bare host directory volume)",
        "    Path:          /mnt/data",
        "    HostPathType:  DirectoryOrCreate",
        "Events:            <none>",
    ]


def test_describe_unbound_claim_events_and_local_pv_node_affinity():
    cluster = Cluster.create(seed=32)
    api = cluster.api

    async def body(rt):
        api.create("storageclasses.storage.k8s.io", LOCAL_CLASS)
        api.create("persistentvolumes", local_pv("ssd", "node-2"))
        api.create("persistentvolumeclaims", pvc("data", storageClassName="local"))
        await rt.advance(20)

    run_cluster(cluster, body, {"persistentvolume-binder-controller": lambda: PersistentVolumeController(api)})
    now = now_of(cluster)
    text = describe(api, {"kind": "PersistentVolumeClaim",
                          **api.get("persistentvolumeclaims", "data", namespace=NS)}, now)
    lines = text.splitlines()
    assert lines[:12] == [
        "Name:          data",
        "Namespace:     default",
        "StorageClass:  local",
        "Status:        Pending",
        "Volume:        ",
        "Labels:        <none>",
        "Annotations:   <none>",
        "Finalizers:    [kubernetes.io/pvc-protection]",
        "Capacity:      ",
        "Access Modes:  ",
        "VolumeMode:    Filesystem",
        "Used By:       <none>",
    ]
    assert lines[12:15] == ["Events:", "  Type    Reason                Age               From                         Message",
                            "  ----    ------                ----              ----                         -------"]
    assert lines[15] == ("  Normal  WaitForFirstConsumer  5s (x2 over 20s)  persistentvolume-controller  " + WFFC)
    text = describe(api, {"kind": "PersistentVolume", **api.get("persistentvolumes", "ssd")}, now)
    assert text.splitlines() == [
        "Name:              ssd",
        "Labels:            <none>",
        "Annotations:       <none>",
        "Finalizers:        [kubernetes.io/pv-protection]",
        "StorageClass:      local",
        "Status:            Available",
        "Claim:             ",
        "Reclaim Policy:    Retain",
        "Access Modes:      RWO",
        "VolumeMode:        Filesystem",
        "Capacity:          1Gi",
        "Node Affinity:     ",
        "  Required Terms:  ",
        "    Term 0:        kubernetes.io/hostname in [node-2]",
        "Message:           ",
        "Source:",
        "    Type:  LocalVolume (a persistent volume backed by local storage on a node)",
        "    Path:  /mnt/disks/ssd1",
        "Events:    <none>",
    ]


# --- protection -------------------------------------------------------------------------------------------------

def test_admission_plugin_adds_protection_finalizers_on_create_only():
    class Info:
        def __init__(self, kind):
            self.kind = kind

    plugin = StorageObjectInUseProtection(None)
    claim = plugin.admit("create", Info("PersistentVolumeClaim"), pvc("c"), None, None)
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert plugin.admit("create", Info("PersistentVolumeClaim"), claim, None, None) == claim
    volume = plugin.admit("create", Info("PersistentVolume"), pv("v"), None, None)
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert plugin.admit("update", Info("PersistentVolume"), pv("v"), None, None) == pv("v")
    assert plugin.admit("create", Info("Pod"), pod("p", "c"), None, None) == pod("p", "c")


def test_claim_in_use_stays_terminating_until_its_pod_is_gone_then_pv_is_released():
    cluster = Cluster.create(seed=33)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("persistentvolumes", pv("vol"))
        api.create("persistentvolumeclaims", pvc("data", storageClassName=""))
        api.create("pods", pod("user", "data"))
        assert await rt.settle()
        # a bound PV cannot go while its claim exists
        api.delete("persistentvolumes", "vol")
        api.delete("persistentvolumeclaims", "data", namespace=NS)
        assert await rt.settle()
        seen["claim"] = api.get("persistentvolumeclaims", "data", namespace=NS)
        seen["volume"] = api.get("persistentvolumes", "vol")
        api.delete("pods", "user", namespace=NS)
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    claim, volume = seen["claim"], seen["volume"]
    assert claim["metadata"]["deletionTimestamp"] and claim["metadata"]["finalizers"] == [
        "kubernetes.io/pvc-protection"]
    assert claim["status"]["phase"] == "Bound"
    text = describe(api, {"kind": "PersistentVolumeClaim", **claim}, now_of(cluster))
    assert "Status:        Terminating (lasts " in text
    assert volume["metadata"]["deletionTimestamp"] and volume["status"]["phase"] == "Bound"
    assert api.list("persistentvolumeclaims", namespace=NS)["items"] == []
    assert api.list("persistentvolumes")["items"] == []  # released, then its finalizer removed
    actors = {r.actor for r in cluster.log.history(f"/registry/persistentvolumeclaims/{NS}/data")}
    assert "persistentvolumeclaim-protection-controller" in actors
    actors = {r.actor for r in cluster.log.history("/registry/persistentvolumes/vol")}
    assert "persistentvolume-protection-controller" in actors


def test_unused_claim_is_deleted_at_once_and_terminated_pods_do_not_hold_it():
    cluster = Cluster.create(seed=34)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumeclaims", {**pvc("free", storageClassName=""),
                                              "metadata": {"name": "free", "namespace": NS,
                                                           "finalizers": ["kubernetes.io/pvc-protection"]}})
        api.create("persistentvolumeclaims", {**pvc("pending", storageClassName=""),
                                              "metadata": {"name": "pending", "namespace": NS,
                                                           "finalizers": ["kubernetes.io/pvc-protection"]}})
        api.create("pods", pod("unscheduled", "pending"))  # never scheduled: the claim is unbound
        await rt.settle()
        api.delete("persistentvolumeclaims", "free", namespace=NS)
        api.delete("persistentvolumeclaims", "pending", namespace=NS)
        await rt.settle()

    factories = {"persistentvolumeclaim-protection-controller": lambda: PVCProtectionController(api),
                 "persistentvolume-protection-controller": lambda: PVProtectionController(api)}
    run_cluster(cluster, body, factories)
    assert api.list("persistentvolumeclaims", namespace=NS)["items"] == []


# --- WaitForFirstConsumer ---------------------------------------------------------------------------------------

def test_wait_for_first_consumer_binds_the_local_pv_of_the_pods_node():
    cluster = Cluster.create(seed=35)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("storageclasses.storage.k8s.io", LOCAL_CLASS)
        api.create("persistentvolumes", local_pv("on-node-3", "node-3"))
        api.create("persistentvolumes", local_pv("on-cp", "control-plane"))  # tainted node
        api.create("persistentvolumeclaims", pvc("data", storageClassName="local"))
        assert await rt.settle()
        seen["waiting"] = api.get("persistentvolumeclaims", "data", namespace=NS)
        api.create("pods", pod("user", "data"))
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    waiting = seen["waiting"]
    assert waiting["status"] == {"phase": "Pending"} and not waiting["spec"].get("volumeName")
    assert [(e["reason"], e["message"]) for e in claim_events(api, "data")][:1] == [("WaitForFirstConsumer", WFFC)]
    user = api.get("pods", "user", namespace=NS)
    assert user["spec"]["nodeName"] == "node-3" and user["status"]["phase"] == "Running"
    claim = api.get("persistentvolumeclaims", "data", namespace=NS)
    assert claim["spec"]["volumeName"] == "on-node-3" and claim["status"]["phase"] == "Bound"
    volume = api.get("persistentvolumes", "on-node-3")
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert volume["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    assert api.get("persistentvolumes", "on-cp")["status"]["phase"] == "Available"
    # the scheduler sets the claimRef, the PV controller completes the binding, then the pod is bound
    writes = [(r.key.split("/")[2], r.actor) for r in cluster.log.records()
              if r.key in ("/registry/persistentvolumes/on-node-3", f"/registry/persistentvolumeclaims/{NS}/data",
                           f"/registry/pods/{NS}/user") and r.revision > waiting_revision(cluster)]
    first_scheduler_pv = writes.index(("persistentvolumes", "default-scheduler"))
    pod_bound = next(i for i, w in enumerate(writes) if w == ("pods", "default-scheduler"))
    claim_bound = max(i for i, w in enumerate(writes) if w == ("persistentvolumeclaims",
                                                                 "persistentvolume-binder-controller"))
    assert first_scheduler_pv < claim_bound < pod_bound


def waiting_revision(cluster):
    return next(r.revision for r in cluster.log.history(f"/registry/pods/{NS}/user"))


def test_wait_for_first_consumer_without_a_fitting_pv_cannot_schedule():
    cluster = Cluster.create(seed=36)
    api = cluster.api

    async def body(rt):
        api.create("storageclasses.storage.k8s.io", LOCAL_CLASS)
        api.create("persistentvolumes", local_pv("small", "node-1", size="1Gi"))
        api.create("persistentvolumeclaims", pvc("big", "5Gi", storageClassName="local"))
        api.create("pods", pod("user", "big"))
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    user = api.get("pods", "user", namespace=NS)
    assert not user["spec"].get("nodeName")
    [cond] = [c for c in user["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["message"].startswith(
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "3 node(s) didn't find available persistent volumes to bind."), cond["message"]
    reasons = [e["reason"] for e in claim_events(api, "big")]
    assert reasons and set(reasons) == {"WaitForPodScheduled"}
    assert claim_events(api, "big")[0]["message"] == "waiting for pod user to be scheduled"


def test_wait_for_first_consumer_is_deterministic():
    def run():
        cluster = Cluster.create(seed=37)
        api = cluster.api

        async def body(rt):
            api.create("storageclasses.storage.k8s.io", LOCAL_CLASS)
            for i in (1, 2, 3):
                api.create("persistentvolumes", local_pv(f"pv-{i}", f"node-{i}"))
            for i in (1, 2):
                api.create("persistentvolumeclaims", pvc(f"c{i}", storageClassName="local"))
                api.create("pods", pod(f"p{i}", f"c{i}"))
            await rt.settle()

        run_cluster(cluster, body, default_factories(cluster))
        return [(r.revision, r.time, r.type, r.key, r.actor, r.object) for r in cluster.log.records()]

    first, second = run(), run()
    assert first == second


def test_apply_summary_does_not_flag_a_claim_waiting_for_its_first_consumer():
    from k8semu.api.resources import lookup
    from k8semu.cli.summary import summarize
    from k8semu.sim.cluster import Cluster

    cluster = Cluster.create(seed=1)
    api = cluster.api
    api.create("storageclasses.storage.k8s.io", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    for name, cls in (("later", "local"), ("stuck", "")):
        api.create("persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                     "resources": {"requests": {"storage": "1Gi"}}}})
    info = lookup("pvc")[0]
    later, stuck = summarize(api, [(info, "default", "later"), (info, "default", "stuck")])
    assert (later.ok, later.text) == (True, "Pending: waiting for a first consumer to be scheduled")
    assert (stuck.ok, stuck.text) == (False, "Pending")
