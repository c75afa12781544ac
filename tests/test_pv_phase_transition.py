"""PersistentVolume ``status.lastPhaseTransitionTime`` (PersistentVolumeLastPhaseTransitionTime, GA
in 1.31), as kube-apiserver's PV registry strategy keeps it (pkg/registry/core/persistentvolume/
strategy.go): a new PV is ``Pending`` since its creation; a ``status`` update that changes the
phase stamps the virtual now, unless the client set a time of its own; one that keeps the phase
keeps the stored time (a client cannot clear it); a main-resource update keeps the whole status."""

from __future__ import annotations

import pytest

from k8semu.controllers.persistentvolume import PersistentVolumeController
from k8semu.sim.cluster import Cluster
from k8semu.sim.runtime import run_cluster

NS = "default"
BINDER = "persistentvolume-binder-controller"
LONG_AGO = "2020-02-02T02:02:02Z"


def pv(name, size="1Gi"):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/mnt/data/{name}"}}}


def pvc(name, size="1Gi"):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}},
                     "storageClassName": ""}}


def binder(cluster):
    return {BINDER: lambda: PersistentVolumeController(cluster.api)}


def get_pv(api, name):
    return api.get("persistentvolumes", name)


def set_status(api, cur, **status):
    """A ``/status`` update of ``cur`` with ``status`` (None values removed)."""
    body = {k: v for k, v in {**(cur.get("status") or {}), **status}.items() if v is not None}
    return api.update("persistentvolumes", {**cur, "status": body}, subresource="status")


def test_new_pv_is_pending_since_its_creation():
    cluster = Cluster.create(seed=1)
    api = cluster.api
    cluster.time = 125.75  # a virtual instant well past the epoch (the timestamp drops the fraction)
    body = pv("pv-a")
    body["status"] = {"phase": "Bound", "lastPhaseTransitionTime": LONG_AGO, "message": "mine"}
    created = api.create("persistentvolumes", body)
    stamp = created["metadata"]["creationTimestamp"]
    assert stamp == api.timestamp() == api.timestamp(125)
    assert created["status"] == {"phase": "Pending", "lastPhaseTransitionTime": stamp}
    assert get_pv(api, "pv-a")["status"] == created["status"]


def test_available_then_bound_each_stamped_at_its_transition():
    cluster = Cluster.create(seed=2)
    api = cluster.api
    seen = {}

    async def body(rt):
        await rt.advance(10)
        api.create("persistentvolumes", pv("pv-a"))
        seen["created"] = api.timestamp()
        await rt.settle()
        seen["available"] = get_pv(api, "pv-a")["status"]
        await rt.advance(300)
        api.create("persistentvolumeclaims", pvc("data"))
        await rt.settle()

    run_cluster(cluster, body, binder(cluster))
    writes = cluster.log.history("/registry/persistentvolumes/pv-a")
    phases = [(r.object["status"]["phase"], r.object["status"].get("lastPhaseTransitionTime"), r.time)
              for r in writes]
    assert [p for p, _, _ in phases] == ["Pending", "Available", "Available", "Bound"]  # claimRef, then phase
    pending, available, claimed, bound = phases
    assert pending[1] == seen["created"] == api.timestamp(pending[2])
    assert available[1] == api.timestamp(available[2]) == seen["available"]["lastPhaseTransitionTime"]
    assert claimed[1] == available[1]  # the claimRef write (main resource) keeps the status
    assert bound[1] == api.timestamp(bound[2])  # the virtual instant of the binding
    assert bound[2] >= available[2] + 300 and bound[1] != available[1]
    assert writes[-1].actor == BINDER
    assert get_pv(api, "pv-a")["status"] == {"phase": "Bound", "lastPhaseTransitionTime": bound[1]}


def test_status_update_without_phase_change_keeps_the_time():
    cluster = Cluster.create(seed=3)
    api = cluster.api
    cur = api.create("persistentvolumes", pv("pv-a"))
    cluster.time = 60
    cur = set_status(api, cur, phase="Available")
    since = cur["status"]["lastPhaseTransitionTime"]
    assert since == api.timestamp(60)
    cluster.time = 600
    # the same phase, the time sent back as stored: kept
    cur = set_status(api, cur, message="still here")
    assert cur["status"] == {"phase": "Available", "lastPhaseTransitionTime": since, "message": "still here"}
    # the same phase, the time left out (a client cannot clear it): the stored one
    cur = set_status(api, cur, lastPhaseTransitionTime=None, message="again")
    assert cur["status"] == {"phase": "Available", "lastPhaseTransitionTime": since, "message": "again"}
    # a main-resource update keeps the stored status whatever it sends
    cur = api.update("persistentvolumes", {**cur, "metadata": {**cur["metadata"], "labels": {"a": "b"}},
                                           "status": {"phase": "Released"}})
    assert cur["status"]["lastPhaseTransitionTime"] == since and cur["status"]["phase"] == "Available"
    assert get_pv(api, "pv-a")["status"]["lastPhaseTransitionTime"] == since


@pytest.mark.parametrize("sent, expected", [
    (None, "now"),  # no time: now
    ("stored", "now"),  # the stored time sent back unchanged: now
    ("stored+00:00", "now"),  # the same instant spelled otherwise is still "unchanged" (Time.Equal)
    (LONG_AGO, LONG_AGO),  # a time of the client's own: kept
])
def test_phase_change_stamps_now_unless_the_client_sets_its_own(sent, expected):
    cluster = Cluster.create(seed=4)
    api = cluster.api
    cur = api.create("persistentvolumes", pv("pv-a"))
    stored = cur["status"]["lastPhaseTransitionTime"]
    cluster.time = 3600
    if sent == "stored":
        sent = stored
    elif sent == "stored+00:00":
        sent = stored.replace("Z", "+00:00")
    cur = set_status(api, cur, phase="Available", lastPhaseTransitionTime=sent)
    assert cur["status"]["phase"] == "Available"
    assert cur["status"]["lastPhaseTransitionTime"] == (api.timestamp(3600) if expected == "now" else expected)


def test_same_phase_with_a_time_of_the_clients_own_keeps_the_clients():
    cluster = Cluster.create(seed=5)
    api = cluster.api
    cur = api.create("persistentvolumes", pv("pv-a"))
    cluster.time = 90
    cur = set_status(api, cur, lastPhaseTransitionTime=LONG_AGO)
    assert cur["status"] == {"phase": "Pending", "lastPhaseTransitionTime": LONG_AGO}
