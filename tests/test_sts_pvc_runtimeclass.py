"""What a user notices about three upstream behaviours:

- the StatefulSet controller re-creates a claim from ``volumeClaimTemplates`` that
  was deleted (upstream ``createMissingPersistentVolumeClaims`` /
  ``createPersistentVolumeClaims`` in pkg/controller/statefulset, since 1.27);
- the ``RuntimeClass`` admission plugin (plugin/pkg/admission/runtimeclass);
- ``SetDefaults_HostPathVolumeSource`` for PersistentVolumes.
"""

from __future__ import annotations

import pytest

from k8semu.api import errors
from k8semu.api.admission import default_admission_chain, merge_tolerations
from k8semu.controllers.statefulset import _has_stale_owner_ref
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

NS = "default"


def pv(name):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/mnt/data/{name}"}}}


def db_set():
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": NS},
            "spec": {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
                         {"name": "db", "image": "postgres:16", "command": ["sleep", "infinity"]}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                         "resources": {"requests": {"storage": "1Gi"}}}}]}}


def set_events(api):
    return [(e["reason"], e["message"]) for e in api.list("events", namespace=NS)["items"]
            if e["involvedObject"]["kind"] == "StatefulSet"]


# ---- 1. StatefulSet: a deleted claim is made again


def test_claim_deleted_under_a_running_pod_is_recreated_for_its_replacement():
    """``kubectl delete pvc data-db-0`` leaves the claim Terminating while db-0 uses it;
    ``kubectl delete pod db-0`` then lets it go. Upstream's ``createPersistentVolumeClaims``
    refuses to create the replacement pod while the claim is still being deleted
    (``FailedCreate`` ``create Pod db-0 in StatefulSet db failed error: pvc data-db-0 is being
    deleted``, the sync retried with back-off), then creates a new claim
    (``create Claim data-db-0 Pod db-0 in StatefulSet db success``) and the pod runs on it —
    it does not stay Pending on ``persistentvolumeclaim "data-db-0" not found``."""
    cluster = Cluster.create(seed=3)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("persistentvolumes", pv("pv-a"))
        api.create("persistentvolumes", pv("pv-b"))
        api.create("statefulsets.apps", db_set())
        assert await rt.settle()
        seen["old"] = api.get("persistentvolumeclaims", "data-db-0", namespace=NS)
        api.delete("persistentvolumeclaims", "data-db-0", namespace=NS)
        assert await rt.settle()
        seen["terminating"] = api.get("persistentvolumeclaims", "data-db-0", namespace=NS)
        api.delete("pods", "db-0", namespace=NS)
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    assert seen["terminating"]["metadata"].get("deletionTimestamp")
    assert seen["terminating"]["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    claim = api.get("persistentvolumeclaims", "data-db-0", namespace=NS)
    assert claim["metadata"]["uid"] != seen["old"]["metadata"]["uid"]
    assert claim["status"]["phase"] == "Bound"
    assert claim["spec"]["volumeName"] == "pv-b"  # pv-a was Released (Retain)
    pod = api.get("pods", "db-0", namespace=NS)
    assert pod["status"]["phase"] == "Running"
    events = set_events(api)
    assert ("FailedCreate", "create Pod db-0 in StatefulSet db failed error: pvc data-db-0 is being deleted") \
        in events
    assert ("SuccessfulCreate", "create Claim data-db-0 Pod db-0 in StatefulSet db success") in events
    assert api.get("statefulsets.apps", "db", namespace=NS)["status"]["readyReplicas"] == 1


def test_claim_deleted_under_a_pending_pod_is_recreated():
    """A Pending pod of the set whose claim is gone (the scheduler says
    ``persistentvolumeclaim "data-db-0" not found``) gets the claim back from the template
    (upstream ``processReplica``: ``isPending`` → ``createMissingPersistentVolumeClaims``), and
    runs once a volume exists."""
    cluster = Cluster.create(seed=3)
    api = cluster.api
    seen = {}

    async def body(rt):
        api.create("statefulsets.apps", db_set())  # no PersistentVolume yet: db-0 stays Pending
        assert await rt.settle()
        seen["old"] = api.get("persistentvolumeclaims", "data-db-0", namespace=NS)
        api.delete("persistentvolumeclaims", "data-db-0", namespace=NS)
        assert await rt.settle()
        seen["pod"] = api.get("pods", "db-0", namespace=NS)
        seen["claim"] = api.get("persistentvolumeclaims", "data-db-0", namespace=NS)
        api.create("persistentvolumes", pv("pv-a"))
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    assert seen["pod"]["status"]["phase"] == "Pending"
    assert seen["claim"]["metadata"]["uid"] != seen["old"]["metadata"]["uid"]
    assert not seen["claim"]["metadata"].get("deletionTimestamp")
    pod = api.get("pods", "db-0", namespace=NS)
    assert pod["metadata"]["uid"] == seen["pod"]["metadata"]["uid"]  # the same pod, not a replacement
    assert pod["status"]["phase"] == "Running"
    assert api.get("persistentvolumeclaims", "data-db-0", namespace=NS)["spec"]["volumeName"] == "pv-a"
    creates = [m for r, m in set_events(api) if r == "SuccessfulCreate" and "Claim" in m]
    assert creates == ["create Claim data-db-0 Pod db-0 in StatefulSet db success"]
    [ev] = [e for e in api.list("events", namespace=NS)["items"]
            if e["involvedObject"]["kind"] == "StatefulSet" and e["message"] == creates[0]]
    assert ev["count"] == 2  # the first claim, and the one made again


def test_stale_owner_ref_is_upstreams():
    """Upstream ``hasStaleOwnerRef``: a claim owned (``whenScaled: Delete``) by a pod of the
    same name but another uid — or by any pod of that name, for a pod not yet created — is stale."""
    claim = {"metadata": {"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s"},
        {"apiVersion": "v1", "kind": "Pod", "name": "db-1", "uid": "old"}]}}
    assert _has_stale_owner_ref(claim, "db-1", "")
    assert _has_stale_owner_ref(claim, "db-1", "new")
    assert not _has_stale_owner_ref(claim, "db-1", "old")
    assert not _has_stale_owner_ref(claim, "db-0", "")


