"""The garbage collector (``generic-garbage-collector``), after upstream's
``pkg/controller/garbagecollector``.

It watches every served resource (but Events), custom resources included
(a monitor starts when a CRD makes one served), and keeps an ownerReferences
graph implicitly, as two indexes on each informer's cache: objects by
``metadata.uid`` and dependents by owner uid. Two work queues, as upstream:

*attempt to delete* — an item (resource, namespace, name, uid) whose owners
might be gone, or an owner that is deleting its dependents in the foreground.
For an item that is not itself being deleted, each ownerReference is checked
with a **live GET** of the owner (never the cache: an owner that simply has
not been observed yet is not absent), as ``attemptToDeleteItem`` does:

* *dangling*: the owner is absent, or present with another uid;
* *waiting for dependents deletion*: the owner has a ``deletionTimestamp``
  and the ``foregroundDeletion`` finalizer;
* *solid*: otherwise.

With a solid owner, only the references to dangling / waiting owners are
removed from the item. Without one, the item is deleted (uid precondition):
with ``Foreground`` propagation when some owner is waiting and the item has
dependents of its own, else with the policy its finalizers ask for
(``orphan`` → Orphan, ``foregroundDeletion`` → Foreground, otherwise
Background).

An owner with ``deletionTimestamp`` and ``foregroundDeletion`` has its
dependents queued; once no dependent with ``blockOwnerDeletion: true``
remains, the finalizer is removed (and the API server then deletes the owner).

*attempt to orphan* — an owner with ``deletionTimestamp`` and the ``orphan``
finalizer: the references to it are removed from every dependent, then the
finalizer is removed.

Writes are plain GET + PUT with the object's resourceVersion, so a concurrent
change is a Conflict and the item is retried with back-off.
"""

from __future__ import annotations

from typing import Any

from ..api import errors
from ..api.customresources import CRD_RESOURCE
from ..api.resources import RESOURCES, ResourceInfo, by_kind
from ..client.component import Component
from ..client.informer import EventHandler, Informer

__all__ = ["GarbageCollector", "Item", "classify_owners", "deletion_policy"]

Obj = dict[str, Any]
#: (qualified resource, namespace or "", name, uid)
Item = tuple[str, str, str, str]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_IGNORED = frozenset({"events", "events.events.k8s.io"})


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _uid_index(obj: Obj) -> list[str]:
    uid = _meta(obj).get("uid")
    return [uid] if uid else []


def _owner_index(obj: Obj) -> list[str]:
    return sorted({r["uid"] for r in _meta(obj).get("ownerReferences") or () if r.get("uid")})


def deleting_dependents(obj: Obj) -> bool:
    """Being deleted in the foreground (``deletionTimestamp`` + ``foregroundDeletion``)."""
    m = _meta(obj)
    return bool(m.get("deletionTimestamp")) and FOREGROUND in (m.get("finalizers") or ())


def orphaning(obj: Obj) -> bool:
    """Being deleted with the ``orphan`` finalizer still present."""
    m = _meta(obj)
    return bool(m.get("deletionTimestamp")) and ORPHAN in (m.get("finalizers") or ())


def classify_owners(refs: list[Obj], owners: list[Obj | None]) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """Split ownerReferences into (solid, dangling, waiting) given each owner's live state.

    ``owners[i]`` is the live object ``refs[i]`` names (None if it does not exist).
    """
    solid, dangling, waiting = [], [], []
    for ref, owner in zip(refs, owners):
        if owner is None or _meta(owner).get("uid") != ref.get("uid"):
            dangling.append(ref)
        elif deleting_dependents(owner):
            waiting.append(ref)
        else:
            solid.append(ref)
    return solid, dangling, waiting


def deletion_policy(obj: Obj) -> str:
    """The propagation the collector deletes an orphaned dependent with (its finalizers decide)."""
    fins = _meta(obj).get("finalizers") or ()
    if ORPHAN in fins:
        return "Orphan"
    if FOREGROUND in fins:
        return "Foreground"
    return "Background"


