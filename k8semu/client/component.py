"""The shape every emulated component shares: an identity, informers, workqueues,
and the knobs faults turn.

A :class:`Component` (a controller, the scheduler, a kubelet, a kube-proxy)

- talks to the API only through :attr:`Component.api` with its own
  :attr:`Component.ctx` (user + the actor name written in the log);
- observes through informers made by :meth:`Component.informer` (each one a
  list + watch into an indexed cache) and reacts by enqueuing keys into
  workqueues made by :meth:`Component.queue`;
- runs as one Trio task (:meth:`Component.run`): informers first, then, once
  every cache has synced, :meth:`Component.main`.

The runtime (:mod:`k8semu.sim.runtime`) decides when the cluster has settled by
asking each component for :meth:`Component.next_wakeup` — the earliest virtual
time at which it has real work scheduled (a delayed requeue, a container that
will exit, a probe that will flip), not periodic heartbeats.

Fault knobs (:class:`WatchFaults`), one per component, shared by its
informers: ``delay`` every watch event by some virtual seconds, ``drop``
events a predicate picks, or ``freeze`` the caches (a stale view: events are
held, the component keeps working on what it has). ``paused`` stops the
component's workers as well.
"""

from __future__ import annotations

from typing import Any, Callable

import trio
import trio.testing

from ..api.apiserver import APIServer, RequestContext
from ..api.auth import UserInfo
from .informer import Informer, SharedInformers
from .workqueue import WorkQueue

__all__ = ["Component", "WatchFaults"]


class WatchFaults:
    """Watch-side faults for one component's informers (see module docstring).

    Attributes:
        delay: virtual seconds each watch event waits before it reaches the cache.
        drop: ``drop(event_type, obj) -> bool``; True discards the event.
        frozen: hold every event (the cache goes stale) until thawed.
        paused: also stop the component's workers (see :meth:`Component.gate`).
    """

    def __init__(self) -> None:
        self.delay: float = 0.0
        self.drop: Callable[[str, dict[str, Any]], bool] | None = None
        self.frozen = False
        self.paused = False
        self._changed = trio.Event()
        self._on_fault: list[Callable[[], None]] = []

    @property
    def active(self) -> bool:
        """Whether any knob is set."""
        return self.delay > 0 or self.frozen or self.paused or self.drop is not None

    def on_fault(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once, when a knob is next set (a shared informer detaches then)."""
        self._on_fault.append(callback)

    def changed(self) -> None:
        """Wake everything waiting on a knob (call after changing one)."""
        if self.active and self._on_fault:
            callbacks, self._on_fault = self._on_fault, []
            for cb in callbacks:
                cb()
        self._changed.set()
        self._changed = trio.Event()

    async def wait_changed(self) -> None:
        """Wait until a knob changes (:meth:`changed`)."""
        await self._changed.wait()

    async def wait_thawed(self) -> None:
        while self.frozen or self.paused:
            await self._changed.wait()

    async def wait_unpaused(self) -> None:
        while self.paused:
            await self._changed.wait()


class Component:
    """Base class of the emulated components.

    Args:
        api: the API server.
        name: the actor written in the log for this component's writes
            (``replicaset-controller``, ``kube-scheduler``, ``kubelet/node-1``).
        user: the identity requests are authorized as.
    """

    name: str = "component"

    def __init__(self, api: APIServer, name: str | None = None, user: UserInfo | None = None) -> None:
        from ..api.auth import admin

        self.api = api
        if name is not None:
            self.name = name
        self.ctx = RequestContext(user or admin(), self.name)
        self.faults = WatchFaults()
        self.informers: list[Informer] = []
        self.queues: list[WorkQueue] = []
        self.coalescing = 0  # workers waiting for the current instant's events (see run_workers)
        self.coalesced = 0  # how many such waits have ended (see Runtime.quiet)
        #: the informers this component shares with others of its process (set by the runtime
        #: for kube-controller-manager's controllers), or None: each informer keeps its own cache
        self.shared_informers: SharedInformers | None = None
        #: the process this component runs in, for components that share informers
        #: (``kube-controller-manager``); None: a process of its own
        self.informer_group: str | None = None

    def informer(self, resource: Any, **kwargs: Any) -> Informer:
        """A new informer owned by this component (started by :meth:`run`)."""
        inf = Informer(self.api, resource, ctx=self.ctx, faults=self.faults, **kwargs)
        inf.shared_informers = self.shared_informers
        self.informers.append(inf)
        return inf

    def queue(self, name: str = "", **kwargs: Any) -> WorkQueue:
        """A new workqueue owned by this component."""
        q = WorkQueue(name or self.name, **kwargs)
        self.queues.append(q)
        return q

    async def gate(self) -> None:
        """Workers call this before each item: blocks while the component is paused."""
        await self.faults.wait_unpaused()

    def next_wakeup(self) -> float | None:
        """Earliest virtual time of scheduled real work (default: delayed queue items)."""
        times = [t for q in self.queues if (t := q.next_ready_time()) is not None]
        return min(times) if times else None

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Start informers, wait for their caches, then run :meth:`main` until cancelled."""
        async with trio.open_nursery() as nursery:
            for inf in self.informers:
                inf.shared_informers = self.shared_informers
                await nursery.start(inf.run)
            task_status.started()
            await self.main()

    async def main(self) -> None:
        """The component's own work, after caches have synced (override)."""
        await trio.sleep_forever()

    async def run_workers(self, queue: WorkQueue, sync: Callable[[Any], Any], workers: int = 1,
                          *, coalesce: bool = False, max_retries: int | None = None) -> None:
        """client-go's worker loop: get a key, ``sync(key)``, forget on success or
        requeue rate-limited on a raised exception; ``workers`` loops in parallel.

        ``max_retries``: a key that failed this many times in a row is dropped
        (forgotten, not requeued) until an event adds it again, as upstream
        controllers' ``handleErr`` (``maxRetries = 15`` in the Endpoints and
        EndpointSlice controllers). None: retried for ever.

        ``coalesce``: before each sync, wait until every other task is blocked, so
        one sync sees every event of the current virtual instant. Upstream, a sync
        that walks thousands of nodes takes milliseconds, and the workqueue folds
        the events that arrive meanwhile into one more sync; in virtual time a
        sync takes no time, and without this a burst of N events at one instant
        costs N syncs. No virtual time passes (the clock does not move while a
        task waits for the others to block).
        """
        async def worker() -> None:
            async for key in queue:
                try:
                    if coalesce:
                        self.coalescing += 1  # the runtime's "quiet" waits let this wake first
                        try:
                            await trio.testing.wait_all_tasks_blocked()
                        finally:
                            self.coalescing -= 1
                            self.coalesced += 1
                    await self.gate()
                    result = sync(key)
                    if hasattr(result, "__await__"):
                        await result
                except trio.Cancelled:
                    raise
                except Exception as exc:  # a failed sync is retried with back-off, as upstream
                    self.on_sync_error(key, exc)
                    if max_retries is None or queue.num_requeues(key) < max_retries:
                        queue.add_rate_limited(key)
                    else:
                        queue.forget(key)
                else:
                    queue.forget(key)
                finally:
                    queue.done(key)

        async with trio.open_nursery() as nursery:
            for _ in range(workers):
                nursery.start_soon(worker)

    def on_sync_error(self, key: Any, exc: Exception) -> None:
        """Hook for a failed sync (default: ignore; the key is retried)."""
        from ..api.errors import StatusError

        if not isinstance(exc, StatusError):
            raise exc
