"""The PersistentVolume controller behaves as upstream's persistentvolume-binder-controller,
and pods whose claims it binds get scheduled (VolumeBinding)."""

from __future__ import annotations

from k8semu.controllers.persistentvolume import (ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER,
                                                 PersistentVolumeController, find_best_match)
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

NS = "default"
CONTROLLER = "persistentvolume-binder-controller"
NO_CLASS = "no persistent volumes available for this claim and no storage class is set"


def pv(name, size="1Gi", modes=("ReadWriteOnce",), policy=None, path=None, **spec):
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes),
                     "hostPath": {"path": path or f"/mnt/data/{name}"}, **spec}}
    if policy:
        body["spec"]["persistentVolumeReclaimPolicy"] = policy
    return body


def pvc(name, size="1Gi", modes=("ReadWriteOnce",), **spec):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec}}


def only_controller(cluster, *, protection=False):
    """The PV binder alone (with ``protection``, also the controllers that lift the
    pvc-/pv-protection finalizers admission puts on every new claim and volume)."""
    out = {CONTROLLER: lambda: PersistentVolumeController(cluster.api)}
    if protection:
        from k8semu.controllers.pvprotection import PVCProtectionController, PVProtectionController

        out["persistentvolumeclaim-protection-controller"] = lambda: PVCProtectionController(cluster.api)
        out["persistentvolume-protection-controller"] = lambda: PVProtectionController(cluster.api)
    return out


def get_pv(api, name):
    return api.get("persistentvolumes", name)


def get_pvc(api, name):
    return api.get("persistentvolumeclaims", name, namespace=NS)


def claim_events(api, name):
    return [e for e in api.list("events", namespace=NS)["items"]
            if e["involvedObject"]["kind"] == "PersistentVolumeClaim" and e["involvedObject"]["name"] == name]


def pv_events(api, name):
    return [e for e in api.list("events", namespace=NS)["items"]
            if e["involvedObject"]["kind"] == "PersistentVolume" and e["involvedObject"]["name"] == name]


def test_new_pv_becomes_available():
    cluster = Cluster.create(seed=1)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("pv-a"))
        assert get_pv(api, "pv-a")["status"]["phase"] == "Pending"  # as created
        await rt.settle()

    run_cluster(cluster, body, only_controller(cluster))
    writes = [r for r in cluster.log.history("/registry/persistentvolumes/pv-a")]
    assert get_pv(api, "pv-a")["status"] == {"phase": "Available",
                                             "lastPhaseTransitionTime": api.timestamp(writes[-1].time)}
    assert [r.object["status"]["phase"] for r in writes] == ["Pending", "Available"]
    assert writes[-1].actor == CONTROLLER


def test_claim_binds_smallest_fitting_volume_with_upstream_fields():
    cluster = Cluster.create(seed=2)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("big", "5Gi"))
        api.create("persistentvolumes", pv("small", "1Gi"))  # too small for 1500Mi
        api.create("persistentvolumes", pv("fits", "2Gi"))
        api.create("persistentvolumes", pv("classy", "2Gi", storageClassName="fast"))  # another class
        api.create("persistentvolumes", pv("rwx", "2Gi", modes=("ReadWriteMany",)))  # wrong access mode
        await rt.settle()
        api.create("persistentvolumeclaims", pvc("data", "1500Mi", storageClassName=""))
        await rt.settle()

    run_cluster(cluster, body, only_controller(cluster))
    claim = get_pvc(api, "data")
    volume = get_pv(api, "fits")
    assert claim["spec"]["volumeName"] == "fits"
    assert claim["metadata"]["annotations"] == {ANN_BIND_COMPLETED: "yes", ANN_BOUND_BY_CONTROLLER: "yes"}
    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}
    ref = volume["spec"]["claimRef"]
    assert list(ref) == ["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion"]
    assert ref["kind"] == "PersistentVolumeClaim" and ref["apiVersion"] == "v1"
    assert (ref["namespace"], ref["name"], ref["uid"]) == (NS, "data", claim["metadata"]["uid"])
    assert int(ref["resourceVersion"]) < int(claim["metadata"]["resourceVersion"])
    assert volume["metadata"]["annotations"] == {ANN_BOUND_BY_CONTROLLER: "yes"}
    assert volume["status"]["phase"] == "Bound"
    for other in ("big", "small", "classy", "rwx"):
        assert get_pv(api, other)["status"]["phase"] == "Available"
        assert "claimRef" not in get_pv(api, other)["spec"]
    # bind order as upstream: PV claimRef, PV phase, PVC volumeName, PVC phase
    steps = [(r.key.split("/")[2], (r.object.get("status") or {}).get("phase"), r.actor)
             for r in cluster.log.records() if r.actor == CONTROLLER and r.key.split("/")[2] in
             ("persistentvolumes", "persistentvolumeclaims")]
    assert steps[-4:] == [("persistentvolumes", "Available", CONTROLLER), ("persistentvolumes", "Bound", CONTROLLER),
                          ("persistentvolumeclaims", "Pending", CONTROLLER),
                          ("persistentvolumeclaims", "Bound", CONTROLLER)]
    assert claim_events(api, "data") == []


