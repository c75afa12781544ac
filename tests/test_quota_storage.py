"""ResourceQuota over storage, as a user meets it: upstream's PersistentVolumeClaim evaluator
(``requests.storage``, ``persistentvolumeclaims`` and their ``<class>.storageclass.storage.k8s.io/``
forms, volume expansion charged on update) and the pod evaluator's ephemeral-storage — the
exact 403 messages, ``status.used`` as the resource-quota controller writes it, and ``get quota``."""

from __future__ import annotations

import pytest

from k8semu.api import errors
from k8semu.api.quantity import parse_quantity
from k8semu.api.quota import pvc_storage_class, pvc_storage_usage, pvc_usage
from k8semu.api.tables import table_for
from k8semu.sim.cluster import Cluster
from k8semu.sim.components import default_factories
from k8semu.sim.runtime import run_cluster

NS = "q"
GOLD = "gold.storageclass.storage.k8s.io"


def pvc(name, storage="1Gi", cls=None, annotations=None):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    if cls is not None:
        spec["storageClassName"] = cls
    meta = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def pv(name, storage="1Gi", cls="fast"):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": storage}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": cls, "hostPath": {"path": f"/mnt/data/{name}"}}}


def new_cluster():
    c = Cluster.create(seed=3)
    c.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return c


@pytest.fixture
def api():
    return new_cluster().api


def quota(api, name, hard, **spec):
    api.create("resourcequotas", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
                                  "spec": {"hard": hard, **spec}}, namespace=NS)


def refused(fn, *args, **kw):
    with pytest.raises(errors.Forbidden) as e:
        fn(*args, namespace=NS, **kw)
    assert e.value.code == 403
    return e.value.message


def create(api, resource, obj):
    return api.create(resource, obj, namespace=NS)


# ------------------------------------------------------------------ the evaluator's usage


def test_claim_usage_is_upstreams():
    """``Usage``: both counts, the request (rounded up to a whole byte), and per class the
    same again; the beta annotation wins over ``spec.storageClassName``; ``allocatedResources``
    counts when larger than the request (RecoverVolumeExpansionFailure, on in 1.33)."""
    gold = pvc_usage(pvc("a", "5Gi", cls="gold"))
    assert {r: str(q) for r, q in gold.items()} == {
        "persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
        f"{GOLD}/persistentvolumeclaims": "1", "requests.storage": "5Gi", f"{GOLD}/requests.storage": "5Gi"}
    plain = pvc_usage(pvc("b", "500Mi"))
    assert sorted(plain) == ["count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage"]
    assert pvc_storage_class(pvc("c", cls="silver", annotations={
        "volume.beta.kubernetes.io/storage-class": "gold"})) == "gold"
    assert pvc_storage_class(pvc("d", cls="")) == ""
    assert str(pvc_storage_usage(pvc("e", "1.5"))) == "2"
    growing = {**pvc("f", "1Gi"), "status": {"allocatedResources": {"storage": "3Gi"}, "capacity": {"storage": "8Gi"}}}
    assert str(pvc_storage_usage(growing)) == "3Gi"
    shrunk = {**pvc("g", "2Gi"), "status": {"allocatedResources": {"storage": "1Gi"}}}
    assert str(pvc_storage_usage(shrunk)) == "2Gi"


# ------------------------------------------------------------------ admission


def test_claim_over_requests_storage_is_refused_with_upstreams_message(api):
    """``exceeded quota: <quota>, requested: …, used: …, limited: …``, each part naming only the
    exceeded resources, sorted, joined by ``,``; nothing of a refused claim is charged."""
    quota(api, "storage", {"requests.storage": "1Gi", "persistentvolumeclaims": "5"})
    assert refused(api.create, "persistentvolumeclaims", pvc("big", "5Gi")) == (
        'persistentvolumeclaims "big" is forbidden: exceeded quota: storage, requested: requests.storage=5Gi, '
        'used: requests.storage=0, limited: requests.storage=1Gi')
    create(api, "persistentvolumeclaims", pvc("a", "600Mi"))
    assert refused(api.create, "persistentvolumeclaims", pvc("b", "500Mi")) == (
        'persistentvolumeclaims "b" is forbidden: exceeded quota: storage, requested: requests.storage=500Mi, '
        'used: requests.storage=600Mi, limited: requests.storage=1Gi')
    create(api, "persistentvolumeclaims", pvc("b", "424Mi"))  # exactly 1Gi in all


