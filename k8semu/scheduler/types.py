"""The scheduler's per-node and per-pod bookkeeping, as upstream ``framework/types.go``.

Design
======

:class:`PodInfo` is a pod dict plus everything the plugins would otherwise
re-derive on every cycle: its resource requests (exact and "non-zero"), its
parsed (anti-)affinity terms, host ports and priority. It is built once when
the pod enters the cache (or once per cycle for the pod being scheduled).

:class:`NodeInfo` is a node dict plus the pods placed on it and the sums the
Filter and Score plugins read: ``requested`` (exact requests),
``non_zero_requested`` (cpu/memory with upstream's 100m / 200Mi defaults for
containers that request nothing, used for scoring), ``allocatable``,
``used_ports``, the pods with (required anti-)affinity and the node's images.

NodeInfos are **copy-on-write**: the :class:`~k8semu.scheduler.cache.Cache`
mutates a NodeInfo only while it is private to the cache; once a snapshot
holds it, the cache clones it before the next change. Plugins must treat a
NodeInfo as read-only (preemption works on :meth:`NodeInfo.clone`).

Units: cpu in millicores, memory / ephemeral-storage / extended resources as
integer values (bytes or counts), ``allowed_pod_number`` a count.

Because snapshot NodeInfos never change, work that depends only on a node (and
on a few facts about the pod) can be kept across cycles: :class:`NodeMemo`
memoises per-node values (scores, "has room"), :class:`NodeShareSum` keeps sums
over nodes (topology-pair counts) up to date by looking only at the nodes that
changed. Quantities are parsed once per distinct string (``_amount``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from operator import attrgetter
from typing import Any, Mapping, Sequence, Union

from k8semu.api.quantity import parse_quantity
from k8semu.api.selectors import LabelSelector, selector_from_label_selector

__all__ = [
    "CPU",
    "MEMORY",
    "EPHEMERAL_STORAGE",
    "PODS",
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_MEMORY_REQUEST",
    "Resource",
    "AffinityTerm",
    "WeightedAffinityTerm",
    "PodInfo",
    "NodeInfo",
    "pod_key",
    "pod_priority",
    "pod_requests",
    "is_scalar_resource",
    "normalized_image_name",
    "NodeMemo",
    "NodeShareSum",
]

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what a container
# without a cpu/memory request counts as when *scoring* (never when fitting).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def is_scalar_resource(name: str) -> bool:
    """Extended, hugepages or prefixed-native resources (upstream ``IsScalarResourceName``)."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def pod_key(pod: Mapping[str, Any]) -> str:
    """The cache key of a pod: its UID, or ``namespace/name`` when it has none."""
    meta = pod.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def pod_priority(pod: Mapping[str, Any]) -> int:
    """``spec.priority`` or 0 (upstream ``corev1helpers.PodPriority``)."""
    p = (pod.get("spec") or {}).get("priority")
    return int(p) if p is not None else 0


# An amount in the unit pod_requests returns (cpu millicores, the rest whole units): an int
# when exact, else the exact Fraction (rounded up only after summing, as upstream).
Amount = Union[int, Fraction]
_AMOUNTS: dict[tuple[bool, str], Any] = {}


def _amount(name: str, v: Any) -> Any:
    """``v`` (a wire quantity) in millicores for cpu, else in units; memoised per string,
    so the hot path never parses a quantity twice."""
    is_cpu = name == CPU
    if type(v) is str:
        hit = _AMOUNTS.get((is_cpu, v))
        if hit is not None:
            return hit
    x = parse_quantity(v).value
    if is_cpu:
        x = x * 1000
    out = int(x) if x.denominator == 1 else x
    if type(v) is str:
        if len(_AMOUNTS) > 4096:
            _AMOUNTS.clear()
        _AMOUNTS[(is_cpu, v)] = out
    return out


