"""Per-namespace defaults: the ``default`` ServiceAccount and the root CA ConfigMap.

Two small controllers of kube-controller-manager, each a namespace-keyed
reconcile loop that only ever creates (or repairs) one object per namespace:

* :class:`ServiceAccountsController` (``service-account-controller``, upstream
  ``pkg/controller/serviceaccount``): every *active* namespace has a
  ServiceAccount named ``default``; one deleted is created again. Terminating
  namespaces are skipped (upstream syncs only phase ``Active``).
* :class:`RootCACertPublisher` (``root-ca-cert-publisher``, upstream
  ``pkg/controller/certificates/rootcacertpublisher``): every namespace not
  being deleted has the ConfigMap ``kube-root-ca.crt`` with key ``ca.crt``
  and the ``kubernetes.io/description`` annotation; edits to its data are
  reverted and a deleted one is recreated. Until the emulator has real
  certificates (``serve``) the bundle is :data:`PLACEHOLDER_CA` — fixed,
  PEM-shaped text.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = ["ServiceAccountsController", "RootCACertPublisher", "ROOT_CA_CONFIGMAP", "PLACEHOLDER_CA",
           "DESCRIPTION", "root_ca_configmap"]

Obj = dict[str, Any]

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters."
)
# Deterministic stand-in for the cluster CA (base64 of a fixed marker text, 64-column lines).
PLACEHOLDER_CA = (
    "-----BEGIN CERTIFICATE-----\n"
    "azhzZW11IHBsYWNlaG9sZGVyIGNsdXN0ZXIgQ0EgLSBubyByZWFsIGNlcnRpZmlj\n"
    "YXRlIHlldDsgYGs4c2VtdSBzZXJ2ZWAgd2lsbCBpc3N1ZSBvbmUuIGs4c2VtdSBw\n"
    "bGFjZWhvbGRlciBjbHVzdGVyIENBLg==\n"
    "-----END CERTIFICATE-----\n"
)


def _ns_active(ns: Obj | None) -> bool:
    return ns is not None and not (ns.get("metadata") or {}).get("deletionTimestamp") and \
        (ns.get("status") or {}).get("phase", "Active") == "Active"


class ServiceAccountsController(Component):
    """Creates the ``default`` ServiceAccount in every active namespace."""

    name = "service-account-controller"
    account = "default"

    def __init__(self, api: Any, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.namespaces = self.informer("namespaces")
        self.accounts = self.informer("serviceaccounts", field_selector=f"metadata.name={self.account}")
        self.work = self.queue()
        self.namespaces.add_event_handler(EventHandler(
            on_add=self._enqueue_ns, on_update=lambda o, n: self._enqueue_ns(n)))
        self.accounts.add_event_handler(EventHandler(on_delete=self._enqueue_ns_of))

    def _enqueue_ns(self, ns: Obj) -> None:
        self.work.add(ns["metadata"]["name"])

    def _enqueue_ns_of(self, obj: Obj) -> None:
        self.work.add(obj["metadata"]["namespace"])

    async def main(self) -> None:
        await self.run_workers(self.work, self.sync)

    def sync(self, namespace: str) -> None:
        """Create ``default`` in ``namespace`` if it is active and the account is missing.

        Raises:
            StatusError: a failed create (retried with back-off).
        """
        if not _ns_active(self.namespaces.indexer.get(namespace)):
            return
        if self.accounts.indexer.get_by(namespace, self.account) is not None:
            return
        body = {"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": self.account, "namespace": namespace}}
        try:
            self.api.create("serviceaccounts", body, namespace=namespace, ctx=self.ctx)
        except (errors.AlreadyExists, errors.Forbidden, errors.NotFound):
            pass  # already there, or the namespace is going away


def root_ca_configmap(namespace: str, current: Obj | None, ca: str = PLACEHOLDER_CA) -> Obj | None:
    """The ConfigMap to write in ``namespace`` (a create when ``current`` is None), or None if
    ``current`` already holds the bundle and annotation. Other keys and annotations are kept
    only on update, as upstream's publisher does."""
    if current is None:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": namespace,
                             "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                "data": {"ca.crt": ca}}
    meta = current.get("metadata") or {}
    ann = meta.get("annotations") or {}
    if current.get("data") == {"ca.crt": ca} and ann.get(DESCRIPTION_ANNOTATION) == DESCRIPTION:
        return None
    return {**current, "metadata": {**meta, "annotations": {**ann, DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {"ca.crt": ca}}


class RootCACertPublisher(Component):
    """Publishes the cluster CA bundle as ConfigMap ``kube-root-ca.crt`` in every namespace."""

    name = "root-ca-cert-publisher"

    def __init__(self, api: Any, ca: str = PLACEHOLDER_CA, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.ca = ca
        self.namespaces = self.informer("namespaces")
        self.configmaps = self.informer("configmaps", field_selector=f"metadata.name={ROOT_CA_CONFIGMAP}")
        self.work = self.queue()
        self.namespaces.add_event_handler(EventHandler(
            on_add=self._enqueue_ns, on_update=lambda o, n: self._enqueue_ns(n)))
        self.configmaps.add_event_handler(EventHandler(
            on_add=self._enqueue_cm, on_update=lambda o, n: self._enqueue_cm(n), on_delete=self._enqueue_cm))

    def _enqueue_ns(self, ns: Obj) -> None:
        self.work.add(ns["metadata"]["name"])

    def _enqueue_cm(self, cm: Obj) -> None:
        self.work.add(cm["metadata"]["namespace"])

    async def main(self) -> None:
        await self.run_workers(self.work, self.sync)

    def sync(self, namespace: str) -> None:
        """Create or repair ``kube-root-ca.crt`` in ``namespace`` (skipped while it is being deleted).

        Raises:
            StatusError: a failed write (retried with back-off).
        """
        ns = self.namespaces.indexer.get(namespace)
        if ns is None or (ns.get("metadata") or {}).get("deletionTimestamp"):
            return
        current = self.configmaps.indexer.get_by(namespace, ROOT_CA_CONFIGMAP)
        want = root_ca_configmap(namespace, current, self.ca)
        if want is None:
            return
        try:
            if current is None:
                self.api.create("configmaps", want, namespace=namespace, ctx=self.ctx)
            else:
                self.api.update("configmaps", want, namespace=namespace, ctx=self.ctx)
        except (errors.AlreadyExists, errors.Forbidden):
            pass  # created meanwhile (the watch will tell), or the namespace is terminating
