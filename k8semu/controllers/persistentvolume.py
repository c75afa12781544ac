"""The PersistentVolume controller, as kube-controller-manager's
``persistentvolume-binder-controller`` (pkg/controller/volume/persistentvolume,
v1.3x; events from ``persistentvolume-controller``).

Design
======

Upstream's controller keeps the two halves of a binding consistent: the
PersistentVolume's ``spec.claimRef`` and the claim's ``spec.volumeName``. This
one follows its ``syncClaim`` / ``syncVolume`` branch by branch (the "space
shuttle style" of ``pv_controller.go``):

* **Volumes** (``syncVolume``): an unused PV (no ``claimRef``), or one
  pre-bound to a claim by name only (``claimRef`` without ``uid``), is
  ``Available`` (``Pending`` is only the phase a new PV is created with). A PV
  bound to a claim that is gone (or replaced by a claim with the same name and
  another uid) becomes ``Released`` and its ``persistentVolumeReclaimPolicy``
  runs (``reclaimVolume``): ``Retain`` keeps it Released; ``Delete`` looks for a
  deleter as kube-controller-manager's volume plugins (host-path, nfs,
  portworx) would: a ``hostPath`` under ``/tmp/`` is deleted (the PV object with
  it), any other path fails (``host_path deleter only supports /tmp/.+ but
  received provided /mnt/data``), an ``nfs`` PV has ``no deletable volume plugin
  matched``, a CSI PV waits for its external deleter, and anything else has
  ``no volume plugin matched``; a failure makes the PV ``Failed`` with the
  message in ``status.message`` and a ``VolumeFailedDelete`` Warning.
  ``Recycle`` (deprecated) of a hostPath/nfs PV makes it ``Available`` again
  with a ``VolumeRecycled`` event (upstream first runs a recycler pod, which is
  not emulated); other sources fail with ``No recycler plugin found for the
  volume!``.
* **Claims** (``syncUnboundClaim``, ``syncBoundClaim``): a claim without the
  ``pv.kubernetes.io/bind-completed`` annotation is bound to the best
  ``Available`` PV (``findBestMatchForClaim``, :func:`find_best_match`): PVs are
  grouped by their exact set of access modes, groups with the fewest modes that
  still include all the claim's modes first; within a group a PV pre-bound to
  the claim wins, else the smallest one whose capacity covers the request,
  with the same StorageClass name (a claim with none set matches PVs with
  class ``""``), ``volumeMode``, VolumeAttributesClass and matching the claim's
  label selector. A claim with ``spec.volumeName`` asks for that PV
  (``VolumeMismatch`` ``Cannot bind to requested volume "x": requested PV is
  too small`` when it does not fit, ``FailedBinding`` ``volume "x" already
  bound to a different claim.`` when it is taken). Binding (``bind``) writes,
  in this order: the PV's ``claimRef`` (kind, namespace, name, uid, apiVersion,
  resourceVersion of the claim; plus ``pv.kubernetes.io/bound-by-controller:
  "yes"`` unless the user pre-bound it), the PV's phase ``Bound``, the claim's
  ``volumeName`` with ``pv.kubernetes.io/bind-completed: "yes"`` (and
  ``bound-by-controller`` unless the user asked for that volume), then the
  claim's status ``Bound`` with the PV's access modes and capacity.
* **No match**: a claim with no StorageClass gets a default one when the
  cluster has one (retroactive default StorageClass assignment); with none,
  the Normal event ``FailedBinding`` ``no persistent volumes available for this
  claim and no storage class is set``. A claim with a class is provisioned
  (``provisionClaim``): a class that does not exist is a Warning
  ``ProvisioningFailed`` ``storageclass.storage.k8s.io "x" not found``; a
  provisioner outside ``kubernetes.io/`` (or an in-tree one migrated to CSI) is
  external: the claim gets the ``volume.kubernetes.io/storage-provisioner``
  annotations and the Normal event ``ExternalProvisioning`` ``Waiting for a
  volume to be created either by the external provisioner 'x' or manually by
  the system administrator. If volume creation is delayed, please verify that
  the provisioner is running and correctly registered.`` — and as k8semu runs
  no provisioner (a kubeadm cluster has none), it waits for a PV made by hand.
  A ``WaitForFirstConsumer`` class leaves binding to the scheduler (events
  ``WaitForFirstConsumer`` / ``WaitForPodScheduled``).
* **Lost**: a bound claim whose PV is gone (or unbound, or bound elsewhere)
  becomes ``Lost`` (``ClaimLost`` / ``ClaimMisbound`` Warnings).

Caches and queues: as upstream, the controller keeps its own copy of every
PV and claim, updated by the informers and by its own writes, newer
``resourceVersion`` wins, so a sync never acts on a version older than one it
wrote itself; one worker serves both kinds (upstream: one worker per queue),
and a claim's sync first syncs the PVs whose events arrived but were not yet
synced (at one virtual instant, a PV created just before a claim is
Available by the time the claim looks, as on a real cluster where the two
requests are milliseconds apart). A failed write is not retried with
back-off; the next event or resync retries, as upstream.

Periodic resync: every 15 s (``--pvclaimbinder-sync-period``) every claim and
PV is synced again — which is how a claim created before its PV gets bound
(within 15 s), and why ``FailedBinding`` shows ``(x4 over 45s)``. For
settling (:meth:`PersistentVolumeController.next_wakeup`) the next resync
counts as real work only while it would bind a claim (or give one a default
StorageClass); repeats of a waiting claim's event do not keep the cluster busy.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import trio

from ..api import errors
from ..api.meta import copy_object, parse_time
from ..api.quantity import parse_quantity
from ..api.selectors import selector_from_label_selector
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler, meta_namespace_key

__all__ = [
    "PersistentVolumeController",
    "find_best_match",
    "find_matching_volume",
    "check_node_affinity",
    "get_bind_volume_to_claim",
    "check_volume_satisfy_claim",
    "claim_class",
    "volume_class",
    "is_volume_bound_to_claim",
    "default_class",
    "RESYNC_PERIOD",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "EVENT_SOURCE",
]

Obj = dict[str, Any]

#: upstream's default ``--pvclaimbinder-sync-period``
RESYNC_PERIOD = 15.0
#: ``source.component`` of the controller's events (upstream's recorder name)
EVENT_SOURCE = "persistentvolume-controller"

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_MIGRATED_TO = "pv.kubernetes.io/migrated-to"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")

#: in-tree provisioners csi-translation-lib migrates to CSI drivers (provisioned externally)
MIGRATED_PROVISIONERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
#: kube-controller-manager's volume plugins (``ProbeProvisionableRecyclableVolumePlugins``)
#: by plugin name: the PV source each supports, and which of provision/delete/recycle it can
_PLUGINS = {
    "kubernetes.io/host-path": ("hostPath", {"provision", "delete", "recycle"}),
    "kubernetes.io/nfs": ("nfs", {"recycle"}),
}
_HOSTPATH_DELETABLE = re.compile(r"/tmp/.+")

_ACCESS_MODE_ORDER = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")


# ---------------------------------------------------------------------------
# Pure helpers (component-helpers/storage/volume, pkg/controller/volume/persistentvolume/index.go)
# ---------------------------------------------------------------------------


def _meta(o: Obj | None) -> Obj:
    return (o or {}).get("metadata") or {}


def _spec(o: Obj | None) -> Obj:
    return (o or {}).get("spec") or {}


def _status(o: Obj | None) -> Obj:
    return (o or {}).get("status") or {}


def _annotations(o: Obj | None) -> Obj:
    return _meta(o).get("annotations") or {}


def _rv(o: Obj) -> int:
    try:
        return int(_meta(o).get("resourceVersion") or 0)
    except ValueError:
        return 0


def claim_class(claim: Obj) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, else ``spec.storageClassName``, else ``""``."""
    ann = _annotations(claim)
    if BETA_STORAGE_CLASS in ann:
        return ann[BETA_STORAGE_CLASS] or ""
    return _spec(claim).get("storageClassName") or ""


