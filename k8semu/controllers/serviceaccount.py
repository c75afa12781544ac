"""Per-namespace defaults: the ``default`` ServiceAccount and the root CA ConfigMap.

Two small controllers of kube-controller-manager, each a namespace-keyed
reconcile loop that only ever creates (or repairs) one object per namespace:

* :class:`ServiceAccountsController` (``service-account-controller``, upstream
  ``pkg/controller/serviceaccount``): every *active* namespace has a
  ServiceAccount named ``default``; one deleted is created again. Terminating
  namespaces are skipped (upstream syncs only phase ``Active``).
  It also does the work of upstream's token controller (``serviceaccount-token``,
  ``tokens_controller.go``): a Secret of type ``kubernetes.io/service-account-token``
  annotated ``kubernetes.io/service-account.name`` gets ``data.token`` (a legacy
  JWT, :func:`k8semu.api.tokens.legacy_token`) when it has none, ``data.ca.crt``
  (the cluster CA bundle) and ``data.namespace``, and the
  ``kubernetes.io/service-account.uid`` annotation; one whose account does not
  exist (or has another uid than the annotation says) is deleted, and deleting
  an account deletes its token Secrets.
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

import trio

from ..api import errors, tokens
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
    """Creates the ``default`` ServiceAccount in every active namespace, and populates (or deletes)
    legacy service account token Secrets (see the module docstring)."""

    name = "service-account-controller"
    account = "default"

    def __init__(self, api: Any, ca: str = PLACEHOLDER_CA, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.ca = ca
        self.namespaces = self.informer("namespaces")
        self.accounts = self.informer("serviceaccounts")
        self.token_secrets = self.informer("secrets", field_selector=f"type={tokens.SERVICE_ACCOUNT_TOKEN_TYPE}")
        self.work = self.queue()
        self.token_work = self.queue()  # ("secret", ns, name) / ("account", ns, name, uid)
        self.namespaces.add_event_handler(EventHandler(
            on_add=self._enqueue_ns, on_update=lambda o, n: self._enqueue_ns(n)))
        self.accounts.add_event_handler(EventHandler(on_delete=self._account_deleted))
        self.token_secrets.add_event_handler(EventHandler(
            on_add=self._enqueue_secret, on_update=lambda o, n: self._enqueue_secret(n)))

    def _enqueue_ns(self, ns: Obj) -> None:
        self.work.add(ns["metadata"]["name"])

    def _account_deleted(self, obj: Obj) -> None:
        meta = obj["metadata"]
        if meta["name"] == self.account:
            self.work.add(meta["namespace"])
        self.token_work.add(("account", meta["namespace"], meta["name"], meta.get("uid", "")))

    def _enqueue_secret(self, obj: Obj) -> None:
        self.token_work.add(("secret", obj["metadata"]["namespace"], obj["metadata"]["name"]))

    async def main(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.run_workers, self.work, self.sync)
            nursery.start_soon(self.run_workers, self.token_work, self.sync_token)

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

    # ------------------------------------------------------------------ token Secrets
    def sync_token(self, key: tuple[str, ...]) -> None:
        """One token-controller item: a token Secret to populate (or delete), or a deleted account
        whose token Secrets go too.

        Raises:
            StatusError: a failed write (retried with back-off).
        """
        if key[0] == "account":
            _, ns, name, uid = key
            if self._account(ns, name, uid) is not None:
                return  # recreated meanwhile
            for secret in self.token_secrets.indexer.list():
                meta = secret["metadata"]
                ann = meta.get("annotations") or {}
                if meta.get("namespace") == ns and ann.get(tokens.SA_NAME_ANNOTATION) == name and \
                        ann.get(tokens.SA_UID_ANNOTATION, uid) in ("", uid):
                    self._delete_secret(secret)
            return
        _, ns, name = key
        secret = self.token_secrets.indexer.get_by(ns, name)
        if secret is None or secret["metadata"].get("deletionTimestamp"):
            return
        ann = secret["metadata"].get("annotations") or {}
        sa = self._account(ns, ann.get(tokens.SA_NAME_ANNOTATION) or "", ann.get(tokens.SA_UID_ANNOTATION) or "")
        if sa is None:
            self._delete_secret(secret)
            return
        want = tokens.legacy_secret_update(self.api, secret, sa, self.ca)
        if want is not None:
            try:
                self.api.update("secrets", want, namespace=ns, ctx=self.ctx)
            except errors.NotFound:
                pass  # deleted meanwhile

    def _account(self, namespace: str, name: str, uid: str) -> Obj | None:
        """The account (from the cache, else the API, as upstream's fetchOnCacheMiss), None when
        missing or of another uid than ``uid`` (when given)."""
        if not name:
            return None
        sa = self.accounts.indexer.get_by(namespace, name)
        if sa is None:
            try:
                sa = self.api.get("serviceaccounts", name, namespace=namespace, ctx=self.ctx)
            except errors.NotFound:
                return None
        if uid and sa["metadata"].get("uid") != uid:
            return None
        return sa

    def _delete_secret(self, secret: Obj) -> None:
        meta = secret["metadata"]
        try:
            self.api.delete("secrets", meta["name"], namespace=meta["namespace"], ctx=self.ctx,
                            preconditions={"uid": meta.get("uid", "")})
        except (errors.NotFound, errors.Conflict):
            pass  # gone already, or replaced by another Secret of that name (its own event follows)


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