def pod_requests(pod: Mapping[str, Any], *, non_missing_defaults: bool = False) -> dict[str, int]:
    """A pod's effective requests, as upstream ``resourcehelper.PodRequests``.

    ``max(sum(containers) + sum(restartable init containers),
    max_i(init container i + restartable init containers started before it))
    + spec.overhead``, per resource. With ``non_missing_defaults`` a container
    without a cpu (memory) request counts 100m (200Mi) — the
    ``NonMissingContainerRequests`` option the scoring plugins use; an explicit
    ``0`` stays 0. Returns ``{resource: int}``: ``cpu`` in millicores, the rest
    in integer units (bytes, counts), each rounded up. Resources summing to zero
    are kept (as upstream keeps the keys).

    In-place resize (1.33's ``UseStatusResources``): a container (or sidecar) whose status
    reports ``resources`` counts, per resource, the largest of its spec requests, the
    status's ``resources.requests`` and ``allocatedResources`` — or, while the pod's resize
    is ``PodResizePending``/``Infeasible``, of the latter two only (the spec's will not be
    granted).

    Raises:
        ValueError: an unparseable quantity (validation normally rejects these).
    """
    spec = pod.get("spec") or {}
    statuses = _resize_statuses(pod)

    def reqs_of(c: Mapping[str, Any]) -> dict[str, Amount]:
        raw = (c.get("resources") or {}).get("requests") or {}
        if statuses and (cs := statuses.get(c.get("name"))) is not None:
            raw = _status_requests(raw, cs, statuses.get("") is not None)
        out = {k: _amount(k, v) for k, v in raw.items()}
        if non_missing_defaults:
            out.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
            out.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
        return out

    def add(into: dict[str, Amount], other: Mapping[str, Amount]) -> None:
        for k, v in other.items():
            into[k] = into.get(k, 0) + v

    total: dict[str, Amount] = {}
    containers = spec.get("containers") or ()
    if len(containers) == 1:
        total = reqs_of(containers[0])
    else:
        for c in containers:
            add(total, reqs_of(c))
    init_containers = spec.get("initContainers")
    if init_containers:
        sidecars: dict[str, Amount] = {}
        init_max: dict[str, Amount] = {}
        for c in init_containers:
            r = reqs_of(c)
            if c.get("restartPolicy") == "Always":
                add(total, r)
                add(sidecars, r)
                use = dict(sidecars)
            else:
                use = dict(r)
                add(use, sidecars)
            for k, v in use.items():
                init_max[k] = max(init_max.get(k, v), v)
        for k, v in init_max.items():
            if k not in total or v > total[k]:
                total[k] = v
    overhead = spec.get("overhead")
    if overhead:
        for k, v in overhead.items():
            total[k] = total.get(k, 0) + _amount(k, v)
    return {k: (v if type(v) is int else -(-v.numerator // v.denominator)) for k, v in total.items()}


def _resize_statuses(pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """Container name -> status, for the containers and sidecars whose status reports
    ``resources`` (None when none does: the usual case, costing one look); the key ``""`` is
    set when the pod's resize is ``PodResizePending`` reason ``Infeasible``."""
    status = pod.get("status")
    if not status:
        return None
    out: dict[str, Any] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if cs.get("resources") is not None:
                out[cs.get("name")] = cs
    if not out:
        return None
    init_names = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or ()
                  if c.get("restartPolicy") != "Always"}
    for name in init_names:
        out.pop(name, None)  # non-restartable init containers are not resized
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodResizePending":
            if cond.get("reason") == "Infeasible":
                out[""] = cond
            break
    return out


def _status_requests(spec_requests: Mapping[str, Any], cs: Mapping[str, Any], infeasible: bool) -> dict[str, Any]:
    """upstream ``determineContainerReqs``: per resource the largest of the spec's requests
    (unless the resize is infeasible), the status's applied ones and the allocated ones."""
    lists = [((cs.get("resources") or {}).get("requests") or {}), cs.get("allocatedResources") or {}]
    if not infeasible:
        lists.insert(0, spec_requests)
    out: dict[str, Any] = {}
    best: dict[str, Any] = {}
    for rl in lists:
        for k, v in rl.items():
            a = _amount(k, v)
            if k not in best or a > best[k]:
                best[k], out[k] = a, v
    return out


@dataclass(slots=True)
class Resource:
    """Amounts of compute resources (upstream ``framework.Resource``).

    ``milli_cpu`` millicores; ``memory`` and ``ephemeral_storage`` bytes;
    ``allowed_pod_number`` a count; ``scalar`` extended resources by name.
    """

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, int]) -> "Resource":
        """From ``{name: int}`` as :func:`pod_requests` returns (``pods`` -> allowed_pod_number)."""
        r = cls()
        for k, v in rl.items():
            r._add_one(k, v)
        return r

    @classmethod
    def from_quantities(cls, rl: Mapping[str, Any] | None) -> "Resource":
        """From a wire ``ResourceList`` (``{"cpu": "4", "memory": "8Gi", "pods": "110"}``)."""
        r = cls()
        for k, v in (rl or {}).items():
            q = parse_quantity(v)
            r._add_one(k, q.milli_value() if k == CPU else q.int_value())
        return r

    def _add_one(self, name: str, v: int) -> None:
        if name == CPU:
            self.milli_cpu += v
        elif name == MEMORY:
            self.memory += v
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage += v
        elif name == PODS:
            self.allowed_pod_number += v
        elif is_scalar_resource(name):
            self.scalar[name] = self.scalar.get(name, 0) + v

    def add(self, other: "Resource", sign: int = 1) -> None:
        """In place ``self += sign * other`` (cpu, memory, ephemeral, scalars)."""
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + sign * v

    def get(self, name: str) -> int:
        """The amount of ``name`` (``cpu`` in millicores)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def copy(self) -> "Resource":
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage,
                        self.allowed_pod_number, dict(self.scalar))


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm`` (upstream ``framework.AffinityTerm``).

    ``namespaces`` defaults to the owning pod's namespace when the term lists
    none and has no ``namespaceSelector``; a missing ``namespaceSelector``
    matches no namespace, ``{}`` matches all.
    """

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector

    def matches(self, pod: Mapping[str, Any], ns_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` (in a namespace labelled ``ns_labels``) is selected by this term."""
        meta = pod.get("metadata") or {}
        if meta.get("namespace", "") in self.namespaces or (
                ns_labels is not None and self.namespace_selector.matches(ns_labels)):
            return self.selector.matches(meta.get("labels"))
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    """A preferred term with its ``weight`` (1-100)."""

    term: AffinityTerm
    weight: int


def _affinity_term(t: Mapping[str, Any], own_ns: str) -> AffinityTerm:
    ns = t.get("namespaces") or []
    ns_sel_raw = t.get("namespaceSelector")
    namespaces = frozenset(ns) if (ns or ns_sel_raw is not None) else frozenset([own_ns])
    try:
        sel = selector_from_label_selector(t.get("labelSelector"))
        ns_sel = selector_from_label_selector(ns_sel_raw)
    except ValueError:
        sel = ns_sel = selector_from_label_selector(None)
    return AffinityTerm(namespaces, sel, t.get("topologyKey", ""), ns_sel)


@dataclass(slots=True, eq=False)
class PodInfo:
    """A pod plus what plugins derive from it (upstream ``framework.PodInfo``).

    Build with :meth:`of`. ``requests`` is the exact :class:`Resource`;
    ``non_zero_cpu`` / ``non_zero_memory`` the scoring variants.
    """

    pod: Mapping[str, Any]
    key: str
    namespace: str
    labels: Mapping[str, str]
    priority: int
    requests: Resource
    non_zero_cpu: int
    non_zero_memory: int
    host_ports: tuple[tuple[str, str, int], ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]
    label_buckets: tuple[str, ...] = ()

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> "PodInfo":
        """Derive a PodInfo from a wire-form Pod dict (never mutated)."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        ns = meta.get("namespace", "")
        exact = pod_requests(pod)
        nz = pod_requests(pod, non_missing_defaults=True)
        ports = []
        for c in spec.get("containers") or ():
            for p in c.get("ports") or ():
                hp = p.get("hostPort") or 0
                if hp > 0:
                    ports.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", int(hp)))
        aff = spec.get("affinity") or {}
        pa = aff.get("podAffinity") or {}
        paa = aff.get("podAntiAffinity") or {}

        def req(x: Mapping[str, Any]) -> tuple[AffinityTerm, ...]:
            return tuple(_affinity_term(t, ns) for t in x.get("requiredDuringSchedulingIgnoredDuringExecution") or ())

        def pref(x: Mapping[str, Any]) -> tuple[WeightedAffinityTerm, ...]:
            return tuple(WeightedAffinityTerm(_affinity_term(w.get("podAffinityTerm") or {}, ns), int(w.get("weight", 0)))
                         for w in x.get("preferredDuringSchedulingIgnoredDuringExecution") or ())

        labels = meta.get("labels") or {}
        return cls(pod=pod, key=pod_key(pod), namespace=ns, labels=labels,
                   priority=pod_priority(pod), requests=Resource.from_list(exact),
                   non_zero_cpu=nz.get(CPU, 0), non_zero_memory=nz.get(MEMORY, 0),
                   host_ports=tuple(ports), required_affinity=req(pa), required_anti_affinity=req(paa),
                   preferred_affinity=pref(pa), preferred_anti_affinity=pref(paa),
                   label_buckets=tuple(label_bucket(ns, k, v) for k, v in labels.items()))

    @property
    def has_affinity(self) -> bool:
        """Any pod (anti-)affinity, required or preferred (upstream ``PodsWithAffinity``)."""
        return bool(self.required_affinity or self.required_anti_affinity
                    or self.preferred_affinity or self.preferred_anti_affinity)

    @property
    def node_name(self) -> str:
        return (self.pod.get("spec") or {}).get("nodeName") or ""

    @property
    def terminating(self) -> bool:
        return (self.pod.get("metadata") or {}).get("deletionTimestamp") is not None


def label_bucket(namespace: str, key: str, value: str) -> str:
    """The key of :meth:`NodeInfo.pods_labelled` for pods in ``namespace`` labelled ``key=value``."""
    return f"{namespace}\x00{key}={value}"


_SERIALS = itertools.count(1)


class NodeInfo:
    """A node and the pods on it, with the sums plugins read (upstream ``framework.NodeInfo``).

    Attributes:
        node: the Node dict, or None for a node the cache only knows from pods.
        name: the node's name.
        pods: list of :class:`PodInfo` on the node (assumed pods included).
        requested: :class:`Resource` sum of the pods' exact requests.
        non_zero_cpu / non_zero_memory: sums of the pods' scoring requests.
        allocatable: :class:`Resource` from ``status.allocatable``.
        used_ports: ``{(ip, protocol, port): count}``.
        images: ``{normalised image name: size bytes}`` from ``status.images``.
        generation: bumped on every change (the cache's snapshot bookkeeping).
        serial: unique to this object among the process's NodeInfos (a clone gets a new
            one): what memos across cycles key on, so they hold no NodeInfo alive.
        unschedulable: the node's ``spec.unschedulable``.
        free_cpu / free_memory / free_ephemeral_storage / free_pods: allocatable minus
            requested (millicores, bytes, bytes, pod slots), kept in step with the
            pods so the Filter hot path reads one attribute per check.
    """

    __slots__ = ("node", "name", "pods", "requested", "non_zero_cpu", "non_zero_memory",
                 "allocatable", "used_ports", "images", "generation", "labels", "taints",
                 "unschedulable", "free_cpu", "free_memory", "free_ephemeral_storage", "free_pods",
                 "_by_label", "serial")

    def __init__(self, name: str, node: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.serial = next(_SERIALS)
        self.pods: list[PodInfo] = []
        self._by_label: dict[str, list[PodInfo]] | None = None
        self.requested = Resource()
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.used_ports: dict[tuple[str, str, int], int] = {}
        self.generation = 0
        self.node: Mapping[str, Any] | None = None
        self.allocatable = Resource()
        self.images: dict[str, int] = {}
        self.labels: Mapping[str, str] = {}
        self.taints: tuple[Mapping[str, Any], ...] = ()
        self.unschedulable = False
        self.free_cpu = self.free_memory = self.free_ephemeral_storage = self.free_pods = 0
        if node is not None:
            self.set_node(node)

    def _refresh_free(self) -> None:
        a, r = self.allocatable, self.requested
        self.free_cpu = a.milli_cpu - r.milli_cpu
        self.free_memory = a.memory - r.memory
        self.free_ephemeral_storage = a.ephemeral_storage - r.ephemeral_storage
        self.free_pods = a.allowed_pod_number - len(self.pods)

    def set_node(self, node: Mapping[str, Any] | None) -> None:
        """Replace the Node object (allocatable, labels, taints, images recomputed)."""
        self.node = node
        if node is None:
            self.allocatable, self.images, self.labels, self.taints = Resource(), {}, {}, ()
            self.unschedulable = False
            self._refresh_free()
            return
        self.allocatable = Resource.from_quantities((node.get("status") or {}).get("allocatable"))
        self.labels = (node.get("metadata") or {}).get("labels") or {}
        self.taints = tuple((node.get("spec") or {}).get("taints") or ())
        self.unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
        self._refresh_free()
        images: dict[str, int] = {}
        for img in (node.get("status") or {}).get("images") or ():
            for n in img.get("names") or ():
                images[normalized_image_name(n)] = int(img.get("sizeBytes") or 0)
        self.images = images

    @property
    def pods_with_affinity(self) -> list[PodInfo]:
        return [p for p in self.pods if p.has_affinity]

    @property
    def pods_with_required_anti_affinity(self) -> list[PodInfo]:
        return [p for p in self.pods if p.required_anti_affinity]

    def pods_labelled(self, bucket: str) -> Sequence[PodInfo]:
        """The pods on this node with one label: ``bucket`` is ``label_bucket(namespace, key,
        value)``. Built on first use after a change of the pods, so counting the pods a
        selector matches (PodTopologySpread, on every node, for every pod) looks at the few
        pods that can match instead of all of them."""
        idx = self._by_label
        if idx is None:
            idx = {}
            for p in self.pods:
                for b in p.label_buckets:  # the pod's own strings: an index holds no new ones
                    bucket_pods = idx.get(b)
                    if bucket_pods is None:
                        idx[b] = [p]
                    else:
                        bucket_pods.append(p)
            self._by_label = idx
        return idx.get(bucket, ())

    def add_pod(self, pi: PodInfo) -> None:
        """Account a pod on this node (upstream ``NodeInfo.AddPodInfo``)."""
        self.pods.append(pi)
        self._account(pi, 1)

    def remove_pod(self, key: str) -> PodInfo | None:
        """Remove the pod with ``key``; returns it, or None when absent."""
        for i, p in enumerate(self.pods):
            if p.key == key:
                # swap-remove as upstream; order of pods is not meaningful
                self.pods[i] = self.pods[-1]
                self.pods.pop()
                self._account(p, -1)
                return p
        return None

    def _account(self, pi: PodInfo, sign: int) -> None:
        self.requested.add(pi.requests, sign)
        self.non_zero_cpu += sign * pi.non_zero_cpu
        self.non_zero_memory += sign * pi.non_zero_memory
        for port in pi.host_ports:
            n = self.used_ports.get(port, 0) + sign
            if n > 0:
                self.used_ports[port] = n
            else:
                self.used_ports.pop(port, None)
        self.generation += 1
        self._by_label = None
        self._refresh_free()

    def clone(self) -> "NodeInfo":
        """A copy whose pod list and sums can be changed independently."""
        c = NodeInfo.__new__(NodeInfo)
        c.serial = next(_SERIALS)
        c.name, c.node = self.name, self.node
        c.pods = list(self.pods)
        c.requested = self.requested.copy()
        c.non_zero_cpu, c.non_zero_memory = self.non_zero_cpu, self.non_zero_memory
        c.used_ports = dict(self.used_ports)
        c.allocatable, c.images = self.allocatable, self.images
        c.labels, c.taints = self.labels, self.taints
        c.generation = self.generation
        c.unschedulable = self.unschedulable
        c.free_cpu, c.free_memory = self.free_cpu, self.free_memory
        c.free_ephemeral_storage, c.free_pods = self.free_ephemeral_storage, self.free_pods
        c._by_label = self._by_label  # the same pods until the copy changes them
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"


_GENERATION = attrgetter("generation")
_SERIAL = attrgetter("serial")


class NodeMemo:
    """Memoises a pure function of a :class:`NodeInfo` (and of a hashable ``key`` that
    stands for everything else it reads, e.g. the pod's requests) across cycles.

    A snapshot's NodeInfos are never changed (the cache clones a node before changing
    it), so between two cycles only the nodes that got or lost a pod are computed
    again. Each entry also records the NodeInfo's ``generation``: a NodeInfo changed in
    place (a preemption clone) is recomputed. The lookups run as C-level ``map`` calls,
    which is what makes a memo hit cheaper than recomputing a few integer comparisons.
    Only the latest NodeInfo of each node name is kept, and at most ``keys`` keys
    (least recently added dropped first), so the memo stays as small as the cluster.
    """

    __slots__ = ("_by_key", "_keys")

    def __init__(self, keys: int = 8) -> None:
        # key -> (value by serial, generation by serial, latest serial by node name); keyed
        # by NodeInfo.serial, not the NodeInfo, so a memo keeps no superseded NodeInfo (with
        # its pod list and label index) alive for a key not used since
        self._by_key: dict[Any, tuple[dict[int, Any], dict[int, int], dict[str, int]]] = {}
        self._keys = keys

    def map(self, key: Any, nodes: list[NodeInfo], compute: Any) -> list[Any]:
        """``[compute(ni) for ni in nodes]``, from the memo where possible (``compute``
        must never return None)."""
        entry = self._by_key.get(key)
        if entry is None:
            if len(self._by_key) >= self._keys:
                del self._by_key[next(iter(self._by_key))]
            entry = self._by_key[key] = ({}, {}, {})
        values, gens, latest = entry
        serials = list(map(_SERIAL, nodes))
        out = list(map(values.get, serials))
        now = list(map(_GENERATION, nodes))
        if list(map(gens.get, serials, now)) != now:
            for i, ni in enumerate(nodes):
                if gens.get(ni.serial, ni.generation) != ni.generation:
                    out[i] = None
        i = -1
        try:
            while True:
                i = out.index(None, i + 1)
                ni = nodes[i]
                v = out[i] = compute(ni)
                serial = ni.serial
                old = latest.get(ni.name)
                if old is not None and old != serial:
                    del values[old], gens[old]
                latest[ni.name] = serial
                values[serial] = v
                gens[serial] = ni.generation
        except ValueError:
            pass
        return out


class NodeShareSum:
    """The sum over a list of NodeInfos of each node's *share* — a tuple of
    ``(pair, n)`` — kept up to date across cycles (upstream recomputes such counts every
    cycle, in parallel; this does it incrementally, like ``UpdateSnapshot``).

    Between two snapshots only the nodes that changed are new NodeInfo objects, so
    :meth:`total` subtracts the shares of the NodeInfos that left the list and adds
    those of the ones that joined: O(changed nodes) Python work plus two C-level set
    differences. ``key`` stands for everything else ``share`` reads; the sums of the
    ``keys`` most recently used keys are kept. The returned dict (``{pair: sum}``,
    holding exactly the pairs some node contributed to) is shared: copy it before
    changing it. Its iteration order is not meaningful (callers only look pairs up).
    """

    __slots__ = ("_states", "_keys")

    def __init__(self, keys: int = 4) -> None:
        # key -> [nodes, shares by node, sum by pair, contributions by pair]
        self._states: dict[Any, list[Any]] = {}
        self._keys = keys

    def total(self, key: Any, nodes: list[NodeInfo], share: Any) -> dict[Any, int]:
        st = self._states.pop(key, None)
        if st is None:
            if len(self._states) >= self._keys:
                del self._states[next(iter(self._states))]
            st = [set(), {}, {}, {}]
        self._states[key] = st
        prev, shares, total, refs = st
        cur = set(nodes)
        for ni in prev - cur:
            for pair, n in shares.pop(ni, ()):
                left = refs[pair] - 1
                if left:
                    refs[pair] = left
                    total[pair] -= n
                else:
                    del refs[pair], total[pair]
        for ni in cur - prev:
            sh = share(ni)
            if sh:
                shares[ni] = sh
                for pair, n in sh:
                    refs[pair] = refs.get(pair, 0) + 1
                    total[pair] = total.get(pair, 0) + n
        st[0] = cur
        return total


def normalized_image_name(name: str) -> str:
    """Append ``:latest`` to an image without a tag (upstream ImageLocality ``normalizedImageName``)."""
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name
