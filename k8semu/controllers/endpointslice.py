"""The EndpointSlice controller (``endpointslice-controller``), after upstream's
``pkg/controller/endpointslice``.

For every Service with a selector it keeps ``discovery.k8s.io/v1``
EndpointSlices listing the matching pods:

* one endpoint per pod that has an IPv4 address and is not terminal
  (Succeeded/Failed): ``addresses: [podIP]``, ``conditions`` ``ready`` (pod
  Ready and not terminating, or the Service's ``publishNotReadyAddresses``),
  ``serving`` (pod Ready) and ``terminating`` (``deletionTimestamp`` set),
  ``nodeName``, ``zone`` (the node's ``topology.kubernetes.io/zone``),
  ``targetRef`` to the pod, and ``hostname`` for a pod whose
  ``spec.hostname``/``spec.subdomain`` name this Service (StatefulSet DNS);
* ports are the Service's ports with each ``targetPort`` resolved against the
  pod's containers (a named targetPort may resolve to different numbers in
  different pods); pods are grouped by their resolved port list, every group
  in its own slices of at most :data:`MAX_ENDPOINTS_PER_SLICE`;
* slices are named by ``generateName: <service>-``, labelled
  ``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by``
  (plus the Service's own labels and ``service.kubernetes.io/headless`` for
  headless Services), controlled by the Service (so the garbage collector
  removes them with it) and annotated with
  ``endpoints.kubernetes.io/last-change-trigger-time``;
* a Service with no endpoints at all gets one empty *placeholder* slice.

Reconciler: the pure function :func:`reconcile` follows upstream's
``reconcileByPortMapping`` steps deterministically (existing slices in name
order, desired endpoints in pod key order instead of Go's random set order):
keep existing slices, drop undesired endpoints and refresh changed ones, fill
slices that already need an update, then fit leftovers into the unchanged
slice that is closest to full, and only then create new slices; slices left
empty are deleted, and a create paired with a delete becomes an update of the
slice that would have been deleted. What upstream adds on top (topology
hints, traffic distribution, metrics) is not modelled.

Slices edited or deleted by hand are repaired: their watch events requeue the
Service 1 s later (the controller's own writes coming back do not). One
virtual instant's pod changes are folded into one sync per Service. A sync whose slice cache has not yet seen this controller's own last
write for the Service is retried later (upstream's EndpointSliceTracker),
so a slow watch never produces duplicate slices.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.pods import find_port, is_pod_ready, is_terminal, pod_ipv4
from ..api.selectors import selector_from_set
from ..client.component import Component
from ..client.workqueue import BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter
from ..client.informer import LABELS_INDEX, EventHandler, label_index, meta_namespace_key, split_key
from .controller_utils import ServiceMemberships, TriggerTimeTracker

__all__ = [
    "EndpointSliceController",
    "MAX_ENDPOINTS_PER_SLICE",
    "MANAGED_BY_LABEL",
    "CONTROLLER_NAME",
    "SERVICE_NAME_LABEL",
    "TRIGGER_TIME_ANNOTATION",
    "pod_to_endpoint",
    "endpoint_ports",
    "desired_endpoints",
    "reconcile",
    "SliceChanges",
]

Obj = dict[str, Any]

MAX_ENDPOINTS_PER_SLICE = 100  # kube-controller-manager --max-endpoints-per-slice default
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"
TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"
ZONE_LABEL = "topology.kubernetes.io/zone"
#: A Service whose sync failed this many times in a row is dropped until its next event (upstream's
#: ``maxRetries``): with the back-off below, retries come 1 s, 2 s, 4 s, … after each failure.
MAX_RETRIES = 15
#: Upstream's ``defaultSyncBackOff`` / ``maxSyncBackOff`` (virtual seconds): this controller backs off
#: from 1 s, not client-go's default 5 ms, so that large slice changes do not hammer the API server.
SYNC_BACKOFF, MAX_SYNC_BACKOFF = 1.0, 1000.0
#: Upstream's ``endpointSliceChangeMinSyncDelay``: a slice changed by someone else is looked at 1 s later.
SLICE_CHANGE_MIN_SYNC_DELAY = 1.0


#: ``EndpointSliceController._own`` value of a slice this controller deleted (its DELETED event is its own).
_DELETED = "deleted"


class _StaleCache(errors.StatusError):
    """The slice cache lags behind this controller's own writes: retry later."""