def test_best_match_prefers_fewest_access_modes_then_smallest():
    def vol(name, size, modes):
        return {"metadata": {"name": name}, "spec": {"capacity": {"storage": size}, "accessModes": modes},
                "status": {"phase": "Available"}}

    claim = {"metadata": {"name": "c", "namespace": NS},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    volumes = [vol("b-rwo-rwx", "1Gi", ["ReadWriteOnce", "ReadWriteMany"]), vol("a-rwo", "10Gi", ["ReadWriteOnce"]),
               vol("c-rwo", "10Gi", ["ReadWriteOnce"])]
    assert find_best_match(claim, volumes)["metadata"]["name"] == "a-rwo"  # equal sizes: first by name
    selected = {**claim, "spec": {**claim["spec"], "selector": {"matchLabels": {"tier": "gold"}}}}
    assert find_best_match(selected, volumes) is None
    volumes[2]["metadata"]["labels"] = {"tier": "gold"}
    assert find_best_match(selected, volumes)["metadata"]["name"] == "c-rwo"
    block = {**claim, "spec": {**claim["spec"], "volumeMode": "Block"}}
    assert find_best_match(block, volumes) is None


def test_unmatched_claim_waits_with_failed_binding_and_binds_at_a_resync():
    cluster = Cluster.create(seed=3)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("persistentvolumeclaims", pvc("data"))  # storageClassName unset, no default class
        settled = await rt.settle()
        seen["settled"] = settled
        seen["settled_at"] = api.now
        await rt.advance(46)  # three resyncs repeat the event
        seen["pending"] = get_pvc(api, "data")
        seen["events"] = claim_events(api, "data")
        api.create("persistentvolumes", pv("late"))
        created = api.now
        assert await rt.settle()
        seen["bound_after"] = next(r.time for r in cluster.log.history(f"/registry/persistentvolumeclaims/{NS}/data")
                                   if (r.object.get("status") or {}).get("phase") == "Bound") - created

    run_cluster(cluster, body, only_controller(cluster))
    assert seen["settled"] and seen["settled_at"] < 1.0  # a waiting claim does not keep the cluster busy
    assert seen["pending"]["status"] == {"phase": "Pending"}
    [event] = seen["events"]
    assert (event["type"], event["reason"], event["message"]) == ("Normal", "FailedBinding", NO_CLASS)
    assert event["source"] == {"component": "persistentvolume-controller"}
    assert event["count"] == 4  # on creation, then at each 15 s resync
    # upstream binds a claim made before its PV at the next periodic sync (15 s)
    assert 0 < seen["bound_after"] <= 15
    assert get_pvc(api, "data")["spec"]["volumeName"] == "late"


def test_same_instant_pv_and_claim_bind_without_failed_binding():
    cluster = Cluster.create(seed=4)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("vol"))
        api.create("persistentvolumeclaims", pvc("data", storageClassName=""))
        await rt.settle()

    run_cluster(cluster, body, only_controller(cluster))
    assert get_pvc(api, "data")["status"]["phase"] == "Bound"
    assert claim_events(api, "data") == []


