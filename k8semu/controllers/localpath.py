"""The external provisioner of kind's default StorageClass: rancher's local-path-provisioner
(``rancher.io/local-path``, as kind v0.27–v0.29 ship it for Kubernetes 1.33, image
``docker.io/kindest/local-path-provisioner:v20250214-acbabc1a``), with the protocol of
``sig-storage-lib-external-provisioner`` it is built on.

It is *not* part of kube-controller-manager: on a kind cluster it is the process of the
Deployment ``local-path-storage/local-path-provisioner``, talking to the API server as the
service account ``system:serviceaccount:local-path-storage:local-path-provisioner-service-account``
(bound to ClusterRole ``local-path-provisioner-role``). k8semu runs it only on clusters created
with ``--storage local-path`` (:mod:`k8semu.sim.kubeadm` makes the Deployment, the ConfigMap
``local-path-config``, the RBAC objects and the default StorageClass ``standard``), and only
while a pod of that Deployment is Running and Ready: a cluster whose provisioner pod is not
up (its node stopped, the Deployment deleted or scaled to 0) leaves claims Pending, as kind's
does. The actor of its writes is that service account.

Provisioning (``provisionClaimOperation`` + local-path's ``Provision``), with a
``WaitForFirstConsumer`` class:

1. the PV controller reports ``WaitForFirstConsumer`` until a pod uses the claim; the
   scheduler's VolumeBinding plugin picks a node and writes
   ``volume.kubernetes.io/selected-node`` on the claim; the PV controller then annotates it
   ``volume.kubernetes.io/storage-provisioner: rancher.io/local-path`` (event
   ``ExternalProvisioning``);
2. a claim so annotated, unbound (no ``spec.volumeName``), of a class whose provisioner is
   ``rancher.io/local-path`` and (for a delayed class) with a selected node, and with no PV
   ``pvc-<claim uid>`` yet, is provisioned: the Normal event ``Provisioning`` ``External
   provisioner is provisioning volume for claim "ns/name"``; local-path refuses a claim with a
   ``selector`` (``claim.Spec.Selector is not supported``), access modes other than
   ``ReadWriteOnce`` / ``ReadWriteOncePod`` (``NodePath only supports ReadWriteOnce and
   ReadWriteOncePod (1.22+) access modes``), no selected node (``configuration error, no node
   was specified``) or a ``config.json`` without a path for the node — each a Warning
   ``ProvisioningFailed`` ``failed to provision volume with StorageClass "standard": …``;
3. otherwise its helper pod creates the directory
   ``<path>/pvc-<uid>_<namespace>_<name>`` on the node (``<path>`` from the
   ``local-path-config`` ConfigMap's ``nodePathMap``: the node's entry, else
   ``DEFAULT_PATH_FOR_NON_LISTED_NODES``; kind's: ``/var/local-path-provisioner``). The helper
   pod is not created here; its run is a delay of :data:`HELPER_POD_SECONDS` virtual seconds;
4. the PV ``pvc-<uid>`` is created: ``hostPath`` (type ``DirectoryOrCreate``) at that
   directory, ``nodeAffinity`` requiring ``kubernetes.io/hostname In [<node's hostname
   label>]``, ``capacity.storage`` = the claim's request, the claim's ``accessModes``,
   ``volumeMode: Filesystem``, the class's ``reclaimPolicy`` and name, ``claimRef`` (the
   claim's ObjectReference), annotations ``local.path.provisioner/selected-node: <node>`` and
   ``pv.kubernetes.io/provisioned-by: rancher.io/local-path``; the Normal event
   ``ProvisioningSucceeded`` ``Successfully provisioned volume pvc-<uid>``. The PV
   controller binds the two (the claim already is the PV's ``claimRef``), the scheduler's
   PreBind sees the claim bound and binds the pod.

Deleting (``shouldDelete`` / ``deleteVolumeOperation`` + local-path's ``Delete``): a PV
``Released`` (its claim deleted), with reclaim policy ``Delete`` and provisioned by
``rancher.io/local-path``, gets its directory removed by a teardown helper pod (again
:data:`HELPER_POD_SECONDS`), then the PV object is deleted (the pv-protection finalizer then
lets it go). The PV controller leaves such PVs to this external deleter.

Events come from ``rancher.io/local-path_<provisioner pod name>_<uuid>`` (the library's
recorder: provisioner name, host name, a UUID per process; here derived from the pod's uid
and restart count, so deterministic).

Not emulated: the helper pods themselves (``helper-pod-create-pvc-…``), the library's retries
of a failed provisioning (a claim that failed is tried again only when it changes), shared
file systems (``sharedFileSystemPath``), per-StorageClass configs and ``volumeType: local``,
picking at random among several paths of a node (the first is used).

Units: virtual seconds.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any

from ..api import errors
from ..api.auth import service_account, service_account_username
from ..api.meta import copy_object
from ..client.component import Component
from ..client.events import NORMAL, WARNING, EventRecorder
from ..client.informer import EventHandler, meta_namespace_key

__all__ = [
    "LocalPathProvisioner", "PROVISIONER_NAME", "NAMESPACE", "SERVICE_ACCOUNT", "DEPLOYMENT",
    "CONFIGMAP", "STORAGE_CLASS", "DEFAULT_PATH", "PROVISIONER_IMAGE", "HELPER_IMAGE",
    "HELPER_POD_SECONDS", "ANN_LOCAL_SELECTED_NODE", "USERNAME", "volume_path", "node_path",
]

Obj = dict[str, Any]

#: the provisioner's name (StorageClass ``provisioner``, PV ``provisioned-by``)
PROVISIONER_NAME = "rancher.io/local-path"
#: where kind installs it
NAMESPACE = "local-path-storage"
SERVICE_ACCOUNT = "local-path-provisioner-service-account"
DEPLOYMENT = "local-path-provisioner"
CONFIGMAP = "local-path-config"
#: kind's default StorageClass
STORAGE_CLASS = "standard"
#: kind's ``nodePathMap`` path for every node (upstream's own default is ``/opt/local-path-provisioner``)
DEFAULT_PATH = "/var/local-path-provisioner"
DEFAULT_NODE_KEY = "DEFAULT_PATH_FOR_NON_LISTED_NODES"
#: what kind v0.27–v0.29 ship for Kubernetes 1.33
PROVISIONER_IMAGE = "docker.io/kindest/local-path-provisioner:v20250214-acbabc1a"
HELPER_IMAGE = "docker.io/kindest/local-path-helper:v20241212-8ac705d0"
#: virtual seconds a helper pod takes (created on the node, runs ``mkdir``/``rm -rf``, polled
#: every second by the provisioner, deleted)
HELPER_POD_SECONDS = 3.0
#: the service account the provisioner's requests are authorized (and logged) as
USERNAME = service_account_username(NAMESPACE, SERVICE_ACCOUNT)
#: the field manager of its writes (client-go's default user agent: the binary's name)
FIELD_MANAGER = "local-path-provisioner"

ANN_LOCAL_SELECTED_NODE = "local.path.provisioner/selected-node"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
HOSTNAME_LABEL = "kubernetes.io/hostname"
_APP_LABEL = "app=local-path-provisioner"


def _meta(o: Obj | None) -> Obj:
    return (o or {}).get("metadata") or {}


def _spec(o: Obj | None) -> Obj:
    return (o or {}).get("spec") or {}


def _annotations(o: Obj | None) -> Obj:
    return _meta(o).get("annotations") or {}


def _claim_class(claim: Obj) -> str:
    ann = _annotations(claim)
    if BETA_STORAGE_CLASS in ann:
        return ann[BETA_STORAGE_CLASS] or ""
    return _spec(claim).get("storageClassName") or ""


def volume_path(base: str, pv_name: str, namespace: str, claim: str) -> str:
    """local-path's volume directory: ``<base>/<pv name>_<namespace>_<claim name>``."""
    return posixpath.join(base, "_".join((pv_name, namespace, claim)))


