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

Everything here is a pure function of the resource table; results are cached.
"""

from __future__ import annotations

import functools
from typing import Any

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
            resources = []
            for r in _resources_of(g, v):
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
                resources.append(entry)
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
    out = []
    for r in rs:
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
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}