def test_storage_class_not_found_and_external_provisioner_events():
    cluster = Cluster.create(seed=5)
    api = cluster.api

    async def body(rt):
        api.create("storageclasses.storage.k8s.io", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "csi"},
            "provisioner": "example.com/csi", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        api.create("persistentvolumeclaims", pvc("missing", storageClassName="nope"))
        api.create("persistentvolumeclaims", pvc("external", storageClassName="csi"))
        await rt.settle()

    run_cluster(cluster, body, only_controller(cluster))
    [missing] = claim_events(api, "missing")
    assert (missing["type"], missing["reason"], missing["message"]) == (
        "Warning", "ProvisioningFailed", 'storageclass.storage.k8s.io "nope" not found')
    [external] = claim_events(api, "external")
    assert (external["type"], external["reason"]) == ("Normal", "ExternalProvisioning")
    assert external["message"] == (
        "Waiting for a volume to be created either by the external provisioner 'example.com/csi' or manually by "
        "the system administrator. If volume creation is delayed, please verify that the provisioner is running "
        "and correctly registered.")
    ann = get_pvc(api, "external")["metadata"]["annotations"]
    assert ann["volume.kubernetes.io/storage-provisioner"] == "example.com/csi"
    assert ann["volume.beta.kubernetes.io/storage-provisioner"] == "example.com/csi"
    assert get_pvc(api, "external")["status"]["phase"] == "Pending"


def test_pre_bound_claim_and_pre_bound_volume():
    cluster = Cluster.create(seed=6)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("wanted", "3Gi"))
        api.create("persistentvolumes", pv("smaller", "1Gi"))
        api.create("persistentvolumes", pv("reserved", "5Gi", claimRef={"namespace": NS, "name": "mine"}))
        api.create("persistentvolumes", pv("tiny", "100Mi"))
        await rt.settle()
        assert get_pv(api, "reserved")["status"]["phase"] == "Available"  # pre-bound, no uid yet
        api.create("persistentvolumeclaims", pvc("asks", volumeName="wanted", storageClassName=""))
        api.create("persistentvolumeclaims", pvc("mine", storageClassName=""))
        api.create("persistentvolumeclaims", pvc("too-big", volumeName="tiny", storageClassName=""))
        await rt.settle()

    run_cluster(cluster, body, only_controller(cluster))
    asks = get_pvc(api, "asks")
    assert asks["status"]["phase"] == "Bound" and asks["status"]["capacity"] == {"storage": "3Gi"}
    assert asks["metadata"]["annotations"] == {ANN_BIND_COMPLETED: "yes"}  # the user chose the volume
    assert get_pv(api, "wanted")["metadata"]["annotations"] == {ANN_BOUND_BY_CONTROLLER: "yes"}
    mine = get_pvc(api, "mine")
    assert mine["spec"]["volumeName"] == "reserved"  # not the smaller free one
    reserved = get_pv(api, "reserved")
    assert reserved["spec"]["claimRef"]["uid"] == mine["metadata"]["uid"]
    assert "annotations" not in reserved["metadata"]  # the user bound the volume
    assert get_pvc(api, "too-big")["status"]["phase"] == "Pending"
    [mismatch] = claim_events(api, "too-big")
    assert (mismatch["type"], mismatch["reason"], mismatch["message"]) == (
        "Warning", "VolumeMismatch", 'Cannot bind to requested volume "tiny": requested PV is too small')


