"""The kube-scheduler component: informers → scheduling queue → framework → binding.

Wires the pure library (:mod:`.framework`, :mod:`.queue`, :mod:`.cache`) to the
API, as upstream's ``pkg/scheduler/scheduler.go`` and ``schedule_one.go``:

- informers feed the cache (nodes, assigned pods, namespaces, PVCs, PDBs,
  services and workload controllers for the spreading defaults) and the
  queue (unassigned pods whose ``schedulerName`` one of the profiles owns);
  cluster events move unschedulable pods back (node added/changed, pod
  deleted, …) as upstream's event handlers do;
- one scheduling cycle at a time: pop the highest-priority pod, run the
  profile's framework on a cache snapshot, assume the pod on the chosen
  node, Reserve / Permit / PreBind, bind through ``pods/binding``,
  ``Scheduled`` event (``Successfully assigned default/web-1 to node-1``);
- a PreBind that waits (VolumeBinding until the PV controller completes the
  bindings it started) parks the pod's binding cycle, the pod assumed on its
  node, while other pods are scheduled (upstream runs the binding cycle in a
  goroutine); PreBind runs again at each of its polls (every second) until
  it succeeds or fails. A poll counts as real work for settling only when it
  would end the wait (the bindings completed, an error, the timeout);
- on failure: PodScheduled=False (reason ``Unschedulable``) with the
  FitError message, a ``FailedScheduling`` event, preemption's victims
  deleted and ``status.nominatedNodeName`` set, and the pod parked in the
  unschedulable queue until an event may help (or 5 minutes pass).

Events go through the events.k8s.io/v1 recorder, as upstream's
(``events.NewEventBroadcasterAdapter``; :class:`~k8semu.client.events.EventsV1Recorder`):
``Scheduled`` (action ``Binding``, about the assumed pod), ``FailedScheduling``
(``Scheduling``, its note cut to 1024 characters) and ``Preempted`` (``Preempting``,
about the victim, ``related`` the preemptor), reported by ``default-scheduler`` from
``default-scheduler-<host>``; the main loop also runs the recorder's timers,
which write the series of repeated events.

Every decision's explanation (per-node filter verdicts and scores) is kept in
:attr:`Scheduler.explanations` for ``explain-scheduling``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import trio

from ..api import errors
from ..api.apiserver import STRATEGIC_MERGE_PATCH, APIServer
from ..api.auth import admin
from ..client.component import Component
from ..client.events import NORMAL, NOTE_LENGTH_LIMIT, WARNING, EventsV1Recorder
from ..client.informer import EventHandler
from . import queue as q
from .cache import Cache
from .framework import Code, Explanations, new_frameworks
from .plugins.volumebinding import POLL_INTERVAL
from .queue import SchedulingQueue
from .types import PodInfo

__all__ = ["Scheduler"]

_CACHED_KINDS = ("namespaces", "persistentvolumeclaims", "persistentvolumes", "storageclasses",
                 "poddisruptionbudgets", "services", "replicationcontrollers", "replicasets", "statefulsets")


def _assigned(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _key(pod: Mapping[str, Any]) -> str:
    m = pod["metadata"]
    return f"{m.get('namespace')}/{m['name']}"


def _truncate_note(message: str) -> str:
    """schedule_one.go's ``truncateMessage``: a note past events.k8s.io's limit ends in `` ...``."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[:NOTE_LENGTH_LIMIT - 4] + " ..."


def _hostname(api: APIServer) -> str:
    """The scheduler's host (its static pod runs with hostNetwork: the node's name), for its
    events' ``reportingInstance``: the cluster's first control-plane node, as its leader-election
    identity (``control-plane`` when the configuration has none)."""
    from ..sim.config import ClusterConfig

    header = getattr(api.log, "header", None) or {}
    try:
        nodes = ClusterConfig.from_header(header.get("cluster") or {}).nodes
    except (TypeError, ValueError):
        nodes = ()
    return next((n.name for n in nodes if n.role == "control-plane"), "control-plane")


