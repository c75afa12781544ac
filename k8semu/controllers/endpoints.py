"""The legacy Endpoints controller (``endpoint-controller``), after upstream's
``pkg/controller/endpoint``.

For every Service with a selector it keeps one ``v1 Endpoints`` object of the
same name (no ownerReference; it is deleted when the Service goes):

* ``subsets``: pods that have an IPv4 address, are not terminal and are not
  terminating; a pod is in ``addresses`` when Ready (or the Service publishes
  not-ready addresses), else in ``notReadyAddresses``; each address carries
  ``ip``, ``hostname`` (StatefulSet DNS: the pod's hostname/subdomain name the
  Service), ``nodeName`` and a ``targetRef`` to the pod;
* ports are the Service's ports with targetPorts resolved per pod; pods whose
  resolved port lists are equal share a subset (upstream's ``RepackSubsets``).
  Upstream sorts subsets and ports by a hash; here addresses are sorted by IP,
  ports by (name, port, protocol) and subsets by their ports — deterministic,
  and the same sets;
* labels: the Service's labels plus ``endpoints.kubernetes.io/managed-by:
  endpoint-controller`` (and ``service.kubernetes.io/headless`` for headless
  Services); the ``endpoints.kubernetes.io/last-change-trigger-time``
  annotation is set when the subsets change.

The 1000-address cap (``endpoints.kubernetes.io/over-capacity``) is not modelled.
``kubectl describe service`` reads its ``Endpoints:`` line from this object.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.pods import find_port, is_pod_ready, is_terminal, pod_ipv4
from ..api.selectors import selector_from_set
from ..client.component import Component
from ..client.informer import LABELS_INDEX, EventHandler, label_index, meta_namespace_key, split_key
from .controller_utils import ServiceMemberships, TriggerTimeTracker

__all__ = ["EndpointsController", "endpoint_subsets", "desired_endpoints_object",
           "MANAGED_BY_LABEL", "CONTROLLER_NAME"]

Obj = dict[str, Any]

MANAGED_BY_LABEL = "endpoints.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpoint-controller"
HEADLESS_LABEL = "service.kubernetes.io/headless"
TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"
#: A Service whose sync failed this many times in a row is dropped until its next event (upstream's
#: ``maxRetries``; with the default controller back-off the last retry comes ~82 s after the first).
MAX_RETRIES = 15


def _address(pod: Obj, svc: Obj, ip: str) -> Obj:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    addr: Obj = {"ip": ip}
    if spec.get("hostname") and spec.get("subdomain") == svc["metadata"]["name"] and \
            meta.get("namespace") == svc["metadata"].get("namespace"):
        addr["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        addr["nodeName"] = spec["nodeName"]
    addr["targetRef"] = {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name"),
                         "uid": meta.get("uid")}
    return addr


def endpoint_subsets(svc: Obj, pods: list[Obj]) -> list[Obj]:
    """The ``subsets`` the Service's Endpoints should have (upstream ``syncService``).

    Args:
        svc: the Service; pods: the pods its selector matches.

    Returns:
        Wire-form subsets, deterministic order (see module docstring).
    """
    spec = svc.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    headless = spec.get("clusterIP") == "None"
    groups: dict[tuple, tuple[list[Obj], list[Obj], list[Obj]]] = {}
    for pod in pods:
        ip = pod_ipv4(pod)
        if ip is None or is_terminal(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        ports = []
        for sp in spec.get("ports") or ():
            num = find_port(pod, sp)
            if num is None:
                continue
            p = {"name": sp.get("name") or "", "port": num, "protocol": sp.get("protocol") or "TCP"}
            if not p["name"]:
                del p["name"]
            if sp.get("appProtocol"):
                p["appProtocol"] = sp["appProtocol"]
            ports.append(p)
        if not ports and not (headless and not spec.get("ports")):
            continue
        ports.sort(key=lambda p: (p.get("name", ""), p["port"], p["protocol"]))
        key = tuple((p.get("name", ""), p["port"], p["protocol"], p.get("appProtocol", "")) for p in ports)
        ready, not_ready, _ = groups.setdefault(key, ([], [], ports))
        (ready if publish or is_pod_ready(pod) else not_ready).append(_address(pod, svc, ip))
    out = []
    for key in sorted(groups):
        ready, not_ready, ports = groups[key]
        subset: Obj = {}
        order = lambda a: (tuple(int(x) for x in a["ip"].split(".")), a["targetRef"].get("uid") or "")  # noqa: E731
        if ready:
            subset["addresses"] = sorted(ready, key=order)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=order)
        if ports:
            subset["ports"] = ports
        out.append(subset)
    return out


def endpoints_labels(svc: Obj) -> dict[str, str]:
    """The Service's labels plus managed-by (and headless) — what the Endpoints carries."""
    labels = dict((svc.get("metadata") or {}).get("labels") or {})
    labels.pop(HEADLESS_LABEL, None)
    if (svc.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


def desired_endpoints_object(svc: Obj, pods: list[Obj], current: Obj | None, trigger: str | None) -> Obj | None:
    """The Endpoints to write, or None when ``current`` is already right.

    Mirrors upstream: no write when the subsets and labels are unchanged; the
    trigger-time annotation is set (or dropped) only on a write.
    """
    subsets = endpoint_subsets(svc, pods)
    labels = endpoints_labels(svc)
    if current is not None:
        cur_labels = (current.get("metadata") or {}).get("labels") or {}
        if (current.get("subsets") or []) == subsets and cur_labels == labels:
            return None
        meta = dict(current["metadata"])
    else:
        meta = {"name": svc["metadata"]["name"], "namespace": svc["metadata"].get("namespace")}
    meta["labels"] = labels
    ann = dict(meta.get("annotations") or {})
    if trigger:
        ann[TRIGGER_TIME_ANNOTATION] = trigger
    else:
        ann.pop(TRIGGER_TIME_ANNOTATION, None)
    if ann:
        meta["annotations"] = ann
    else:
        meta.pop("annotations", None)
    out: Obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta}
    if subsets:
        out["subsets"] = subsets
    return out