def test_quota_on_requests_storage_requires_nothing_of_a_claim(api):
    """The claim evaluator's ``Constraints`` is a no-op: a claim restored from a snapshot (no
    storage request) is admitted under a ``requests.storage`` quota and charges no storage."""
    quota(api, "storage", {"requests.storage": "1Gi", "count/persistentvolumeclaims": "1"})
    restored = pvc("restored")
    restored["spec"]["resources"] = {}
    restored["spec"]["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                                      "name": "snap"}
    create(api, "persistentvolumeclaims", restored)
    assert refused(api.create, "persistentvolumeclaims", pvc("second", "1Mi")) == (
        'persistentvolumeclaims "second" is forbidden: exceeded quota: storage, '
        'requested: count/persistentvolumeclaims=1, used: count/persistentvolumeclaims=1, '
        'limited: count/persistentvolumeclaims=1')


def test_class_quota_refuses_its_class_only(api):
    """``gold.storageclass.storage.k8s.io/…`` charges gold claims only (the beta annotation
    counts as the class); a silver claim, or one with no class, passes."""
    quota(api, "gold", {f"{GOLD}/requests.storage": "3Gi", f"{GOLD}/persistentvolumeclaims": "1"})
    create(api, "persistentvolumeclaims", pvc("g1", "2Gi", cls="gold"))
    assert refused(api.create, "persistentvolumeclaims", pvc(
        "g2", "2Gi", annotations={"volume.beta.kubernetes.io/storage-class": "gold"})) == (
        'persistentvolumeclaims "g2" is forbidden: exceeded quota: gold, '
        f'requested: {GOLD}/persistentvolumeclaims=1,{GOLD}/requests.storage=2Gi, '
        f'used: {GOLD}/persistentvolumeclaims=1,{GOLD}/requests.storage=2Gi, '
        f'limited: {GOLD}/persistentvolumeclaims=1,{GOLD}/requests.storage=3Gi')
    create(api, "persistentvolumeclaims", pvc("s1", "20Gi", cls="silver"))
    create(api, "persistentvolumeclaims", pvc("none", "20Gi"))


def test_expanding_a_claim_is_charged_the_growth():
    """Upstream's claim evaluator ``Handles`` updates: growing a bound claim's request is
    charged the difference (``requested: requests.storage=2Gi``); an update that does not grow
    it (a label) passes even over a quota lowered below the namespace's use; a ``status``
    update (the resize controller's ``allocatedResources``) is never checked, but counts."""
    c = new_cluster()
    api = c.api
    out = {}

    async def body(rt):
        api.create("storageclasses.storage.k8s.io", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
            "provisioner": "kubernetes.io/no-provisioner", "allowVolumeExpansion": True})
        api.create("persistentvolumes", pv("pv-a", "10Gi"))
        quota(api, "storage", {"requests.storage": "2Gi"})
        create(api, "persistentvolumeclaims", pvc("data", "1Gi", cls="fast"))
        assert await rt.settle()
        claim = api.get("persistentvolumeclaims", "data", namespace=NS)
        out["phase"] = claim["status"]["phase"]
        grown = {**claim, "spec": {**claim["spec"], "resources": {"requests": {"storage": "3Gi"}}}}
        out["refused"] = refused(api.update, "persistentvolumeclaims", grown)
        grown["spec"]["resources"]["requests"]["storage"] = "2Gi"
        claim = api.update("persistentvolumeclaims", grown, namespace=NS)
        assert await rt.settle()
        out["after-growth"] = api.get("resourcequotas", "storage", namespace=NS)["status"]["used"]
        q = api.get("resourcequotas", "storage", namespace=NS)
        api.update("resourcequotas", {**q, "spec": {"hard": {"requests.storage": "1Gi"}}}, namespace=NS)
        claim = api.get("persistentvolumeclaims", "data", namespace=NS)
        claim["metadata"]["labels"] = {"tier": "db"}
        claim = api.update("persistentvolumeclaims", claim, namespace=NS)
        claim["status"] = {**claim["status"], "allocatedResources": {"storage": "4Gi"}}
        api.update("persistentvolumeclaims", claim, namespace=NS, subresource="status")
        assert await rt.settle()
        out["allocated"] = api.get("resourcequotas", "storage", namespace=NS)["status"]

    run_cluster(c, body, default_factories(c))
    assert out["phase"] == "Bound"
    assert out["refused"] == (
        'persistentvolumeclaims "data" is forbidden: exceeded quota: storage, requested: requests.storage=2Gi, '
        'used: requests.storage=1Gi, limited: requests.storage=2Gi')
    assert out["after-growth"] == {"requests.storage": "2Gi"}
    assert out["allocated"] == {"hard": {"requests.storage": "1Gi"}, "used": {"requests.storage": "4Gi"}}


# ------------------------------------------------------------------ status.used and get quota