def claim_has_class(claim: Obj) -> bool:
    """``PersistentVolumeClaimHasClass``: the beta annotation or ``spec.storageClassName`` is set
    (to anything, ``""`` included)."""
    return BETA_STORAGE_CLASS in _annotations(claim) or _spec(claim).get("storageClassName") is not None


def volume_class(volume: Obj) -> str:
    """``GetPersistentVolumeClass``: the beta annotation, else ``spec.storageClassName``, else ``""``."""
    ann = _annotations(volume)
    if BETA_STORAGE_CLASS in ann:
        return ann[BETA_STORAGE_CLASS] or ""
    return _spec(volume).get("storageClassName") or ""


def is_volume_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """``IsVolumeBoundToClaim``: the PV's ``claimRef`` names the claim (and its uid, if it has one)."""
    ref = _spec(volume).get("claimRef")
    if ref is None:
        return False
    m = _meta(claim)
    if ref.get("name") != m.get("name") or ref.get("namespace") != m.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == m.get("uid")


def check_access_modes(claim: Obj, volume: Obj) -> bool:
    """``CheckAccessModes``: the PV has every access mode the claim asks for."""
    have = set(_spec(volume).get("accessModes") or ())
    return all(m in have for m in _spec(claim).get("accessModes") or ())


def volume_mode_mismatch(claim: Obj, volume: Obj) -> bool:
    """``CheckVolumeModeMismatches`` (an unset mode is ``Filesystem``)."""
    return (_spec(claim).get("volumeMode") or "Filesystem") != (_spec(volume).get("volumeMode") or "Filesystem")


def _storage(quantities: Obj | None) -> Any:
    value = (quantities or {}).get("storage")
    try:
        return parse_quantity(value if value is not None else 0).value
    except (ValueError, TypeError):
        return 0


def _requested(claim: Obj) -> Any:
    return _storage((_spec(claim).get("resources") or {}).get("requests"))


def _capacity(volume: Obj) -> Any:
    return _storage(_spec(volume).get("capacity"))


def _vac_mismatch(claim: Obj, volume: Obj) -> bool:
    key = "volumeAttributesClassName"
    return (_spec(claim).get(key) or "") != (_spec(volume).get(key) or "")


def _modes_key(modes: Iterable[str] | None) -> tuple[str, ...]:
    """The access-mode index value of a PV (``GetAccessModesAsString``: canonical order)."""
    have = set(modes or ())
    return tuple(m for m in _ACCESS_MODE_ORDER if m in have) + tuple(sorted(have - set(_ACCESS_MODE_ORDER)))


def check_node_affinity(volume: Obj, node_labels: Obj) -> bool:
    """``CheckNodeAffinity``: the PV's required node affinity (terms ORed) holds for a node with
    these labels (a node of labels only: ``matchFields`` never match)."""
    from ..api.scheduling import node_selector_term_matches

    required = (_spec(volume).get("nodeAffinity") or {}).get("required")
    if required is None:
        return True
    node = {"metadata": {"labels": dict(node_labels)}}
    return any(node_selector_term_matches(t, node) for t in required.get("nodeSelectorTerms") or ())


