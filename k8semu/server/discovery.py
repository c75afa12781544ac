"""API discovery documents, built from :data:`k8semu.api.resources.RESOURCES`.

Two formats, both served because clients use both:

* **aggregated** (``apidiscovery.k8s.io/v2``, also ``v2beta1`` for kubectl
  1.27–1.29): ``GET /api`` and ``GET /apis`` with
  ``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``
  return every group, version and resource in one ``APIGroupDiscoveryList``.
  Every resource and subresource carries ``responseKind`` (kubectl silently
  drops entries without one) and every version ``freshness: Current``.
* **legacy**: ``/api`` (``APIVersions``), ``/apis`` (``APIGroupList``),
  ``/apis/<group>`` (``APIGroup``), and ``/api/v1`` / ``/apis/<group>/<version>``
  (``APIResourceList``, subresources as ``pods/eviction`` entries with their
  own group/version/kind). ``kubectl drain`` and the Python client use these.

Both also list the groups answered by their own modules, not stored
(:data:`SERVED_ELSEWHERE`): ``authentication.k8s.io/v1`` and ``authorization.k8s.io/v1``
(:mod:`.reviews`: what ``kubectl auth whoami`` and ``kubectl auth can-i`` create) and ``metrics.k8s.io/v1beta1``
(:mod:`.metrics`, metrics-server's API, last, as an aggregated group), which
``kubectl top`` looks for.

Everything here is a pure function of the resource table; results are cached. Custom
resources (a cluster's CRDs, :mod:`k8semu.api.customresources`) are added per request by the
``*_with`` functions, which take the server's :class:`CustomResourceInfo` list: their groups
come after the built-in ones (upstream's CRD groups have APIService priority 1000, below every
built-in group but above metrics-server's 100), each group's versions in version priority.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

from ..api.resources import RESOURCES, ResourceInfo
from . import metrics, reviews

__all__ = [
    "group_versions",
    "aggregated",
    "api_versions",
    "api_group_list",
    "api_group",
    "resource_list",
    "SUBRESOURCE_KINDS",
    "aggregated_with",
    "api_group_list_with",
    "api_group_with",
    "resource_list_with",
]

#: Groups answered by their own modules: (group, version, resources, whether the resources have
#: singular names in discovery; metrics-server leaves them empty).
SERVED_ELSEWHERE: tuple[tuple[str, str, tuple[ResourceInfo, ...], bool], ...] = (
    (reviews.AUTHN_GROUP, reviews.VERSION, reviews.AUTHN_RESOURCES, True),
    (reviews.GROUP, reviews.VERSION, reviews.RESOURCES, True),
    (metrics.GROUP, metrics.VERSION, (metrics.NODES, metrics.PODS), False),
)


def _elsewhere(group: str) -> tuple[str, str, tuple[ResourceInfo, ...], bool] | None:
    return next((g for g in SERVED_ELSEWHERE if g[0] == group), None)


#: subresource -> ((group, version, kind) of what it returns or None for the parent's kind, verbs),
#: as kube-apiserver registers them.
SUBRESOURCE_KINDS: dict[str, tuple[tuple[str, str, str] | None, tuple[str, ...]]] = {
    "status": (None, ("get", "patch", "update")),
    "scale": (("autoscaling", "v1", "Scale"), ("get", "patch", "update")),
    "binding": (("", "v1", "Binding"), ("create",)),
    "eviction": (("policy", "v1", "Eviction"), ("create",)),
    "log": (("", "v1", "Pod"), ("get",)),
    "ephemeralcontainers": (None, ("get", "patch", "update")),
    "resize": (None, ("get", "patch", "update")),
    "finalize": (None, ("update",)),
    "approval": (None, ("get", "patch", "update")),
    "token": (("authentication.k8s.io", "v1", "TokenRequest"), ("create",)),
}


def group_versions() -> list[tuple[str, str]]:
    """Every served ``(group, version)``, core first, then groups in table order."""
    out: list[tuple[str, str]] = []
    for r in RESOURCES:
        if (r.group, r.version) not in out:
            out.append((r.group, r.version))
    return out


def _resources_of(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in RESOURCES if r.group == group and r.version == version]


def _sub_kind(r: ResourceInfo, sub: str) -> tuple[dict[str, str], list[str]]:
    gvk, verbs = SUBRESOURCE_KINDS.get(sub, (None, ("get",)))
    g, v, k = gvk or (r.group, r.version, r.kind)
    return {"group": g, "version": v, "kind": k}, list(verbs)


def _aggregated_entry(r: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": sorted(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subs = []
    for sub in r.subresources:
        kind, verbs = _sub_kind(r, sub)
        subs.append({"subresource": sub, "responseKind": kind, "verbs": verbs})
    if subs:
        entry["subresources"] = subs
    return entry


def _custom_group_versions(custom: Iterable[ResourceInfo]) -> dict[str, list[str]]:
    """group -> its served versions in priority order (groups in first-seen order)."""
    from ..api.customresources import version_sort_key

    out: dict[str, list[str]] = {}
    for r in custom:
        vs = out.setdefault(r.group, [])
        if r.version not in vs:
            vs.append(r.version)
    return {g: sorted(vs, key=version_sort_key) for g, vs in out.items()}


def aggregated_with(core: bool, version: str, custom: list[ResourceInfo]) -> dict[str, Any]:
    """:func:`aggregated` plus the custom resources' groups (before metrics-server's)."""
    doc = aggregated(core, version)
    if core or not custom:
        return doc
    items = list(doc["items"])
    at = next((i for i, it in enumerate(items) if it["metadata"]["name"] == metrics.GROUP), len(items))
    extra = []
    for group, versions in _custom_group_versions(custom).items():
        vs = [{"version": v, "resources": [_aggregated_entry(r) for r in custom
                                           if r.group == group and r.version == v],
               "freshness": "Current"} for v in versions]
        extra.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": vs})
    return {**doc, "items": items[:at] + extra + items[at:]}


def api_group_with(group: str, custom: list[ResourceInfo]) -> dict[str, Any] | None:
    """:func:`api_group`, or a custom resources' group."""
    doc = api_group(group)
    if doc is not None:
        return doc
    versions = _custom_group_versions(custom).get(group)
    if not versions:
        return None
    vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": vs, "preferredVersion": vs[0]}


