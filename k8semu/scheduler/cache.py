"""The scheduler cache and its per-cycle snapshot, as upstream ``pkg/scheduler/backend/cache``.

Design
======

:class:`Cache` is fed by informer events (``add_node`` … ``remove_pod``) and by
the scheduling loop itself (``assume_pod`` right after a decision, then
``finish_binding``, or ``forget_pod`` when binding fails). An assumed pod counts
on its node at once, so back-to-back decisions never overcommit a node even
though the API server has not yet confirmed the binding; the informer's later
``add_pod`` for that pod *confirms* it instead of adding it twice.

:meth:`Cache.snapshot` returns an immutable :class:`Snapshot` for one
scheduling cycle. NodeInfos are copy-on-write: the first change to a node
after a snapshot clones its NodeInfo, so building the next snapshot costs one
list copy (a C ``memcpy``) plus patching the nodes that changed, not a walk
over 5,000 nodes in Python. Node order is upstream's node tree order: zones in
order of first appearance, nodes interleaved round-robin across zones.

Other objects the plugins read (namespace labels for ``namespaceSelector``,
PVCs, PDBs, and the Services / ReplicationControllers / ReplicaSets /
StatefulSets behind the default topology spreading) are fed with
:meth:`Cache.upsert_object` / :meth:`Cache.delete_object`.

Terminal pods (``Succeeded`` / ``Failed``) are treated as deleted, as the
upstream scheduler's pod informer filters them out; unassigned pods are
ignored (they belong to the scheduling queue).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Mapping

from k8semu.api.pods import is_terminal
from k8semu.api.selectors import MapSelectorIndex

from .types import NodeInfo, PodInfo, pod_key

__all__ = ["Cache", "Snapshot", "NodeInfo", "zone_key"]

_OBJECT_KINDS = ("Namespace", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "PodDisruptionBudget",
                 "Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def zone_key(node: Mapping[str, Any]) -> str:
    """Upstream ``utilnode.GetZoneKey``: ``region:\\x00:zone`` from the topology labels, or ``""``."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get("topology.kubernetes.io/zone") or labels.get("failure-domain.beta.kubernetes.io/zone", "")
    region = labels.get("topology.kubernetes.io/region") or labels.get("failure-domain.beta.kubernetes.io/region", "")
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def _place_sorted(idx: list[int], nodes: list[NodeInfo], pos: int, i: int, ni: NodeInfo | None) -> None:
    """Keep ``idx`` (sorted) and the parallel ``nodes`` in step: put ``ni`` at index ``i``
    (``pos`` is ``bisect_left(idx, i)``), or drop index ``i`` when ``ni`` is None."""
    present = pos < len(idx) and idx[pos] == i
    if ni is None:
        if present:
            del idx[pos], nodes[pos]
    elif present:
        nodes[pos] = ni
    else:
        idx.insert(pos, i)
        nodes.insert(pos, ni)


def _obj_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name', '')}" if ns else meta.get("name", "")