class EndpointsController(Component):
    """kube-controller-manager's Endpoints controller (see module docstring)."""

    name = "endpoint-controller"

    def __init__(self, api: Any, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.services = self.informer("services")
        self.memberships = ServiceMemberships(self.services)
        self.pods = self.informer("pods", indexers={LABELS_INDEX: label_index})
        self.endpoints = self.informer("endpoints")
        self.work = self.queue()
        self.triggers = TriggerTimeTracker()
        self.services.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n), on_delete=self._enqueue))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_changed))
        self.endpoints.add_event_handler(EventHandler(
            on_update=lambda o, n: self._enqueue(n), on_delete=self._enqueue))

    def _enqueue(self, obj: Obj) -> None:
        self.work.add(meta_namespace_key(obj))

    def _pod_changed(self, pod: Obj) -> None:
        for key in self.memberships.of_pod(pod):
            self.work.add(key)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        for key in self.memberships.to_update_on_pod_change(old, new):
            self.work.add(key)

    async def main(self) -> None:
        await self.run_workers(self.work, self.sync, coalesce=True, max_retries=MAX_RETRIES)

    def sync(self, key: str) -> None:
        """Bring the Endpoints ``namespace/name`` in line with its Service.

        Raises:
            StatusError: a failed write (retried with back-off).
        """
        ns, name = split_key(key)
        svc = self.services.indexer.get(key)
        if svc is None:
            self.triggers.forget(key)
            try:
                self.api.delete("endpoints", name, namespace=ns, ctx=self.ctx)
            except errors.NotFound:
                pass
            return
        selector = (svc.get("spec") or {}).get("selector")
        if not selector:
            return  # Endpoints of selector-less Services belong to the user
        sel = selector_from_set(selector)
        pods = self.pods.indexer.select(ns or "", sel)
        current = self.endpoints.indexer.get(key)
        trigger = self.triggers.compute(svc, pods)
        want = desired_endpoints_object(svc, pods, current, trigger)
        if want is None:
            return
        try:
            if current is None:
                self.api.create("endpoints", want, namespace=ns, ctx=self.ctx)
            else:
                self.api.update("endpoints", want, namespace=ns, ctx=self.ctx)
        except errors.Forbidden:
            return  # the namespace is terminating