# --------------------------------------------------------------------------- pure helpers


def service_selector(svc: Obj) -> dict[str, str] | None:
    """The Service's ``spec.selector``, or None when it has none (then no slices are managed)."""
    sel = (svc.get("spec") or {}).get("selector")
    return dict(sel) if sel else None


def endpoint_ports(svc: Obj, pod: Obj) -> list[Obj]:
    """The slice ports for ``pod`` (upstream ``getEndpointPorts``); unresolvable ports are skipped."""
    out = []
    for sp in (svc.get("spec") or {}).get("ports") or ():
        num = find_port(pod, sp)
        if num is None:
            continue
        port = {"name": sp.get("name") or "", "port": num, "protocol": sp.get("protocol") or "TCP"}
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return out


def should_set_hostname(pod: Obj, svc: Obj) -> bool:
    """``endpointutil.ShouldSetHostname``: the pod's hostname+subdomain name this Service."""
    spec = pod.get("spec") or {}
    pm, sm = pod.get("metadata") or {}, svc.get("metadata") or {}
    return bool(spec.get("hostname")) and spec.get("subdomain") == sm.get("name") and pm.get("namespace") == sm.get("namespace")


def pod_to_endpoint(pod: Obj, node: Obj | None, svc: Obj) -> Obj:
    """Upstream ``podToEndpoint`` for the IPv4 address type (wire form)."""
    meta = pod.get("metadata") or {}
    serving = is_pod_ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
    ip = pod_ipv4(pod)
    ep: Obj = {
        "addresses": [ip] if ip else [],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
    }
    if should_set_hostname(pod, svc):
        ep["hostname"] = pod["spec"]["hostname"]
    ep["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                       "uid": meta.get("uid")}
    node_name = (pod.get("spec") or {}).get("nodeName")
    if node_name:
        ep["nodeName"] = node_name
    zone = ((node or {}).get("metadata") or {}).get("labels", {}).get(ZONE_LABEL)
    if zone:
        ep["zone"] = zone
    return ep


def should_pod_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """``endpointutil.ShouldPodBeInEndpoints``: not terminal, has an IP, (not terminating)."""
    if is_terminal(pod) or not pod_ipv4(pod):
        return False
    return include_terminating or not (pod.get("metadata") or {}).get("deletionTimestamp")


def _ports_key(ports: list[Obj]) -> tuple:
    return tuple(sorted((p.get("name") or "", p.get("protocol") or "TCP", p.get("port"), p.get("appProtocol") or "")
                        for p in ports or ()))


def _endpoint_key(ep: Obj) -> tuple:
    ref = ep.get("targetRef") or {}
    return (tuple(sorted(ep.get("addresses") or ())), ref.get("namespace") or "", ref.get("name") or "")


def desired_endpoints(svc: Obj, pods: list[Obj], nodes: Any
                      ) -> tuple[dict[tuple, tuple[list[Obj], dict[tuple, Obj]]], list[str]]:
    """Group the endpoints the Service should have by their port list.

    Args:
        svc: the Service. pods: candidate pods (already selected), in key order.
        nodes: anything with ``get(node name) -> Node | None`` (a dict, or the Node
            informer's indexer), for zones and to skip pods on unknown nodes.

    Returns:
        ``({ports_key: (ports, {endpoint_key: endpoint})}, missing)`` where
        ``missing`` holds upstream's messages for pods skipped because their node is unknown (upstream
        skips them and retries the Service later).
    """
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    out: dict[tuple, tuple[list[Obj], dict[tuple, Obj]]] = {}
    missing: list[str] = []
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, True):
            continue
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = nodes.get(node_name) if node_name else None
        if node_name and node is None and not publish:
            missing.append(f"skipping Pod {pod['metadata']['name']} for Service "
                           f"{meta_namespace_key(svc)}: Node {node_name} Not Found")
            continue
        ports = endpoint_ports(svc, pod)
        ep = pod_to_endpoint(pod, node, svc)
        if not ep["addresses"]:
            continue
        group = out.setdefault(_ports_key(ports), (ports, {}))
        group[1][_endpoint_key(ep)] = ep
    return out, missing


