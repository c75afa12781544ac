"""What kube-apiserver creates in a new cluster before anything else runs.

- the namespaces ``default``, ``kube-system``, ``kube-public``, ``kube-node-lease``;
- the ``kubernetes`` Service in ``default`` at the first address of the
  service CIDR (10.96.0.1:443 → the apiserver's 6443);
- the bootstrap RBAC policy (ClusterRoles and bindings, aggregated);
- the built-in PriorityClasses ``system-node-critical`` and ``system-cluster-critical``.

All of it is written with the actor ``kube-apiserver``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .admission import SYSTEM_PRIORITY_CLASSES
from .resources import by_kind

if TYPE_CHECKING:
    from .apiserver import APIServer

__all__ = ["bootstrap", "BOOTSTRAP_NAMESPACES", "APISERVER_ACTOR"]

BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
APISERVER_ACTOR = "kube-apiserver"


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
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
    })
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
        server.create(info, obj, ctx=ctx, field_validation="Ignore")