def find_matching_volume(claim: Obj, volumes: list[Obj], delay_binding: bool = False, *,
                         node_labels: Obj | None = None, excluded: Iterable[str] = ()) -> Obj | None:
    """``FindMatchingVolume``: the PV pre-bound to the claim, else the smallest Available PV that
    fits (capacity, volumeMode, class, selector, VolumeAttributesClass).

    Controller path (``node_labels`` None): ``delay_binding`` (a ``WaitForFirstConsumer`` class)
    returns only a pre-bound PV. Scheduler path (``node_labels`` given, the VolumeBinding plugin):
    the PV's node affinity must also fit the node (a pre-bound PV that does not fit means no
    match at all), its access modes must cover the claim's, and PVs named in ``excluded`` (chosen
    for the pod's other claims) are skipped. ``volumes`` are tried in order; of equal sizes the
    first wins."""
    requested = _requested(claim)
    wanted_class = claim_class(claim)
    sel_spec = _spec(claim).get("selector")
    selector = selector_from_label_selector(sel_spec) if sel_spec is not None else None
    excluded = set(excluded)
    best, best_size = None, None
    for volume in volumes:
        spec = _spec(volume)
        if _meta(volume).get("name") in excluded:
            continue
        if spec.get("claimRef") is not None and not is_volume_bound_to_claim(volume, claim):
            continue
        size = _capacity(volume)
        if size < requested:
            continue
        if volume_mode_mismatch(claim, volume):
            continue
        if _meta(volume).get("deletionTimestamp"):
            continue
        affinity_ok = node_labels is None or check_node_affinity(volume, node_labels)
        if is_volume_bound_to_claim(volume, claim):
            return volume if affinity_ok else None
        if delay_binding and node_labels is None:
            continue  # the scheduler binds it
        if _status(volume).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(_meta(volume).get("labels") or {}):
            continue
        if volume_class(volume) != wanted_class:
            continue
        if _vac_mismatch(claim, volume):
            continue
        if not affinity_ok:
            continue
        if node_labels is not None and not check_access_modes(claim, volume):
            continue
        if best is None or best_size > size:
            best, best_size = volume, size
    return best


def find_best_match(claim: Obj, volumes: Iterable[Obj], delay_binding: bool = False) -> Obj | None:
    """``findBestMatchForClaim``: PVs grouped by their exact access-mode set; the groups that hold
    every mode the claim asks for are tried with the fewest modes first (then in
    ``GetAccessModesAsString`` order), PVs within a group by name; the first group with a
    :func:`find_matching_volume` match wins (so a RWO PV beats a smaller RWO+RWX one)."""
    groups: dict[tuple[str, ...], list[Obj]] = {}
    for v in sorted(volumes, key=lambda v: _meta(v).get("name") or ""):
        groups.setdefault(_modes_key(_spec(v).get("accessModes")), []).append(v)
    wanted = set(_spec(claim).get("accessModes") or ())
    order = sorted((k for k in groups if wanted <= set(k)),
                   key=lambda k: (len(k), [_ACCESS_MODE_ORDER.index(m) if m in _ACCESS_MODE_ORDER else 9 for m in k]))
    for key in order:
        found = find_matching_volume(claim, groups[key], delay_binding)
        if found is not None:
            return found
    return None


def check_volume_satisfy_claim(volume: Obj, claim: Obj) -> str | None:
    """``checkVolumeSatisfyClaim``: why a PV the claim names cannot be bound to it, or None."""
    if _meta(volume).get("deletionTimestamp"):
        return f'the volume is marked for deletion "{_meta(volume).get("name")}"'
    if _capacity(volume) < _requested(claim):
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if _vac_mismatch(claim, volume):
        return "volumeAttributesClassName does not match"
    if volume_mode_mismatch(claim, volume):
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return None


def default_class(classes: Iterable[Obj], epoch: Any) -> Obj | None:
    """``GetDefaultClass``: of the StorageClasses annotated as default, the newest (then by name)."""
    defaults = [c for c in classes if any(_annotations(c).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)]
    if not defaults:
        return None

    def created(c: Obj) -> float:
        stamp = _meta(c).get("creationTimestamp")
        return parse_time(epoch, stamp) if stamp else 0.0

    return sorted(defaults, key=lambda c: (-created(c), _meta(c).get("name") or ""))[0]


def _claim_ref(claim: Obj) -> Obj:
    """``reference.GetReference`` of a claim (ObjectReference field order)."""
    m = _meta(claim)
    return {"kind": "PersistentVolumeClaim", "namespace": m.get("namespace"), "name": m.get("name"),
            "uid": m.get("uid"), "apiVersion": "v1", "resourceVersion": m.get("resourceVersion")}


def get_bind_volume_to_claim(volume: Obj, claim: Obj) -> tuple[Obj, bool]:
    """``GetBindVolumeToClaim`` (used by the controller and by the scheduler's VolumeBinding):
    a copy of the PV with ``claimRef`` naming the claim (and its uid) and, unless the PV was
    already bound to it, ``pv.kubernetes.io/bound-by-controller: "yes"``; and whether it changed."""
    set_by_controller = not is_volume_bound_to_claim(volume, claim)
    ref = _spec(volume).get("claimRef") or {}
    m = _meta(claim)
    dirty = False
    body = copy_object(volume)
    if (_spec(volume).get("claimRef") is None or ref.get("name") != m.get("name")
            or ref.get("namespace") != m.get("namespace") or ref.get("uid") != m.get("uid")):
        body.setdefault("spec", {})["claimRef"] = _claim_ref(claim)
        dirty = True
    if set_by_controller and ANN_BOUND_BY_CONTROLLER not in _annotations(body):
        body = _with_annotations(body, **{ANN_BOUND_BY_CONTROLLER: "yes"})
        dirty = True
    return body, dirty


def _with_annotations(obj: Obj, **ann: str) -> Obj:
    """A copy of ``obj`` with the annotations added (keys kept sorted, as Go writes a map)."""
    out = copy_object(obj)
    meta = out.setdefault("metadata", {})
    merged = {**(meta.get("annotations") or {}), **ann}
    meta["annotations"] = {k: merged[k] for k in sorted(merged)}
    return out