class GarbageCollector(Component):
    """kube-controller-manager's garbage collector (see module docstring)."""

    name = "generic-garbage-collector"

    def __init__(self, api: Any, **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.monitors: dict[str, Informer] = {}
        for info in (*RESOURCES, *self._custom()):
            if info.qualified in _IGNORED or "list" not in info.verbs or "watch" not in info.verbs:
                continue
            self._monitor(info)
        self.attempt_to_delete = self.queue("garbage_collector_attempt_to_delete")
        self.attempt_to_orphan = self.queue("garbage_collector_attempt_to_orphan")
        # upstream re-reads discovery to monitor the resources CRDs add; here a CRD change
        # sets this, and main() starts monitors for what the API server now serves
        self._crds_changed: Any = None
        if getattr(api, "custom", None) is not None:
            crds = self.informer(CRD_RESOURCE)
            crds.add_event_handler(EventHandler(on_add=lambda o: self._wake(), on_update=lambda a, b: self._wake()))

    def _custom(self) -> list[ResourceInfo]:
        """The custom resources the API server serves now (their preferred versions)."""
        custom = getattr(self.api, "custom", None)
        return list(custom.preferred()) if custom is not None else []

    def _monitor(self, info: ResourceInfo) -> Informer:
        inf = self.informer(info, indexers={"uid": _uid_index, "owner": _owner_index})
        self.monitors[info.qualified] = inf
        inf.add_event_handler(EventHandler(
            on_add=lambda o, i=info: self._on_add(i, o),
            on_update=lambda old, new, i=info: self._on_update(i, old, new),
            on_delete=lambda o, i=info: self._on_delete(i, o)))
        return inf

    def _wake(self) -> None:
        if self._crds_changed is not None:
            self._crds_changed.set()

    def _info_for_ref(self, ref: Obj) -> ResourceInfo | None:
        """The resource an ownerReference names (a built-in kind or a served custom one)."""
        api_version, kind = ref.get("apiVersion") or "", ref.get("kind") or ""
        try:
            resolve = getattr(self.api, "resource_for_kind", None)
            return resolve(api_version, kind) if resolve is not None else by_kind(api_version, kind)
        except LookupError:
            return None

    # ------------------------------------------------------------------ graph lookups
    @staticmethod
    def _item(info: ResourceInfo, obj: Obj) -> Item:
        m = _meta(obj)
        return (info.qualified, m.get("namespace") or "", m.get("name") or "", m.get("uid") or "")

    def _by_uid(self, uid: str) -> list[tuple[ResourceInfo, Obj]]:
        return [(inf.info, o) for inf in self.monitors.values() for o in inf.indexer.by_index("uid", uid)]

    def dependents(self, uid: str) -> list[tuple[ResourceInfo, Obj]]:
        """Every cached object with an ownerReference to ``uid``, in resource then key order."""
        return [(inf.info, o) for inf in self.monitors.values() for o in inf.indexer.by_index("owner", uid)]

    # ------------------------------------------------------------------ event handlers
    def _on_add(self, info: ResourceInfo, obj: Obj) -> None:
        m = _meta(obj)
        refs = m.get("ownerReferences") or ()
        if any(not self._by_uid(r.get("uid", "")) for r in refs):
            self.attempt_to_delete.add(self._item(info, obj))  # an owner not (yet) observed: verify
        self._transitions(info, None, obj)

    def _on_update(self, info: ResourceInfo, old: Obj, new: Obj) -> None:
        if old is new:
            return
        old_refs = _meta(old).get("ownerReferences") or []
        new_refs = _meta(new).get("ownerReferences") or []
        if old_refs != new_refs:
            self.attempt_to_delete.add(self._item(info, new))
            gone = {r.get("uid") for r in old_refs} - {r.get("uid") for r in new_refs}
            for uid in sorted(u for u in gone if u):
                self._enqueue_owner(uid)  # an owner waiting for this dependent may be done
        self._transitions(info, old, new)

    def _transitions(self, info: ResourceInfo, old: Obj | None, new: Obj) -> None:
        if orphaning(new) and (old is None or not orphaning(old)):
            self.attempt_to_orphan.add(self._item(info, new))
        if deleting_dependents(new) and (old is None or not deleting_dependents(old)):
            self.attempt_to_delete.add(self._item(info, new))
            for dinfo, dep in self.dependents(_meta(new).get("uid", "")):
                self.attempt_to_delete.add(self._item(dinfo, dep))

    def _on_delete(self, info: ResourceInfo, obj: Obj) -> None:
        m = _meta(obj)
        for dinfo, dep in self.dependents(m.get("uid", "")):
            self.attempt_to_delete.add(self._item(dinfo, dep))
        for ref in m.get("ownerReferences") or ():
            self._enqueue_owner(ref.get("uid", ""))

    def _enqueue_owner(self, uid: str) -> None:
        for oinfo, owner in self._by_uid(uid):
            if deleting_dependents(owner):
                self.attempt_to_delete.add(self._item(oinfo, owner))

    async def main(self) -> None:
        import trio

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.run_workers, self.attempt_to_delete, self.attempt_to_delete_item)
            nursery.start_soon(self.run_workers, self.attempt_to_orphan, self.attempt_to_orphan_item)
            if getattr(self.api, "custom", None) is not None:
                nursery.start_soon(self._monitor_custom, nursery)

    async def _monitor_custom(self, nursery: Any) -> None:
        """Start a monitor for each custom resource a CRD change made served (never stopped:
        a deleted CRD's instances are gone with it)."""
        import trio

        while True:
            self._crds_changed = trio.Event()
            for info in self._custom():
                if info.qualified not in self.monitors:
                    await nursery.start(self._monitor(info).run)
            await self._crds_changed.wait()

    # ------------------------------------------------------------------ live reads
    def _live(self, resource: str, namespace: str, name: str) -> Obj | None:
        try:
            return self.api.get(resource, name, namespace=namespace or None, ctx=self.ctx)
        except errors.NotFound:
            return None

    def _live_owner(self, obj: Obj, ref: Obj) -> Obj | None | bool:
        """The owner's live state; True when its kind is unknown (treated as solid)."""
        info = self._info_for_ref(ref)
        if info is None:
            return True
        ns = _meta(obj).get("namespace") or "" if info.namespaced else ""
        if info.namespaced and not ns:
            return None  # a cluster-scoped dependent cannot have a namespaced owner
        return self._live(info.qualified, ns, ref.get("name") or "")

    # ------------------------------------------------------------------ attempt to delete
    def attempt_to_delete_item(self, item: Item) -> None:
        """Upstream ``attemptToDeleteItem`` for one object (see module docstring).

        Raises:
            StatusError: a failed write (Conflict…); the item is retried with back-off.
        """
        resource, ns, name, uid = item
        obj = self._live(resource, ns, name)
        if obj is None or _meta(obj).get("uid") != uid:
            return
        meta = _meta(obj)
        if meta.get("deletionTimestamp") and not deleting_dependents(obj):
            return
        if deleting_dependents(obj):
            self._process_deleting_dependents(resource, obj)
            return
        refs = list(meta.get("ownerReferences") or [])
        if not refs:
            return
        owners: list[Obj | None] = []
        for ref in refs:
            live = self._live_owner(obj, ref)
            owners.append({"metadata": {"uid": ref.get("uid")}} if live is True else live)
        solid, dangling, waiting = classify_owners(refs, owners)
        if solid:
            if not dangling and not waiting:
                return
            drop = {r.get("uid") for r in dangling + waiting}
            keep = [r for r in refs if r.get("uid") not in drop]
            self.api.update(resource, {**obj, "metadata": {**meta, "ownerReferences": keep}},
                            namespace=ns or None, ctx=self.ctx)
            return
        if waiting and self.dependents(uid):
            policy = "Foreground"
        else:
            policy = deletion_policy(obj)
        try:
            self.api.delete(resource, name, namespace=ns or None, ctx=self.ctx,
                            propagation_policy=policy, preconditions={"uid": uid})
        except errors.NotFound:
            pass

    def _process_deleting_dependents(self, resource: str, owner: Obj) -> None:
        """Foreground: queue blocking dependents, or drop ``foregroundDeletion`` once none remain."""
        uid = _meta(owner)["uid"]
        blocking = []
        for dinfo, dep in self.dependents(uid):
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in _meta(dep).get("ownerReferences") or ()):
                blocking.append((dinfo, dep))
        if not blocking:
            self._remove_finalizer(resource, owner, FOREGROUND)
            return
        for dinfo, dep in blocking:
            if not deleting_dependents(dep):
                self.attempt_to_delete.add(self._item(dinfo, dep))

    def _remove_finalizer(self, resource: str, obj: Obj, finalizer: str) -> None:
        meta = _meta(obj)
        fins = [f for f in meta.get("finalizers") or () if f != finalizer]
        new_meta = {**meta, "finalizers": fins} if fins else {k: v for k, v in meta.items() if k != "finalizers"}
        try:
            self.api.update(resource, {**obj, "metadata": new_meta},
                            namespace=meta.get("namespace"), ctx=self.ctx)
        except errors.NotFound:
            pass

    # ------------------------------------------------------------------ attempt to orphan
    def attempt_to_orphan_item(self, item: Item) -> None:
        """Upstream ``attemptToOrphanWorker``: strip references to the owner from its
        dependents, then remove the ``orphan`` finalizer.

        Raises:
            StatusError: a failed write; the item is retried with back-off.
        """
        resource, ns, name, uid = item
        for dinfo, dep in self.dependents(uid):
            dm = _meta(dep)
            live = self._live(dinfo.qualified, dm.get("namespace") or "", dm.get("name") or "")
            if live is None or _meta(live).get("uid") != dm.get("uid"):
                continue
            lm = _meta(live)
            refs = [r for r in lm.get("ownerReferences") or () if r.get("uid") != uid]
            if len(refs) == len(lm.get("ownerReferences") or ()):
                continue
            new_meta = {**lm, "ownerReferences": refs} if refs else {
                k: v for k, v in lm.items() if k != "ownerReferences"}
            try:
                self.api.update(dinfo.qualified, {**live, "metadata": new_meta},
                                namespace=lm.get("namespace"), ctx=self.ctx)
            except errors.NotFound:
                continue
        owner = self._live(resource, ns, name)
        if owner is None or _meta(owner).get("uid") != uid or not orphaning(owner):
            return
        self._remove_finalizer(resource, owner, ORPHAN)