# ---- 2. RuntimeClass admission


def runtime_class(name="gvisor", **extra):
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
            "handler": "runsc", **extra}


def pod(name, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}], **spec}}


SANDBOX = {"overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
           "scheduling": {"nodeSelector": {"sandbox": "true"},
                          "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}


def test_pod_with_missing_runtime_class_is_refused():
    """``pods "rcpod2" is forbidden: pod rejected: RuntimeClass "nonexistent" not found`` (403),
    and nothing is stored."""
    api = Cluster.create(seed=1).api
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", pod("rcpod2", runtimeClassName="nonexistent"))
    assert e.value.message == 'pods "rcpod2" is forbidden: pod rejected: RuntimeClass "nonexistent" not found'
    with pytest.raises(errors.NotFound):
        api.get("pods", "rcpod2", namespace=NS)


def test_runtime_class_sets_overhead_and_merges_scheduling():
    """``setOverhead``: ``spec.overhead`` = the class's ``overhead.podFixed``; ``setScheduling``:
    the class's nodeSelector joins the pod's, its tolerations are merged (``MergeTolerations``)
    after the pod's own (DefaultTolerationSeconds' included)."""
    api = Cluster.create(seed=1).api
    api.create("runtimeclasses.node.k8s.io", runtime_class(**SANDBOX))
    api.create("runtimeclasses.node.k8s.io", runtime_class("plain"))
    p = api.create("pods", pod("rcpod", runtimeClassName="gvisor", nodeSelector={"disk": "ssd"}))
    assert p["spec"]["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert p["spec"]["nodeSelector"] == {"disk": "ssd", "sandbox": "true"}
    assert [t["key"] for t in p["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "sandbox"]
    # a class without overhead or scheduling changes nothing
    q = api.create("pods", pod("plainpod", runtimeClassName="plain"))
    assert "overhead" not in q["spec"] and "nodeSelector" not in q["spec"]
    # the same overhead, spelt differently, is accepted
    r = api.create("pods", pod("same", runtimeClassName="gvisor", overhead={"cpu": "0.25", "memory": "120Mi"}))
    assert r["spec"]["overhead"] == {"cpu": "250m", "memory": "120Mi"}


@pytest.mark.parametrize("name, spec, message", [
    ("conflict", {"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "false"}},
     "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false"),
    ("overhead", {"runtimeClassName": "gvisor", "overhead": {"cpu": "1"}},
     "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"),
    ("noclass", {"overhead": {"cpu": "1"}},
     "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"),
])
def test_runtime_class_refusals(name, spec, message):
    """Upstream's texts for a nodeSelector conflict, a differing overhead, and an overhead
    without a RuntimeClass that defines one."""
    api = Cluster.create(seed=1).api
    api.create("runtimeclasses.node.k8s.io", runtime_class(**SANDBOX))
    with pytest.raises(errors.Forbidden) as e:
        api.create("pods", pod(name, **spec))
    assert e.value.message == f'pods "{name}" is forbidden: {message}'


def test_runtime_class_plugin_sits_between_storage_protection_and_resource_quota():
    """kube-apiserver's ``AllOrderedPlugins``: … StorageObjectInUseProtection,
    (OwnerReferencesPermissionEnforcement, off by default,) PersistentVolumeClaimResize,
    RuntimeClass, …, ResourceQuota."""
    names = [p.name for p in default_admission_chain(Cluster.create(seed=1).api).plugins]
    i = names.index("RuntimeClass")
    assert names[i - 2:i] == ["StorageObjectInUseProtection", "PersistentVolumeClaimResize"]
    # upstream: … RuntimeClass, CertificateApproval, CertificateSigning, …, CertificateSubjectRestriction,
    # …, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, ResourceQuota
    assert names[i + 1:] == ["CertificateSigningRequest", "ValidatingAdmissionPolicy", "ResourceQuota"]


def test_merge_tolerations_keeps_supersets():
    """Upstream ``MergeTolerations``: a toleration covered by another is dropped; equal ones once."""
    exists_all = {"operator": "Exists"}
    a = {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}
    b = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    assert merge_tolerations([a], [b]) == [b]
    assert merge_tolerations([a], [a]) == [a]
    assert merge_tolerations([a, b], [exists_all]) == [exists_all]
    c = {"key": "x", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    d = {"key": "x", "operator": "Exists", "effect": "NoExecute"}
    assert merge_tolerations([c], [d]) == [d]


def test_runtime_class_pod_runs_on_the_classs_nodes():
    """A pod of a RuntimeClass with ``scheduling.nodeSelector`` is scheduled onto a node with
    that label, and the refused one never appears."""
    cluster = Cluster.create(seed=5)
    api = cluster.api

    async def body(rt):
        api.patch("nodes", "node-2", {"metadata": {"labels": {"sandbox": "true"}}}, "application/merge-patch+json")
        api.create("runtimeclasses.node.k8s.io", runtime_class(**SANDBOX))
        api.create("pods", pod("rcpod", runtimeClassName="gvisor"))
        with pytest.raises(errors.Forbidden):
            api.create("pods", pod("rcpod2", runtimeClassName="nonexistent"))
        assert await rt.settle()

    run_cluster(cluster, body, default_factories(cluster))
    p = api.get("pods", "rcpod", namespace=NS)
    assert p["spec"]["nodeName"] == "node-2"
    assert p["status"]["phase"] == "Running"
    assert [x["metadata"]["name"] for x in api.list("pods", namespace=NS)["items"]] == ["rcpod"]


# ---- 3. hostPath type defaulting


def test_persistent_volume_host_path_type_defaults_to_unset_as_in_pod_volumes():
    """``SetDefaults_HostPathVolumeSource`` sets ``type: ""`` wherever a HostPathVolumeSource
    appears: a PersistentVolume's ``spec.hostPath`` as well as a pod's volumes; a given type stays."""
    api = Cluster.create(seed=1).api
    v = api.create("persistentvolumes", pv("pv-a"))
    assert v["spec"]["hostPath"] == {"path": "/mnt/data/pv-a", "type": ""}
    typed = pv("pv-b")
    typed["spec"]["hostPath"]["type"] = "DirectoryOrCreate"
    assert api.create("persistentvolumes", typed)["spec"]["hostPath"]["type"] == "DirectoryOrCreate"
    p = api.create("pods", pod("hp", volumes=[{"name": "h", "hostPath": {"path": "/var/log"}}]))
    [vol] = [x for x in p["spec"]["volumes"] if x["name"] == "h"]
    assert vol["hostPath"] == {"path": "/var/log", "type": ""}
