"""The default set of components of a cluster: a registry of factories by name.

:func:`default_factories` returns ``{name: zero-argument constructor}`` for
:class:`~k8semu.sim.runtime.Runtime`, in start order: kube-controller-manager's
controllers (one component each, named as upstream names them), the
kube-scheduler, the control plane's leader election
(``leader-election/kube-controller-manager``, ``leader-election/kube-scheduler``,
left out while the control-plane node is stopped), then per node its kubelet
and kube-proxy (``kubelet/<node>``, ``kube-proxy/<node>``). First of all runs
the ``machine-supervisor`` (:class:`MachineSupervisor`), which powers machines
off and on while the cluster runs, then kube-apiserver's Event expiry
(``kube-apiserver/event-ttl``, :class:`~k8semu.sim.eventttl.EventTTL`: ``--event-ttl``). A cluster created with ``storage: local-path`` also runs
``local-path-provisioner`` (:class:`~k8semu.controllers.localpath.LocalPathProvisioner`, the
external provisioner kind ships: not part of kube-controller-manager; it works only while its
Deployment's pod runs), and its kubelets start with that provisioner's and its helper's images
(kind's node image preloads them).

**Machines.** Each node of the cluster configuration is a machine. Which ones
are stopped (``k8semu node stop``) is an input, so it lives in the log like
every other input: the ConfigMap ``kube-system/k8semu-machines`` lists them
(``data: {<node>: "stopped"}``), written by the user (``node stop`` adds the
node, ``node start`` removes it). It is not kept on the Node, because the
machine outlives its Node object: a stopped machine whose Node is deleted stays
stopped, and ``node start`` boots it again. A stopped machine's kubelet and
kube-proxy are left out of every session; :class:`MachineSupervisor` stops or
starts them the moment the ConfigMap changes, in the CLI and in a replay
alike (``docs/replay.md``).

**Kubelet processes.** Every ``k8semu`` command starts the components afresh,
but the cluster is one continuous run: a kubelet that registered its Node in
an earlier session is the same kubelet process carrying on. Upstream's
kubelet registers its Node once per process (``registerWithAPIServer`` stops
once ``registrationCompleted``); if the Node is deleted while it runs, status
updates fail with "not found" and the Node is *not* recreated until the kubelet
restarts. So a session's kubelet is built as a fresh process (registers,
creating the Node if missing; ``Starting`` event) only when its machine booted
since the kubelet last registered — the cluster's first session, ``node start``
of a stopped machine, or a restart by the runtime (:meth:`Runtime.start`,
:meth:`Runtime.crash`) — and otherwise carries on (:func:`kubelet_registered`),
reading that from the log: the Node's records since the machine's last boot.
"""

from __future__ import annotations

from typing import Any, Callable

from ..client.component import Component

__all__ = ["default_factories", "stopped_nodes", "kubelet_unreachable", "node_components", "node_factories", "set_machine_stopped",
           "kubelet_registered", "MachineSupervisor", "MACHINES_NAMESPACE", "MACHINES_CONFIGMAP", "MACHINES_KEY",
           "STOPPED", "STOPPED_ANNOTATION"]

Factory = Callable[[], Component]

#: Namespace and name of the ConfigMap that lists the stopped machines (``data: {<node>: "stopped"}``).
MACHINES_NAMESPACE = "kube-system"
MACHINES_CONFIGMAP = "k8semu-machines"
#: Its key in the event log.
MACHINES_KEY = f"/registry/configmaps/{MACHINES_NAMESPACE}/{MACHINES_CONFIGMAP}"
#: The value that marks a machine as stopped.
STOPPED = "stopped"
#: Node annotation that marked a stopped machine in logs written before the ConfigMap; no longer
#: read (``node start`` removes a leftover one).
STOPPED_ANNOTATION = "k8semu.io/stopped"


def _stopped_in(rec: Any) -> set[str]:
    """The machines a record of the machines ConfigMap lists as stopped (none once it is deleted)."""
    if rec is None or rec.type == "DELETED":
        return set()
    data = rec.object.get("data") or {}
    return {name for name, v in data.items() if v == STOPPED}


