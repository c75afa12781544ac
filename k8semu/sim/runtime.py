"""Running a cluster: every component a Trio task in one nursery, on virtual time.

:class:`Runtime` hosts the components of one :class:`~k8semu.sim.cluster.Cluster`
inside one ``trio.run`` (:func:`run_cluster`, which uses
:func:`~k8semu.sim.clock.run_virtual`: the cluster's clock, Trio's scheduling
made deterministic and seeded from the cluster's seed and revision).

Time moves only when every task is blocked; then the clock jumps to the next
timer, so an hour with nothing to do costs milliseconds.

Quiescence: :meth:`Runtime.settle` returns once the cluster has *settled*:
every task is blocked (no queued work, no write in flight, no watch event
undelivered) and no component has real work scheduled within ``horizon``
virtual seconds (30 by default: longer than an image pull, a probe's initial
delay or a first crash back-off, shorter than a CronJob's typical period) (:meth:`~k8semu.client.component.Component.next_wakeup`;
heartbeats and lease renewals do not count). :meth:`Runtime.advance` lets a
given span of virtual time pass; :meth:`Runtime.until` waits for a predicate.

Faults, the one small interface later fault scenarios drive (all by component
name, e.g. ``kubelet/node-1``, ``kube-scheduler``):

================================  =================================================
``stop(name)``                    the component's task is cancelled (a machine or
                                  process that died); its in-memory state is gone
``start(name)``                   a fresh instance starts (lists, then watches)
``crash(name, restart_after=s)``  stop, then start again ``s`` virtual seconds later
``pause(name)`` / ``resume``      workers stop taking work; watch events are held
``delay_watch(name, s)``          every watch event reaches its caches ``s`` later
``drop_watch(name, predicate)``   watch events the predicate picks are lost
``freeze(name)`` / ``thaw``       caches stop updating (a stale view) while workers go on
================================  =================================================
"""

from __future__ import annotations

import gc
from typing import Any, Awaitable, Callable, TypeVar

import trio
import trio.testing

from ..client.component import Component
from ..client.informer import SharedInformers
from .clock import run_virtual

__all__ = ["Runtime", "run_cluster"]

T = TypeVar("T")
Factory = Callable[[], Component]


