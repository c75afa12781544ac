"""The namespace controller (``namespace-controller``), after upstream's
``pkg/controller/namespace`` (``namespacedResourcesDeleter``).

A namespace with a ``deletionTimestamp`` (phase ``Terminating``) that still
has the ``kubernetes`` finalizer in ``spec.finalizers`` is emptied:

1. every namespaced resource served (:data:`~k8semu.api.resources.RESOURCES`, and the
   custom resources of the server's CRDs) is deleted with Background propagation — DELETECOLLECTION where the
   resource serves it, else list + delete each;
2. what is left is counted; pods still terminating give an *estimate* (their
   longest ``terminationGracePeriodSeconds``, zero once that much time has
   passed since the namespace's deletion), remaining objects with finalizers
   an estimate of 15 s, anything else left over is an error;
3. the five deletion conditions are written to ``status.conditions``
   (``NamespaceDeletionDiscoveryFailure``, ``…GroupVersionParsingFailure``,
   ``…ContentFailure``, ``NamespaceContentRemaining``,
   ``NamespaceFinalizersRemaining``) with upstream's reasons and messages;
4. with an estimate the namespace is looked at again after
   ``estimate // 2 + 1`` seconds (an error: rate-limited retry); when nothing
   is left, ``kubernetes`` is removed from ``spec.finalizers`` through the
   ``finalize`` subresource and the API server removes the namespace.

The pure parts (:func:`deletion_conditions`, :func:`update_conditions`,
:func:`pod_estimate`) are separate from the API calls in
:meth:`NamespaceController.sync`.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.meta import parse_time
from ..api.pods import is_terminal
from ..api.resources import RESOURCES, ResourceInfo
from ..client.component import Component
from ..client.informer import EventHandler

__all__ = ["NamespaceController", "deletion_conditions", "update_conditions", "pod_estimate",
           "CONDITION_TYPES", "FINALIZER_ESTIMATE_SECONDS"]

Obj = dict[str, Any]

FINALIZER = "kubernetes"
FINALIZER_ESTIMATE_SECONDS = 15
CONDITION_TYPES = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentRemoved", "All content successfully removed"),
}


class _ContentRemaining(errors.StatusError):
    """Unexpected content is left (retried with back-off, as upstream's aggregate error)."""


def _gvr(info: ResourceInfo) -> str:
    """``schema.GroupVersionResource.String()``: ``apps/v1, Resource=deployments``."""
    return f"{info.group}/{info.version}, Resource={info.plural}"


def pod_estimate(pods: list[Obj], deleted_at: float, now: float) -> int:
    """Upstream ``estimateGracefulTermination`` for pods (seconds).

    The longest ``terminationGracePeriodSeconds`` of non-terminal pods, or 0 once
    that many seconds have passed since the namespace's deletion.
    """
    est = 0
    for pod in pods:
        if is_terminal(pod):
            continue
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        if grace is not None and grace > est:
            est = int(grace)
    return 0 if now - deleted_at >= est else est


def deletion_conditions(remaining: dict[str, int], finalizers: dict[str, int], errs: list[str]) -> list[Obj]:
    """The failing conditions for one pass (upstream ``namespaceConditionUpdater``).

    Args:
        remaining: ``"<resource>.<group>"`` -> instances left.
        finalizers: finalizer -> instances left holding it.
        errs: content deletion error messages.

    Returns:
        Conditions without ``lastTransitionTime``; types not returned are "ok".
    """
    out = []
    if errs:
        out.append({"type": "NamespaceDeletionContentFailure", "status": "True", "reason": "ContentDeletionFailed",
                    "message": f"Failed to delete all resource types, {len(errs)} remaining: {', '.join(sorted(errs))}"})
    items = sorted(f"{gr} has {n} resource instances" for gr, n in remaining.items() if n)
    if remaining:
        out.append({"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain",
                    "message": f"Some resources are remaining: {', '.join(items)}"})
    fins = sorted(f"{f} in {n} resource instances" for f, n in finalizers.items() if n)
    if finalizers:
        out.append({"type": "NamespaceFinalizersRemaining", "status": "True", "reason": "SomeFinalizerRemain",
                    "message": f"Some finalizers are remaining: {', '.join(fins)}"})
    return out


def update_conditions(current: list[Obj], failing: list[Obj], now: str) -> list[Obj] | None:
    """Upstream ``updateConditions``: every managed type present, ``lastTransitionTime`` moved
    only when the status flips. Returns the new list, or None when nothing changed."""
    conds = [dict(c) for c in current]
    changed = False
    for type_ in CONDITION_TYPES:
        want = next((c for c in failing if c["type"] == type_), None)
        if want is None:
            reason, message = _OK[type_]
            want = {"type": type_, "status": "False", "reason": reason, "message": message}
        old = next((c for c in conds if c.get("type") == type_), None)
        if old is None:
            conds.append({"type": type_, "status": want["status"], "lastTransitionTime": now,
                          "reason": want["reason"], "message": want["message"]})
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (want["status"], want["reason"], want["message"]):
            if old.get("status") != want["status"]:
                old["lastTransitionTime"] = now
            old.update(status=want["status"], reason=want["reason"], message=want["message"])
            changed = True
    return conds if changed else None


class NamespaceController(Component):
    """kube-controller-manager's namespace controller (see module docstring)."""

    name = "namespace-controller"

    def __init__(self, api: Any, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.namespaces = self.informer("namespaces")
        self.work = self.queue()
        self.namespaces.add_event_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda o, n: self._enqueue(n)))

    def _enqueue(self, ns: Obj) -> None:
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            self.work.add(ns["metadata"]["name"])

    async def main(self) -> None:
        await self.run_workers(self.work, self.sync)

    def _deletable(self) -> list[ResourceInfo]:
        """Every namespaced resource served: the built-in kinds, then the custom resources of
        the server's CRDs (upstream discovers them too)."""
        custom = getattr(self.api, "custom", None)
        extra = [r for r in custom.preferred() if r.namespaced] if custom is not None else []
        return [r for r in RESOURCES if r.namespaced and "delete" in r.verbs and "list" in r.verbs] + extra

    def sync(self, name: str) -> None:
        """Empty and finalize the namespace ``name`` if it is being deleted.

        Raises:
            StatusError: unexpected remaining content or a failed write (rate-limited retry).
        """
        try:
            ns = self.api.get("namespaces", name, ctx=self.ctx)
        except errors.NotFound:
            return
        meta = ns.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            return
        if (ns.get("status") or {}).get("phase") != "Terminating":
            ns = self.api.update("namespaces", {**ns, "status": {**(ns.get("status") or {}), "phase": "Terminating"}},
                                 subresource="status", ctx=self.ctx)
        if FINALIZER not in ((ns.get("spec") or {}).get("finalizers") or ()):
            return
        estimate, remaining, finalizers, errs = self._delete_all_content(name, parse_time(self.api.epoch, meta["deletionTimestamp"]))
        conds = update_conditions((ns.get("status") or {}).get("conditions") or [],
                                  deletion_conditions(remaining, finalizers, errs), self.api.timestamp())
        if conds is not None:
            try:
                ns = self.api.update("namespaces", {**ns, "status": {**(ns.get("status") or {}), "conditions": conds}},
                                     subresource="status", ctx=self.ctx)
            except (errors.Conflict, errors.NotFound):
                pass  # best effort, as upstream ("couldn't update status condition")
        if errs:
            raise _ContentRemaining("; ".join(errs))
        if estimate > 0:
            self.work.add_after(name, estimate // 2 + 1)
            return
        self._finalize(name)

    def _delete_all_content(self, ns: str, deleted_at: float) -> tuple[int, dict[str, int], dict[str, int], list[str]]:
        estimate = 0
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        errs: list[str] = []
        for info in self._deletable():
            gvr_estimate = 0
            if info.qualified == "pods":
                pods = self.api.list("pods", namespace=ns, ctx=self.ctx)["items"]
                gvr_estimate = pod_estimate(pods, deleted_at, self.api.now)
            try:
                if "deletecollection" in info.verbs:
                    self.api.delete_collection(info, namespace=ns, ctx=self.ctx, propagation_policy="Background")
                else:
                    for item in self.api.list(info, namespace=ns, ctx=self.ctx)["items"]:
                        try:
                            self.api.delete(info, item["metadata"]["name"], namespace=ns, ctx=self.ctx,
                                            propagation_policy="Background")
                        except errors.NotFound:
                            pass
            except errors.StatusError as e:
                errs.append(str(e))
                continue
            items = self.api.list(info, namespace=ns, ctx=self.ctx)["items"]
            if not items:
                continue
            fins: dict[str, int] = {}
            for item in items:
                for f in (item.get("metadata") or {}).get("finalizers") or ():
                    fins[f] = fins.get(f, 0) + 1
            if gvr_estimate == 0 and fins:
                gvr_estimate = FINALIZER_ESTIMATE_SECONDS
            elif gvr_estimate == 0:
                errs.append(f"unexpected items still remain in namespace: {ns} for gvr: {_gvr(info)}")
            remaining[f"{info.plural}.{info.group}"] = len(items)
            for f, n in fins.items():
                finalizers[f] = finalizers.get(f, 0) + n
            estimate = max(estimate, gvr_estimate)
        return estimate, remaining, finalizers, errs

    def _finalize(self, name: str) -> None:
        """Remove ``kubernetes`` from ``spec.finalizers`` (the ``finalize`` subresource)."""
        for _ in range(5):
            try:
                ns = self.api.get("namespaces", name, ctx=self.ctx)
            except errors.NotFound:
                return
            fins = sorted(f for f in (ns.get("spec") or {}).get("finalizers") or () if f != FINALIZER)
            spec = {**(ns.get("spec") or {}), "finalizers": fins}
            try:
                self.api.update("namespaces", {**ns, "spec": spec}, subresource="finalize", ctx=self.ctx)
                return
            except errors.NotFound:
                return
            except errors.Conflict:
                continue
        raise errors.Conflict.of("namespaces", "", name)