@dataclass(frozen=True, eq=False)
class Snapshot:
    """A read-only view of the cluster for one scheduling cycle.

    Attributes:
        node_infos: NodeInfos of the existing nodes, in node tree order.
        by_name: ``{node name: NodeInfo}`` for the same nodes.
        have_pods_with_affinity: nodes hosting a pod with any pod (anti-)affinity.
        have_pods_with_required_anti_affinity: nodes hosting a pod with required anti-affinity.
        image_num_nodes: ``{normalised image: number of nodes that have it}``.
        objects: ``{kind: {"ns/name" or "name": object}}`` for the kinds in
            :meth:`Cache.upsert_object`.
        service_selectors: the Services' selectors, to find those selecting a pod
            (:meth:`services_selecting`).
        any_tainted / any_unschedulable: whether any node has taints / is cordoned
            (lets the taint and cordon checks skip a whole cycle).
    """

    node_infos: list[NodeInfo]
    by_name: dict[str, NodeInfo]
    have_pods_with_affinity: list[NodeInfo] = field(default_factory=list)
    have_pods_with_required_anti_affinity: list[NodeInfo] = field(default_factory=list)
    image_num_nodes: Mapping[str, int] = field(default_factory=dict)
    objects: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    any_tainted: bool = True
    any_unschedulable: bool = True
    service_selectors: MapSelectorIndex = field(default_factory=MapSelectorIndex)

    @classmethod
    def of(cls, nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]] = (),
           objects: list[Mapping[str, Any]] = ()) -> "Snapshot":
        """Build a snapshot from plain lists (tests, the ``explain-scheduling`` CLI)."""
        c = Cache()
        for n in nodes:
            c.add_node(n)
        for p in pods:
            c.add_pod(p)
        for o in objects:
            c.upsert_object(o)
        return c.snapshot()

    def get(self, name: str) -> NodeInfo | None:
        """The NodeInfo of node ``name`` or None."""
        return self.by_name.get(name)

    def __len__(self) -> int:
        return len(self.node_infos)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of Namespace ``namespace`` (``{}`` when it is unknown to the cache)."""
        ns = self.objects.get("Namespace", {}).get(namespace)
        return ((ns.get("metadata") or {}).get("labels") or {}) if ns is not None else {}

    def list_objects(self, kind: str, namespace: str | None = None) -> list[Mapping[str, Any]]:
        """Objects of ``kind`` (optionally in ``namespace``), sorted by key."""
        objs = self.objects.get(kind, {})
        prefix = f"{namespace}/" if namespace is not None else ""
        return [objs[k] for k in sorted(objs) if k.startswith(prefix)]

    def get_object(self, kind: str, key: str) -> Mapping[str, Any] | None:
        """One object by ``"ns/name"`` (namespaced) or ``"name"``."""
        return self.objects.get(kind, {}).get(key)

    def services_selecting(self, namespace: str, labels: Mapping[str, str] | None) -> list[Mapping[str, str]]:
        """The selectors of the Services in ``namespace`` that select a pod with ``labels``, in
        Service key order (upstream ``GetPodServices``; a Service without a selector selects nothing)."""
        idx = self.service_selectors
        return [idx.selector(k) for k in idx.matching(namespace, labels)]  # type: ignore[misc]


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    node: str
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    """The scheduler's view of nodes and placed pods (upstream ``cacheImpl``).

    Args:
        assumed_pod_ttl: seconds after ``finish_binding`` an assumed pod that
            was never confirmed by an informer ``add_pod`` expires in
            :meth:`cleanup_assumed_pods`. ``None`` (upstream's default since
            v1.27, ``durationToExpireAssumedPod = 0``) means never.
    """

    def __init__(self, assumed_pod_ttl: float | None = None) -> None:
        self._ttl = assumed_pod_ttl
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._dirty: dict[str, None] = {}
        self._order_dirty = True
        self._zones: dict[str, list[str]] = {}
        self._node_zone: dict[str, str] = {}
        self._images: dict[str, int] = {}
        self._objects: dict[str, dict[str, Mapping[str, Any]]] = {k: {} for k in _OBJECT_KINDS}
        self._dirty_kinds: dict[str, None] = dict.fromkeys(_OBJECT_KINDS)
        self._services = MapSelectorIndex()
        self._images_dirty = True
        self._flags_dirty = True
        self._last: Snapshot | None = None
        self._index: dict[str, int] = {}
        self._tainted: dict[str, None] = {}
        self._cordoned: dict[str, None] = {}
        # sorted node-tree indices of the nodes in the last snapshot's
        # have_pods_with_affinity / have_pods_with_required_anti_affinity lists
        self._aff_idx: list[int] = []
        self._anti_idx: list[int] = []

    # --- copy-on-write plumbing -------------------------------------------
    def _writable(self, name: str) -> NodeInfo:
        ni = self._nodes.get(name)
        if ni is None:
            ni = self._nodes[name] = NodeInfo(name)
        elif name not in self._dirty:
            ni = self._nodes[name] = ni.clone()
        self._dirty[name] = None
        return ni

    # --- nodes --------------------------------------------------------------
    def add_node(self, node: Mapping[str, Any]) -> None:
        """A Node was added (or an update for a node not seen yet)."""
        self.update_node(None, node)

    def update_node(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        """A Node changed: allocatable, labels, taints and images are re-read from ``new``."""
        name = new["metadata"]["name"]
        ni = self._writable(name)
        if ni.node is not None:
            self._count_images(ni, -1)
        ni.set_node(new)
        ni.generation += 1
        self._count_images(ni, 1)
        self._flag(name, ni)
        zone = zone_key(new)
        if self._node_zone.get(name) != zone:
            self._tree_remove(name)
            self._node_zone[name] = zone
            self._zones.setdefault(zone, []).append(name)
            self._order_dirty = True

    def remove_node(self, node: Mapping[str, Any]) -> None:
        """A Node was deleted. Pods still bound to it keep a node-less entry until removed."""
        name = node["metadata"]["name"]
        if name not in self._nodes:
            return
        ni = self._writable(name)
        if ni.node is not None:
            self._count_images(ni, -1)
        ni.set_node(None)
        self._flag(name, ni)
        self._tree_remove(name)
        if not ni.pods:
            del self._nodes[name]
            self._dirty.pop(name, None)
        self._order_dirty = True

    def _flag(self, name: str, ni: NodeInfo) -> None:
        before = (bool(self._tainted), bool(self._cordoned))
        if ni.taints:
            self._tainted[name] = None
        else:
            self._tainted.pop(name, None)
        if ni.unschedulable:
            self._cordoned[name] = None
        else:
            self._cordoned.pop(name, None)
        if before != (bool(self._tainted), bool(self._cordoned)):
            self._flags_dirty = True  # forces a new Snapshot with the new flags

    def _tree_remove(self, name: str) -> None:
        zone = self._node_zone.pop(name, None)
        if zone is not None:
            names = self._zones[zone]
            names.remove(name)
            if not names:
                del self._zones[zone]
            self._order_dirty = True

    def _count_images(self, ni: NodeInfo, sign: int) -> None:
        for img in ni.images:
            n = self._images.get(img, 0) + sign
            if n > 0:
                self._images[img] = n
            else:
                self._images.pop(img, None)
        if ni.images:
            self._images_dirty = True

    # --- pods -----------------------------------------------------------------
    def assume_pod(self, pod: Mapping[str, Any]) -> None:
        """Count ``pod`` (with ``spec.nodeName`` set to the chosen node) before binding.

        Raises:
            ValueError: the pod is already in the cache, or has no ``spec.nodeName``.
        """
        key = pod_key(pod)
        if key in self._pods:
            raise ValueError(f"pod {key} is in the cache, so can't be assumed")
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            raise ValueError(f"pod {key} has no spec.nodeName, so can't be assumed")
        self._place(PodInfo.of(pod), node, assumed=True)

    def finish_binding(self, pod: Mapping[str, Any], now: float) -> None:
        """The bind call returned; the assumed pod may expire ``assumed_pod_ttl`` after ``now``."""
        st = self._pods.get(pod_key(pod))
        if st is not None and st.assumed:
            st.binding_finished = True
            st.deadline = None if self._ttl is None else now + self._ttl

    def forget_pod(self, pod: Mapping[str, Any]) -> None:
        """Undo :meth:`assume_pod` (binding failed).

        Raises:
            ValueError: the pod is not an assumed pod of the cache.
        """
        key = pod_key(pod)
        st = self._pods.get(key)
        if st is None or not st.assumed:
            raise ValueError(f"pod {key} wasn't assumed so cannot be forgotten")
        self._unplace(key)

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        """Informer add of an assigned pod; confirms an assumed pod."""
        key = pod_key(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        if is_terminal(pod):
            self.remove_pod(pod)
            return
        st = self._pods.get(key)
        if st is not None:
            # an assumed pod confirmed (possibly on another node), or a re-add
            self._unplace(key)
        self._place(PodInfo.of(pod), node, assumed=False)

    def update_pod(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        """Informer update of an assigned pod (terminal pods are removed)."""
        self.add_pod(new)

    def remove_pod(self, pod: Mapping[str, Any]) -> None:
        """Informer delete of a pod (unknown pods are ignored)."""
        key = pod_key(pod)
        if key in self._pods:
            self._unplace(key)

    def cleanup_assumed_pods(self, now: float) -> list[str]:
        """Drop assumed pods whose binding finished and whose TTL passed; returns their keys."""
        gone = [k for k, st in self._pods.items()
                if st.assumed and st.binding_finished and st.deadline is not None and st.deadline <= now]
        for k in gone:
            self._unplace(k)
        return gone

    def is_assumed(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` is assumed and not yet confirmed by an informer event."""
        st = self._pods.get(pod_key(pod))
        return st is not None and st.assumed

    def _place(self, pi: PodInfo, node: str, assumed: bool) -> None:
        self._writable(node).add_pod(pi)
        self._pods[pi.key] = _PodState(pi, node, assumed)

    def _unplace(self, key: str) -> None:
        st = self._pods.pop(key)
        ni = self._writable(st.node)
        ni.remove_pod(key)
        if ni.node is None and not ni.pods:
            del self._nodes[st.node]
            self._dirty.pop(st.node, None)

    # --- other objects ------------------------------------------------------------
    def upsert_object(self, obj: Mapping[str, Any]) -> None:
        """Add or replace a Namespace, PVC, PV, StorageClass, PDB, Service, RC, ReplicaSet or StatefulSet.

        Objects of other kinds are ignored.
        """
        kind = obj.get("kind", "")
        objs = self._objects.get(kind)
        if objs is not None:
            key = _obj_key(obj)
            objs[key] = obj
            self._dirty_kinds[kind] = None
            if kind == "Service":
                self._services.set(key, (obj.get("metadata") or {}).get("namespace") or "",
                                   (obj.get("spec") or {}).get("selector"))

    def get_object(self, kind: str, key: str) -> Mapping[str, Any] | None:
        """An object given to :meth:`upsert_object`, by ``"ns/name"`` or ``"name"`` (or None)."""
        return self._objects.get(kind, {}).get(key)

    def delete_object(self, obj: Mapping[str, Any]) -> None:
        """Forget an object given to :meth:`upsert_object`."""
        kind = obj.get("kind", "")
        objs = self._objects.get(kind)
        key = _obj_key(obj)
        if objs is not None and objs.pop(key, None) is not None:
            self._dirty_kinds[kind] = None
            if kind == "Service":
                self._services.discard(key)

    # --- inspection -----------------------------------------------------------------
    def node_count(self) -> int:
        """Number of nodes with a Node object."""
        return len(self._node_zone)

    def pod_count(self) -> int:
        """Number of pods in the cache (assumed included)."""
        return len(self._pods)

    # --- snapshots -------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """An immutable view for one scheduling cycle; cost O(changed nodes) after the first
        (plus a C-level copy of the node list and name map when something changed)."""
        last = self._last
        dirty = self._dirty
        if last is None or self._order_dirty:
            order = self._tree_order()
            infos = [self._nodes[n] for n in order]
            self._index = {n: i for i, n in enumerate(order)}
            by_name = dict(zip(order, infos))
            aff_idx = [i for i, ni in enumerate(infos) if any(p.has_affinity for p in ni.pods)]
            anti_idx = [i for i, ni in enumerate(infos) if any(p.required_anti_affinity for p in ni.pods)]
            self._aff_idx, self._anti_idx = aff_idx, anti_idx
            aff = [infos[i] for i in aff_idx]
            anti = [infos[i] for i in anti_idx]
        elif not dirty:
            infos, by_name = last.node_infos, last.by_name
            aff, anti = last.have_pods_with_affinity, last.have_pods_with_required_anti_affinity
        else:
            infos = list(last.node_infos)
            by_name = dict(last.by_name)
            aff, anti = last.have_pods_with_affinity, last.have_pods_with_required_anti_affinity
            aff_copied = anti_copied = False
            for name in dirty:
                i = self._index.get(name)
                if i is None:
                    continue
                ni = self._nodes[name]
                infos[i] = by_name[name] = ni
                has_aff = has_anti = False
                for p in ni.pods:
                    if p.has_affinity:
                        has_aff = True
                        if p.required_anti_affinity:
                            has_anti = True
                            break
                pos = bisect_left(self._aff_idx, i)
                if has_aff or (pos < len(self._aff_idx) and self._aff_idx[pos] == i):
                    if not aff_copied:
                        aff, self._aff_idx, aff_copied = list(aff), list(self._aff_idx), True
                    _place_sorted(self._aff_idx, aff, pos, i, ni if has_aff else None)
                pos = bisect_left(self._anti_idx, i)
                if has_anti or (pos < len(self._anti_idx) and self._anti_idx[pos] == i):
                    if not anti_copied:
                        anti, self._anti_idx, anti_copied = list(anti), list(self._anti_idx), True
                    _place_sorted(self._anti_idx, anti, pos, i, ni if has_anti else None)
        # other objects: copied per kind, only the kinds that changed since the last snapshot
        objects = last.objects if last is not None else {}
        services = last.service_selectors if last is not None else self._services
        if self._dirty_kinds:
            objects = dict(objects)
            for kind in self._dirty_kinds:
                objects[kind] = dict(self._objects[kind])
            if "Service" in self._dirty_kinds:
                services = self._services.copy()
        images = dict(self._images) if self._images_dirty or last is None else last.image_num_nodes
        flags_dirty = self._flags_dirty
        self._dirty = {}
        self._order_dirty = False
        self._dirty_kinds = {}
        self._images_dirty = self._flags_dirty = False
        if (last is not None and not flags_dirty and infos is last.node_infos
                and aff is last.have_pods_with_affinity and anti is last.have_pods_with_required_anti_affinity
                and objects is last.objects and images is last.image_num_nodes):
            return last
        snap = Snapshot(infos, by_name, aff, anti, images, objects, bool(self._tainted), bool(self._cordoned),
                        services)
        self._last = snap
        return snap

    def _tree_order(self) -> list[str]:
        """Upstream ``nodeTree.list``: round-robin over zones in order of first appearance."""
        zones = list(self._zones.values())
        out: list[str] = []
        depth = max((len(z) for z in zones), default=0)
        for i in range(depth):
            for z in zones:
                if i < len(z):
                    out.append(z[i])
        return out