def node_path(config_json: str | None, node: str) -> str:
    """``getRandomPathOnNode`` over a ``config.json`` text: the first path of the node's
    ``nodePathMap`` entry, else of ``DEFAULT_PATH_FOR_NON_LISTED_NODES``.

    Raises:
        ValueError: upstream's error text (no entry, no path, unreadable config).
    """
    try:
        config = json.loads(config_json or "")
    except ValueError as e:
        raise ValueError(f"failed to load config: {e}") from None
    entries = {str(e.get("node")): e for e in (config.get("nodePathMap") or []) if isinstance(e, dict)}
    entry = entries.get(node) or entries.get(DEFAULT_NODE_KEY)
    if entry is None:
        raise ValueError(f"config doesn't contain node {node}, and no {DEFAULT_NODE_KEY} available")
    paths = [str(p) for p in entry.get("paths") or ()]
    if not paths:
        raise ValueError(f"no local path available on node {node}")
    return paths[0]


class _Failed(Exception):
    """local-path's ``Provision`` returned an error (``ProvisioningFinished``)."""


class LocalPathProvisioner(Component):
    """rancher's local-path-provisioner process (see the module docstring), acting as the
    service account :data:`USERNAME`.

    Args:
        api: the API server.
        helper_seconds: virtual seconds each helper pod (create, delete) takes.
    """

    name = USERNAME

    def __init__(self, api: Any, *, helper_seconds: float = HELPER_POD_SECONDS) -> None:
        super().__init__(api, USERNAME, service_account(NAMESPACE, SERVICE_ACCOUNT))
        self.helper_seconds = helper_seconds
        self.claims = self.informer("persistentvolumeclaims")
        self.volumes = self.informer("persistentvolumes")
        self.classes = self.informer("storageclasses.storage.k8s.io")
        self.pods = self.informer("pods", namespace=NAMESPACE, label_selector=_APP_LABEL)
        self.q = self.queue()
        self.recorder: EventRecorder | None = None
        self._process: str | None = None  # (pod uid, restarts) of the running provisioner
        #: claims whose helper pod runs: claim uid -> (node, path, virtual time it finishes)
        self._creating: dict[str, tuple[str, str, float]] = {}
        #: PVs whose teardown helper pod runs: name -> virtual time it finishes
        self._deleting: dict[str, float] = {}
        #: claims whose provisioning failed: claim uid -> the claim's resourceVersion then
        self._failed: dict[str, str] = {}
        self.claims.add_event_handler(EventHandler(
            on_add=self._claim_event, on_update=lambda o, n: self._claim_event(n), on_delete=self._claim_event))
        self.volumes.add_event_handler(EventHandler(
            on_add=self._volume_event, on_update=lambda o, n: self._volume_event(n), on_delete=self._volume_event))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_event, on_update=lambda o, n: self._pod_event(n), on_delete=self._pod_event))

    # ---- the process: runs only inside a Ready provisioner pod
    def _running_pod(self) -> Obj | None:
        """The first (by name) pod of the Deployment that is Running with every container ready."""
        for pod in sorted(self.pods.indexer.list(), key=lambda p: _meta(p).get("name") or ""):
            status = pod.get("status") or {}
            if _meta(pod).get("deletionTimestamp") or status.get("phase") != "Running":
                continue
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
            if ready:
                return pod
        return None

    def _pod_event(self, _pod: Obj | None = None) -> None:
        pod = self._running_pod()
        if pod is None:
            if self._process is not None:  # the process is gone, and its work in flight with it
                self._process = None
                self.recorder = None
                self._creating.clear()
                self._deleting.clear()
            return
        restarts = sum(int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or ())
        process = f"{_meta(pod).get('uid')}/{restarts}"
        if process == self._process:
            return
        # a new process: it lists every claim and volume, as the library's informers do on start
        self._process = process
        digest = hashlib.sha256(f"local-path-provisioner/{process}".encode()).hexdigest()
        uuid = f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-a{digest[17:20]}-{digest[20:32]}"
        self.recorder = EventRecorder(self.api, self.ctx, f"{PROVISIONER_NAME}_{_meta(pod).get('name')}_{uuid}")
        self._creating.clear()
        self._deleting.clear()
        for claim in sorted(self.claims.indexer.list(), key=meta_namespace_key):
            self.q.add(("claim", meta_namespace_key(claim)))
        for pv in sorted(self.volumes.indexer.list(), key=lambda v: _meta(v).get("name") or ""):
            self.q.add(("volume", _meta(pv).get("name") or ""))

    def _claim_event(self, claim: Obj) -> None:
        if self._process is not None:
            self.q.add(("claim", meta_namespace_key(claim)))

    def _volume_event(self, pv: Obj) -> None:
        if self._process is not None:
            self.q.add(("volume", _meta(pv).get("name") or ""))

    async def main(self) -> None:
        self._pod_event()
        await self.run_workers(self.q, self.sync)

    def sync(self, item: tuple[str, str]) -> None:
        """One queue item: ``("claim", "namespace/name")`` or ``("volume", name)``."""
        if self._process is None:
            return
        kind, key = item
        if kind == "claim":
            self.sync_claim(key)
        else:
            self.sync_volume(key)

    # ---- claims
    def should_provision(self, claim: Obj) -> bool:
        """The library's ``shouldProvision``: unbound, annotated for this provisioner, of a class
        that names it, and (``WaitForFirstConsumer``) with a selected node."""
        if _spec(claim).get("volumeName") or _meta(claim).get("deletionTimestamp"):
            return False
        ann = _annotations(claim)
        if (ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER)) != PROVISIONER_NAME:
            return False
        sc = self.classes.indexer.get(_claim_class(claim))
        if sc is None or sc.get("provisioner") != PROVISIONER_NAME:
            return False
        if sc.get("volumeBindingMode") == "WaitForFirstConsumer":
            return ANN_SELECTED_NODE in ann
        return True

    def sync_claim(self, key: str) -> None:
        """Start provisioning a claim (event, checks, helper pod), or finish it once the helper
        pod is done (the PV, the success event)."""
        ns, name = key.split("/", 1)
        claim = self.claims.indexer.get_by(ns, name)
        if claim is None:
            return
        uid = _meta(claim).get("uid") or ""
        if not self.should_provision(claim):
            self._creating.pop(uid, None)
            return
        pv_name = f"pvc-{uid}"
        if self.volumes.indexer.get(pv_name) is not None:
            self._creating.pop(uid, None)
            return  # provisioned already
        creating = self._creating.get(uid)
        if creating is not None:
            node, path, done_at = creating
            if self.api.now + 1e-9 < done_at:
                self.q.add_after(("claim", key), done_at - self.api.now)
                return
            del self._creating[uid]
            self._store_volume(claim, pv_name, node, path)
            return
        if uid not in self._failed:
            self._recall_failure(claim)
        if self._failed.get(uid) == _meta(claim).get("resourceVersion"):
            return  # failed for this version of the claim; tried again when it changes
        self._failed.pop(uid, None)
        class_name = _claim_class(claim)
        node_name = _annotations(claim).get(ANN_SELECTED_NODE)
        node = None
        if node_name:
            try:
                node = self.api.get("nodes", node_name, ctx=self.ctx)
            except errors.StatusError as e:
                self._fail(claim, f"failed to get target node: {e.message}")
                return
        assert self.recorder is not None
        self.recorder.event(claim, NORMAL, "Provisioning",
                            f'External provisioner is provisioning volume for claim "{key}"')
        try:
            path = self._provision_checks(claim, node, pv_name)
        except _Failed as e:
            self._fail(claim, f'failed to provision volume with StorageClass "{class_name}": {e}')
            return
        host = (_meta(node).get("labels") or {}).get(HOSTNAME_LABEL) or node_name
        self._creating[uid] = (str(host), path, self.api.now + self.helper_seconds)
        self.q.add_after(("claim", key), self.helper_seconds)

    def _provision_checks(self, claim: Obj, node: Obj | None, pv_name: str) -> str:
        """local-path's ``provisionFor`` up to its helper pod: the volume's directory, or
        :class:`_Failed` with upstream's message."""
        spec = _spec(claim)
        if spec.get("selector") is not None:
            raise _Failed("claim.Spec.Selector is not supported")
        for mode in spec.get("accessModes") or ():
            if mode not in ("ReadWriteOnce", "ReadWriteOncePod"):
                raise _Failed("NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes")
        if node is None:
            raise _Failed("configuration error, no node was specified")
        try:
            cm = self.api.get("configmaps", CONFIGMAP, namespace=NAMESPACE, ctx=self.ctx)
        except errors.StatusError as e:
            raise _Failed(e.message) from None
        try:
            base = node_path((cm.get("data") or {}).get("config.json"), _meta(node).get("name") or "")
        except ValueError as e:
            raise _Failed(str(e)) from None
        m = _meta(claim)
        return volume_path(base, pv_name, m.get("namespace") or "", m.get("name") or "")

    def _recall_failure(self, claim: Obj) -> None:
        """What this process remembers across k8semu commands (each starts the components
        afresh, the provisioner process carries on): whether its last attempt at this version
        of the claim failed — read from its ``ProvisioningFailed`` Events about the claim."""
        m = _meta(claim)
        source = self.recorder.component if self.recorder is not None else None
        latest: tuple[str, str] | None = None
        for rec in self.api.log.range(f"/registry/events/{m.get('namespace')}/{m.get('name')}."):
            ev = rec.object
            inv = ev.get("involvedObject") or {}
            if (ev.get("source") or {}).get("component") != source or inv.get("uid") != m.get("uid"):
                continue
            if ev.get("reason") not in ("Provisioning", "ProvisioningFailed"):
                continue
            stamp = ev.get("lastTimestamp") or ""
            if latest is None or stamp >= latest[0]:
                latest = (stamp, ev.get("reason") if inv.get("resourceVersion") == m.get("resourceVersion") else "")
        if latest is not None and latest[1] == "ProvisioningFailed":
            self._failed[m.get("uid") or ""] = m.get("resourceVersion") or ""

    def _fail(self, claim: Obj, message: str) -> None:
        """``provisionVolumeErrorHandling`` (``ProvisioningFinished``): a Warning, no retry until
        the claim changes."""
        self._failed[_meta(claim).get("uid") or ""] = _meta(claim).get("resourceVersion") or ""
        if self.recorder is not None:
            self.recorder.event(claim, WARNING, "ProvisioningFailed", message)

    def _store_volume(self, claim: Obj, pv_name: str, host: str, path: str) -> None:
        """The PV local-path returns, completed by the library (claimRef, provisioned-by,
        class), created; then ``ProvisioningSucceeded``."""
        sc = self.classes.indexer.get(_claim_class(claim)) or {}
        m = _meta(claim)
        node_name = _annotations(claim).get(ANN_SELECTED_NODE) or host
        request = ((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage")
        pv = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {ANN_LOCAL_SELECTED_NODE: node_name,
                                                          ANN_PROVISIONED_BY: PROVISIONER_NAME}},
            "spec": {
                "capacity": {"storage": request},
                "hostPath": {"path": path, "type": "DirectoryOrCreate"},
                "accessModes": list(_spec(claim).get("accessModes") or ()),
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": m.get("namespace"), "name": m.get("name"),
                             "uid": m.get("uid"), "apiVersion": "v1", "resourceVersion": m.get("resourceVersion")},
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                "storageClassName": _claim_class(claim),
                "volumeMode": "Filesystem",
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": HOSTNAME_LABEL, "operator": "In", "values": [host]}]}]}},
            },
        }
        try:
            self.api.create("persistentvolumes", copy_object(pv), ctx=self.ctx, field_validation="Ignore",
                            field_manager=FIELD_MANAGER)
        except errors.AlreadyExists:
            return
        except errors.StatusError as e:
            self._fail(claim, f"Failed to save PersistentVolume: {e.message}")
            return
        assert self.recorder is not None
        self.recorder.event(claim, NORMAL, "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}")

    # ---- volumes
    def should_delete(self, pv: Obj) -> bool:
        """The library's ``shouldDelete``: Released, reclaim ``Delete``, provisioned by us, not
        being deleted already."""
        if _meta(pv).get("deletionTimestamp"):
            return False
        if ((pv.get("status") or {}).get("phase")) != "Released":
            return False
        if _spec(pv).get("persistentVolumeReclaimPolicy") != "Delete":
            return False
        return _annotations(pv).get(ANN_PROVISIONED_BY) == PROVISIONER_NAME

    def sync_volume(self, name: str) -> None:
        """Start the teardown helper pod of a PV to delete, or delete the PV once it is done."""
        pv = self.volumes.indexer.get(name)
        if pv is None or not self.should_delete(pv):
            self._deleting.pop(name, None)
            return
        done_at = self._deleting.get(name)
        if done_at is None:
            self._deleting[name] = self.api.now + self.helper_seconds
            self.q.add_after(("volume", name), self.helper_seconds)
            return
        if self.api.now + 1e-9 < done_at:
            self.q.add_after(("volume", name), done_at - self.api.now)
            return
        del self._deleting[name]
        try:  # deleteVolumeOperation reads the PV afresh before it deletes it
            fresh = self.api.get("persistentvolumes", name, ctx=self.ctx)
        except errors.NotFound:
            return
        if not self.should_delete(fresh):
            return
        try:
            self.api.delete("persistentvolumes", name, ctx=self.ctx)
        except errors.NotFound:
            pass