def test_controller_counts_claims_and_deleting_one_frees_quota():
    """``status.used`` per quota resource (``0`` when nothing counts), per class too; ``get
    quota`` shows them sorted in REQUEST; a deleted claim (once its pvc-protection finalizer is
    gone) frees its share, so the claim refused before is admitted."""
    c = new_cluster()
    api = c.api
    out = {}

    async def body(rt):
        quota(api, "storage", {"persistentvolumeclaims": "5", "requests.storage": "10Gi",
                               f"{GOLD}/requests.storage": "4Gi", f"{GOLD}/persistentvolumeclaims": "2"})
        assert await rt.settle()
        out["empty"] = api.get("resourcequotas", "storage", namespace=NS)["status"]["used"]
        create(api, "persistentvolumeclaims", pvc("logs", "1Gi"))
        create(api, "persistentvolumeclaims", pvc("db", "3Gi", cls="gold"))
        create(api, "persistentvolumeclaims", pvc("cache", "512Mi", cls="gold"))
        assert await rt.settle()
        out["used"] = api.get("resourcequotas", "storage", namespace=NS)
        out["refused"] = refused(api.create, "persistentvolumeclaims", pvc("db-2", "1Gi", cls="gold"))
        api.delete("persistentvolumeclaims", "db", namespace=NS)
        assert await rt.settle()
        out["freed"] = api.get("resourcequotas", "storage", namespace=NS)["status"]["used"]
        create(api, "persistentvolumeclaims", pvc("db-2", "1Gi", cls="gold"))

    run_cluster(c, body, default_factories(c))
    assert out["empty"] == {"persistentvolumeclaims": "0", "requests.storage": "0",
                            f"{GOLD}/persistentvolumeclaims": "0", f"{GOLD}/requests.storage": "0"}
    assert out["used"]["status"]["used"] == {
        "persistentvolumeclaims": "3", "requests.storage": "4608Mi",
        f"{GOLD}/persistentvolumeclaims": "2", f"{GOLD}/requests.storage": "3584Mi"}
    assert out["refused"] == (
        'persistentvolumeclaims "db-2" is forbidden: exceeded quota: storage, '
        f'requested: {GOLD}/persistentvolumeclaims=1,{GOLD}/requests.storage=1Gi, '
        f'used: {GOLD}/persistentvolumeclaims=2,{GOLD}/requests.storage=3584Mi, '
        f'limited: {GOLD}/persistentvolumeclaims=2,{GOLD}/requests.storage=4Gi')
    assert out["freed"] == {"persistentvolumeclaims": "2", "requests.storage": "1536Mi",
                            f"{GOLD}/persistentvolumeclaims": "1", f"{GOLD}/requests.storage": "512Mi"}
    row = table_for([out["used"]], "resourcequotas", 0)["rows"][0]["cells"]
    assert row[1:3] == [
        f"{GOLD}/persistentvolumeclaims: 2/2, {GOLD}/requests.storage: 3584Mi/4Gi, "
        "persistentvolumeclaims: 3/5, requests.storage: 4608Mi/10Gi", ""]


def test_status_hard_is_canonical(api):
    """``status.hard`` is ``spec.hard`` as upstream serializes it: ``1024Mi`` reads ``1Gi``."""
    from k8semu.controllers.resourcequota import quota_status

    q = {"spec": {"hard": {"requests.storage": "1024Mi", "persistentvolumeclaims": "2"}}}
    assert quota_status(q, {"requests.storage": parse_quantity("1Gi")}) == {
        "hard": {"persistentvolumeclaims": "2", "requests.storage": "1Gi"},
        "used": {"persistentvolumeclaims": "0", "requests.storage": "1Gi"}}


# ------------------------------------------------------------------ pods: ephemeral-storage


def pod(name, requests=None, limits=None):
    res = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": res}]}}


def test_pod_ephemeral_storage_quota(api):
    """``requests.ephemeral-storage`` / ``ephemeral-storage`` / ``limits.ephemeral-storage`` are
    charged like cpu and memory, but (not in upstream's ``validationSet``) a pod need not set them."""
    quota(api, "scratch", {"requests.ephemeral-storage": "1Gi", "limits.ephemeral-storage": "2Gi",
                           "ephemeral-storage": "1Gi"})
    create(api, "pods", pod("plain"))
    create(api, "pods", pod("small", {"ephemeral-storage": "512Mi"}, {"ephemeral-storage": "1Gi"}))
    assert refused(api.create, "pods", pod("big", {"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "2Gi"})) == (
        'pods "big" is forbidden: exceeded quota: scratch, requested: ephemeral-storage=1Gi,'
        'limits.ephemeral-storage=2Gi,requests.ephemeral-storage=1Gi, used: ephemeral-storage=512Mi,'
        'limits.ephemeral-storage=1Gi,requests.ephemeral-storage=512Mi, limited: ephemeral-storage=1Gi,'
        'limits.ephemeral-storage=2Gi,requests.ephemeral-storage=1Gi')
