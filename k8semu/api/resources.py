"""The served API resources: group, version, kind, plural, scope, short names.

One table, :data:`RESOURCES`, is the single home of "what kinds exist": the
registry, discovery, RBAC, the manifest reader and the CLI all look kinds up
here. It mirrors what a v1.3x kube-apiserver serves for these kinds (group,
preferred version, plural, namespaced or not, short names, categories,
subresources). The custom resources a cluster's CRDs define are not here: each API server
keeps its own registry of them (:mod:`k8semu.api.customresources`), consulted after this table.
"""

from __future__ import annotations

import functools

import attrs

__all__ = ["ResourceInfo", "RESOURCES", "by_kind", "by_resource", "lookup", "NoKindMatch", "OBJECT_SUBRESOURCES"]

#: Subresources whose GET answers the object itself, as kube-apiserver's registries for them
#: (``status``; a CSR's ``approval``; a pod's ``ephemeralcontainers`` and ``resize``).
OBJECT_SUBRESOURCES = frozenset({"", "status", "approval", "ephemeralcontainers", "resize"})


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
        verbs: the verbs discovery lists (kube-apiserver's, per the kind's REST storage).
        computed: not stored: every read is computed by the server (upstream's
            ``componentstatuses`` REST, which probes the components on each GET/LIST;
            here also the ``apiservices`` the aggregator registers at start-up, see
            :func:`computed_objects`); writes are 405.
        deprecated: the ``Warning`` header kube-apiserver's deprecation filter adds to every
            request for the kind (``v1 ComponentStatus is deprecated in v1.19+``), or ``""``.
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
    computed: bool = False
    deprecated: str = ""

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
    _R("", "v1", "Endpoints", "endpoints", True, ("ep",),
       deprecated="v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"),
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
    _R("", "v1", "PodTemplate", "podtemplates", True),
    # pkg/registry/core/componentstatus: a Getter and Lister only, computed on each request
    _R("", "v1", "ComponentStatus", "componentstatuses", False, ("cs",), verbs=("get", "list"),
       computed=True, deprecated="v1 ComponentStatus is deprecated in v1.19+"),
    _R("events.k8s.io", "v1", "Event", "events", True, ("ev",)),
    _R("coordination.k8s.io", "v1", "Lease", "leases", True),
    _R("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    _R("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
    _R("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False),
    # kube-aggregator's own group; the objects are the ones its auto-registration keeps
    # (computed here, never stored: see computed_objects)
    _R("apiregistration.k8s.io", "v1", "APIService", "apiservices", False, (), (), ("status",),
       ("get", "list", "watch"), computed=True),
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
    # certificates.k8s.io/v1 (GA in v1.19): /approval is a subresource of its own (conditions only)
    _R("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", False,
       ("csr",), (), ("approval", "status")),
    # apiextensions-apiserver's CRDs; the custom resources they define are served from
    # each API server's own registry (k8semu.api.customresources), not from this table
    _R("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
       ("crd", "crds"), ("api-extensions",), ("status",)),
    # kube-apiserver's admissionregistration.k8s.io/v1 policies (GA in v1.30); no short names
    _R("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False,
       (), ("api-extensions",), ("status",)),
    _R("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
       "validatingadmissionpolicybindings", False, (), ("api-extensions",)),
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


# ------------------------------------------------------------------ computed (never stored) kinds
#
# Two kinds are answered without the store, so they add no record to any cluster's log:
#
# * ``componentstatuses``: upstream's (deprecated) REST storage probes the scheduler, the
#   controller-manager and each etcd server on every GET and LIST and returns what it finds;
#   nothing is stored. The emulated components always answer their health checks.
# * ``apiservices``: kube-apiserver's aggregator registers one APIService per group-version it
#   serves (``apiServicesToRegister``, labelled ``kube-aggregator.kubernetes.io/automanaged:
#   onstart``) and metrics-server's manifest adds ``v1beta1.metrics.k8s.io``. Upstream stores
#   them; here they are a pure function of this table (generated, not bootstrapped, so existing
#   logs stay byte-identical), created when the cluster was.

#: Group-versions the HTTP front (``k8semu.server``) answers from modules of its own, outside
#: this table (``reviews``: access and self reviews; ``metrics``: metrics-server's API); their
#: APIServices are listed too. ``tests`` check this against ``server.discovery.SERVED_ELSEWHERE``.
SERVED_ELSEWHERE_GROUP_VERSIONS: tuple[tuple[str, str], ...] = (
    ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
    ("metrics.k8s.io", "v1beta1"),
)

#: ``(groupPriorityMinimum, versionPriority)`` of the local APIServices, from v1.33's
#: ``apiVersionPriorities`` (cmd/kube-apiserver/app/aggregator.go, merged over
#: pkg/controlplane/apiserver's ``DefaultGenericAPIServicePriorities``); a group-version
#: missing here is not registered (``makeAPIService`` returns nil), as upstream.
API_SERVICE_PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
}

#: The components upstream's ``componentstatuses`` probes (``GetServersToValidate``), in the
#: order ``kubectl get cs`` usually shows them, with the health message each returns: ``ok``
#: from the scheduler's and controller-manager's ``/healthz``, etcd's ``/health`` JSON.
COMPONENT_STATUSES: tuple[tuple[str, str], ...] = (
    ("scheduler", "ok"),
    ("controller-manager", "ok"),
    ("etcd-0", '{"health":"true","reason":""}'),
)


def _served_group_versions() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for r in RESOURCES:
        if (r.group, r.version) not in out:
            out.append((r.group, r.version))
    return out + [gv for gv in SERVED_ELSEWHERE_GROUP_VERSIONS if gv not in out]


def _api_service_uid(name: str) -> str:
    """A stable UID per APIService name (upstream's are random; these must not draw from the
    cluster's RNG, which would change every later UID)."""
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"k8semu:apiservices/{name}"))


