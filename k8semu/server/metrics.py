"""The resource metrics API (``metrics.k8s.io/v1beta1``), as metrics-server serves it behind the aggregator.

``kubectl top`` first looks for the group in discovery (``error: Metrics API
not available`` without it), then lists or gets ``NodeMetrics`` / ``PodMetrics``.
The figures are the emulated usage of :mod:`k8semu.node.metrics` — the
containers' behaviour programs, seen as metrics-server sees them (15 s scrapes,
CPU averaged over the ``window``, memory at the ``timestamp``) — the same that
``k8semu top`` prints and the HPA consumes.

Served, as metrics-server's ``pkg/api`` (``nodeMetrics`` / ``podMetrics``):

- discovery (:mod:`.discovery`): the group in ``/apis`` (legacy and aggregated),
  ``/apis/metrics.k8s.io`` and the ``APIResourceList`` of ``v1beta1`` (``nodes`` → ``NodeMetrics``,
  cluster-scoped; ``pods`` → ``PodMetrics``, namespaced; verbs ``get``, ``list``);
- ``GET …/nodes`` and ``…/nodes/NAME``;
- ``GET …/pods`` (every namespace), ``…/namespaces/NS/pods`` and ``…/namespaces/NS/pods/NAME``;
- a list takes ``labelSelector`` (on the nodes' / pods' labels) and ``fieldSelector``; as the
  generic API server's default field label conversion, a field selector may name only
  ``metadata.name`` and ``metadata.namespace`` (else 400 ``"spec.nodeName" is not a known field
  selector: only "metadata.name", "metadata.namespace"``, what ``kubectl top pods
  --field-selector spec.nodeName=…`` prints with kubectl 1.33), matched as metrics-server's
  ``filterNodes`` / pods' filter do against each object's ``metadata.name`` (and, for pods,
  ``metadata.namespace``; a node's namespace reads as ``""``);
- lists hold only what has metrics, in name order (namespace, then name);
  a get of something without metrics is 404 ``nodemetrics.metrics.k8s.io "NAME"
  not found`` / ``podmetrics.metrics.k8s.io "NS/NAME" not found``, of a node or
  pod that does not exist the lister's ``node "NAME" not found`` / ``pod "NAME"
  not found``;
- a node whose machine is stopped (``k8semu node stop``: its kubelet does not
  answer the scrape) has no NodeMetrics, and its pods no PodMetrics;
- ``as=Table`` answers metrics-server's table (``Name``, ``cpu``, ``memory``,
  ``Window``) for ``kubectl get nodemetrics|podmetrics``;
- RBAC: ``get``/``list`` on ``nodes`` / ``pods`` in the group ``metrics.k8s.io``;
  other verbs are 405.
"""

from __future__ import annotations

import weakref
from typing import Any, Mapping

from ..api import errors
from ..api.quantity import parse_quantity
from ..api.resources import ResourceInfo
from ..node.metrics import METRIC_RESOLUTION, MetricsServer, scrape

__all__ = ["GROUP", "VERSION", "NODES", "PODS", "stopped_machines", "cluster_metrics", "handle", "list_selectors"]

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
NODES = ResourceInfo(GROUP, VERSION, "NodeMetrics", "nodes", namespaced=False, verbs=("get", "list"))
PODS = ResourceInfo(GROUP, VERSION, "PodMetrics", "pods", namespaced=True, verbs=("get", "list"))

# one emulated metrics-server (with its cached replays) per API server served
_SERVERS: "weakref.WeakKeyDictionary[Any, MetricsServer]" = weakref.WeakKeyDictionary()


def stopped_machines(api: Any) -> set[str]:
    """Nodes whose machine is stopped now (``kube-system/k8semu-machines``): no kubelet answers there."""
    from ..sim.components import MACHINES_CONFIGMAP, MACHINES_NAMESPACE, STOPPED

    try:
        cm = api.get("configmaps", MACHINES_CONFIGMAP, namespace=MACHINES_NAMESPACE)
    except errors.NotFound:
        return set()
    return {name for name, v in (cm.get("data") or {}).items() if v == STOPPED}


def cluster_metrics(api: Any, now: float, server: MetricsServer | None = None):
    """``(node name -> NodeMetrics, (namespace, name) -> PodMetrics)`` that metrics-server holds at ``now``
    (virtual seconds), for the cluster behind ``api`` (see :func:`k8semu.node.metrics.scrape`)."""
    server = server or MetricsServer(api.epoch, METRIC_RESOLUTION)
    nodes = api.list("nodes")["items"]
    pods = api.list("pods")["items"]
    return scrape(server, nodes, pods, now, stopped_machines(api))


# ---------------------------------------------------------------------------- discovery

# ---------------------------------------------------------------------------- requests

