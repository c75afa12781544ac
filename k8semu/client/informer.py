"""Informers, as client-go's ``tools/cache``: list + watch into an indexed local cache.

An :class:`Informer` lists a resource through the API server, fills its
:class:`Indexer`, marks itself synced, then watches from the list's
resourceVersion, applying every event to the cache before calling the
registered handlers (which, by convention, only enqueue keys into a
:class:`~k8semu.client.workqueue.WorkQueue`). A watch that expires (410) is
answered by a fresh list, with handlers told what changed in between, as
client-go's reflector does.

Keys are ``namespace/name`` (or ``name`` for cluster-scoped objects), as
``cache.MetaNamespaceKeyFunc``. Index values are kept in insertion-ordered
dicts, never sets, so iteration order is deterministic.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable

import trio

from ..api import errors
from ..api.apiserver import APIServer, RequestContext

__all__ = ["Indexer", "Informer", "EventHandler", "meta_namespace_key", "split_key",
           "NAMESPACE_INDEX", "namespace_index", "node_name_index", "LABELS_INDEX", "label_index",
           "CONTROLLER_UID_INDEX", "controller_uid_index"]

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]

NAMESPACE_INDEX = "namespace"


def meta_namespace_key(obj: Obj) -> str:
    """``namespace/name`` or ``name`` for cluster-scoped objects (interned: the dozen
    informers that cache one pod share its key string)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return sys.intern(f"{ns}/{meta.get('name')}") if ns else meta.get("name", "")


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of :func:`meta_namespace_key`: (namespace or None, name)."""
    if "/" in key:
        ns, name = key.split("/", 1)
        return ns, name
    return None, key


def namespace_index(obj: Obj) -> list[str]:
    """Index function: the object's namespace."""
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


#: index name of :func:`label_index` (what :meth:`Indexer.select` looks for)
LABELS_INDEX = "labels"


def label_index(obj: Obj) -> list[str]:
    """Index function: one ``namespace\x00key=value`` entry per label (for :meth:`Indexer.select`)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return [f"{ns}\x00{k}={v}" for k, v in (meta.get("labels") or {}).items()]


#: index name of :func:`controller_uid_index`
CONTROLLER_UID_INDEX = "controllerUID"


def controller_uid_index(obj: Obj) -> list[str]:
    """Index function: the uid of the object's controller (its ``ownerReferences`` entry with
    ``controller: true``), as upstream's ``controllerUIDIndex``; none for an orphan."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return [ref.get("uid", "")]
    return []


def node_name_index(obj: Obj) -> list[str]:
    """Index function for pods: ``spec.nodeName`` (empty string for unscheduled pods)."""
    return [(obj.get("spec") or {}).get("nodeName") or ""]