def api_group_list_with(custom: list[ResourceInfo]) -> dict[str, Any]:
    """:func:`api_group_list` plus the custom resources' groups (before metrics-server's)."""
    doc = api_group_list()
    if not custom:
        return doc
    groups = list(doc["groups"])
    at = next((i for i, g in enumerate(groups) if g["name"] == metrics.GROUP), len(groups))
    extra = []
    for group in _custom_group_versions(custom):
        g = api_group_with(group, custom)
        extra.append({k: g[k] for k in ("name", "versions", "preferredVersion")})
    return {**doc, "groups": groups[:at] + extra + groups[at:]}


def resource_list_with(group: str, version: str, custom: list[ResourceInfo]) -> dict[str, Any] | None:
    """:func:`resource_list`, or a custom resources' group-version."""
    doc = resource_list(group, version)
    if doc is not None:
        return doc
    rs = [r for r in custom if r.group == group and r.version == version]
    if not rs:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
            "resources": [e for r in rs for e in _legacy_entries(r)]}


@functools.cache
def aggregated(core: bool, version: str = "v2") -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` for ``/api`` (``core=True``) or ``/apis``.

    ``version`` is ``v2`` or ``v2beta1`` (same shape, different apiVersion).
    """
    items = []
    for group in dict.fromkeys(g for g, _ in group_versions()):
        if (group == "") != core:
            continue
        versions = []
        for g, v in group_versions():
            if g != group:
                continue
            resources = [_aggregated_entry(r) for r in _resources_of(g, v)]
            versions.append({"version": v, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": versions})
    if not core:
        for group, gv, rs, named in SERVED_ELSEWHERE:
            resources = [{"resource": r.plural, "responseKind": {"group": group, "version": gv, "kind": r.kind},
                          "scope": "Namespaced" if r.namespaced else "Cluster",
                          "singularResource": r.singular if named else "", "verbs": list(r.verbs)} for r in rs]
            items.append({"metadata": {"name": group, "creationTimestamp": None},
                          "versions": [{"version": gv, "resources": resources, "freshness": "Current"}]})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": items,
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """``GET /api``: the legacy ``APIVersions``."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group(group: str) -> dict[str, Any] | None:
    """``GET /apis/<group>``: the ``APIGroup`` (None for an unknown group)."""
    other = _elsewhere(group)
    if other is not None:
        versions = [{"groupVersion": f"{group}/{other[1]}", "version": other[1]}]
    else:
        versions = [{"groupVersion": f"{g}/{v}", "version": v} for g, v in group_versions() if g == group]
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions,
            "preferredVersion": versions[0]}


@functools.cache
def api_group_list() -> dict[str, Any]:
    """``GET /apis``: the legacy ``APIGroupList`` of every non-core group."""
    groups = []
    for group in dict.fromkeys(g for g, _ in group_versions() if g):
        g = api_group(group)
        groups.append({k: g[k] for k in ("name", "versions", "preferredVersion")})
    for group, *_ in SERVED_ELSEWHERE:
        g = api_group(group)
        groups.append({k: g[k] for k in ("name", "versions", "preferredVersion")})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


@functools.cache
def resource_list(group: str, version: str) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>``: the ``APIResourceList`` (None if not served)."""
    other = _elsewhere(group)
    if other is not None:
        if version != other[1]:
            return None
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}",
                "resources": [{"name": r.plural, "singularName": r.singular if other[3] else "",
                               "namespaced": r.namespaced, "kind": r.kind, "verbs": list(r.verbs)}
                              for r in other[2]]}
    rs = _resources_of(group, version)
    if not rs:
        return None
    out = [e for r in rs for e in _legacy_entries(r)]
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def _legacy_entries(r: ResourceInfo) -> list[dict[str, Any]]:
    """A resource's ``APIResource`` entries: itself, then each subresource."""
    out = []
    entry: dict[str, Any] = {
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": sorted(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    out.append(entry)
    for sub in r.subresources:
        kind, verbs = _sub_kind(r, sub)
        s: dict[str, Any] = {"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced}
        if (kind["group"], kind["version"]) != (r.group, r.version):
            s["group"], s["version"] = kind["group"], kind["version"]
        s["kind"] = kind["kind"]
        s["verbs"] = verbs
        out.append(s)
    return out