def _pod_claims(pod: Obj) -> list[str]:
    """The claims a pod uses (``persistentVolumeClaim`` volumes, generic ephemeral volumes)."""
    name = _meta(pod).get("name") or ""
    out = []
    for v in _spec(pod).get("volumes") or ():
        if "persistentVolumeClaim" in v:
            out.append((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
        elif "ephemeral" in v:
            out.append(f"{name}-{v.get('name') or ''}")
    return out


def _pod_terminated(pod: Obj) -> bool:
    return _status(pod).get("phase") in ("Succeeded", "Failed")


class _SyncError(Exception):
    """A sync that cannot go on (upstream returns an error: logged, retried by the next event or resync)."""


# ---------------------------------------------------------------------------
# The controller
# ---------------------------------------------------------------------------


class PersistentVolumeController(Component):
    """kube-controller-manager's PersistentVolume binder (actor ``persistentvolume-binder-controller``,
    events from ``persistentvolume-controller``); see the module docstring.

    Args:
        resync_period: seconds between periodic syncs of every claim and PV (15).
        enable_dynamic_provisioning: ``--enable-dynamic-provisioning`` (default on).
    """

    name = "persistentvolume-binder-controller"

    def __init__(self, api: Any, name: str | None = None, user: Any = None, *,
                 resync_period: float = RESYNC_PERIOD, enable_dynamic_provisioning: bool = True) -> None:
        super().__init__(api, name, user)
        self.resync_period = resync_period
        self.enable_dynamic_provisioning = enable_dynamic_provisioning
        self.pvs = self.informer("persistentvolumes")
        self.pvcs = self.informer("persistentvolumeclaims")
        self.classes = self.informer("storageclasses.storage.k8s.io")
        self.q = self.queue()
        self.recorder = EventRecorder(api, self.ctx, EVENT_SOURCE)
        # the controller's own caches (upstream ctrl.volumes / ctrl.claims), by key
        self.volumes: dict[str, Obj] = {}
        self.claims: dict[str, Obj] = {}
        self._unsynced: dict[str, None] = {}  # PVs whose event has not been synced yet
        self._version = 0  # bumped on every change of the caches (memo of _resync_due)
        self._due_memo: tuple[int, bool] | None = None
        self._next_resync: float | None = None
        self.pvs.add_event_handler(EventHandler(on_add=self._volume_event, on_update=lambda o, n: self._volume_event(n),
                                                on_delete=self._volume_event))
        self.pvcs.add_event_handler(EventHandler(on_add=self._claim_event, on_update=lambda o, n: self._claim_event(n),
                                                 on_delete=self._claim_event))
        self.classes.add_event_handler(EventHandler(on_add=self._changed, on_update=lambda o, n: self._changed(n),
                                                    on_delete=self._changed))

    # ---- events and caches
    def _changed(self, _obj: Obj | None = None) -> None:
        self._version += 1

    def _volume_event(self, pv: Obj) -> None:
        name = _meta(pv).get("name") or ""
        self._unsynced[name] = None
        self._changed()
        self.q.add(("pv", name))

    def _claim_event(self, pvc: Obj) -> None:
        self._changed()
        self.q.add(("pvc", meta_namespace_key(pvc)))

    def _store(self, cache: dict[str, Obj], key: str, obj: Obj) -> bool:
        """``storeObjectUpdate``: keep ``obj`` unless the cache holds a newer version
        (the same version passes: periodic syncs)."""
        old = cache.get(key)
        if old is not None and _rv(old) > _rv(obj):
            return False
        cache[key] = obj
        self._changed()
        return True

    def _store_volume(self, pv: Obj) -> None:
        self._store(self.volumes, _meta(pv).get("name") or "", pv)

    def _store_claim(self, pvc: Obj) -> None:
        self._store(self.claims, meta_namespace_key(pvc), pvc)

    # ---- running
    async def main(self) -> None:
        self._next_resync = self.api.now + self.resync_period
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._resync_loop)
            await self.run_workers(self.q, self.sync, coalesce=True)

    async def _resync_loop(self) -> None:
        """``resync``: every period, enqueue every claim and every PV (from the informers)."""
        while True:
            await trio.sleep_until(self._next_resync)
            self._next_resync += self.resync_period
            await self.gate()
            for pvc in sorted(self.pvcs.indexer.list(), key=meta_namespace_key):
                self.q.add(("pvc", meta_namespace_key(pvc)))
            for pv in sorted(self.pvs.indexer.list(), key=lambda v: _meta(v).get("name") or ""):
                self.q.add(("pv", _meta(pv).get("name") or ""))

    def next_wakeup(self) -> float | None:
        """Delayed queue items, and the next resync while it would bind a claim (or give one a
        default StorageClass); a claim that only waits (its event repeated each resync) is no
        real work."""
        times = [t for t in (super().next_wakeup(),) if t is not None]
        if self._next_resync is not None and self._resync_due():
            times.append(self._next_resync)
        return min(times) if times else None

    def _resync_due(self) -> bool:
        memo = self._due_memo
        if memo is not None and memo[0] == self._version:
            return memo[1]
        due = any(self._would_bind(c) for _, c in sorted(self.claims.items())
                  if ANN_BIND_COMPLETED not in _annotations(c) and not _meta(c).get("deletionTimestamp"))
        self._due_memo = (self._version, due)
        return due

    def _would_bind(self, claim: Obj) -> bool:
        """Whether syncing this unbound claim now would bind it (or assign it the default class)."""
        name = _spec(claim).get("volumeName")
        if name:
            pv = self.volumes.get(name)
            if pv is None:
                return False
            if _spec(pv).get("claimRef") is None:
                return check_volume_satisfy_claim(pv, claim) is None
            return is_volume_bound_to_claim(pv, claim)
        if find_best_match(claim, self.volumes.values(), self._delay_binding(claim)) is not None:
            return True
        return not claim_has_class(claim) and default_class(self.classes.indexer.list(), self.api.epoch) is not None

    # ---- workers
    def sync(self, item: tuple[str, str]) -> None:
        """One queue item: ``("pv", name)`` or ``("pvc", "namespace/name")``. Errors are dropped
        (upstream logs them; the next event or resync tries again)."""
        kind, key = item
        try:
            if kind == "pv":
                self._volume_worker(key)
            else:
                self._flush_volumes()
                self._claim_worker(key)
        except (errors.StatusError, _SyncError):
            pass

    def _flush_volumes(self) -> None:
        """Sync the PVs whose events arrived but were not synced yet (see the module docstring)."""
        while self._unsynced:
            name = next(iter(self._unsynced))
            try:
                self._volume_worker(name)
            except (errors.StatusError, _SyncError):
                pass

    def _volume_worker(self, name: str) -> None:
        self._unsynced.pop(name, None)
        pv = self.pvs.indexer.get(name)
        if pv is not None:
            # updateVolume: skip a version older than the controller's own
            if not self._store(self.volumes, name, pv):
                return
            self.sync_volume(pv)
            return
        # deleteVolume: forget it, and sync its claim at once (it is Lost now)
        cached = self.volumes.pop(name, None)
        self._changed()
        if cached is None:
            return
        ref = _spec(cached).get("claimRef")
        if ref is not None:
            self.q.add(("pvc", f"{ref.get('namespace')}/{ref.get('name')}"))

    def _claim_worker(self, key: str) -> None:
        ns, name = key.split("/", 1)
        pvc = self.pvcs.indexer.get_by(ns, name)
        if pvc is not None:
            if not self._store(self.claims, key, pvc):
                return
            self.sync_claim(pvc)
            return
        # deleteClaim: forget it, and sync its volume at once (it is Released now)
        cached = self.claims.pop(key, None)
        self._changed()
        if cached is None:
            return
        volume = _spec(cached).get("volumeName")
        if volume:
            self.q.add(("pv", volume))

    # ---- claims
    def sync_claim(self, claim: Obj) -> None:
        """``syncClaim``: an unbound or a bound claim."""
        if ANN_BIND_COMPLETED not in _annotations(claim):
            self._sync_unbound_claim(claim)
        else:
            self._sync_bound_claim(claim)

    def _delay_binding(self, claim: Obj) -> bool:
        """``IsDelayBindingMode``: the claim's class binds ``WaitForFirstConsumer``."""
        name = claim_class(claim)
        if not name:
            return False
        sc = self.classes.indexer.get(name)
        return sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"

    def _sync_unbound_claim(self, claim: Obj) -> None:
        spec = _spec(claim)
        if not spec.get("volumeName"):
            # the user does not care which PV they get
            delay = self._delay_binding(claim)
            volume = find_best_match(claim, self.volumes.values(), delay)
            if volume is not None:
                self._bind(volume, claim)
                return
            if self._assign_default_class(claim):
                return  # the update event syncs the claim again
            if delay and ANN_SELECTED_NODE not in _annotations(claim):
                self._event_for_unbound_delay_binding_claim(claim)
            elif claim_class(claim):
                self._provision_claim(claim)
                return
            else:
                self.recorder.event(claim, NORMAL, "FailedBinding",
                                    "no persistent volumes available for this claim and no storage class is set")
            self._update_claim_status(claim, "Pending", None)
            return
        # the user asked for a specific PV
        name = spec["volumeName"]
        volume = self.volumes.get(name)
        if volume is None:
            self._update_claim_status(claim, "Pending", None)  # retried when it appears
            return
        if _spec(volume).get("claimRef") is None:
            why = check_volume_satisfy_claim(volume, claim)
            if why is not None:
                self.recorder.event(claim, WARNING, "VolumeMismatch",
                                    f'Cannot bind to requested volume "{name}": {why}')
                self._update_claim_status(claim, "Pending", None)
                return
            self._bind(volume, claim)
            return
        if is_volume_bound_to_claim(volume, claim):
            self._bind(volume, claim)  # finish the binding (adds the claim's uid)
            return
        self.recorder.event(claim, WARNING, "FailedBinding", f'volume "{name}" already bound to a different claim.')
        if ANN_BOUND_BY_CONTROLLER not in _annotations(claim):
            self._update_claim_status(claim, "Pending", None)
            return
        raise _SyncError(f"invalid binding of claim {meta_namespace_key(claim)!r} to volume {name!r}")

    def _sync_bound_claim(self, claim: Obj) -> None:
        name = _spec(claim).get("volumeName")
        if not name:
            self._update_claim_status_with_event(claim, "Lost", None, WARNING, "ClaimLost",
                                                 "Bound claim has lost reference to PersistentVolume. "
                                                 "Data on the volume is lost!")
            return
        volume = self.volumes.get(name)
        if volume is None:
            self._update_claim_status_with_event(claim, "Lost", None, WARNING, "ClaimLost",
                                                 "Bound claim has lost its PersistentVolume. "
                                                 "Data on the volume is lost!")
            return
        ref = _spec(volume).get("claimRef")
        if ref is None or ref.get("uid") == _meta(claim).get("uid"):
            self._bind(volume, claim)  # rebind an unbound volume; a no-op when all is well
            return
        self._update_claim_status_with_event(claim, "Lost", None, WARNING, "ClaimMisbound",
                                             "Two claims are bound to the same volume, this one is bound incorrectly")

    def _event_for_unbound_delay_binding_claim(self, claim: Obj) -> None:
        """``emitEventForUnboundDelayBindingClaim``: ``WaitForFirstConsumer``, or
        ``WaitForPodScheduled`` naming the unscheduled pods that use the claim."""
        names = [p for p in self._pods_using(claim, unscheduled_only=True)]
        if not names:
            self.recorder.event(claim, NORMAL, "WaitForFirstConsumer",
                                "waiting for first consumer to be created before binding")
        elif len(names) == 1:
            self.recorder.event(claim, NORMAL, "WaitForPodScheduled", f"waiting for pod {names[0]} to be scheduled")
        else:
            self.recorder.event(claim, NORMAL, "WaitForPodScheduled",
                                f"waiting for pods {','.join(names)} to be scheduled")

    def _pods_using(self, claim: Obj, *, unscheduled_only: bool = False) -> list[str]:
        """Names of the active pods in the claim's namespace that use it (upstream reads its pod
        informer's PVC index; here a read through the API server, in name order)."""
        ns, name = _meta(claim).get("namespace"), _meta(claim).get("name")
        pods = self.api.list("pods", namespace=ns, ctx=self.ctx).get("items") or []
        out = []
        for pod in sorted(pods, key=lambda p: _meta(p).get("name") or ""):
            if _pod_terminated(pod) or name not in _pod_claims(pod):
                continue
            if unscheduled_only and _spec(pod).get("nodeName"):
                continue
            out.append(_meta(pod).get("name"))
        return out

    def _assign_default_class(self, claim: Obj) -> bool:
        """``assignDefaultStorageClass``: a claim with no class at all gets the default one, if any."""
        if claim_has_class(claim):
            return False
        sc = default_class(self.classes.indexer.list(), self.api.epoch)
        if sc is None:
            return False
        body = copy_object(claim)
        body.setdefault("spec", {})["storageClassName"] = _meta(sc).get("name")
        new = self.api.update("persistentvolumeclaims", body, namespace=_meta(claim).get("namespace"),
                              ctx=self.ctx, field_validation="Ignore")
        self._store_claim(new)
        return True

    def _provision_claim(self, claim: Obj) -> None:
        """``provisionClaim``: find the class's provisioner; k8semu runs none, so an external one
        is waited for, and an in-tree one fails as in a kubeadm cluster."""
        if not self.enable_dynamic_provisioning:
            return
        class_name = claim_class(claim)
        sc = self.classes.indexer.get(class_name)
        if sc is None:
            self.recorder.event(claim, WARNING, "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{class_name}" not found')
            return
        provisioner = sc.get("provisioner") or ""
        if provisioner in MIGRATED_PROVISIONERS:
            self._provision_external(claim, MIGRATED_PROVISIONERS[provisioner])
            return
        if not provisioner.startswith("kubernetes.io/"):
            self._provision_external(claim, provisioner)
            return
        plugin = _PLUGINS.get(provisioner)
        if plugin is None:
            self.recorder.event(claim, WARNING, "ProvisioningFailed", f"no volume plugin matched name: {provisioner}")
            return
        if "provision" not in plugin[1]:
            self.recorder.event(claim, WARNING, "ProvisioningFailed", "no provisionable volume plugin matched")
            return
        # provisionClaimOperation with the host-path plugin, whose provisioning kubeadm leaves
        # disabled (--enable-hostpath-provisioner=false)
        claim = self._set_claim_provisioner(claim, provisioner)
        self.recorder.event(claim, WARNING, "ProvisioningFailed",
                            f'Failed to create provisioner: provisioning in volume plugin "{provisioner}" is disabled')

    def _provision_external(self, claim: Obj, provisioner: str) -> None:
        """``provisionClaimOperationExternal``: annotate the claim for the external provisioner and say so."""
        try:
            claim = self._set_claim_provisioner(claim, provisioner)
        except errors.StatusError as exc:
            self.recorder.event(claim, WARNING, "ProvisioningFailed", f"Error saving claim: {exc}")
            raise
        self.recorder.event(claim, NORMAL, "ExternalProvisioning",
                            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
                            "or manually by the system administrator. If volume creation is delayed, please verify "
                            "that the provisioner is running and correctly registered.")

    def _set_claim_provisioner(self, claim: Obj, provisioner: str) -> Obj:
        """``setClaimProvisioner``: the ``storage-provisioner`` annotations (beta and GA)."""
        if _annotations(claim).get(ANN_STORAGE_PROVISIONER) == provisioner:
            return claim
        body = _with_annotations(claim, **{ANN_BETA_STORAGE_PROVISIONER: provisioner,
                                           ANN_STORAGE_PROVISIONER: provisioner})
        new = self.api.update("persistentvolumeclaims", body, namespace=_meta(claim).get("namespace"),
                              ctx=self.ctx, field_validation="Ignore")
        self._store_claim(new)
        return new

    # ---- volumes
    def sync_volume(self, volume: Obj) -> None:
        """``syncVolume``: Available, Bound, Released (and reclaimed), or unbound again."""
        ref = _spec(volume).get("claimRef")
        if ref is None or not ref.get("uid"):
            # unused, or pre-bound to a claim that the claim's sync binds
            self._update_volume_phase(volume, "Available", "")
            return
        key = f"{ref.get('namespace')}/{ref.get('name')}"
        claim = self.claims.get(key)
        if claim is None and _status(volume).get("phase") not in ("Released", "Failed"):
            # the informer's view, then the API server's: never release a PV by mistake
            claim = self.pvcs.indexer.get_by(ref.get("namespace"), ref.get("name")) or self._get_claim(ref)
        if claim is not None and _meta(claim).get("uid") != ref.get("uid"):
            # the cache may be stale: the API server says whether this is another claim
            fresh = self._get_claim(ref)
            claim = fresh if fresh is not None and _meta(fresh).get("uid") == ref.get("uid") else None
        if claim is None:
            # the claim is gone: release the PV and run its reclaim policy
            if _status(volume).get("phase") not in ("Released", "Failed"):
                volume = self._update_volume_phase(volume, "Released", "")
            self._reclaim_volume(volume)
            return
        claim_volume = _spec(claim).get("volumeName")
        if not claim_volume:
            if volume_mode_mismatch(claim, volume):
                self.recorder.event(volume, WARNING, "VolumeMismatch",
                                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                                    f'"{_meta(claim).get("name")}" due to incompatible volumeMode.')
                self.recorder.event(claim, WARNING, "VolumeMismatch",
                                    f'Cannot bind PersistentVolume "{_meta(volume).get("name")}" to requested '
                                    "PersistentVolumeClaim due to incompatible volumeMode.")
                return
            # the binding is not complete: the claim's sync finishes it
            self.q.add(("pvc", key))
            return
        if claim_volume == _meta(volume).get("name"):
            self._update_volume_phase(volume, "Bound", "")
            return
        # bound to a claim that is bound to another PV
        if ANN_DYNAMICALLY_PROVISIONED in _annotations(volume) and \
                _spec(volume).get("persistentVolumeReclaimPolicy") == "Delete":
            if _status(volume).get("phase") not in ("Released", "Failed"):
                volume = self._update_volume_phase(volume, "Released", "")
            self._reclaim_volume(volume)
            return
        self._unbind_volume(volume)

    def _get_claim(self, ref: Obj) -> Obj | None:
        try:
            return self.api.get("persistentvolumeclaims", ref.get("name"), namespace=ref.get("namespace"),
                                ctx=self.ctx)
        except errors.NotFound:
            return None

    def _unbind_volume(self, volume: Obj) -> None:
        """``unbindVolume``: drop a binding the controller made (or only the uid of a user's
        pre-binding), then Available."""
        body = copy_object(volume)
        if ANN_BOUND_BY_CONTROLLER in _annotations(volume):
            body["spec"].pop("claimRef", None)
            ann = dict(_annotations(volume))
            ann.pop(ANN_BOUND_BY_CONTROLLER, None)
            if ann:
                body["metadata"]["annotations"] = ann
            else:
                body["metadata"].pop("annotations", None)
        else:
            body["spec"]["claimRef"] = {k: v for k, v in body["spec"]["claimRef"].items() if k != "uid"}
        new = self.api.update("persistentvolumes", body, ctx=self.ctx, field_validation="Ignore")
        self._store_volume(new)
        self._update_volume_phase(new, "Available", "")

    def _reclaim_volume(self, volume: Obj) -> None:
        """``reclaimVolume``: Retain, Recycle or Delete (see the module docstring)."""
        if _annotations(volume).get(ANN_MIGRATED_TO):
            return  # the CSI driver's external provisioner handles it
        policy = _spec(volume).get("persistentVolumeReclaimPolicy")
        if policy == "Retain":
            return
        if policy == "Recycle":
            self._recycle_volume(volume)
            return
        if policy == "Delete":
            self._delete_volume(volume)
            return
        self._update_volume_phase_with_event(volume, "Failed", WARNING, "VolumeUnknownReclaimPolicy",
                                             "Volume has unrecognized PersistentVolumeReclaimPolicy")

    def _plugin_for(self, volume: Obj) -> tuple[str | None, str | None]:
        """``FindPluginBySpec`` among kube-controller-manager's plugins: (plugin name, error)."""
        spec = _spec(volume)
        for name, (source, _) in _PLUGINS.items():
            if spec.get(source) is not None:
                return name, None
        return None, "no volume plugin matched"

    def _is_volume_released(self, volume: Obj) -> bool:
        """``isVolumeReleased``: bound to a claim that is gone, or that is bound to another PV."""
        ref = _spec(volume).get("claimRef")
        if ref is None or not ref.get("uid"):
            return False
        claim = self.claims.get(f"{ref.get('namespace')}/{ref.get('name')}")
        if claim is not None and _meta(claim).get("uid") == ref.get("uid"):
            name = _spec(claim).get("volumeName")
            return bool(name) and name != _meta(volume).get("name")
        return True

    def _delete_volume(self, volume: Obj) -> None:
        """``deleteVolumeOperation``: find a deleter; delete the volume and then the PV, or fail."""
        name = _meta(volume).get("name")
        try:
            fresh = self.api.get("persistentvolumes", name, ctx=self.ctx)
        except errors.NotFound:
            return
        if not self._is_volume_released(fresh):
            return
        spec = _spec(volume)
        provisioned_by = _annotations(volume).get(ANN_DYNAMICALLY_PROVISIONED) or ""
        if (provisioned_by and not provisioned_by.startswith("kubernetes.io/")) or spec.get("csi") is not None \
                or spec.get("portworxVolume") is not None:
            return  # an external deleter (a CSI driver) is expected: nothing to do here
        plugin, err = self._plugin_for(volume)
        if plugin is not None and "delete" not in _PLUGINS[plugin][1]:
            err = "no deletable volume plugin matched"
        if err is not None:
            err = f'error getting deleter volume plugin for volume "{name}": {err}'
        elif plugin == "kubernetes.io/host-path":
            path = (spec.get("hostPath") or {}).get("path") or ""
            if not _HOSTPATH_DELETABLE.search(path):
                err = f"host_path deleter only supports /tmp/.+ but received provided {path}"
        if err is not None:
            self._update_volume_phase_with_event(fresh, "Failed", WARNING, "VolumeFailedDelete", err)
            return
        try:
            self.api.delete("persistentvolumes", name, ctx=self.ctx)
        except errors.NotFound:
            pass

    def _recycle_volume(self, volume: Obj) -> None:
        """``recycleVolumeOperation``, without the recycler pod: a hostPath/nfs PV is scrubbed at
        once and Available again; other sources fail."""
        name = _meta(volume).get("name")
        try:
            fresh = self.api.get("persistentvolumes", name, ctx=self.ctx)
        except errors.NotFound:
            return
        if not self._is_volume_released(fresh):
            return
        ref = _spec(fresh).get("claimRef") or {}
        if f"{ref.get('namespace')}/{ref.get('name')}" not in self.claims:
            pods = self._pods_using({"metadata": {"namespace": ref.get("namespace"), "name": ref.get("name")}})
            if pods:
                self.recorder.event(fresh, NORMAL, "VolumeFailedRecycle",
                                    "Volume is used by pods: " + ",".join(f"{ref.get('namespace')}/{p}" for p in pods))
                return
        plugin, _ = self._plugin_for(fresh)
        if plugin is None or "recycle" not in _PLUGINS[plugin][1]:
            self._update_volume_phase_with_event(fresh, "Failed", WARNING, "VolumeFailedRecycle",
                                                 "No recycler plugin found for the volume!")
            return
        self.recorder.event(fresh, NORMAL, "VolumeRecycled", "Volume recycled")
        self._unbind_volume(fresh)

    # ---- writes
    def _bind(self, volume: Obj, claim: Obj) -> None:
        """``bind``: the PV's claimRef, the PV's phase, the claim's volumeName and annotations,
        the claim's status — in that order, each only when it changes."""
        volume = self._bind_volume_to_claim(volume, claim)
        volume = self._update_volume_phase(volume, "Bound", "")
        claim = self._bind_claim_to_volume(claim, volume)
        self._update_claim_status(claim, "Bound", volume)

    def _bind_volume_to_claim(self, volume: Obj, claim: Obj) -> Obj:
        """``bindVolumeToClaim`` (``GetBindVolumeToClaim``)."""
        body, dirty = get_bind_volume_to_claim(volume, claim)
        if not dirty:
            return volume
        new = self.api.update("persistentvolumes", body, ctx=self.ctx, field_validation="Ignore")
        self._store_volume(new)
        return new

    def _bind_claim_to_volume(self, claim: Obj, volume: Obj) -> Obj:
        """``bindClaimToVolume``: ``spec.volumeName`` and the bind annotations."""
        name = _meta(volume).get("name")
        ann: dict[str, str] = {}
        body = copy_object(claim)
        dirty = False
        if _spec(claim).get("volumeName") != name:
            body.setdefault("spec", {})["volumeName"] = name
            dirty = True
            if ANN_BOUND_BY_CONTROLLER not in _annotations(claim):
                ann[ANN_BOUND_BY_CONTROLLER] = "yes"
        if ANN_BIND_COMPLETED not in _annotations(claim):
            ann[ANN_BIND_COMPLETED] = "yes"
            dirty = True
        if not dirty:
            return claim
        if ann:
            body = _with_annotations(body, **ann)
        new = self.api.update("persistentvolumeclaims", body, namespace=_meta(claim).get("namespace"),
                              ctx=self.ctx, field_validation="Ignore")
        self._store_claim(new)
        return new

    def _update_claim_status(self, claim: Obj, phase: str, volume: Obj | None) -> Obj:
        """``updateClaimStatus``: phase, and the bound PV's access modes and capacity (the
        capacity only as the claim becomes Bound)."""
        status = dict(_status(claim))
        old = _status(claim)
        if old.get("phase") != phase:
            status["phase"] = phase
        if volume is None:
            status.pop("accessModes", None)
            status.pop("capacity", None)
            status.pop("currentVolumeAttributesClassName", None)
        else:
            modes = _spec(volume).get("accessModes")
            if old.get("accessModes") != modes:
                if modes:
                    status["accessModes"] = list(modes)
                else:
                    status.pop("accessModes", None)
            if old.get("phase") != phase:
                capacity = _spec(volume).get("capacity") or {}
                if "storage" not in capacity:
                    raise _SyncError(f'PersistentVolume "{_meta(volume).get("name")}" is without a storage capacity')
                if _storage(old.get("capacity")) != _storage(capacity) or "storage" not in (old.get("capacity") or {}):
                    status["capacity"] = dict(capacity)
        if status == old:
            return claim
        new = self.api.update("persistentvolumeclaims", {**claim, "status": status},
                              namespace=_meta(claim).get("namespace"), subresource="status", ctx=self.ctx,
                              field_validation="Ignore")
        self._store_claim(new)
        return new

    def _update_claim_status_with_event(self, claim: Obj, phase: str, volume: Obj | None, type_: str,
                                        reason: str, message: str) -> None:
        """``updateClaimStatusWithEvent``: the event only when the phase changes."""
        if _status(claim).get("phase") == phase:
            return
        new = self._update_claim_status(claim, phase, volume)
        self.recorder.event(new, type_, reason, message)

    def _update_volume_phase(self, volume: Obj, phase: str, message: str) -> Obj:
        """``updateVolumePhase``: ``status.phase`` (and ``status.message``), when the phase changes."""
        if _status(volume).get("phase") == phase:
            return volume
        status = dict(_status(volume))
        status["phase"] = phase
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        new = self.api.update("persistentvolumes", {**volume, "status": status}, subresource="status",
                              ctx=self.ctx, field_validation="Ignore")
        self._store_volume(new)
        return new

    def _update_volume_phase_with_event(self, volume: Obj, phase: str, type_: str, reason: str,
                                        message: str) -> None:
        """``updateVolumePhaseWithEvent``: the event only when the phase changes."""
        if _status(volume).get("phase") == phase:
            return
        new = self._update_volume_phase(volume, phase, message)
        self.recorder.event(new, type_, reason, message)