def kubelet_unreachable(api: Any, pod: Any) -> str | None:
    """How kube-apiserver fails to dial the kubelet of ``pod``'s node when its machine is stopped
    (``dial tcp 172.18.0.3:10250: i/o timeout``, the Node's InternalIP), else None — for the
    requests it proxies to the kubelet: exec, port-forward, logs."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or node not in _stopped_in(api.log.get(MACHINES_KEY)):
        return None
    rec = api.log.get(f"/registry/nodes/{node}")
    addresses = ((rec.object.get("status") or {}).get("addresses") or []) if rec is not None else []
    ip = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), node)
    return f"dial tcp {ip}:10250: i/o timeout"


def stopped_nodes(cluster: Any) -> set[str]:
    """Names of the machines that are stopped now (listed in ``kube-system/k8semu-machines``)."""
    return _stopped_in(cluster.log.get(MACHINES_KEY))


def set_machine_stopped(api: Any, node: str, stopped: bool) -> bool:
    """Record (as the user, field manager ``k8semu``) that ``node``'s machine is stopped, or running.

    Creates the machines ConfigMap on the first stop; a start removes the node's
    entry (a JSON merge patch). Returns False when the machine already was so.
    """
    from ..api import errors
    from ..api.apiserver import MERGE_PATCH

    try:
        cm = api.get("configmaps", MACHINES_CONFIGMAP, namespace=MACHINES_NAMESPACE)
    except errors.NotFound:
        if not stopped:
            return False
        api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": MACHINES_CONFIGMAP, "namespace": MACHINES_NAMESPACE},
                                  "data": {node: STOPPED}},
                   namespace=MACHINES_NAMESPACE, field_manager="k8semu")
        return True
    if ((cm.get("data") or {}).get(node) == STOPPED) == stopped:
        return False
    api.patch("configmaps", MACHINES_CONFIGMAP, {"data": {node: STOPPED if stopped else None}}, MERGE_PATCH,
              namespace=MACHINES_NAMESPACE, field_manager="k8semu")
    return True


def _last_boot(log: Any, node: str) -> int:
    """Revision of the write that last started ``node``'s stopped machine (0: never stopped)."""
    boot, was = 0, False
    for rec in log.history(MACHINES_KEY):
        now = node in _stopped_in(rec)
        if was and not now:
            boot = rec.revision
        was = now
    return boot


def kubelet_registered(cluster: Any, node: str) -> bool:
    """Whether ``node``'s kubelet process has registered since its machine last booted.

    Read from the log: any record of the Node after the machine's last boot
    (the revision of the write that last removed it from the stopped machines;
    0, the cluster's start, for a machine never stopped) — a registering
    kubelet always writes its Node: it creates it, or posts a fresh status.
    False in the cluster's first session and after ``node start`` until the
    kubelet has run.
    """
    boot = _last_boot(cluster.log, node)
    return any(r.revision > boot for r in cluster.log.history(f"/registry/nodes/{node}"))


def node_components(node: str) -> tuple[str, str]:
    """The runtime names of a node's components: ``kubelet/NODE``, ``kube-proxy/NODE``."""
    return f"kubelet/{node}", f"kube-proxy/{node}"


def node_factories(cluster: Any, node: Any, *, booted: bool = False) -> dict[str, Factory]:
    """Factories of one machine's kubelet and kube-proxy (``node``: its
    :class:`~k8semu.sim.config.NodeConfig`), by :func:`node_components` name.

    The kubelet's first instance is a fresh process when ``booted`` (its machine
    starts now) or when it has not registered since its machine's last boot
    (:func:`kubelet_registered`, read when it is built); otherwise it carries on
    the earlier session's kubelet and creates no Node. Every later instance (the
    runtime restarting it) is a fresh process.
    """
    from ..node.kube_proxy import KubeProxy
    from ..node.kubelet import Kubelet

    api = cluster.api
    config = cluster.nodes
    kubeadm = bool(cluster.config.get("kubeadm"))
    built: list[bool] = []

    local_path = cluster.config.get("storage") == "local-path"

    def kubelet() -> Component:
        fresh = booted or bool(built) or not kubelet_registered(cluster, node.name)
        built.append(True)
        k = Kubelet(api, node, static_pods=kubeadm, cluster_cidr=config.pod_cidr, fresh=fresh)
        if local_path:
            _preload_local_path_images(k)
        return k

    kubelet_name, proxy_name = node_components(node.name)
    return {kubelet_name: kubelet,
            proxy_name: lambda: KubeProxy(api, node.name, seed=cluster.seed, cluster_cidr=config.pod_cidr)}


def _preload_local_path_images(kubelet: Any) -> None:
    """Put local-path-provisioner's and its helper's images in the kubelet's image cache, as
    kind's node image ships them (``Container image … already present on machine``)."""
    from ..controllers.localpath import HELPER_IMAGE, PROVISIONER_IMAGE
    from ..node.behaviour import image_pull_result
    from ..node.runtime import Image, normalize_image

    for image in (PROVISIONER_IMAGE, HELPER_IMAGE):
        r = image_pull_result(image)
        if r.ok and kubelet.runtime.images.get(image) is None:
            kubelet.runtime.images.add(Image(normalize_image(image), r.image_id, int(r.size)))


