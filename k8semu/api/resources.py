"""The served API resources: group, version, kind, plural, scope, short names.

One table, :data:`RESOURCES`, is the single home of "what kinds exist": the
registry, discovery, RBAC, the manifest reader and the CLI all look kinds up
here. It mirrors what a v1.3x kube-apiserver serves for these kinds (group,
preferred version, plural, namespaced or not, short names, categories,
subresources).
"""

from __future__ import annotations

import functools

import attrs

__all__ = ["ResourceInfo", "RESOURCES", "by_kind", "by_resource", "lookup", "NoKindMatch"]


@attrs.frozen
class ResourceInfo:
    """One served resource (e.g. ``deployments`` in ``apps/v1``).

    Attributes:
        group: API group, ``""`` for core.
        version: served version.
        kind: the Kind (``Deployment``).
        plural: the REST resource name (``deployments``).
        namespaced: whether objects live in a namespace.
        short_names: kubectl short names (``deploy``).
        categories: e.g. ``("all",)``.
        subresources: e.g. ``("status", "scale")``.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
    )

    @property
    def api_version(self) -> str:
        """``apps/v1`` or ``v1`` for core."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``deployments.apps``; core resources stay bare (``pods``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def key(self, namespace: str | None, name: str) -> str:
        """The etcd key: ``/registry/<resource>/<ns>/<name>`` or ``/registry/<resource>/<name>``."""
        if self.namespaced:
            return f"/registry/{self.qualified}/{namespace}/{name}"
        return f"/registry/{self.qualified}/{name}"

    def prefix(self, namespace: str | None = None) -> str:
        """Key prefix for a range over this resource (one namespace or all)."""
        if self.namespaced and namespace:
            return f"/registry/{self.qualified}/{namespace}/"
        return f"/registry/{self.qualified}/"


_ALL = ("all",)
_R = ResourceInfo

RESOURCES: tuple[ResourceInfo, ...] = (
    _R("", "v1", "Namespace", "namespaces", False, ("ns",), (), ("status", "finalize"),
       ("create", "delete", "get", "list", "patch", "update", "watch")),
    _R("", "v1", "Node", "nodes", False, ("no",), (), ("status",)),
    _R("", "v1", "Pod", "pods", True, ("po",), _ALL,
       ("status", "binding", "eviction", "log", "ephemeralcontainers", "resize")),
    _R("", "v1", "Service", "services", True, ("svc",), _ALL, ("status",),
       ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")),
    _R("", "v1", "Endpoints", "endpoints", True, ("ep",)),
    _R("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    _R("", "v1", "Secret", "secrets", True),
    _R("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",), (), ("token",)),
    _R("", "v1", "Event", "events", True, ("ev",)),
    _R("", "v1", "ResourceQuota", "resourcequotas", True, ("quota",), (), ("status",)),
    _R("", "v1", "LimitRange", "limitranges", True, ("limits",)),
    _R("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",), (), ("status",)),
    _R("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), (), ("status",)),
    _R("", "v1", "ReplicationController", "replicationcontrollers", True, ("rc",), _ALL,
       ("status", "scale")),
    _R("events.k8s.io", "v1", "Event", "events", True, ("ev",)),
    _R("coordination.k8s.io", "v1", "Lease", "leases", True),
    _R("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    _R("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
    _R("apps", "v1", "Deployment", "deployments", True, ("deploy",), _ALL, ("status", "scale")),
    _R("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), _ALL, ("status", "scale")),
    _R("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), _ALL, ("status", "scale")),
    _R("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), _ALL, ("status",)),
    _R("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    _R("batch", "v1", "Job", "jobs", True, (), _ALL, ("status",)),
    _R("batch", "v1", "CronJob", "cronjobs", True, ("cj",), _ALL, ("status",)),
    _R("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True,
       ("hpa",), _ALL, ("status",)),
    _R("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), (),
       ("status",)),
    _R("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    _R("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",), (), ("status",)),
    _R("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False),
    _R("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    _R("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _R("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _R("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _R("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
)

# Group-versions that also serve an existing kind under another version (autoscaling/v1
# HorizontalPodAutoscaler is served upstream too, but this emulator serves only v2).
_BY_GVK: dict[tuple[str, str, str], ResourceInfo] = {
    (r.group, r.version, r.kind): r for r in RESOURCES
}
_BY_GR: dict[tuple[str, str], ResourceInfo] = {(r.group, r.plural): r for r in RESOURCES}


class NoKindMatch(LookupError):
    """A kind/version this server does not serve.

    ``str(err)`` is kubectl's wording: ``no matches for kind "CronJob" in version "batch/v1beta1"``.
    """

    def __init__(self, kind: str, api_version: str) -> None:
        super().__init__(f'no matches for kind "{kind}" in version "{api_version}"')
        self.kind = kind
        self.api_version = api_version


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> (``apps``, ``v1``); ``v1`` -> (``""``, ``v1``)."""
    if "/" in api_version:
        g, v = api_version.split("/", 1)
        return g, v
    return "", api_version


def by_kind(api_version: str, kind: str) -> ResourceInfo:
    """The resource for a manifest's ``apiVersion`` + ``kind``.

    Raises:
        NoKindMatch: the server does not serve that kind in that version.
    """
    g, v = split_api_version(api_version)
    info = _BY_GVK.get((g, v, kind))
    if info is None:
        raise NoKindMatch(kind, api_version)
    return info


def by_resource(group: str, plural: str) -> ResourceInfo | None:
    """The resource for a REST path's group and plural, or None."""
    return _BY_GR.get((group, plural))


def lookup(name: str) -> list[ResourceInfo]:
    """Resolve what a user typed (``deploy``, ``deployments``, ``deployment.apps``, ``Pod``).

    Returns every match (``events`` matches core and events.k8s.io; the core
    one comes first, as kubectl prefers it).
    """
    return list(_lookup(name))


@functools.lru_cache(maxsize=1024)
def _lookup(name: str) -> tuple[ResourceInfo, ...]:
    """:func:`lookup`, remembered (components resolve their resources on every request)."""
    n = name.lower()
    group = None
    if "." in n:
        n, group = n.split(".", 1)
    out = []
    for r in RESOURCES:
        if group is not None and r.group != group and r.qualified != name.lower():
            continue
        if n in (r.plural, r.singular) or n in r.short_names:
            out.append(r)
    return tuple(out)