def handle(api: Any, ctx: Any, method: str, version: str, rest: list[str], query: Mapping[str, str],
           wants_table: bool = False) -> dict[str, Any]:
    """The answer to a request under ``/apis/metrics.k8s.io/<version>/`` (``rest`` is the path after it).

    Raises:
        NotFound: an unknown version or path, or (see the module docstring) a get with no metrics.
        MethodNotAllowed: any verb but GET (and watches).
        Forbidden: RBAC.
    """
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] == "pods":
        ns, rest = rest[1], rest[2:]
    if version != VERSION or not rest or rest[0] not in ("nodes", "pods") or len(rest) > 2 or (
            rest[0] == "nodes" and ns is not None):
        e = errors.NotFound("the server could not find the requested resource")
        e.details = {}
        raise e
    info = NODES if rest[0] == "nodes" else PODS
    name = rest[1] if len(rest) > 1 else None
    if method not in ("GET", "HEAD") or query.get("watch", "").lower() in ("true", "1"):
        raise errors.MethodNotAllowed("the server does not allow this method on the requested resource")
    api._authz(ctx, "get" if name else "list", info, ns, name or "")
    server = _SERVERS.get(api)
    if server is None:
        server = _SERVERS[api] = MetricsServer(api.epoch, METRIC_RESOLUTION)
    selector, fields = list_selectors(info, query) if name is None else (None, None)
    nodes_m, pods_m = cluster_metrics(api, api.now, server)
    if info is NODES:
        if name is not None:
            node = _get(api, "nodes", name, None, "node")
            if name not in nodes_m:
                raise errors.NotFound.of("nodemetrics", GROUP, name)
            objs = [nodes_m[name].to_object(api.epoch, node["metadata"].get("labels"))]
        else:
            nodes = [n for n in api.list("nodes", label_selector=selector)["items"]
                     if fields is None or fields.matches(_field_set(n, namespaced=False))]
            objs = [nodes_m[n["metadata"]["name"]].to_object(api.epoch, n["metadata"].get("labels"))
                    for n in sorted(nodes, key=lambda n: n["metadata"]["name"]) if n["metadata"]["name"] in nodes_m]
    else:
        if name is not None:
            pod = _get(api, "pods", name, ns, "pod")
            if (ns, name) not in pods_m:
                raise errors.NotFound.of("podmetrics", GROUP, f"{ns}/{name}")
            objs = [pods_m[(ns, name)].to_object(api.epoch, pod["metadata"].get("labels"))]
        else:
            pods = [p for p in api.list("pods", namespace=ns or None, label_selector=selector)["items"]
                    if fields is None or fields.matches(_field_set(p, namespaced=True))]
            keyed = sorted(((p["metadata"]["namespace"], p["metadata"]["name"]), p) for p in pods)
            objs = [pods_m[k].to_object(api.epoch, p["metadata"].get("labels")) for k, p in keyed if k in pods_m]
    if wants_table:
        return _table(objs, info)
    if name is not None:
        return objs[0]
    return {"kind": f"{info.kind}List", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {}, "items": objs}


def list_selectors(info: ResourceInfo, query: Mapping[str, str]) -> tuple[str | None, Any]:
    """A list's ``labelSelector`` (text, None for none) and ``fieldSelector`` (a parsed
    :class:`~k8semu.api.selectors.FieldSelector`, None for none), checked as the generic API server
    decodes a list's options for metrics-server: either selector unparsable, or a field selector
    naming a field other than ``metadata.name`` / ``metadata.namespace``, is a 400.

    Raises:
        BadRequest: upstream's message, e.g. ``"spec.nodeName" is not a known field selector:
            only "metadata.name", "metadata.namespace"``.
    """
    from ..api import selectors

    label = query.get("labelSelector") or None
    if label:
        try:
            selectors.parse_label_selector(label)
        except ValueError as e:
            raise errors.BadRequest(str(e)) from None
    text = query.get("fieldSelector") or ""
    if not text:
        return label, None
    try:
        parsed = selectors.parse_field_selector(text)
    except ValueError as e:
        raise errors.BadRequest(str(e)) from None
    parsed = selectors.validate_field_selector(info.plural, parsed, group=GROUP)
    return label, (None if parsed.empty else parsed)


def _field_set(obj: dict[str, Any], namespaced: bool) -> dict[str, str]:
    """The fields metrics-server matches a field selector against (``AddObjectMetaFieldsSet``)."""
    meta = obj.get("metadata") or {}
    fields = {"metadata.name": meta.get("name", "")}
    if namespaced:
        fields["metadata.namespace"] = meta.get("namespace", "")
    return fields


def _get(api: Any, resource: str, name: str, ns: str | None, singular: str) -> dict[str, Any]:
    """The object from metrics-server's informer cache; its lister's NotFound (``pod "x" not found``)."""
    try:
        return api.get(resource, name, namespace=ns)
    except errors.NotFound:
        raise errors.NotFound.of(singular, "", name) from None


def _table(objs: list[dict[str, Any]], info: ResourceInfo) -> dict[str, Any]:
    """metrics-server's ``ConvertToTable``: Name, the usage per resource (summed over containers), Window."""
    cols = [{"name": "Name", "type": "string", "format": "name", "description": "Name of the resource",
             "priority": 0}]
    cols += [{"name": r, "type": "string", "format": "quantity", "description": "", "priority": 0}
             for r in ("cpu", "memory")]
    cols.append({"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0})
    rows = []
    for o in objs:
        usages = [o["usage"]] if info is NODES else [c["usage"] for c in o["containers"]]
        cells: list[Any] = [o["metadata"]["name"]]
        for r in ("cpu", "memory"):
            total = parse_quantity("0")
            for u in usages:
                total = total + parse_quantity(u[r])
            cells.append(str(total))
        cells.append(o["window"])
        rows.append({"cells": cells, "object": o})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": ""},
            "columnDefinitions": cols, "rows": rows}
