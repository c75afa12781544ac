"""The scheduling queue, as upstream ``pkg/scheduler/backend/queue.PriorityQueue``.

Design
======

Three places a pending pod can be, exactly one at a time:

* **activeQ** — a heap ordered by the QueueSort plugin (PrioritySort: higher
  priority first, then earlier queue timestamp); :meth:`SchedulingQueue.pop`
  takes from here;
* **backoffQ** — pods that failed and wait ``initial * 2**(attempts-1)``
  seconds (1 s doubling to at most 10 s by default) from their last failure,
  ordered by that expiry;
* **unschedulablePods** — pods that failed and wait for a cluster event
  that may help one of the plugins that rejected them (or 5 minutes at
  most), plus pods held back by a PreEnqueue plugin (scheduling gates).

The queue is a pure data structure: every method that depends on time takes
``now`` (virtual seconds); nothing sleeps. The Trio wrapper calls
:meth:`flush` (or just :meth:`pop`, which flushes first) and can sleep until
:meth:`next_wakeup`. Heaps break ties with an insertion sequence number, so
order never depends on hashing.

Which events can help which plugin is upstream's ``EventsToRegister`` in
simplified form (:data:`PLUGIN_EVENTS`); a pod rejected without a plugin
(an error) is moved by any event. A move request that arrives while a pod is
being scheduled sends that pod to backoffQ instead of unschedulablePods when
it fails (upstream's ``moveRequestCycle``).

The queue is also the :class:`~k8semu.scheduler.framework.Nominator`: it
tracks pods nominated to nodes by preemption (``status.nominatedNodeName``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .framework import Status
from .types import PodInfo, pod_key

__all__ = [
    "QueuedPodInfo",
    "SchedulingQueue",
    "PLUGIN_EVENTS",
    "NODE_ADD", "NODE_UPDATE", "NODE_DELETE",
    "ASSIGNED_POD_ADD", "ASSIGNED_POD_UPDATE", "ASSIGNED_POD_DELETE",
    "PVC_ADD", "PVC_UPDATE", "PV_ADD", "PV_UPDATE", "STORAGE_CLASS_ADD", "STORAGE_CLASS_UPDATE",
    "NAMESPACE_ADD", "NAMESPACE_UPDATE", "WILDCARD", "UNSCHEDULABLE_TIMEOUT",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
]

NODE_ADD, NODE_UPDATE, NODE_DELETE = "NodeAdd", "NodeUpdate", "NodeDelete"
ASSIGNED_POD_ADD, ASSIGNED_POD_UPDATE, ASSIGNED_POD_DELETE = "AssignedPodAdd", "AssignedPodUpdate", "AssignedPodDelete"
PVC_ADD, PVC_UPDATE, PV_ADD, PV_UPDATE = "PvcAdd", "PvcUpdate", "PvAdd", "PvUpdate"
STORAGE_CLASS_ADD, STORAGE_CLASS_UPDATE = "StorageClassAdd", "StorageClassUpdate"
NAMESPACE_ADD, NAMESPACE_UPDATE = "NamespaceAdd", "NamespaceUpdate"
WILDCARD = "*"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0

_NODE = (NODE_ADD, NODE_UPDATE)
PLUGIN_EVENTS: dict[str, frozenset[str]] = {
    "NodeUnschedulable": frozenset(_NODE),
    "NodeName": frozenset(_NODE),
    "TaintToleration": frozenset(_NODE),
    "NodeAffinity": frozenset(_NODE),
    "NodePorts": frozenset(_NODE + (ASSIGNED_POD_DELETE,)),
    "NodeResourcesFit": frozenset(_NODE + (ASSIGNED_POD_DELETE, ASSIGNED_POD_UPDATE)),
    "NodeResourcesBalancedAllocation": frozenset(_NODE + (ASSIGNED_POD_DELETE,)),
    "PodTopologySpread": frozenset(_NODE + (NODE_DELETE, ASSIGNED_POD_ADD, ASSIGNED_POD_UPDATE, ASSIGNED_POD_DELETE)),
    "InterPodAffinity": frozenset(_NODE + (ASSIGNED_POD_ADD, ASSIGNED_POD_UPDATE, ASSIGNED_POD_DELETE,
                                           NAMESPACE_ADD, NAMESPACE_UPDATE)),
    "VolumeBinding": frozenset(_NODE + (PVC_ADD, PVC_UPDATE, PV_ADD, PV_UPDATE, STORAGE_CLASS_ADD, STORAGE_CLASS_UPDATE)),
    "VolumeRestrictions": frozenset((ASSIGNED_POD_DELETE, PVC_ADD, PVC_UPDATE)),
    "ImageLocality": frozenset(),
}


@dataclass(eq=False)
class QueuedPodInfo:
    """A pod in the queue (upstream ``framework.QueuedPodInfo``).

    Attributes:
        pod / pod_info: the pod dict and its :class:`PodInfo`.
        timestamp: when it was last added to the queue (virtual seconds).
        initial_attempt_timestamp: when it was first popped, or None.
        attempts: how many times it was popped.
        unschedulable_plugins: the plugins that rejected it in its last cycle.
        gated: held back by a PreEnqueue plugin.
        gating_status: that plugin's status.
        scheduling_cycle: the cycle number of its last pop.
    """

    pod: Mapping[str, Any]
    pod_info: PodInfo
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: frozenset[str] = frozenset()
    gated: bool = False
    gating_status: Status | None = None
    scheduling_cycle: int = 0
    seq: int = field(default=0, repr=False)

    @property
    def priority(self) -> int:
        return self.pod_info.priority

    @property
    def key(self) -> str:
        return self.pod_info.key


class _ActiveEntry:
    __slots__ = ("qpi", "less", "removed")

    def __init__(self, qpi: QueuedPodInfo, less: Callable[[Any, Any], bool]) -> None:
        self.qpi, self.less, self.removed = qpi, less, False

    def __lt__(self, other: "_ActiveEntry") -> bool:
        a, b = self.qpi, other.qpi
        if self.less(a, b):
            return True
        if self.less(b, a):
            return False
        return a.seq < b.seq


def _default_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    return a.priority > b.priority or (a.priority == b.priority and a.timestamp < b.timestamp)


def _spec_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Upstream ``isPodUpdated``: anything but status / resourceVersion / generation / managedFields."""
    def strip(p: Mapping[str, Any]) -> tuple[Any, Any]:
        meta = {k: v for k, v in (p.get("metadata") or {}).items()
                if k not in ("resourceVersion", "generation", "managedFields")}
        return meta, p.get("spec")
    return strip(old) != strip(new)