def slice_labels(svc: Obj, existing: dict[str, str] | None = None) -> dict[str, str]:
    """Upstream ``setEndpointSliceLabels``: the Service's labels plus the service-name and
    managed-by labels (and ``service.kubernetes.io/headless`` for headless Services)."""
    labels = {k: v for k, v in ((svc.get("metadata") or {}).get("labels") or {}).items()
              if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL)}
    if (svc.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = svc["metadata"]["name"]
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


def owner_reference(svc: Obj) -> Obj:
    """The controller reference a slice carries to its Service."""
    m = svc["metadata"]
    return {"apiVersion": "v1", "kind": "Service", "name": m["name"], "uid": m.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


def owned_by(sl: Obj, svc: Obj) -> bool:
    """Whether the slice's controller reference is this Service (same uid)."""
    uid = svc["metadata"].get("uid")
    return any(r.get("controller") and r.get("kind") == "Service" and r.get("uid") == uid
               for r in (sl.get("metadata") or {}).get("ownerReferences") or ())


def new_slice(svc: Obj, ports: list[Obj]) -> Obj:
    """An unsaved slice for the Service (upstream ``newEndpointSlice``)."""
    m = svc["metadata"]
    out: Obj = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"generateName": f"{m['name']}-", "namespace": m.get("namespace"),
                     "labels": slice_labels(svc), "ownerReferences": [owner_reference(svc)]},
        "addressType": "IPv4",
        "endpoints": [],
    }
    if ports:
        out["ports"] = [dict(p) for p in ports]
    return out


class SliceChanges:
    """What :func:`reconcile` decided: slices to create (no name yet), update and delete."""

    def __init__(self) -> None:
        self.create: list[Obj] = []
        self.update: list[Obj] = []
        self.delete: list[Obj] = []

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete)


def _with(sl: Obj, **changes: Any) -> Obj:
    out = dict(sl)
    meta = dict(out.get("metadata") or {})
    if "labels" in changes:
        meta["labels"] = changes.pop("labels")
    out["metadata"] = meta
    out.update(changes)
    return out


