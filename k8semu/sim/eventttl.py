"""Events expire: kube-apiserver's ``--event-ttl`` (default 1h), as etcd's lease expiry.

Upstream
========

kube-apiserver stores Events with a TTL: the events registry's ``TTLFunc``
(pkg/registry/core/event/storage) returns ``--event-ttl`` for every write, on
create and on update alike (it ignores the existing TTL), and the etcd3 store
puts the key on an etcd lease of that many seconds. So each write — the create,
and each update or patch, such as the correlator's ``count`` bump of a repeated
event — gives the Event a full TTL from that write. When the lease expires,
etcd deletes the key: no API request, no admission, no RBAC; watchers see
``DELETED``, and ``kubectl get events`` no longer lists it. ``events.k8s.io/v1``
is served by the same storage upstream, so its Events expire alike. (The
apiserver's lease manager shares one lease among the writes of a minute and
grants it ``ttl + min(60 s, 5 % of ttl)``, so upstream an Event goes between
``ttl`` and ``ttl + 60 s`` after its last write; here exactly ``ttl`` after it.)

Here
====

:class:`EventTTL` (component ``kube-apiserver/event-ttl``, actor
:data:`ACTOR`) is that lease expiry. An Event expires at the virtual time of
its last write (its record's ``time`` in the log) + the TTL; it is then deleted
straight in the store (:meth:`~k8semu.store.EventLog.delete` with the expected
revision), as etcd deletes a key whose lease ran out: a ``DELETED`` record with
the Event's last state and the deletion's resourceVersion, delivered to every
watch, under a revision of its own like any write. Both stores are covered:
``/registry/events/`` (core/v1) and ``/registry/events.events.k8s.io/`` (which
k8semu keeps apart).

What it costs: a store listener (:meth:`~k8semu.store.EventLog.add_listener`)
sees every write and keeps, for the writes of Events, the record in a queue in
expiry order — a write's expiry is its time + a constant, and the log's times
never go back, so each write goes at the tail (a record that would not is
inserted in order). No Event is decoded until it is deleted. A record that is
no longer its key's live version (the Event was updated, or deleted) is
skipped when it reaches the head. At start the live Events are read once from
the store index (time and revision only) and sorted; an Event already past its
expiry (a log written before Events expired, or ``serve``'s clock catching up
with the wall clock) goes at once. One Trio task sleeps until the head's expiry
(a cancel scope's deadline, moved by the listener when the queue was empty or
its head was superseded) and deletes every Event that is due.

Settling: expiries are *not* real work for :meth:`~k8semu.sim.runtime.Runtime.settle`
(:meth:`EventTTL.next_wakeup` is None). Like a lease's renewal, an expiry is the
store keeping itself, not the cluster converging: a cluster that wrote Events
steadily an hour ago would otherwise always have one due within the horizon and
would never settle. An expiry happens when virtual time reaches it — during
``advance``, ``--for``, a settle that runs on for other work, ``serve`` — and
never holds a command up.

The TTL: kube-apiserver's ``--event-ttl`` has no home in the cluster
configuration (:class:`~k8semu.sim.config.ClusterConfig` has no kube-apiserver
section, and kubeadm's static pod manifest does not set the flag), so it is
upstream's default, :data:`DEFAULT_EVENT_TTL`; :class:`EventTTL` takes another
as ``ttl``.

Deterministic: the queue is ordered by (time, revision); no wall clock, no set
iteration. A replay re-runs this component, so it deletes the same Events at the
same virtual times.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from operator import attrgetter
from typing import Any

import trio

from ..client.component import Component  # a component of the API server's process, run as the others
from ..store.log import StoreError
from ..store.record import DELETED, Record

__all__ = ["EventTTL", "ACTOR", "COMPONENT", "DEFAULT_EVENT_TTL", "EVENT_PREFIXES"]

#: kube-apiserver's ``--event-ttl`` default (1h), in seconds
DEFAULT_EVENT_TTL = 3600.0
#: the component's name in the runtime (``k8semu.sim.components.default_factories``)
COMPONENT = "kube-apiserver/event-ttl"
#: the actor of the deletions in the log: no user's request (not ``user:…``), the API server's
#: lease on the key running out
ACTOR = COMPONENT
#: the store prefixes whose keys carry the TTL: core/v1 Events and events.k8s.io/v1 Events
EVENT_PREFIXES = ("/registry/events/", "/registry/events.events.k8s.io/")


#: a record's place in the queue: its write's time (so its expiry), then its revision
_order = attrgetter("time", "revision")
_REVISION = attrgetter("revision")
_TIME = attrgetter("time")


class EventTTL(Component):
    """Deletes each Event ``ttl`` virtual seconds after its last write (see the module docstring).

    Args:
        api: the API server (its log is the store the leases live in).
        ttl: the TTL in seconds (default :data:`DEFAULT_EVENT_TTL`, ``--event-ttl=1h``).
    """

    name = COMPONENT

    def __init__(self, api: Any, ttl: float = DEFAULT_EVENT_TTL, name: str | None = None) -> None:
        super().__init__(api, name)
        if not ttl > 0 or math.isinf(ttl):
            raise ValueError(f"the event TTL must be a positive number of seconds, got {ttl!r}")
        self.ttl = float(ttl)
        self.log = api.log
        #: live-at-the-time Event records, oldest write first (so, in expiry order)
        self.queue: deque[Record] = deque()
        #: Events deleted by this instance (statistics)
        self.expired = 0
        self._scope: trio.CancelScope | None = None
        self._listening = False

    # ------------------------------------------------------------------ the queue
    def next_expiry(self) -> float | None:
        """When the next Event expires (virtual seconds), or None: no Event is live."""
        self._drop_stale()
        return self.queue[0].time + self.ttl if self.queue else None

    def next_wakeup(self) -> float | None:
        """None: an expiry is not work a settle waits for (see the module docstring)."""
        return None

    def _live(self, rec: Record) -> bool:
        cur = self.log.get(rec.key)
        return cur is not None and cur.revision == rec.revision

    def _drop_stale(self) -> None:
        """Drop head records that are no longer their key's live version (stale for good)."""
        q = self.queue
        while q and not self._live(q[0]):
            q.popleft()

    def _load(self) -> None:
        """Queue the live Events of the store (their last writes), in expiry order."""
        recs: list[Record] = []
        for prefix in EVENT_PREFIXES:
            recs.extend(self.log.range(prefix))
        # the log's times never go back, so revision order is expiry order (a sort of ints: a
        # tenth of the cost of sorting (time, revision) pairs, whose times tie by the hundred)
        recs.sort(key=_REVISION)
        times = list(map(_TIME, recs))
        if times != sorted(times):  # (not seen) a log whose times do go back somewhere
            recs.sort(key=_order)
        self.queue = deque(recs)

    def _on_record(self, rec: Record) -> None:
        """The store listener: queue each write of an Event (its TTL starts again)."""
        key = rec.key
        if not key.startswith(EVENT_PREFIXES):
            return
        q = self.queue
        head = q[0] if q else None
        if rec.type != DELETED:
            # a new write has the highest revision, so it goes last unless stamped earlier than
            # the last one queued (not seen: the log's times never go back)
            if head is None or q[-1].time <= rec.time:
                q.append(rec)
            else:
                q.insert(bisect.bisect_right(q, _order(rec), key=_order), rec)
        # the head changed (the first Event, the head's Event written again or deleted): move the
        # deadline, rather than wake for nothing
        if head is None or head.key == key or q[0] is rec:
            self._rearm()

    def _rearm(self) -> None:
        """Move the sleeping task's deadline to the head's expiry (none: no Event is live)."""
        if self._scope is not None:
            at = self.next_expiry()
            self._scope.deadline = math.inf if at is None else at

    def expire(self, now: float) -> int:
        """Delete every Event whose TTL ran out at ``now``; returns how many."""
        q, log, ttl = self.queue, self.log, self.ttl
        n = 0
        while q and q[0].time + ttl <= now:
            rec = q.popleft()
            if not self._live(rec):
                continue  # written again (a later record is queued) or deleted meanwhile
            try:
                log.delete(rec.key, ACTOR, expect_revision=rec.revision)
            except StoreError:
                continue
            n += 1
        self.expired += n
        return n

    # ------------------------------------------------------------------ the task
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        # read the store and start listening at one point, so no write falls in between
        self._load()
        self.log.add_listener(self._on_record)
        self._listening = True
        try:
            await super().run(task_status=task_status)
        finally:
            self._scope = None
            if self._listening:
                self._listening = False
                try:
                    self.log.remove_listener(self._on_record)
                except ValueError:  # already dropped (a replay resets the log's listeners between sessions)
                    pass

    async def main(self) -> None:
        while True:
            await self.gate()  # paused (Runtime.pause): nothing expires until resumed
            self.expire(trio.current_time())
            at = self.next_expiry()
            with trio.CancelScope(deadline=math.inf if at is None else at) as scope:
                self._scope = scope
                await trio.sleep_forever()
            self._scope = None