class Indexer:
    """A thread-unsafe (single Trio thread) cache of objects by key, with indexes.

    Args:
        indexers: index name -> function giving the object's index values.
    """

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers = dict(indexers or {})
        self._indices: dict[str, dict[str, dict[str, None]]] = {n: {} for n in self._indexers}

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add an index (rebuilt over the current contents)."""
        self._indexers[name] = fn
        idx: dict[str, dict[str, None]] = {}
        for key, obj in self._items.items():
            for v in fn(obj):
                idx.setdefault(v, {})[key] = None
        self._indices[name] = idx

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            idx = self._indices[name]
            for v in fn(obj):
                bucket = idx.get(v)
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del idx[v]

    def _index(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            idx = self._indices[name]
            for v in fn(obj):
                idx.setdefault(v, {})[key] = None

    def upsert(self, obj: Obj) -> Obj | None:
        """Store ``obj``; returns the previous version or None. An index whose values did not
        change (most updates: status writes keep labels and node) is left as it is."""
        key = meta_namespace_key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        if old is None:
            self._index(key, obj)
            return None
        for name, fn in self._indexers.items():
            before, after = fn(old), fn(obj)
            if before == after:
                continue
            idx = self._indices[name]
            for v in before:
                bucket = idx.get(v)
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del idx[v]
            for v in after:
                idx.setdefault(v, {})[key] = None
        return old

    def delete(self, obj: Obj) -> Obj | None:
        """Remove ``obj``'s key; returns what was stored or None."""
        key = meta_namespace_key(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(self, objs: Iterable[Obj]) -> None:
        """Replace the whole contents (after a relist)."""
        self._items = {}
        self._indices = {n: {} for n in self._indexers}
        for obj in objs:
            self.upsert(obj)

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get_by(self, namespace: str | None, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Obj]:
        """Every object, in key order."""
        return [self._items[k] for k in sorted(self._items)]

    def keys(self) -> list[str]:
        return sorted(self._items)

    def by_index(self, name: str, value: str) -> list[Obj]:
        """Objects whose index ``name`` has ``value``, in key order."""
        bucket = self._indices[name].get(value) or {}
        return [self._items[k] for k in sorted(bucket)]

    def select(self, namespace: str, selector: Any) -> list[Obj]:
        """Objects in ``namespace`` whose labels ``selector`` (a
        :class:`~k8semu.api.selectors.LabelSelector`) matches, in key order — what
        a lister's ``Pods(ns).List(selector)`` returns.

        With a :data:`LABELS_INDEX` index and an equality requirement in the
        selector, only the smallest matching label bucket is scanned (not the
        whole namespace); the result is the same either way.
        """
        if selector.nothing:
            return []
        idx = self._indices.get(LABELS_INDEX)
        best: dict[str, None] | None = None
        if idx is not None:
            for r in selector.requirements:
                value = selector.requires_exact_match(r.key)
                if value is not None:
                    bucket = idx.get(f"{namespace}\x00{r.key}={value}") or {}
                    if best is None or len(bucket) < len(best):
                        best = bucket
        if best is not None:
            candidates = [self._items[k] for k in sorted(best)]
        else:
            candidates = self.by_index(NAMESPACE_INDEX, namespace)
        return [o for o in candidates if selector.matches((o.get("metadata") or {}).get("labels") or {})]

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def copy(self) -> "Indexer":
        """An independent cache with the same contents and indexes (the objects themselves are
        shared: like everything the store hands out, they are never changed in place)."""
        out = Indexer()
        out._indexers = dict(self._indexers)
        out._items = dict(self._items)
        out._indices = {n: {v: dict(bucket) for v, bucket in idx.items()} for n, idx in self._indices.items()}
        return out

    def index_function(self, name: str) -> IndexFunc | None:
        """The function of index ``name``, or None."""
        return self._indexers.get(name)


class EventHandler:
    """Callbacks for cache changes; each is optional. ``on_update(old, new)``."""

    def __init__(
        self,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> None:
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete


class Informer:
    """List + watch one resource into an :class:`Indexer` and notify handlers.

    Args:
        api: the API server.
        resource: plural or ResourceInfo (``"pods"``, ``"deployments.apps"``).
        ctx: the identity the informer lists and watches with.
        namespace / label_selector / field_selector: restrict what is cached.
        indexers: extra indexes (a ``namespace`` index is always present).
        faults: a :class:`~k8semu.client.component.WatchFaults` whose knobs
            (delay, drop, freeze) this informer honours, or None.
    """

    def __init__(
        self,
        api: APIServer,
        resource: Any,
        *,
        ctx: RequestContext | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        faults: Any = None,
    ) -> None:
        self.api = api
        self.faults = faults
        self.info = api.resource(resource)
        self.ctx = ctx or RequestContext()
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.indexer = Indexer({NAMESPACE_INDEX: namespace_index, **(indexers or {})})
        self._handlers: list[EventHandler] = []
        self._synced = trio.Event()
        self._resource_version = "0"
        #: the :class:`SharedInformers` this informer may take its cache from (set by its component)
        self.shared_informers: SharedInformers | None = None
        self._shared: Informer | None = None  # the shared informer it is bound to, while it is
        self._detached: trio.Event | None = None

    @property
    def resource_version(self) -> str:
        """The resourceVersion the cache is at (the shared informer's while bound to one)."""
        return self._shared._resource_version if self._shared is not None else self._resource_version

    @resource_version.setter
    def resource_version(self, value: str) -> None:
        self._resource_version = value

    @property
    def shares_key(self) -> tuple:
        """What two informers must agree on to share one cache: resource, scope, selectors."""
        return (self.info.group, self.info.plural, self.namespace, self.label_selector, self.field_selector)

    def _bind(self, shared: "Informer") -> bool:
        """Take ``shared``'s cache instead of keeping one (False, and nothing changed, when an
        index of this informer has the name of a different index there)."""
        mine = self.indexer
        for name, fn in mine._indexers.items():
            theirs = shared.indexer.index_function(name)
            if theirs is not None and theirs is not fn:
                return False
        for name, fn in mine._indexers.items():
            if shared.indexer.index_function(name) is None:
                shared.indexer.add_indexer(name, fn)
        self._shared = shared
        self.indexer = shared.indexer
        for h in self._handlers:
            shared.add_event_handler(h)  # replays the cached objects as adds, as a fresh list would
        return True

    def detach(self) -> None:
        """Stop sharing: keep a copy of the shared cache as it is now and go on watching from its
        resourceVersion on this informer's own (so that this component's watch faults — delay,
        drop, freeze — act on its cache alone). A no-op when not bound."""
        shared = self._shared
        if shared is None:
            return
        shared._handlers = [h for h in shared._handlers if not any(h is mine for mine in self._handlers)]
        self._resource_version = shared._resource_version
        self.indexer = shared.indexer.copy()
        self._shared = None
        if self._detached is not None:
            self._detached.set()

    @property
    def has_synced(self) -> bool:
        """True once the initial list is in the cache."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Wait for the initial list (client-go's ``WaitForCacheSync``)."""
        await self._synced.wait()

    def add_event_handler(self, handler: EventHandler) -> None:
        """Register handlers; objects already cached are replayed as adds."""
        self._handlers.append(handler)
        if self._shared is not None:
            self._shared.add_event_handler(handler)
        elif handler.on_add is not None:
            for obj in self.indexer.list():
                handler.on_add(obj)

    def _list(self) -> None:
        listed = self.api.list(
            self.info, namespace=self.namespace, ctx=self.ctx,
            label_selector=self.label_selector, field_selector=self.field_selector,
        )
        old = {meta_namespace_key(o): o for o in self.indexer.list()}
        self.indexer.replace(listed["items"])
        self.resource_version = listed["metadata"]["resourceVersion"]
        for obj in listed["items"]:
            prev = old.pop(meta_namespace_key(obj), None)
            if prev is None:
                self._notify_add(obj)
            elif prev is not obj:
                self._notify_update(prev, obj)
        for key in sorted(old):
            self._notify_delete(old[key])

    def _notify_add(self, obj: Obj) -> None:
        for h in self._handlers:
            if h.on_add is not None:
                h.on_add(obj)

    def _notify_update(self, old: Obj, new: Obj) -> None:
        for h in self._handlers:
            if h.on_update is not None:
                h.on_update(old, new)

    def _notify_delete(self, obj: Obj) -> None:
        for h in self._handlers:
            if h.on_delete is not None:
                h.on_delete(obj)

    def apply_event(self, type_: str, obj: Obj) -> None:
        """Fold one watch event into the cache and notify handlers."""
        if type_ == "ADDED" or type_ == "MODIFIED":
            old = self.indexer.upsert(obj)
            if old is None:
                self._notify_add(obj)
            else:
                self._notify_update(old, obj)
        elif type_ == "DELETED":
            old = self.indexer.delete(obj)
            self._notify_delete(old if old is not None else obj)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """List, then watch forever; relist when the watch expires.

        With :attr:`shared_informers` set (kube-controller-manager's controllers, which share one
        informer per resource as upstream's ``SharedInformerFactory``), the cache is the shared
        one's until a watch fault is set on this informer's component; it then detaches
        (:meth:`detach`) and carries on from there on its own watch.
        """
        started = False
        relist = True
        group = self.shared_informers
        if group is not None and not (self.faults is not None and self.faults.active):
            shared = await group.informer(self)
            if self._bind(shared):
                self._detached = trio.Event()
                if self.faults is not None:
                    self.faults.on_fault(self.detach)
                self._synced.set()
                task_status.started()
                started = True
                try:
                    await self._detached.wait()
                finally:
                    self.detach()  # a cancelled component's handlers leave the shared informer
                relist = False  # carry on from the copy of the shared cache
        while True:
            if relist:
                self._list()
            relist = True
            self._synced.set()
            if not started:
                task_status.started()
                started = True
            try:
                stream = await self.api.watch(
                    self.info, namespace=self.namespace, ctx=self.ctx,
                    label_selector=self.label_selector, field_selector=self.field_selector,
                    resource_version=self.resource_version,
                )
            except errors.Expired:
                continue
            async for ev in stream:
                if ev.type == "ERROR":
                    break  # expired: relist
                if ev.type == "BOOKMARK":
                    self.resource_version = ev.object["metadata"]["resourceVersion"]
                    continue
                faults = self.faults
                if faults is not None:
                    if faults.delay > 0:
                        await trio.sleep_until(ev.time + faults.delay)
                    await faults.wait_thawed()
                    if faults.drop is not None and faults.drop(ev.type, ev.object):
                        self.resource_version = str(ev.revision)
                        continue
                self.resource_version = str(ev.revision)
                self.apply_event(ev.type, ev.object)


class SharedInformers:
    """One informer per resource (and scope and selectors) for a group of components, as
    upstream's ``SharedInformerFactory`` gives kube-controller-manager's controllers one watch
    and one cache per resource. Each shared informer runs as its own task in ``nursery`` and
    lists and watches with the identity of the first component that asked for it.

    Args:
        api: the API server.
        nursery: where the shared informers run (the runtime's: they outlive any one component).
    """

    def __init__(self, api: APIServer, nursery: trio.Nursery) -> None:
        self.api = api
        self._nursery = nursery
        self._informers: dict[tuple, Informer] = {}

    async def informer(self, like: Informer) -> Informer:
        """The running, synced shared informer for what ``like`` watches (started on first use)."""
        key = like.shares_key
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(self.api, like.info, ctx=like.ctx, namespace=like.namespace,
                           label_selector=like.label_selector, field_selector=like.field_selector)
            self._informers[key] = inf
            await self._nursery.start(inf.run)
        await inf.wait_synced()
        return inf