def test_claim_deletion_releases_and_reclaims():
    cluster = Cluster.create(seed=7)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("keep"))
        api.create("persistentvolumes", pv("mnt", "2Gi", policy="Delete"))
        api.create("persistentvolumes", pv("tmp", "3Gi", policy="Delete", path="/tmp/data"))
        api.create("persistentvolumes", pv("share", "4Gi", policy="Delete", hostPath=None,
                                           nfs={"server": "nfs.example.com", "path": "/exports"}))
        await rt.settle()
        for name, size in (("a", "1Gi"), ("b", "2Gi"), ("c", "3Gi"), ("d", "4Gi")):
            api.create("persistentvolumeclaims", pvc(name, size, storageClassName=""))
        await rt.settle()
        seen = {n: get_pvc(api, n)["spec"]["volumeName"] for n in "abcd"}
        assert seen == {"a": "keep", "b": "mnt", "c": "tmp", "d": "share"}
        for name in "abcd":
            api.delete("persistentvolumeclaims", name, namespace=NS)
        await rt.settle()

    run_cluster(cluster, body, only_controller(cluster, protection=True))  # no pod uses them: they go
    keep = get_pv(api, "keep")
    assert keep["status"]["phase"] == "Released"
    assert keep["status"]["lastPhaseTransitionTime"] == api.timestamp(
        cluster.log.get("/registry/persistentvolumes/keep").time)  # the write that released it
    assert keep["spec"]["claimRef"]["name"] == "a"  # Retain keeps the reference
    mnt = get_pv(api, "mnt")
    message = "host_path deleter only supports /tmp/.+ but received provided /mnt/data/mnt"
    assert mnt["status"] == {"phase": "Failed", "message": message, "lastPhaseTransitionTime": api.timestamp(
        cluster.log.get("/registry/persistentvolumes/mnt").time)}
    [failed] = pv_events(api, "mnt")
    assert (failed["type"], failed["reason"], failed["message"]) == ("Warning", "VolumeFailedDelete", message)
    assert api.list("persistentvolumes")["items"] and "tmp" not in [
        v["metadata"]["name"] for v in api.list("persistentvolumes")["items"]]  # deleted with its volume
    share = get_pv(api, "share")
    assert share["status"]["message"] == 'error getting deleter volume plugin for volume "share": ' \
                                         "no deletable volume plugin matched"