class Scheduler(Component):
    """kube-scheduler (actor ``default-scheduler``; events from ``default-scheduler``).

    Args:
        api: the API server.
        config: a KubeSchedulerConfiguration dict (profiles, plugins, args), or None for the default.
    """

    name = "default-scheduler"

    def __init__(self, api: APIServer, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(api, user=admin())
        self.frameworks = new_frameworks(config)
        first = next(iter(self.frameworks.values()))
        self.cache = Cache()
        self.sched_queue = SchedulingQueue(first.queue_sort_less(), self._pre_enqueue)
        # events.k8s.io/v1, as upstream's NewEventBroadcasterAdapter(...).NewRecorder("default-scheduler")
        self.events = EventsV1Recorder(api, self.ctx, "default-scheduler", f"default-scheduler-{_hostname(api)}")
        self.explanations = Explanations()  # {pod uid: Explanation}, built when read
        self._kick = trio.Event()
        self.nodes = self.informer("nodes")
        self.pods = self.informer("pods")
        self.nodes.add_event_handler(EventHandler(self._node_add, self._node_update, self._node_delete))
        self.pods.add_event_handler(EventHandler(self._pod_add, self._pod_update, self._pod_delete))
        self._parked: dict[str, _Parked] = {}  # binding cycles waiting in PreBind, by pod key
        for fw in self.frameworks.values():
            fw.binder_client = _BinderClient(self)
        for plural in _CACHED_KINDS:
            inf = self.informer(plural)
            inf.add_event_handler(EventHandler(
                on_add=lambda o, p=plural: self._object(p, o),
                on_update=lambda old, o, p=plural: self._object(p, o),
                on_delete=lambda o: self.cache.delete_object(o),
            ))

    # ------------------------------------------------------------------ event handlers
    def _pre_enqueue(self, pod: Mapping[str, Any]):
        fw = self.frameworks.get((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
        return fw.run_pre_enqueue(pod) if fw is not None else None

    def _responsible(self, pod: Mapping[str, Any]) -> bool:
        return ((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in self.frameworks

    def _wake(self) -> None:
        self._kick.set()

    def _move(self, event: str) -> None:
        self.sched_queue.move_all_to_active_or_backoff(event, self.api.now)
        self._wake()

    def _node_add(self, node: dict[str, Any]) -> None:
        self.cache.add_node(node)
        self._move(q.NODE_ADD)

    def _node_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.cache.update_node(old, new)
        self._move(q.NODE_UPDATE)

    def _node_delete(self, node: dict[str, Any]) -> None:
        self.cache.remove_node(node)

    def _pod_add(self, pod: dict[str, Any]) -> None:
        if _assigned(pod):
            self.cache.add_pod(pod)
            self.sched_queue.assigned_pod_added(pod, self.api.now)
            self._wake()
        elif self._responsible(pod) and not pod["metadata"].get("deletionTimestamp"):
            self.sched_queue.add(pod, self.api.now)
            self._wake()

    def _pod_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _assigned(new):
            if _assigned(old):
                self.cache.update_pod(old, new)
                self._move(q.ASSIGNED_POD_UPDATE)
            else:
                self.sched_queue.delete(old)
                self.cache.add_pod(new)
                self.sched_queue.assigned_pod_added(new, self.api.now)
                self._wake()
        elif self._responsible(new):
            if new["metadata"].get("deletionTimestamp"):
                self.sched_queue.delete(new)
            else:
                self.sched_queue.update(old, new, self.api.now)
                self._wake()

    def _pod_delete(self, pod: dict[str, Any]) -> None:
        if _assigned(pod):
            self.cache.remove_pod(pod)
            self._move(q.ASSIGNED_POD_DELETE)
        else:
            self.sched_queue.delete(pod)

    def _object(self, plural: str, obj: dict[str, Any]) -> None:
        self.cache.upsert_object(obj)
        event = {"persistentvolumeclaims": q.PVC_ADD, "persistentvolumes": q.PV_ADD,
                 "storageclasses": q.STORAGE_CLASS_ADD, "namespaces": q.NAMESPACE_ADD}.get(plural)
        if event is not None:
            self._move(event)

    # ------------------------------------------------------------------ the loop
    def next_wakeup(self) -> float | None:
        times = [t for t in (self.sched_queue.next_wakeup(),) if t is not None]
        times += [p.next_poll for p in self._parked.values() if self._poll_would_end(p)]
        return min(times) if times else None

    def _poll_would_end(self, p: "_Parked") -> bool:
        """Whether the parked binding's next poll ends its wait (a dry run of PreBind's check)."""
        st = p.fw.run_pre_bind(p.state.clone(), p.pod, p.host)
        if st is None or st.code != Code.WAIT:
            return True
        deadline = getattr(p.state.read("PreFilterVolumeBinding"), "deadline", None)
        return deadline is not None and p.next_poll >= deadline

    def _next_parked_poll(self) -> float | None:
        return min((p.next_poll for p in self._parked.values()), default=None)

    def _poll_parked(self) -> None:
        """Run PreBind again for the parked binding cycles whose poll is due (in pod-key order)."""
        now = self.api.now
        for key in sorted(k for k, p in self._parked.items() if p.next_poll <= now):
            p = self._parked.pop(key)
            self._binding_cycle(p.qpi, p.fw, p.state, p.pod, p.host, p.assumed, p.started)

    async def main(self) -> None:
        while True:
            await self.gate()
            self.events.tick()  # the event broadcaster's timers (series written every 6 / 30 minutes)
            self._poll_parked()
            qpi = self.sched_queue.pop(self.api.now)
            if qpi is None:
                self._kick = trio.Event()
                times = [t for t in (self.sched_queue.next_wakeup(), self._next_parked_poll(),
                                     self.events.next_tick()) if t is not None]
                with trio.move_on_at(min(times) if times else math.inf):
                    await self._kick.wait()
                continue
            try:
                self.schedule_one(qpi)
            finally:
                self.sched_queue.done(qpi.pod)
            await trio.lowlevel.checkpoint()

    def schedule_one(self, qpi: Any) -> None:
        """One scheduling cycle (and its synchronous binding cycle) for a popped pod."""
        pod = self.pods.indexer.get(_key(qpi.pod)) or qpi.pod
        if _assigned(pod) or pod["metadata"].get("deletionTimestamp") or self.cache.is_assumed(pod):
            return
        fw = self.frameworks[(pod.get("spec") or {}).get("schedulerName") or "default-scheduler"]
        now = self.api.now
        result = fw.schedule_one(pod, self.cache.snapshot(), self.api.rng, nominator=self.sched_queue)
        self.explanations.record(pod["metadata"].get("uid", _key(pod)), result)
        host = result.suggested_host
        if host is None:
            self._failed(fw, qpi, pod, result, now)
            return
        assumed = {**pod, "spec": {**pod["spec"], "nodeName": host}}
        self.cache.assume_pod(assumed)
        state = result.state
        for step in (fw.run_reserve, fw.run_permit):
            st = step(state, pod, host)
            if st is not None:
                self.cache.forget_pod(assumed)
                self._requeue_error(qpi, pod, st.message(), now)
                return
        self._binding_cycle(qpi, fw, state, pod, host, assumed, now)

    def _binding_cycle(self, qpi: Any, fw: Any, state: Any, pod: dict[str, Any], host: str,
                       assumed: dict[str, Any], now: float) -> None:
        """PreBind (parked while it waits), Bind, the ``Scheduled`` event, PostBind."""
        st = fw.run_pre_bind(state, pod, host)
        if st is not None and st.code == Code.WAIT:
            self._parked[_key(pod)] = _Parked(qpi, fw, state, pod, host, assumed, now,
                                              self.api.now + POLL_INTERVAL)
            return
        if st is not None:
            fw.run_unreserve(state, pod, host)
            self.cache.forget_pod(assumed)
            self._requeue_error(qpi, pod, st.message(), now)
            return
        binding, st = fw.run_bind(state, pod, host)
        if st is not None:
            self.cache.forget_pod(assumed)
            self._requeue_error(qpi, pod, st.message(), now)
            return
        meta = pod["metadata"]
        try:
            self.api.bind(meta["name"], binding, namespace=meta["namespace"], ctx=self.ctx)
        except errors.StatusError as e:
            self.cache.forget_pod(assumed)
            self._requeue_error(qpi, pod, e.message, now)
            return
        self.cache.finish_binding(assumed, now)
        self.sched_queue.delete_nominated_pod_if_exists(pod)
        self.events.eventf(assumed, None, NORMAL, "Scheduled", "Binding",
                           f"Successfully assigned {meta['namespace']}/{meta['name']} to {host}")
        fw.run_post_bind(state, pod, host)

    def _requeue_error(self, qpi: Any, pod: dict[str, Any], message: str, now: float) -> None:
        self.events.eventf(pod, None, WARNING, "FailedScheduling", "Scheduling", _truncate_note(message))
        self.sched_queue.add_unschedulable_if_not_present(qpi, now, ())
        self._move(q.WILDCARD)

    def _failed(self, fw: Any, qpi: Any, pod: dict[str, Any], result: Any, now: float) -> None:
        meta = pod["metadata"]
        message = result.message()
        nominated = None
        pf = result.post_filter
        if pf is not None and pf.nominated_node_name:
            nominated = pf.nominated_node_name
            for victim in pf.victims:
                self._preempt(victim, pod, nominated)
            for other in pf.nominated_pods_to_clear:
                self._set_nominated(other, None)
            self.sched_queue.add_nominated_pod(PodInfo.of(pod), nominated)
        status = pod.get("status") or {}
        cond = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        patch: dict[str, Any] = {}
        if not (cond and cond.get("status") == "False" and cond.get("message") == message):
            patch["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": message, "lastProbeTime": None,
                                    "lastTransitionTime": self.api.timestamp(now)}]
        if nominated is not None and status.get("nominatedNodeName") != nominated:
            patch["nominatedNodeName"] = nominated
        if patch:
            try:
                self.api.patch("pods", meta["name"], {"status": patch}, STRATEGIC_MERGE_PATCH,
                               namespace=meta["namespace"], subresource="status", ctx=self.ctx,
                               field_validation="Ignore")
            except errors.StatusError:
                pass
        self.events.eventf(pod, None, WARNING, "FailedScheduling", "Scheduling", _truncate_note(message))
        plugins = result.fit_error.diagnosis.unschedulable_plugins if result.fit_error is not None else ()
        self.sched_queue.add_unschedulable_if_not_present(qpi, now, plugins)

    def _preempt(self, victim: Mapping[str, Any], preemptor: Mapping[str, Any], node: str) -> None:
        vm = victim["metadata"]
        stamp = self.api.timestamp()
        try:
            conds = [c for c in (victim.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
            conds.append({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                          "message": f"{self.name}: preempting to accommodate a higher priority pod",
                          "lastTransitionTime": stamp})
            self.api.patch("pods", vm["name"], {"status": {"conditions": conds}}, STRATEGIC_MERGE_PATCH,
                           namespace=vm["namespace"], subresource="status", ctx=self.ctx, field_validation="Ignore")
            self.api.delete("pods", vm["name"], namespace=vm["namespace"], ctx=self.ctx,
                            preconditions={"uid": vm.get("uid")})
        except errors.StatusError:
            return
        pm = preemptor["metadata"]
        self.events.eventf(dict(victim), dict(preemptor), NORMAL, "Preempted", "Preempting",
                           f"Preempted by pod {pm.get('uid')} on node {node}")

    def _set_nominated(self, pod: Mapping[str, Any], node: str | None) -> None:
        m = pod["metadata"]
        try:
            self.api.patch("pods", m["name"], {"status": {"nominatedNodeName": node}}, STRATEGIC_MERGE_PATCH,
                           namespace=m["namespace"], subresource="status", ctx=self.ctx, field_validation="Ignore")
        except errors.StatusError:
            pass


class _Parked:
    """A binding cycle waiting in PreBind: what it needs to go on, and its next poll."""

    __slots__ = ("qpi", "fw", "state", "pod", "host", "assumed", "started", "next_poll")

    def __init__(self, qpi: Any, fw: Any, state: Any, pod: dict[str, Any], host: str,
                 assumed: dict[str, Any], started: float, next_poll: float) -> None:
        self.qpi, self.fw, self.state, self.pod, self.host = qpi, fw, state, pod, host
        self.assumed, self.started, self.next_poll = assumed, started, next_poll


class _BinderClient:
    """What VolumeBinding's PreBind needs from the scheduler: API writes (as the scheduler) that
    also go into the cache at once (upstream's assume cache), and reads of the cache."""

    def __init__(self, scheduler: "Scheduler") -> None:
        self._s = scheduler

    def now(self) -> float:
        return self._s.api.now

    def update(self, plural: str, body: Mapping[str, Any]) -> dict[str, Any]:
        s = self._s
        ns = (body.get("metadata") or {}).get("namespace")
        new = s.api.update(plural, dict(body), namespace=ns, ctx=s.ctx, field_validation="Ignore")
        s.cache.upsert_object(new)
        return new

    def get(self, kind: str, key: str) -> Mapping[str, Any] | None:
        if kind == "Node":
            return self._s.nodes.indexer.get(key)
        return self._s.cache.get_object(kind, key)

    def pod_exists(self, namespace: str, name: str) -> bool:
        return self._s.pods.indexer.get(f"{namespace}/{name}") is not None