class Runtime:
    """The components of one cluster, running in one nursery.

    Args:
        cluster: the cluster (its API server and clock).
        factories: component name -> zero-argument constructor; one instance per
            name runs at a time, and a restart builds a fresh one. A component with a
            ``bind_runtime(runtime)`` method is handed the runtime when it is built
            (:class:`~k8semu.sim.components.MachineSupervisor` starts and stops node components).
    """

    def __init__(self, cluster: Any, factories: dict[str, Factory] | None = None) -> None:
        self.cluster = cluster
        self._factories: dict[str, Factory] = dict(factories or {})
        self.components: dict[str, Component] = {}
        self._scopes: dict[str, trio.CancelScope] = {}
        self._nursery: trio.Nursery | None = None
        self.stopped: set[str] = set()
        self._informer_groups: dict[str, SharedInformers] = {}  # process -> its shared informers

    # ------------------------------------------------------------------ lifecycle
    def add(self, name: str, factory: Factory) -> None:
        """Register a component (replacing any factory of that name); started soon if the
        runtime is running (no longer counted as stopped)."""
        self._factories[name] = factory
        self.stopped.discard(name)
        if self._nursery is not None:
            self._nursery.start_soon(self._supervise, name)

    async def _supervise(self, name: str, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        comp = self._factories[name]()
        bind = getattr(comp, "bind_runtime", None)
        if bind is not None:  # a component that starts and stops others (the machine supervisor)
            bind(self)
        self.components[name] = comp
        if comp.informer_group is not None and self._nursery is not None:
            group = self._informer_groups.get(comp.informer_group)
            if group is None:
                group = self._informer_groups[comp.informer_group] = SharedInformers(
                    self.cluster.api, self._nursery)
            comp.shared_informers = group
        with trio.CancelScope() as scope:
            self._scopes[name] = scope
            await comp.run(task_status=task_status)
        if self._scopes.get(name) is scope:
            del self._scopes[name]

    async def _run(self, body: Callable[["Runtime"], Awaitable[T]]) -> T:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for name in list(self._factories):
                await nursery.start(self._supervise, name)
            try:
                return await body(self)
            finally:
                nursery.cancel_scope.cancel()
                self._nursery = None

    @property
    def now(self) -> float:
        return trio.current_time()

    # ------------------------------------------------------------------ time
    def next_wakeup(self) -> float | None:
        """Earliest scheduled real work over every running component."""
        times = [t for c in self.components.values() if (t := c.next_wakeup()) is not None]
        return min(times) if times else None

    async def quiet(self) -> None:
        """Wait until every task is blocked at the current instant, including the
        syncs components hold for the instant's events (``run_workers(coalesce=True)``)."""
        # Trio wakes every wait_all_tasks_blocked() waiter at once, in an order of its own: a
        # coalescing worker woken with us may already have run its sync (coalescing back to 0,
        # its writes not yet seen by anyone), so a wait that saw any of those syncs start
        # waits again; only a wait that woke nothing else means the instant's work is done.
        while True:
            components = self.components.values()
            before = sum(c.coalesced for c in components)
            await trio.testing.wait_all_tasks_blocked()
            components = self.components.values()
            if not any(c.coalescing for c in components) and sum(c.coalesced for c in components) == before:
                return

    async def settle(self, *, horizon: float = 30.0, limit: float = 600.0) -> bool:
        """Run until settled (see module docstring) or ``limit`` virtual seconds pass.

        Returns:
            True if the cluster settled, False if ``limit`` ran out first.
        """
        deadline = trio.current_time() + limit
        while True:
            await self.quiet()
            now = trio.current_time()
            wake = self.next_wakeup()
            if wake is None or wake > now + horizon:
                return True
            if now >= deadline:
                return False
            await trio.sleep_until(min(max(wake, now), deadline))
            if wake <= now:
                await trio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass (everything due in between runs)."""
        await trio.sleep(seconds)
        await self.quiet()

    async def until(self, predicate: Callable[[], bool], *, limit: float = 600.0, step: float = 1.0) -> bool:
        """Run until ``predicate()`` holds (checked whenever the cluster is idle, at
        least every ``step`` virtual seconds); False if ``limit`` runs out."""
        deadline = trio.current_time() + limit
        while True:
            await self.quiet()
            if predicate():
                return True
            now = trio.current_time()
            if now >= deadline:
                return False
            wake = self.next_wakeup()
            nxt = now + step if wake is None else min(max(wake, now), now + step)
            await trio.sleep_until(min(nxt, deadline))

    # ------------------------------------------------------------------ faults
    def stop(self, name: str) -> None:
        """Cancel a component's task (it stops writing; its memory is lost)."""
        scope = self._scopes.pop(name, None)
        if scope is None:
            raise KeyError(f"component {name!r} is not running")
        scope.cancel()
        self.components.pop(name, None)
        self.stopped.add(name)

    async def start(self, name: str) -> None:
        """Start a fresh instance of a stopped component (it lists, then watches)."""
        if name in self._scopes:
            raise ValueError(f"component {name!r} is already running")
        if name not in self._factories:
            raise KeyError(f"no component named {name!r}")
        assert self._nursery is not None, "the runtime is not running"
        self.stopped.discard(name)
        await self._nursery.start(self._supervise, name)

    def crash(self, name: str, restart_after: float = 0.0) -> None:
        """Stop a component now and start it again ``restart_after`` seconds later."""
        self.stop(name)
        assert self._nursery is not None

        async def restart() -> None:
            await trio.sleep(restart_after)
            await self.start(name)

        self._nursery.start_soon(restart)

    def _faults(self, name: str):
        comp = self.components.get(name)
        if comp is None:
            raise KeyError(f"component {name!r} is not running")
        return comp.faults

    def pause(self, name: str) -> None:
        """Stop the component's workers and hold its watch events."""
        f = self._faults(name)
        f.paused = True
        f.changed()

    def resume(self, name: str) -> None:
        f = self._faults(name)
        f.paused = False
        f.changed()

    def freeze(self, name: str) -> None:
        """Hold watch events (a stale cache) while workers keep running."""
        f = self._faults(name)
        f.frozen = True
        f.changed()

    def thaw(self, name: str) -> None:
        f = self._faults(name)
        f.frozen = False
        f.changed()

    def delay_watch(self, name: str, seconds: float) -> None:
        """Deliver each watch event to the component ``seconds`` after it was written."""
        f = self._faults(name)
        f.delay = seconds
        f.changed()

    def drop_watch(self, name: str, predicate: Callable[[str, dict], bool] | None) -> None:
        """Lose the watch events ``predicate(type, obj)`` picks (None: stop dropping)."""
        f = self._faults(name)
        f.drop = predicate
        f.changed()


def run_cluster(cluster: Any, body: Callable[[Runtime], Awaitable[T]],
                factories: dict[str, Factory] | None = None) -> T:
    """Run ``body(runtime)`` with the cluster's components, in virtual time.

    The clock is the cluster's; Trio's scheduling is seeded from the cluster's
    seed and current revision, so the same inputs give the same log.
    """
    runtime = Runtime(cluster, factories)
    seed = (int(cluster.seed) * 1_000_003 + cluster.log.revision) & 0xFFFFFFFF
    # The cluster's objects are JSON dicts, acyclic and long-lived: with the default
    # thresholds the cyclic collector's full passes over them took ~20 % of the CPU of a
    # 400-pod apply; collecting less often saves ~10 % (reference counting still frees
    # every acyclic object at once). A young collection every 50,000 allocations rather than
    # 10,000 halves what is left (~1 s of a 2,000-pod apply's ~15 s of CPU to ~0.5 s) at
    # the same peak memory.
    thresholds = gc.get_threshold()
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        return run_virtual(runtime._run, body, seed=seed, clock=cluster.clock)
    finally:
        gc.set_threshold(*thresholds)


#: gen0 allocations, gen0 runs per gen1, gen1 runs per full collection (CPython: 700, 10, 10)
_GC_THRESHOLDS = (50_000, 20, 100)