def api_services(created: str) -> list[dict]:
    """The APIServices of this server, sorted by name (the store's key order), as
    ``kubectl get apiservices -o json`` shows them on a v1.33 cluster: the aggregator's local
    ones (``spec.service`` unset, ``Available`` with reason ``Local``) and metrics-server's.
    ``created`` is the cluster's creation timestamp (RFC 3339)."""
    out = []
    for group, version in _served_group_versions():
        name = f"{version}.{group}"
        meta = {"name": name, "uid": _api_service_uid(name), "creationTimestamp": created}
        spec: dict = {}
        if group == "metrics.k8s.io":  # metrics-server's components.yaml
            meta["labels"] = {"k8s-app": "metrics-server"}
            spec = {"service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                    "group": group, "version": version, "insecureSkipTLSVerify": True,
                    "groupPriorityMinimum": 100, "versionPriority": 100}
            cond = {"type": "Available", "status": "True", "lastTransitionTime": created,
                    "reason": "Passed", "message": "all checks passed"}
        else:
            prio = API_SERVICE_PRIORITIES.get((group, version))
            if prio is None:
                continue
            meta["labels"] = {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
            if group:
                spec["group"] = group
            spec.update({"version": version, "groupPriorityMinimum": prio[0], "versionPriority": prio[1]})
            cond = {"type": "Available", "status": "True", "lastTransitionTime": created,
                    "reason": "Local", "message": "Local APIServices are always available"}
        out.append({"kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1", "metadata": meta,
                    "spec": spec, "status": {"conditions": [cond]}})
    return sorted(out, key=lambda o: o["metadata"]["name"])


def component_statuses() -> list[dict]:
    """What upstream's ``componentstatuses`` LIST returns for a healthy control plane: one
    ``Healthy`` condition per component (``creationTimestamp: null``: never stored)."""
    return [
        {"kind": "ComponentStatus", "apiVersion": "v1",
         "metadata": {"name": name, "creationTimestamp": None},
         "conditions": [{"type": "Healthy", "status": "True", "message": message}]}
        for name, message in COMPONENT_STATUSES
    ]


def computed_objects(info: ResourceInfo, created: str) -> list[dict]:
    """Every object of a computed kind (``info.computed``), in list order."""
    if info.plural == "componentstatuses":
        return component_statuses()
    if info.plural == "apiservices":
        return api_services(created)
    return []


def computed_get(info: ResourceInfo, name: str, created: str) -> dict:
    """GET of one computed object.

    Raises:
        UnknownError: an unknown component (upstream's plain ``Component not found: NAME``,
            a 500 kubectl prints as ``Error from server: Component not found: NAME``).
        NotFound: an unknown APIService.
    """
    from . import errors

    for obj in computed_objects(info, created):
        if obj["metadata"]["name"] == name:
            return obj
    if info.plural == "componentstatuses":
        raise errors.UnknownError(f"Component not found: {name}")
    raise errors.NotFound.of(info.plural, info.group, name)


def computed_list(info: ResourceInfo, created: str, revision: int,
                  match=None) -> dict:
    """LIST of a computed kind: ``ComponentStatusList`` has empty list metadata upstream (its
    REST storage sets none); ``APIServiceList`` carries the store's revision."""
    items = [o for o in computed_objects(info, created) if match is None or match(o)]
    meta = {} if info.plural == "componentstatuses" else {"resourceVersion": str(revision)}
    return {"kind": f"{info.kind}List", "apiVersion": info.api_version, "metadata": meta, "items": items}