class MachineSupervisor(Component):
    """Powers machines off and on as the machines ConfigMap changes (see the module docstring).

    Watches the log synchronously (a store listener, so the change takes effect
    at the very write, with no scheduling in between): a machine newly listed as
    stopped has its kubelet and kube-proxy cancelled (a power cut: no last
    status, no graceful shutdown); a machine newly removed from the list gets a
    fresh kubelet (which registers its Node again) and kube-proxy. Only changes
    count: components stopped or started through the runtime directly are left
    alone. Writes nothing itself.
    """

    def __init__(self, cluster: Any) -> None:
        super().__init__(cluster.api, "machine-supervisor")
        self.cluster = cluster
        self.runtime: Any = None
        self.stopped: set[str] = set()

    def bind_runtime(self, runtime: Any) -> None:
        """Called by the runtime as it builds this component: start listening."""
        self.runtime = runtime
        self.stopped = stopped_nodes(self.cluster)
        self.cluster.log.add_listener(self._on_record)

    def _on_record(self, rec: Any) -> None:
        if rec.key != MACHINES_KEY or self.runtime is None:
            return
        now = _stopped_in(rec)
        rt = self.runtime
        for node in self.cluster.nodes.nodes:
            if (node.name in now) == (node.name in self.stopped):
                continue
            if node.name in now:
                for name in node_components(node.name):
                    if name in rt.components:
                        rt.stop(name)
            else:
                for name, factory in node_factories(self.cluster, node, booted=True).items():
                    if name not in rt.components:
                        rt.add(name, factory)
        self.stopped = now

    async def main(self) -> None:
        try:
            await super().main()
        finally:
            self.runtime = None
            try:
                self.cluster.log.remove_listener(self._on_record)
            except ValueError:  # already dropped (a replay resets the log's listeners between sessions)
                pass


def controller_factories(api: Any, config: Any, resumed_at: float | None = None,
                         pki_folder: Any = None) -> dict[str, Factory]:
    """kube-controller-manager's controllers, by upstream name (``resumed_at``: see
    :class:`~k8semu.controllers.nodelifecycle.NodeLifecycleController`). The CSR signer signs
    with the CA of ``pki_folder`` (default: the ``pki/`` folder beside the cluster file, the one
    ``serve`` uses); a cluster in memory has none unless given one, and its signer signs nothing."""
    from ..controllers.certificates import CSRCleanerController, CSRSigningController
    from ..controllers.clusterroleaggregation import ClusterRoleAggregationController
    from ..controllers.cronjob import CronJobController
    from ..controllers.daemonset import DaemonSetController
    from ..controllers.deployment import DeploymentController
    from ..controllers.disruption import DisruptionController
    from ..controllers.endpoints import EndpointsController
    from ..controllers.endpointslice import EndpointSliceController
    from ..controllers.garbagecollector import GarbageCollector
    from ..controllers.hpa import HorizontalController
    from ..controllers.job import JobController
    from ..controllers.namespace import NamespaceController
    from ..controllers.nodeipam import NodeIPAMController
    from ..controllers.nodelifecycle import NodeLifecycleController, TaintEvictionController
    from ..controllers.persistentvolume import PersistentVolumeController
    from ..controllers.pvprotection import PVCProtectionController, PVProtectionController
    from ..controllers.replicaset import ReplicaSetController, ReplicationManager
    from ..controllers.resourcequota import ResourceQuotaController
    from ..controllers.serviceaccount import RootCACertPublisher, ServiceAccountsController
    from ..controllers.statefulset import StatefulSetController
    from ..controllers.podgc import PodGCController
    from ..controllers.ttlafterfinished import TTLAfterFinishedController
    from ..node.metrics import MetricsServer

    factories: dict[str, Factory] = {
        "node-ipam-controller": lambda: NodeIPAMController(api, config),
        "node-lifecycle-controller": lambda: NodeLifecycleController(api, resumed_at=resumed_at),
        "taint-eviction-controller": lambda: TaintEvictionController(api),
        "service-account-controller": lambda: ServiceAccountsController(api),
        "root-ca-cert-publisher": lambda: RootCACertPublisher(api),
        "namespace-controller": lambda: NamespaceController(api),
        "garbage-collector-controller": lambda: GarbageCollector(api),
        "deployment-controller": lambda: DeploymentController(api),
        "replicaset-controller": lambda: ReplicaSetController(api),
        "replication-controller": lambda: ReplicationManager(api),
        "statefulset-controller": lambda: StatefulSetController(api),
        "daemonset-controller": lambda: DaemonSetController(api),
        "job-controller": lambda: JobController(api),
        "cronjob-controller": lambda: CronJobController(api),
        "ttl-after-finished-controller": lambda: TTLAfterFinishedController(api),
        "pod-garbage-collector": lambda: PodGCController(api),
        "endpointslice-controller": lambda: EndpointSliceController(api),
        "endpoint-controller": lambda: EndpointsController(api),
        "disruption-controller": lambda: DisruptionController(api),
        "resourcequota-controller": lambda: ResourceQuotaController(api),
        "persistentvolume-binder-controller": lambda: PersistentVolumeController(api),
        "persistentvolumeclaim-protection-controller": lambda: PVCProtectionController(api),
        "persistentvolume-protection-controller": lambda: PVProtectionController(api),
        "horizontal-pod-autoscaler": lambda: HorizontalController(api, MetricsServer(api.epoch)),
        "clusterrole-aggregation-controller": lambda: ClusterRoleAggregationController(api),
        "csrsigning-controller": lambda: CSRSigningController(api, _cluster_ca(api, pki_folder)),
        "csrcleaner-controller": lambda: CSRCleanerController(api),
    }
    return {name: _in_process(KUBE_CONTROLLER_MANAGER, make) for name, make in factories.items()}