def reconcile(svc: Obj, existing: list[Obj], desired: dict[tuple, tuple[list[Obj], dict[tuple, Obj]]],
              max_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> SliceChanges:
    """Decide slice creates/updates/deletes for one Service (upstream ``Reconciler.reconcile``).

    Args:
        svc: the Service.
        existing: its slices (label-selected: service-name + managed-by), any order.
        desired: from :func:`desired_endpoints`.
        max_per_slice: endpoints per slice (upstream default 100).

    Returns:
        A :class:`SliceChanges`; updated slices keep their name and resourceVersion.
        Pure: inputs are not mutated.
    """
    changes = SliceChanges()
    labels = slice_labels(svc)
    by_ports: dict[tuple, list[Obj]] = {}
    for sl in sorted(existing, key=lambda s: s["metadata"]["name"]):
        if owned_by(sl, svc) and sl.get("addressType") == "IPv4":
            by_ports.setdefault(_ports_key(sl.get("ports") or []), []).append(sl)
        else:
            changes.delete.append(sl)
    for key in sorted(desired):
        ports, wanted = desired[key]
        c, u, d = _reconcile_group(svc, by_ports.get(key, []), ports, dict(wanted), labels, max_per_slice)
        changes.create += c
        changes.update += u
        changes.delete += d
    for key in sorted(by_ports):
        if key not in desired:
            changes.delete += by_ports[key]

    if len(existing) == len(changes.delete) and not changes.create:
        placeholder = new_slice(svc, [])
        if len(changes.delete) == 1 and _is_placeholder_of(changes.delete[0], svc, labels):
            changes.delete = []
        else:
            changes.create.append(placeholder)

    # a create paired with a delete becomes an update of the slice that would go
    i = 0
    while i < len(changes.delete) and changes.create:
        victim = changes.delete[i]
        if victim.get("addressType") == "IPv4" and owned_by(victim, svc):
            new = changes.create.pop()
            vm = victim["metadata"]
            meta = {**vm, "labels": new["metadata"]["labels"], "ownerReferences": new["metadata"]["ownerReferences"]}
            upd = {**victim, "metadata": meta, "endpoints": new["endpoints"]}
            upd.pop("ports", None)
            if new.get("ports"):
                upd["ports"] = new["ports"]
            changes.update.append(upd)
            del changes.delete[i]
        else:
            i += 1
    return changes


def _is_placeholder_of(sl: Obj, svc: Obj, labels: dict[str, str]) -> bool:
    return (not sl.get("endpoints") and not sl.get("ports") and owned_by(sl, svc)
            and (sl["metadata"].get("labels") or {}) == labels)


def _reconcile_group(svc: Obj, slices: list[Obj], ports: list[Obj], wanted: dict[tuple, Obj],
                     labels: dict[str, str], max_per_slice: int) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """``reconcileByPortMapping`` for one port list; ``wanted`` is consumed."""
    by_name: dict[str, Obj] = {}
    unchanged: list[str] = []
    to_update: list[str] = []
    to_delete: list[Obj] = []
    # 1. drop endpoints no longer desired, refresh changed ones, check labels
    for sl in slices:
        name = sl["metadata"]["name"]
        kept, changed = [], False
        for ep in sl.get("endpoints") or ():
            k = _endpoint_key(ep)
            if k in wanted:
                got = wanted.pop(k)
                kept.append(got)
                changed = changed or got != ep
        labels_changed = (sl["metadata"].get("labels") or {}) != labels
        if changed or len(kept) != len(sl.get("endpoints") or ()):
            if not kept:
                to_delete.append(sl)
                continue
            by_name[name] = _with(sl, endpoints=kept, labels=labels)
            to_update.append(name)
        elif labels_changed:
            by_name[name] = _with(sl, labels=labels)
            to_update.append(name)
        else:
            by_name[name] = sl
            unchanged.append(name)
    queue = list(wanted.values())

    def take(sl: Obj) -> Obj:
        room = max_per_slice - len(sl.get("endpoints") or ())
        if room <= 0 or not queue:
            return sl
        add, queue[:] = queue[:room], queue[room:]
        return {**sl, "endpoints": list(sl.get("endpoints") or ()) + add}

    # 2. fill the slices that are being updated anyway, fullest first
    for name in sorted(to_update, key=lambda n: (-len(by_name[n].get("endpoints") or ()), n)):
        by_name[name] = take(by_name[name])
    # 3. fit the rest into the unchanged slice closest to full, else new slices
    creates: list[Obj] = []
    while queue:
        target = None
        if len(queue) < max_per_slice and unchanged:
            fits = [n for n in unchanged if len(by_name[n].get("endpoints") or ()) + len(queue) <= max_per_slice]
            if fits:
                target = max(fits, key=lambda n: (len(by_name[n].get("endpoints") or ()), n))
        if target is None:
            creates.append(take(new_slice(svc, ports)))
        else:
            unchanged.remove(target)
            by_name[target] = take({**by_name[target], "metadata": {**by_name[target]["metadata"], "labels": labels}})
            to_update.append(target)
    return creates, [by_name[n] for n in to_update], to_delete


# --------------------------------------------------------------------------- the controller


class EndpointSliceController(Component):
    """kube-controller-manager's EndpointSlice controller (see module docstring).

    Args:
        api: the API server.
        max_endpoints_per_slice: ``--max-endpoints-per-slice`` (default 100).
    """

    name = "endpointslice-controller"

    def __init__(self, api: Any, max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.max_per_slice = max_endpoints_per_slice
        self.services = self.informer("services")
        self.memberships = ServiceMemberships(self.services)
        self.pods = self.informer("pods", indexers={LABELS_INDEX: label_index})
        self.nodes = self.informer("nodes")
        self.slices = self.informer("endpointslices.discovery.k8s.io",
                                    label_selector=f"{MANAGED_BY_LABEL}={CONTROLLER_NAME}")
        self.slices.indexer.add_indexer("service", _slice_service_index)
        self.work = self.queue(rate_limiter=MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(SYNC_BACKOFF, MAX_SYNC_BACKOFF), BucketRateLimiter(qps=10.0, burst=100)))
        self.triggers = TriggerTimeTracker()
        self._written: dict[str, int] = {}  # Service key -> revision of this controller's last write for it
        self._own: dict[str, str] = {}  # slice "namespace/name" -> resourceVersion this controller wrote
        self.services.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n), on_delete=self._enqueue))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_changed))
        self.slices.add_event_handler(EventHandler(
            on_add=self._slice_changed, on_update=lambda o, n: self._slice_changed(n),
            on_delete=self._slice_deleted))

    # -- event handlers (enqueue only)
    def _enqueue(self, svc: Obj) -> None:
        self.work.add(meta_namespace_key(svc))

    def _pod_changed(self, pod: Obj) -> None:
        for key in self.memberships.of_pod(pod):
            self.work.add(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        for key in self.memberships.to_update_on_pod_change(old, new):
            self.work.add(key)

    def _slice_changed(self, sl: Obj) -> None:
        """Requeue the slice's Service (after :data:`SLICE_CHANGE_MIN_SYNC_DELAY`) unless the event
        is this controller's own write coming back (upstream's ``EndpointSliceTracker.ShouldSync``)."""
        meta = sl.get("metadata") or {}
        if self._own.get(meta_namespace_key(sl)) != meta.get("resourceVersion"):
            self._requeue_service_of(sl)

    def _requeue_service_of(self, sl: Obj) -> None:
        meta = sl.get("metadata") or {}
        svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if svc:
            self.work.add_after(f"{meta.get('namespace')}/{svc}", SLICE_CHANGE_MIN_SYNC_DELAY)

    def _slice_deleted(self, sl: Obj) -> None:
        """Requeue the Service unless this controller deleted the slice itself (upstream's
        ``EndpointSliceTracker.HandleDeletion``)."""
        if self._own.pop(meta_namespace_key(sl), None) != _DELETED:
            self._requeue_service_of(sl)

    async def main(self) -> None:
        await self.run_workers(self.work, self.sync, coalesce=True, max_retries=MAX_RETRIES)

    # -- sync
    def sync(self, key: str) -> None:
        """Reconcile the slices of the Service ``namespace/name`` (cached objects in, API writes out).

        Raises:
            StatusError: a failed write, a lagging slice cache or pods on unknown
                nodes (the key is retried with back-off, as upstream).
        """
        ns, name = split_key(key)
        svc = self.services.indexer.get(key)
        if svc is None:
            self.triggers.forget(key)
            self._written.pop(key, None)
            return  # the garbage collector removes the slices with their owner
        if service_selector(svc) is None:
            return
        if int(self.slices.resource_version or 0) < self._written.get(key, 0):
            raise _StaleCache(f"EndpointSlice informer cache is out of date for Service {key}")
        selector = selector_from_set(service_selector(svc))
        pods = self.pods.indexer.select(ns or "", selector)
        desired, missing = desired_endpoints(svc, pods, self.nodes.indexer)  # Nodes keyed by name
        existing = self.slices.indexer.by_index("service", key)
        trigger = self.triggers.compute(svc, pods)
        changes = reconcile(svc, existing, desired, self.max_per_slice)
        self._apply(key, svc, changes, trigger)
        if missing:
            raise _StaleCache("; ".join(missing))

    def _apply(self, key: str, svc: Obj, changes: SliceChanges, trigger: str | None) -> None:
        ns = svc["metadata"].get("namespace")
        res = "endpointslices.discovery.k8s.io"

        def wrote(obj: Obj, deleted: bool = False) -> None:
            # remember the revision of our own write: the cache must reach it before the next sync
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            self._written[key] = max(self._written.get(key, 0), int(rv or 0))
            self._own[meta_namespace_key(obj)] = _DELETED if deleted else rv

        try:
            if not (svc.get("metadata") or {}).get("deletionTimestamp"):
                for sl in changes.create:
                    wrote(self.api.create(res, _annotate(sl, trigger), namespace=ns, ctx=self.ctx))
            for sl in changes.update:
                wrote(self.api.update(res, _annotate(sl, trigger), namespace=ns, ctx=self.ctx))
            for sl in changes.delete:
                try:
                    wrote(self.api.delete(res, sl["metadata"]["name"], namespace=ns, ctx=self.ctx), deleted=True)
                except errors.NotFound:
                    pass
        except errors.Forbidden:
            return  # e.g. the namespace is terminating: creates keep failing, drop the item


def _annotate(sl: Obj, trigger: str | None) -> Obj:
    meta = dict(sl.get("metadata") or {})
    ann = dict(meta.get("annotations") or {})
    if trigger:
        ann[TRIGGER_TIME_ANNOTATION] = trigger
    else:
        ann.pop(TRIGGER_TIME_ANNOTATION, None)
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)
    return {**sl, "metadata": meta}


def _slice_service_index(sl: Obj) -> list[str]:
    meta = sl.get("metadata") or {}
    svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return [f"{meta.get('namespace')}/{svc}"] if svc else []