class SchedulingQueue:
    """activeQ / backoffQ / unschedulablePods with virtual time.

    Args:
        less: the QueueSort ``less(a, b)`` on :class:`QueuedPodInfo` (default
            PrioritySort); pass ``framework.queue_sort_less()``.
        pre_enqueue: ``pod -> Status | None`` (``framework.run_pre_enqueue``);
            a non-None status gates the pod.
        initial_backoff / max_backoff: seconds (``podInitialBackoffSeconds`` 1,
            ``podMaxBackoffSeconds`` 10).
        max_in_unschedulable: seconds before an unschedulable pod is retried
            regardless of events (5 minutes).
    """

    def __init__(self, less: Callable[[Any, Any], bool] | None = None,
                 pre_enqueue: Callable[[Mapping[str, Any]], Status | None] | None = None,
                 initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION) -> None:
        self._less = less or _default_less
        self._pre_enqueue = pre_enqueue
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._seq = 0
        self._active: list[_ActiveEntry] = []
        self._active_by_key: dict[str, _ActiveEntry] = {}
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_by_key: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._nominated: dict[str, list[PodInfo]] = {}
        self._nominated_node: dict[str, str] = {}

    # --- helpers ----------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _push_active(self, qpi: QueuedPodInfo) -> None:
        qpi.seq = self._next_seq()
        e = _ActiveEntry(qpi, self._less)
        self._active_by_key[qpi.key] = e
        heapq.heappush(self._active, e)

    def _push_backoff(self, qpi: QueuedPodInfo) -> None:
        qpi.seq = self._next_seq()
        self._backoff_by_key[qpi.key] = qpi
        heapq.heappush(self._backoff, (self.backoff_expiry(qpi), qpi.seq, qpi.key))

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """``initial`` doubled for each attempt after the first, capped at ``max``."""
        d = self.initial_backoff
        for _ in range(1, qpi.attempts):
            if d > self.max_backoff - d:
                return self.max_backoff
            d += d
        return d

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.backoff_duration(qpi)

    def _is_backing_off(self, qpi: QueuedPodInfo, now: float) -> bool:
        return not qpi.gated and self.backoff_expiry(qpi) > now

    def _gate(self, qpi: QueuedPodInfo) -> bool:
        """Run PreEnqueue; True when the pod may enter activeQ."""
        st = self._pre_enqueue(qpi.pod) if self._pre_enqueue is not None else None
        qpi.gated = st is not None and not st.is_success()
        qpi.gating_status = st if qpi.gated else None
        return not qpi.gated

    def _where(self, key: str) -> str | None:
        if key in self._active_by_key:
            return "active"
        if key in self._backoff_by_key:
            return "backoff"
        if key in self._unschedulable:
            return "unschedulable"
        return None

    def _remove(self, key: str) -> QueuedPodInfo | None:
        e = self._active_by_key.pop(key, None)
        if e is not None:
            e.removed = True
            return e.qpi
        qpi = self._backoff_by_key.pop(key, None)
        if qpi is not None:
            return qpi  # heap entry skipped lazily
        return self._unschedulable.pop(key, None)

    # --- informer-driven changes --------------------------------------------------------------
    def add(self, pod: Mapping[str, Any], now: float) -> None:
        """A new unscheduled pod (upstream ``PriorityQueue.Add``): activeQ, or
        unschedulablePods when gated."""
        pi = PodInfo.of(pod)
        self._remove(pi.key)
        qpi = QueuedPodInfo(pod, pi, now)
        if self._gate(qpi):
            self._push_active(qpi)
        else:
            self._unschedulable[pi.key] = qpi
        self._add_nominated(pi, pod)

    def update(self, old: Mapping[str, Any] | None, new: Mapping[str, Any], now: float) -> None:
        """An unscheduled pod changed. Queued in activeQ/backoffQ: updated in place. In
        unschedulablePods: moved to backoffQ/activeQ when more than its status changed."""
        pi = PodInfo.of(new)
        key = pi.key
        where = self._where(key)
        if where is None:
            if key not in self._in_flight:
                self.add(new, now)
            return
        qpi = self._remove(key)
        assert qpi is not None
        changed = old is None or _spec_changed(old, new)
        qpi.pod, qpi.pod_info = new, pi
        self._add_nominated(pi, new)
        if where == "active":
            self._push_active(qpi)
        elif where == "backoff":
            self._push_backoff(qpi)
        elif changed:
            if not self._gate(qpi):
                self._unschedulable[key] = qpi
            elif self._is_backing_off(qpi, now):
                self._push_backoff(qpi)
            else:
                self._push_active(qpi)
        else:
            self._unschedulable[key] = qpi

    def delete(self, pod: Mapping[str, Any]) -> None:
        """The pod was deleted (or got bound by someone else)."""
        key = pod_key(pod)
        self._remove(key)
        self._in_flight.pop(key, None)
        self.delete_nominated_pod_if_exists(pod)

    # --- the scheduling loop -----------------------------------------------------------------
    def pop(self, now: float) -> QueuedPodInfo | None:
        """The next pod to schedule (after :meth:`flush`), or None when activeQ is empty.

        Increments the scheduling cycle and the pod's attempts.
        """
        self.flush(now)
        while self._active:
            e = heapq.heappop(self._active)
            if e.removed:
                continue
            qpi = e.qpi
            del self._active_by_key[qpi.key]
            self.scheduling_cycle += 1
            qpi.attempts += 1
            qpi.scheduling_cycle = self.scheduling_cycle
            if qpi.initial_attempt_timestamp is None:
                qpi.initial_attempt_timestamp = now
            qpi.unschedulable_plugins = frozenset()
            self._in_flight[qpi.key] = qpi
            return qpi
        return None

    def done(self, pod: Mapping[str, Any]) -> None:
        """The cycle for ``pod`` is over (bound, or re-queued)."""
        self._in_flight.pop(pod_key(pod), None)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, now: float,
                                         unschedulable_plugins: Iterable[str] = ()) -> None:
        """Re-queue a pod whose cycle failed (upstream ``AddUnschedulableIfNotPresent``).

        ``unschedulable_plugins`` are the plugins that rejected it
        (``FitError.diagnosis.unschedulable_plugins``); empty for errors. It goes
        to backoffQ when it failed with an error or when a move request arrived
        during its cycle, else to unschedulablePods.

        Raises:
            ValueError: the pod is already queued.
        """
        key = qpi.key
        self._in_flight.pop(key, None)
        where = self._where(key)
        if where is not None:
            raise ValueError(f"Pod {key} is already present in the {where} queue")
        qpi.timestamp = now
        qpi.unschedulable_plugins = frozenset(unschedulable_plugins)
        if not qpi.unschedulable_plugins or self._move_request_cycle >= qpi.scheduling_cycle:
            self._push_backoff(qpi)
        else:
            self._unschedulable[key] = qpi
        self._add_nominated(qpi.pod_info, qpi.pod)

    def flush(self, now: float) -> None:
        """Move finished backoffs to activeQ, and pods unschedulable for longer than
        ``max_in_unschedulable`` to backoffQ/activeQ."""
        while self._backoff and self._backoff[0][0] <= now:
            _, seq, key = heapq.heappop(self._backoff)
            qpi = self._backoff_by_key.get(key)
            if qpi is None or qpi.seq != seq:
                continue
            del self._backoff_by_key[key]
            self._push_active(qpi)
        stale = [q for q in self._unschedulable.values()
                 if not q.gated and now - q.timestamp > self.max_in_unschedulable]
        if stale:
            self._move(stale, now)

    def move_all_to_active_or_backoff(self, event: str, now: float,
                                      pre_check: Callable[[Mapping[str, Any]], bool] | None = None) -> int:
        """A cluster event happened (one of the module's event constants): move the
        unschedulable pods it may help. Returns how many moved."""
        pods = [q for q in self._unschedulable.values()
                if (pre_check is None or pre_check(q.pod)) and self._worth_requeuing(q, event)]
        moved = self._move(pods, now)
        self._move_request_cycle = self.scheduling_cycle
        return moved

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: str) -> bool:
        if qpi.gated:
            return False
        if not qpi.unschedulable_plugins or event in (WILDCARD, UNSCHEDULABLE_TIMEOUT):
            return True
        # plugins without registered events (out-of-tree) are woken by every event
        return any(p not in PLUGIN_EVENTS or event in PLUGIN_EVENTS[p] for p in qpi.unschedulable_plugins)

    def _move(self, pods: list[QueuedPodInfo], now: float) -> int:
        moved = 0
        for qpi in sorted(pods, key=lambda q: q.seq):
            if not self._gate(qpi):
                continue
            del self._unschedulable[qpi.key]
            if self._is_backing_off(qpi, now):
                self._push_backoff(qpi)
            else:
                self._push_active(qpi)
            moved += 1
        return moved

    def assigned_pod_added(self, pod: Mapping[str, Any], now: float) -> None:
        """An assigned pod appeared: pods whose affinity terms may now match move."""
        self.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, now)

    def next_wakeup(self) -> float | None:
        """The earliest virtual time at which :meth:`flush` would move something, or None."""
        times = [t for t, seq, key in self._backoff
                 if key in self._backoff_by_key and self._backoff_by_key[key].seq == seq]
        times += [q.timestamp + self.max_in_unschedulable for q in self._unschedulable.values() if not q.gated]
        return min(times, default=None)

    # --- nominator ------------------------------------------------------------------------------
    def _add_nominated(self, pi: PodInfo, pod: Mapping[str, Any]) -> None:
        node = (pod.get("status") or {}).get("nominatedNodeName") or ""
        if node:
            self.add_nominated_pod(pi, node)

    def add_nominated_pod(self, pi: PodInfo, node_name: str) -> None:
        """Record that ``pi`` is nominated to ``node_name`` (replacing an earlier nomination)."""
        self.delete_nominated_pod_if_exists(pi.pod)
        self._nominated_node[pi.key] = node_name
        self._nominated.setdefault(node_name, []).append(pi)

    def delete_nominated_pod_if_exists(self, pod: Mapping[str, Any]) -> None:
        """Forget the pod's nomination, if any."""
        key = pod_key(pod)
        node = self._nominated_node.pop(key, None)
        if node is None:
            return
        pods = [p for p in self._nominated[node] if p.key != key]
        if pods:
            self._nominated[node] = pods
        else:
            del self._nominated[node]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """Pods nominated to ``node_name``, in nomination order."""
        return list(self._nominated.get(node_name, ()))

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated to any node (lets a cycle skip the per-node lookups)."""
        return bool(self._nominated)

    # --- inspection -------------------------------------------------------------------------------
    def pending_pods(self) -> dict[str, list[Mapping[str, Any]]]:
        """``{"active": [...], "backoff": [...], "unschedulable": [...]}`` (active in pop order)."""
        active = [e.qpi.pod for e in sorted(self._active) if not e.removed]
        backoff = [q.pod for q in sorted(self._backoff_by_key.values(), key=lambda q: (self.backoff_expiry(q), q.seq))]
        unsched = [q.pod for q in sorted(self._unschedulable.values(), key=lambda q: q.seq)]
        return {"active": active, "backoff": backoff, "unschedulable": unsched}

    def __len__(self) -> int:
        return len(self._active_by_key) + len(self._backoff_by_key) + len(self._unschedulable)