#: The process whose controllers share informers (:attr:`Component.informer_group`).
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"


def _in_process(process: str, make: Factory) -> Factory:
    """``make``, with what it builds marked as running in ``process``: the runtime gives the
    components of one process shared informers, as kube-controller-manager's controllers share
    one ``SharedInformerFactory`` (one watch and one cache per resource)."""
    def build() -> Component:
        comp = make()
        comp.informer_group = process
        return comp

    return build


def _cluster_ca(api: Any, pki_folder: Any = None) -> Callable[[], Any] | None:
    """The CSR signer's CA: ``pki_folder``'s, else that of the ``pki/`` folder beside the cluster
    file (made on first use), else None (a cluster in memory)."""
    from pathlib import Path

    path = getattr(api.log, "path", None)
    if pki_folder is None and path is None:
        return None
    folder = Path(pki_folder) if pki_folder is not None else Path(path).parent / "pki"

    def load() -> Any:
        from ..server.pki import load_signing_ca

        return load_signing_ca(folder)

    return load


def leader_election_factories(cluster: Any) -> dict[str, Factory]:
    """The Leases kube-controller-manager and kube-scheduler hold in ``kube-system``
    (components ``leader-election/<lease>``, actors ``kube-controller-manager`` / ``kube-scheduler``)."""
    from ..api.auth import controller_manager, scheduler
    from .kubeadm import LeaseHolder, holder_identity

    api = cluster.api
    return {
        f"leader-election/{lease}": (lambda lease=lease, user=user: LeaseHolder(
            api, lease, user(), holder_identity(cluster, lease)))
        for lease, user in (("kube-controller-manager", controller_manager), ("kube-scheduler", scheduler))
    }


def default_factories(cluster: Any) -> dict[str, Factory]:
    """Factories for ``cluster``'s components, in start order (see the module docstring)."""
    from ..scheduler.scheduler import Scheduler

    api = cluster.api
    config = cluster.nodes
    factories: dict[str, Factory] = {"machine-supervisor": lambda: MachineSupervisor(cluster)}
    from .eventttl import COMPONENT as EVENT_TTL, EventTTL

    factories[EVENT_TTL] = lambda: EventTTL(api)  # kube-apiserver's --event-ttl: Events expire
    # ``pki_folder``: a replay of a cluster file's log (in memory) signs with that file's CA
    factories.update(controller_factories(api, config, getattr(cluster, "resumed_at", None),
                                          getattr(cluster, "pki_folder", None)))
    factories["default-scheduler"] = lambda: Scheduler(api)
    stopped = stopped_nodes(cluster)
    kubeadm = bool(cluster.config.get("kubeadm"))
    if kubeadm and not any(n.role == "control-plane" and n.name in stopped for n in config.nodes):
        factories.update(leader_election_factories(cluster))
    if cluster.config.get("storage") == "local-path":
        from ..controllers.localpath import LocalPathProvisioner

        factories["local-path-provisioner"] = lambda: LocalPathProvisioner(api)
    for node in config.nodes:
        if node.name not in stopped:
            factories.update(node_factories(cluster, node))
    return factories
