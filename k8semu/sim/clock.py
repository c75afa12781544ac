"""Virtual time for the emulator: a Trio clock, a deterministic timer service
and a deterministic ``trio.run`` wrapper.

Design
======

``VirtualClock`` is a :class:`trio.abc.Clock` with two modes:

* **virtual** (``speed is None``, the default): time stands still while any
  task can run.  When the run loop finds nothing runnable it asks the clock
  how long to sleep (``deadline_to_sleep_time``); the clock then moves its
  time straight to that next deadline and answers "0", so the deadline
  expires on the same loop pass.  This is what ``MockClock(autojump_threshold
  =0)`` does, but without a separate "idle" round trip: the jump happens in
  the clock hook itself.  Tasks parked in ``trio.testing.wait_all_tasks_blocked``
  take priority, as with ``MockClock``: while any is waiting the clock does not
  jump, so "run until quiescent" helpers see a frozen clock.  Virtual mode
  assumes no real I/O or worker threads are in flight (time would jump past
  them); pending ``run_sync_soon`` callbacks are honoured.
* **real-time** (``speed`` a positive float): virtual time advances at
  ``speed`` virtual seconds per wall second (1.0 = wall speed, 10.0 = ten times
  faster).  Used by ``k8semu serve``.  ``_wall_seconds`` below is *the one
  place* in the package that reads the wall clock, and it is only called in
  this mode.

Modes can be switched at any time with :meth:`VirtualClock.set_speed`; the
virtual time is continuous across the switch.

Deterministic timers
--------------------

Trio breaks deadline ties by ``id(cancel_scope)`` (a memory address) and
orders each batch of runnable tasks at random, so two ``trio.sleep`` calls due
at the same instant wake in an arbitrary order.  :class:`Timers` keeps its own
heap keyed by ``(deadline, key, seq)`` (``seq`` is a registration counter) and
is driven by one task that holds a single Trio deadline (the heap head).  Due
entries fire strictly in heap order: callbacks run inline in the driver task;
a sleeping task is rescheduled and the driver yields one scheduler pass before
firing the next entry, so the woken task's step (up to its next checkpoint)
completes before the next timer fires.  The driver waits without raising
``Cancelled`` (its abort hook reschedules it with a value).

Cost (2-core box, Python 3.11, trio 0.35): a lone ``Timers.sleep`` loop is
about 34 us per wake-up against 29 us for ``trio.sleep`` (two task steps
instead of one); 20,000 sleepers due at one instant cost about 9 us each
beyond spawning against about 60 us with ``trio.sleep``; a ``call_at``
callback costs about 12 us when every deadline differs and under 1 us when
many share an instant.  Prefer callbacks for bulk timers.

Deterministic scheduling (``run_virtual``)
------------------------------------------

Trio 0.35 orders each batch of runnable tasks with a module-level
``random.Random`` (``trio._core._run._r``): normally it reverses the batch
with probability 1/2; when the module flag ``_ALLOW_DETERMINISTIC_SCHEDULING``
is true it instead sorts the batch by task creation counter and shuffles it
with ``_r``.  With the flag set and ``_r`` seeded, the order of every batch is
a pure function of (seed, which tasks are in the batch, their creation order),
so set-iteration inside Trio (cancel delivery, notify queues) and memory
addresses no longer leak into the task order.  This is the mechanism Trio's
own test ``test_the_trio_scheduler_is_deterministic_if_seeded`` uses and the
one pytest-trio enables under Hypothesis, so it is a supported knob, not a
patch of behaviour.  ``run_virtual`` saves ``_r``'s state and the flag, sets
the flag, seeds ``_r`` with ``seed``, runs, and restores both in ``finally``.
The costs: a sort of each batch (small) and process-global state for the
duration of the run, so do not call ``run_virtual`` concurrently from two
threads.  Deadline ties of plain ``trio.sleep`` are still broken by address,
but tasks expiring in the same pass land in the same batch, which is then
sorted; use :class:`Timers` when the order of same-instant timers matters.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import outcome
import trio
from trio._core import _run as _trio_run  # private: see module docstring

__all__ = [
    "TimerHandle",
    "Timers",
    "VirtualClock",
    "current_timers",
    "run_virtual",
]

T = TypeVar("T")

# How long (real seconds) the run loop may block when the clock is virtual and
# it must not jump (nothing scheduled, or wait_all_tasks_blocked pending).
_IDLE_SLEEP = 86400.0


def _wall_seconds() -> float:
    """Monotonic wall-clock seconds.  The only wall-clock read in k8semu; used
    by ``VirtualClock`` in real-time mode only."""
    return time.perf_counter()


def _virtual_sleep_time(clock: VirtualClock, deadline: float) -> float | None:
    """Sleep time to report instead of jumping, or ``None`` to jump: queued
    ``run_sync_soon`` callbacks run first (poll), and a
    ``wait_all_tasks_blocked`` waiter gets priority (its cushion bounds the
    wait).  Reads Trio internals (``GLOBAL_RUN_CONTEXT.runner``)."""
    if deadline <= clock._base_virtual:
        return 0.0
    runner = getattr(_trio_run.GLOBAL_RUN_CONTEXT, "runner", None)
    if runner is None:
        return None
    if runner.entry_queue.size() > 0:
        return 0.0
    if runner.waiting_for_idle or deadline == math.inf:
        return _IDLE_SLEEP
    return None


class VirtualClock(trio.abc.Clock):
    """Trio clock in virtual seconds (float), starting at ``start``.

    ``speed=None`` (default) is virtual mode: time only moves when every task
    is blocked, straight to the next deadline.  ``speed=s`` (``s > 0``) is
    real-time mode: ``s`` virtual seconds pass per wall second.

    Pass it as ``trio.run(..., clock=VirtualClock())``, use :func:`run_virtual`,
    or return it from a pytest fixture (pytest-trio uses any ``Clock`` fixture).
    Raises ``ValueError`` for a non-positive speed or a negative jump.
    """

    def __init__(self, start: float = 0.0, *, speed: float | None = None) -> None:
        self._base_virtual = float(start)
        self._base_wall = 0.0
        self._speed: float | None = None
        self.set_speed(speed)

    @classmethod
    def virtual(cls, start: float = 0.0) -> VirtualClock:
        """A clock in virtual (auto-jumping) mode."""
        return cls(start)

    @classmethod
    def realtime(cls, speed: float = 1.0, start: float = 0.0) -> VirtualClock:
        """A clock running ``speed`` times faster than the wall clock."""
        return cls(start, speed=speed)

    def __repr__(self) -> str:
        mode = "virtual" if self._speed is None else f"speed={self._speed}"
        return f"<VirtualClock now={self.now():.6f} {mode}>"

    @property
    def speed(self) -> float | None:
        """Virtual seconds per wall second, or ``None`` in virtual mode."""
        return self._speed

    @property
    def is_virtual(self) -> bool:
        return self._speed is None

    def set_speed(self, speed: float | None) -> None:
        """Switch mode: ``None`` for virtual, a positive float for real time.
        ``now()`` is continuous across the switch."""
        if speed is not None:
            speed = float(speed)
            if not speed > 0 or math.isinf(speed):
                raise ValueError(f"speed must be a positive finite number, got {speed}")
        self._base_virtual = self.now()
        self._speed = speed
        if speed is not None:
            self._base_wall = _wall_seconds()

    def now(self) -> float:
        """Current virtual time in seconds."""
        if self._speed is None:
            return self._base_virtual
        return self._base_virtual + (_wall_seconds() - self._base_wall) * self._speed

    def jump(self, seconds: float) -> None:
        """Move virtual time forward by ``seconds`` (>= 0), in either mode."""
        if seconds < 0:
            raise ValueError("time can't go backwards")
        self._base_virtual += seconds

    # --- trio.abc.Clock -------------------------------------------------
    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self.now()

    def deadline_to_sleep_time(self, deadline: float) -> float:
        # Only called by the run loop when no task is runnable.
        if self._speed is not None:
            return (deadline - self.now()) / self._speed
        hold = _virtual_sleep_time(self, deadline)
        if hold is not None:
            return hold
        self._base_virtual = deadline  # autojump: everything is blocked
        return 0.0


# ---------------------------------------------------------------------------
# Deterministic timers
# ---------------------------------------------------------------------------


class TimerHandle:
    """A pending :meth:`Timers.call_at` callback; ``cancel()`` it to drop it.
    ``when`` is the virtual deadline in seconds."""

    __slots__ = ("when", "_fn", "_args", "cancelled")

    def __init__(self, when: float, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        self.when = when
        self._fn = fn
        self._args = args
        self.cancelled = False

    def cancel(self) -> None:
        """Drop the callback if it has not fired yet (idempotent)."""
        self.cancelled = True


class _Sleeper:
    __slots__ = ("task", "cancelled")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.cancelled = False


class Timers:
    """One heap of timers keyed by ``(deadline, key, seq)``, fired in that
    order by a single driver task (see module docstring).

    ``key`` is a priority (int, lower fires first; default 0; all keys used on
    one ``Timers`` must be mutually comparable); ``seq`` is the registration
    counter, so same-instant, same-key timers fire first-registered first.
    Deadlines are Trio clock seconds (virtual seconds under ``VirtualClock``).

    Start the driver with ``nursery.start_soon(timers.run)`` or use
    :func:`current_timers`, which starts one as a system task.  Callbacks run
    inside the driver task and must not block or raise (an exception ends the
    driver and propagates to its nursery).
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, Any, int, _Sleeper | TimerHandle]] = []
        self._seq = itertools.count()
        self._active = False
        self._scope: trio.CancelScope | None = None
        self.fired = 0  # number of timers fired so far (statistics)

    def __len__(self) -> int:
        """Number of pending entries (cancelled ones included until popped)."""
        return len(self._heap)

    def _push(self, when: float, key: Any, entry: _Sleeper | TimerHandle) -> None:
        heapq.heappush(self._heap, (when, key, next(self._seq), entry))
        scope = self._scope
        if scope is not None and when < scope.deadline and self._heap[0][3] is entry:
            # New head: pull the driver's single Trio deadline forward.
            scope.deadline = when

    # --- public API -------------------------------------------------------
    def call_at(self, when: float, fn: Callable[..., object], *args: Any, key: Any = 0) -> TimerHandle:
        """Run ``fn(*args)`` in the driver task at virtual time ``when``
        (seconds); returns a handle whose ``cancel()`` drops it."""
        handle = TimerHandle(float(when), fn, args)
        self._push(handle.when, key, handle)
        return handle

    def call_later(self, delay: float, fn: Callable[..., object], *args: Any, key: Any = 0) -> TimerHandle:
        """Run ``fn(*args)`` ``delay`` virtual seconds from now."""
        return self.call_at(trio.current_time() + delay, fn, *args, key=key)

    async def sleep_until(self, when: float, key: Any = 0) -> None:
        """Block the calling task until virtual time ``when`` (seconds).
        Cancellable; always a checkpoint.  Raises ``RuntimeError`` if no
        driver is running."""
        if not self._active:
            raise RuntimeError("Timers driver is not running (start Timers.run)")
        sleeper = _Sleeper(trio.lowlevel.current_task())
        self._push(float(when), key, sleeper)

        def abort(_: object) -> trio.lowlevel.Abort:
            sleeper.cancelled = True
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    async def sleep(self, seconds: float, key: Any = 0) -> None:
        """Block the calling task for ``seconds`` virtual seconds."""
        await self.sleep_until(trio.current_time() + seconds, key)

    # --- driver -------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The driver loop; runs until cancelled.  Only one may run at a time
        (``RuntimeError`` otherwise)."""
        if self._active:
            raise RuntimeError("Timers driver already running")
        self._active = True
        task_status.started()
        await self._drive()

    async def _drive(self) -> None:
        heap = self._heap
        reschedule = trio.lowlevel.reschedule
        me = trio.lowlevel.current_task()
        woke_task = False  # a sleeper was woken and has not run its step yet
        try:
            while True:
                now = trio.current_time()
                if not heap or heap[0][0] > now:
                    woke_task = False
                    await self._wait(heap[0][0] if heap else math.inf, me)
                    continue
                entry = heap[0][3]
                if entry.cancelled:
                    heapq.heappop(heap)
                    continue
                if woke_task:
                    # Let the task woken last finish its step first: it runs in
                    # the next batch; a callback must wait one batch more.
                    await trio.lowlevel.cancel_shielded_checkpoint()
                    if type(entry) is not _Sleeper:
                        await trio.lowlevel.cancel_shielded_checkpoint()
                    woke_task = False
                    await trio.lowlevel.checkpoint_if_cancelled()
                    continue  # the heap may have changed meanwhile
                heapq.heappop(heap)
                self.fired += 1
                if type(entry) is _Sleeper:
                    entry.cancelled = True
                    reschedule(entry.task)
                    woke_task = True
                else:
                    entry._fn(*entry._args)
        finally:
            self._active = False

    async def _wait(self, deadline: float, me: trio.lowlevel.Task) -> None:
        # Park until `deadline` (or an earlier head is pushed).  Our own
        # deadline ends the wait with a plain value instead of raising
        # Cancelled, which keeps a wake-up cheap.
        scope = trio.CancelScope(deadline=deadline)
        self._scope = scope

        def abort(raise_cancel: Any) -> trio.lowlevel.Abort:
            if scope.cancel_called and trio.current_time() >= scope.deadline:
                trio.lowlevel.reschedule(me, outcome.Value(None))
                return trio.lowlevel.Abort.FAILED
            return trio.lowlevel.Abort.SUCCEEDED

        try:
            with scope:
                await trio.lowlevel.wait_task_rescheduled(abort)
        finally:
            self._scope = None


_TIMERS: trio.lowlevel.RunVar[Timers] = trio.lowlevel.RunVar("k8semu_timers")


def current_timers() -> Timers:
    """The :class:`Timers` of the current ``trio.run``; on first use it is
    created and its driver started as a Trio system task (cancelled when the
    main task returns)."""
    try:
        return _TIMERS.get()
    except LookupError:
        timers = Timers()
        _TIMERS.set(timers)
        timers._active = True  # usable before the driver's first step
        trio.lowlevel.spawn_system_task(timers._drive, name="k8semu.timers")
        return timers


def run_virtual(
    async_fn: Callable[..., Awaitable[T]],
    *args: Any,
    start: float = 0.0,
    seed: int = 0,
    clock: VirtualClock | None = None,
) -> T:
    """``trio.run(async_fn, *args)`` on a virtual :class:`VirtualClock`
    (starting at ``start`` seconds, or the given ``clock``) with Trio's batch
    order made deterministic and seeded with ``seed`` (see module docstring).
    Returns what ``async_fn`` returns; propagates its exception."""
    if clock is None:
        clock = VirtualClock(start)
    state = _trio_run._r.getstate()
    flag = _trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    try:
        _trio_run._ALLOW_DETERMINISTIC_SCHEDULING = True  # type: ignore[misc]
        _trio_run._r.seed(seed)
        return trio.run(async_fn, *args, clock=clock)
    finally:
        _trio_run._r.setstate(state)
        _trio_run._ALLOW_DETERMINISTIC_SCHEDULING = flag  # type: ignore[misc]