def test_pod_waits_for_its_claim_and_respects_local_pv_node_affinity():
    from k8semu.sim.components import default_factories

    cluster = Cluster.create(seed=8)
    api = cluster.api
    seen = {}

    def pod(name, claim):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
                "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}],
                         "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]}}

    def local_pv(name, node):
        return pv(name, hostPath=None, local={"path": "/mnt/disks/ssd1"},
                  nodeAffinity={"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}})

    async def body(rt):
        api.create("persistentvolumeclaims", pvc("data", storageClassName=""))
        api.create("pods", pod("user", "data"))
        await rt.settle()
        seen["before"] = api.get("pods", "user", namespace=NS)
        api.create("persistentvolumes", local_pv("local-pv", "node-2"))
        await rt.settle()
        # a bound claim whose PV is pinned to a node that cannot take the pod
        api.create("persistentvolumes", local_pv("cp-pv", "control-plane"))
        api.create("persistentvolumeclaims", pvc("pinned", storageClassName="", volumeName="cp-pv"))
        api.create("pods", pod("stuck", "pinned"))
        await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    before = seen["before"]
    assert not before["spec"].get("nodeName")
    [cond] = [c for c in before["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["message"].startswith("0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    after = api.get("pods", "user", namespace=NS)
    assert after["spec"]["nodeName"] == "node-2"  # the local PV's node, once the claim is bound
    assert after["status"]["phase"] == "Running"
    assert get_pvc(api, "pinned")["status"]["phase"] == "Bound"
    stuck = api.get("pods", "stuck", namespace=NS)
    assert not stuck["spec"].get("nodeName")
    [cond] = [c for c in stuck["status"]["conditions"] if c["type"] == "PodScheduled"]
    # its PV's node affinity leaves only the control-plane node (GetEligibleNodes), which is tainted
    assert cond["message"].startswith(
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "3 node is filtered out by the prefilter result."), cond["message"]


def test_statefulset_with_claim_templates_runs_once_pvs_exist():
    from k8semu.sim.components import default_factories

    cluster = Cluster.create(seed=9)
    api = cluster.api
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": NS},
           "spec": {"serviceName": "nginx", "replicas": 3, "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {"metadata": {"labels": {"app": "nginx"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                        "resources": {"requests": {"storage": "1Gi"}}}}]}}

    async def body(rt):
        for i in range(3):
            api.create("persistentvolumes", pv(f"pv-{i}"))
        api.create("statefulsets.apps", sts)
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    pods = {p["metadata"]["name"]: p for p in api.list("pods", namespace=NS)["items"]}
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    assert all(p["status"]["phase"] == "Running" for p in pods.values())
    claims = {c["metadata"]["name"]: c for c in api.list("persistentvolumeclaims", namespace=NS)["items"]}
    assert {n: c["status"]["phase"] for n, c in claims.items()} == {
        "www-web-0": "Bound", "www-web-1": "Bound", "www-web-2": "Bound"}
    assert sorted(c["spec"]["volumeName"] for c in claims.values()) == ["pv-0", "pv-1", "pv-2"]
    assert api.get("statefulsets.apps", "web", namespace=NS)["status"]["readyReplicas"] == 3


def test_same_inputs_same_log():
    def run():
        cluster = Cluster.create(seed=10)
        api = cluster.api

        async def body(rt):
            for i, size in enumerate(("3Gi", "1Gi", "2Gi", "1Gi")):
                api.create("persistentvolumes", pv(f"v{i}", size))
            for name in ("x", "y", "z"):
                api.create("persistentvolumeclaims", pvc(name, storageClassName=""))
            await rt.settle()
            api.delete("persistentvolumeclaims", "y", namespace=NS)
            await rt.advance(40)

        run_cluster(cluster, body, only_controller(cluster))
        return [(r.revision, r.time, r.type, r.key, r.actor, r.object) for r in cluster.log.records()]

    first, second = run(), run()
    assert first == second


def test_volume_binding_checks_bound_claims_pvs():
    """VolumeBinding Filter (``checkBoundClaims``): the bound claim's PV must exist and its node
    affinity must fit; a claim with volumeName but without bind-completed whose PV exists is
    still unbound (``isPVCFullyBound``)."""
    import random

    from k8semu.scheduler import Framework, Snapshot

    def node(name, zone):
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                      "topology.kubernetes.io/zone": zone}},
                "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS, "uid": "u"},
           "spec": {"containers": [{"name": "c", "image": "pause"}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}
    zoned = pv("zoned", nodeAffinity={"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}]}})
    bound = {**pvc("data"), "metadata": {"name": "data", "namespace": NS,
                                         "annotations": {ANN_BIND_COMPLETED: "yes"}},
             "spec": {**pvc("data")["spec"], "volumeName": "zoned"}}
    nodes = [node("n1", "a"), node("n2", "b"), node("n3", "a")]

    def run(objects):
        return Framework().schedule_one(pod, Snapshot.of(nodes, [], objects), random.Random(0))

    r = run([bound, zoned])
    assert r.suggested_host == "n2"
    zoned_a = {**zoned, "spec": {**zoned["spec"], "nodeAffinity": {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["c"]}]}]}}}}
    assert run([bound, zoned_a]).message().startswith(
        "0/3 nodes are available: 3 node(s) had volume node affinity conflict.")
    assert run([bound]).message().startswith(
        "0/3 nodes are available: 3 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s).")
    user_bound = {**bound, "metadata": {"name": "data", "namespace": NS}}
    assert run([user_bound, zoned]).message().startswith(
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.")


def test_lost_claim_and_retroactive_default_storage_class():
    cluster = Cluster.create(seed=11)
    api = cluster.api

    async def body(rt):
        api.create("persistentvolumes", pv("vol"))
        api.create("persistentvolumeclaims", pvc("data"))
        api.create("persistentvolumeclaims", pvc("later"))
        await rt.settle()
        # pv-protection keeps a bound volume until its finalizer is taken off by hand
        api.delete("persistentvolumes", "vol")
        api.patch("persistentvolumes", "vol", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        api.create("storageclasses.storage.k8s.io", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/disk", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        assert await rt.settle()

    run_cluster(cluster, body, only_controller(cluster))
    data = get_pvc(api, "data")
    assert data["status"] == {"phase": "Lost"}
    lost = [e for e in claim_events(api, "data") if e["reason"] == "ClaimLost"]
    assert [(e["type"], e["message"]) for e in lost] == [
        ("Warning", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")]
    later = get_pvc(api, "later")
    assert later["spec"]["storageClassName"] == "standard"  # given at the next resync
    assert [e["reason"] for e in claim_events(api, "later")] == ["FailedBinding", "ExternalProvisioning"]
