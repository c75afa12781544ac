"""What kube-apiserver creates in a new cluster before anything else runs.

- the namespaces ``default``, ``kube-system``, ``kube-public``, ``kube-node-lease``;
- the ``kubernetes`` Service in ``default`` at the first address of the
  service CIDR (10.96.0.1:443 → the apiserver's 6443);
- that Service's Endpoints and EndpointSlice, as the apiserver's endpoint
  reconciler (``pkg/controlplane/reconcilers``, through its
  ``EndpointsAdapter``) writes them: the Endpoints ``default/kubernetes``
  labelled ``endpointslice.kubernetes.io/skip-mirror: "true"`` with one subset
  (``addresses: [{ip: <advertise address>}]``, ``ports: [{name: https, port:
  6443, protocol: TCP}]``), and the EndpointSlice ``default/kubernetes``
  labelled ``kubernetes.io/service-name: kubernetes`` (no managed-by label, no
  owner), ``addressType: IPv4``, ``endpoints: [{addresses: [ip], conditions:
  {ready: true}}]`` and the same port. The advertise address is the
  control-plane node's InternalIP (the first control-plane node of the
  cluster's configuration, else its first node: ``172.18.0.2`` by default),
  what the kube-apiserver static pod advertises. The Service has no selector,
  so the endpoints and EndpointSlice controllers leave both alone. Their UIDs
  come from an RNG of their own (seeded from the cluster's seed), so adding
  them leaves every UID, generated name and ClusterIP drawn from the cluster's
  RNG afterwards as it was;
- the bootstrap RBAC policy (ClusterRoles and bindings, aggregated);
- the built-in PriorityClasses ``system-node-critical`` and ``system-cluster-critical``.

All of it is written with the actor ``kube-apiserver``.
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from .admission import SYSTEM_PRIORITY_CLASSES
from .resources import by_kind

if TYPE_CHECKING:
    from .apiserver import APIServer

__all__ = ["bootstrap", "BOOTSTRAP_NAMESPACES", "APISERVER_ACTOR", "APISERVER_PORT", "advertise_address",
           "kubernetes_endpoints"]

BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
APISERVER_ACTOR = "kube-apiserver"
#: kube-apiserver's ``--secure-port`` (the ``kubernetes`` Service's targetPort)
APISERVER_PORT = 6443


def advertise_address(server: "APIServer") -> str:
    """kube-apiserver's ``--advertise-address``: the InternalIP of the cluster's first
    control-plane node (else of its first node), from the configuration in the log header."""
    from ..sim.config import ClusterConfig  # the header's node list (imported late: sim builds on api)

    nodes = ClusterConfig.from_header(dict(server.log.header.get("cluster") or {})).nodes
    cp = next((n for n in nodes if n.role == "control-plane"), nodes[0] if nodes else None)
    return cp.internal_ip if cp is not None and cp.internal_ip else "127.0.0.1"


def kubernetes_endpoints(ip: str) -> list[dict[str, Any]]:
    """The Endpoints and EndpointSlice ``default/kubernetes`` the endpoint reconciler keeps
    for an apiserver at ``ip`` (upstream's ``EndpointsAdapter`` and
    ``endpointSliceFromEndpoints``), in the order it creates them."""
    port = {"name": "https", "port": APISERVER_PORT, "protocol": "TCP"}
    return [
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
         "subsets": [{"addresses": [{"ip": ip}], "ports": [dict(port)]}]},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"kubernetes.io/service-name": "kubernetes"}},
         "addressType": "IPv4",
         "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
         "ports": [dict(port)]},
    ]


def _own_rng(obj: dict[str, Any]) -> bool:
    """Whether ``obj`` draws its UID from the separate RNG (see the module doc)."""
    return obj["kind"] in ("Endpoints", "EndpointSlice")


@contextmanager
def _separate_rng(server: "APIServer", label: str) -> Iterator[None]:
    saved = server.rng
    server.rng = random.Random(f"{server.log.header.get('seed', 0)}:{label}")
    try:
        yield
    finally:
        server.rng = saved


def bootstrap_objects(server: "APIServer") -> list[dict[str, Any]]:
    """The objects :func:`bootstrap` creates, in creation order."""
    from .rbac import bootstrap_policy

    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}
        for ns in BOOTSTRAP_NAMESPACES
    ]
    first_ip = str(server.service_cidr.network_address + 1)
    objs.append({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": first_ip, "type": "ClusterIP", "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": APISERVER_PORT}]},
    })
    objs.extend(kubernetes_endpoints(advertise_address(server)))
    for name, value in SYSTEM_PRIORITY_CLASSES.items():
        objs.append({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value,
            "description": "Used for system critical pods that must not be moved from their current node."
            if name == "system-node-critical" else
            "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
        })
    objs.extend(bootstrap_policy(aggregated=True))
    return objs


def bootstrap(server: "APIServer") -> None:
    """Create the bootstrap objects (skipping any that exist)."""
    from .apiserver import RequestContext
    from .auth import admin

    ctx = RequestContext(admin(), "kube-apiserver")
    for obj in bootstrap_objects(server):
        info = by_kind(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        if server.log.get(info.key(meta.get("namespace"), meta["name"])) is not None:
            continue
        if _own_rng(obj):
            with _separate_rng(server, f"{obj['kind']}/{meta['name']}"):
                server.create(info, obj, ctx=ctx, field_validation="Ignore")
        else:
            server.create(info, obj, ctx=ctx, field_validation="Ignore")
