"""The default set of components of a cluster: a registry of factories by name.

:func:`default_factories` returns ``{name: zero-argument constructor}`` for
:class:`~k8semu.sim.runtime.Runtime`, in start order: kube-controller-manager's
controllers (one component each, named as upstream names them), the
kube-scheduler, the control plane's leader election
(``leader-election/kube-controller-manager``, ``leader-election/kube-scheduler``,
left out while the control-plane node is stopped), then per node its kubelet
and kube-proxy (``kubelet/<node>``, ``kube-proxy/<node>``).

A node whose machine is stopped (``k8semu node stop``) carries the annotation
``k8semu.io/stopped: "true"``; its kubelet and kube-proxy are left out, so the
fault persists across commands: it lives in the log like every other input.
"""

from __future__ import annotations

from typing import Any, Callable

from ..client.component import Component

__all__ = ["default_factories", "STOPPED_ANNOTATION", "stopped_nodes", "node_components"]

Factory = Callable[[], Component]

#: Node annotation that marks the node's machine as stopped.
STOPPED_ANNOTATION = "k8semu.io/stopped"


def stopped_nodes(cluster: Any) -> set[str]:
    """Names of the nodes whose machine is stopped (annotation ``k8semu.io/stopped: "true"``)."""
    return {n["metadata"]["name"] for n in cluster.api.list("nodes")["items"]
            if (n["metadata"].get("annotations") or {}).get(STOPPED_ANNOTATION) == "true"}


def node_components(node: str) -> tuple[str, str]:
    """The runtime names of a node's components: ``kubelet/NODE``, ``kube-proxy/NODE``."""
    return f"kubelet/{node}", f"kube-proxy/{node}"


def controller_factories(api: Any, config: Any) -> dict[str, Factory]:
    """kube-controller-manager's controllers, by upstream name."""
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
    from ..controllers.replicaset import ReplicaSetController, ReplicationManager
    from ..controllers.resourcequota import ResourceQuotaController
    from ..controllers.serviceaccount import RootCACertPublisher, ServiceAccountsController
    from ..controllers.statefulset import StatefulSetController
    from ..controllers.podgc import PodGCController
    from ..controllers.ttlafterfinished import TTLAfterFinishedController
    from ..node.metrics import MetricsServer

    return {
        "node-ipam-controller": lambda: NodeIPAMController(api, config),
        "node-lifecycle-controller": lambda: NodeLifecycleController(api),
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
        "horizontal-pod-autoscaler": lambda: HorizontalController(api, MetricsServer(api.epoch)),
    }


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
    from ..node.kube_proxy import KubeProxy
    from ..node.kubelet import Kubelet
    from ..scheduler.scheduler import Scheduler

    api = cluster.api
    config = cluster.nodes
    factories = controller_factories(api, config)
    factories["default-scheduler"] = lambda: Scheduler(api)
    stopped = stopped_nodes(cluster)
    kubeadm = bool(cluster.config.get("kubeadm"))
    if kubeadm and not any(n.role == "control-plane" and n.name in stopped for n in config.nodes):
        factories.update(leader_election_factories(cluster))
    for node in config.nodes:
        if node.name in stopped:
            continue
        kubelet, proxy = node_components(node.name)
        factories[kubelet] = (lambda n=node: Kubelet(api, n, static_pods=kubeadm, cluster_cidr=config.pod_cidr))
        factories[proxy] = (lambda n=node.name: KubeProxy(api, n, seed=cluster.seed, cluster_cidr=config.pod_cidr))
    return factories
