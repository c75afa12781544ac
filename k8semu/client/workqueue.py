"""Controller work queues, after client-go ``k8s.io/client-go/util/workqueue``.

Design
======

:class:`WorkQueue` combines client-go's three layers (plain queue, delaying
queue, rate-limiting queue) in one Trio object:

* a FIFO ``deque`` of keys waiting to be handed out, a *dirty* set (keys
  that need processing) and a *processing* set (keys handed to a worker and
  not yet ``done``).  A key is never in the FIFO twice and never handed to a
  second worker while the first holds it; a key added while it is being
  processed is queued again when ``done`` is called.  Both sets are ``dict``
  (insertion ordered), never ``set``, so nothing depends on hash order.
* blocked ``get`` callers wait in FIFO order and are handed the key directly,
  so which worker receives which key does not depend on Trio's scheduler.
* ``add_after`` registers a callback on the run's :class:`~k8semu.sim.clock.Timers`
  (virtual time, ties fired in registration order); a key waiting twice keeps
  the earlier ready time, as client-go's delaying queue does.
* ``add_rate_limited`` asks a pluggable :class:`RateLimiter` how long to wait.

All durations are **virtual seconds** (floats) on the Trio clock.  All methods
except ``get``/``shut_down_with_drain`` are synchronous and must be called
from inside the Trio run that owns the queue.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable
from typing import Protocol

import attrs
import outcome
import trio

from k8semu.sim.clock import TimerHandle, Timers, current_timers

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "QueueShutDown",
    "RateLimiter",
    "WorkQueue",
    "WorkQueueStatistics",
    "default_controller_rate_limiter",
]


# ---------------------------------------------------------------------------
# Rate limiters (client-go default_rate_limiters.go)
# ---------------------------------------------------------------------------


class RateLimiter(Protocol):
    """client-go ``RateLimiter``: ``when`` returns the delay in virtual seconds
    before ``key`` may be retried (and records the retry); ``forget`` ends
    tracking of ``key``; ``num_requeues`` counts its recorded failures."""

    def when(self, key: Hashable) -> float: ...

    def forget(self, key: Hashable) -> None: ...

    def num_requeues(self, key: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """Per-key exponential back-off: the n-th ``when(key)`` (n from 0) returns
    ``min(base * 2**n, max)`` seconds, as client-go's
    ``NewItemExponentialFailureRateLimiter(baseDelay, maxDelay)``.
    Defaults are the controller defaults: 5 ms doubling up to 1000 s."""

    def __init__(self, base: float = 0.005, max: float = 1000.0) -> None:  # noqa: A002
        self.base = float(base)
        self.max = float(max)
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        exp = self._failures.get(key, 0)
        self._failures[key] = exp + 1
        try:
            backoff = math.ldexp(self.base, exp)
        except OverflowError:
            return self.max
        return min(backoff, self.max)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """Overall token bucket, as client-go's ``BucketRateLimiter`` over
    ``rate.NewLimiter(qps, burst)``: the bucket starts full with ``burst``
    tokens and refills at ``qps`` tokens per virtual second; every ``when``
    reserves one token and returns how long until that token exists (0 while
    tokens remain).  Reservations may drive the bucket negative, so a burst
    of requests is spaced ``1/qps`` apart.  Not per key: ``num_requeues`` is
    always 0 and ``forget`` does nothing.  ``now`` returns virtual seconds
    (default ``trio.current_time``)."""

    def __init__(self, qps: float = 10.0, burst: int = 100, now: Callable[[], float] | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self.qps = float(qps)
        self.burst = int(burst)
        self._now = now or trio.current_time
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, key: Hashable) -> float:
        now = self._now()
        if self._last is None:
            self._last = now
        elapsed = max(0.0, now - self._last)
        tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
        self._last = now
        self._tokens = tokens
        return -tokens / self.qps if tokens < 0 else 0.0

    def forget(self, key: Hashable) -> None:
        pass

    def num_requeues(self, key: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Combines limiters: ``when`` is the maximum of all delays (every limiter
    records the retry), ``num_requeues`` the maximum count, ``forget`` forgets
    everywhere — client-go's ``NewMaxOfRateLimiter``."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, key: Hashable) -> float:
        return max([limiter.when(key) for limiter in self.limiters])

    def forget(self, key: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        return max(limiter.num_requeues(key) for limiter in self.limiters)


def default_controller_rate_limiter(now: Callable[[], float] | None = None) -> MaxOfRateLimiter:
    """client-go ``DefaultControllerRateLimiter()``: the max of per-key
    back-off (5 ms doubling to 1000 s) and an overall bucket of 10 qps with
    burst 100.  Units: virtual seconds."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, now=now),
    )


# ---------------------------------------------------------------------------
# The queue
# ---------------------------------------------------------------------------


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down and empty
    (client-go's ``Get`` returning ``shutdown == true``)."""


@attrs.frozen
class WorkQueueStatistics:
    """Snapshot of a :class:`WorkQueue`.

    * ``depth``: keys waiting to be handed out (client-go ``workqueue_depth``)
    * ``processing``: keys handed out and not yet ``done``
    * ``waiting``: keys parked by ``add_after`` / ``add_rate_limited``
    * ``requeues``: total ``add_after`` calls, rate-limited ones included
      (client-go ``workqueue_retries_total``)
    * ``tasks_waiting``: tasks blocked in ``get``
    * ``shutting_down``: whether ``shut_down`` was called
    """

    depth: int
    processing: int
    waiting: int
    requeues: int
    tasks_waiting: int
    shutting_down: bool


class WorkQueue:
    """client-go's rate-limiting work queue for Trio; keys are any hashable
    (controllers use ``"namespace/name"`` strings).

    ``rate_limiter`` defaults to :func:`default_controller_rate_limiter`;
    ``timers`` defaults to :func:`~k8semu.sim.clock.current_timers` (looked up
    on first delayed add).  ``name`` is informational (client-go metrics).
    """

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter | None = None,
        timers: Timers | None = None,
    ) -> None:
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter()
        self._timers = timers
        self._queue: deque[Hashable] = deque()
        self._dirty: dict[Hashable, None] = {}
        self._processing: dict[Hashable, None] = {}
        self._getters: dict[trio.lowlevel.Task, None] = {}
        self._waiting: dict[Hashable, TimerHandle] = {}
        self._drained: trio.Event | None = None
        self._requeues = 0
        self._shutting_down = False

    def __repr__(self) -> str:
        return f"<WorkQueue {self.name!r} {self.statistics()}>"

    # --- plain queue (client-go queue.go) --------------------------------
    def add(self, key: Hashable) -> None:
        """Mark ``key`` as needing processing.  No-op if it is already queued,
        or after shutdown; if a worker holds it, it is queued again on
        ``done``."""
        if self._shutting_down or key in self._dirty:
            return
        self._dirty[key] = None
        if key not in self._processing:
            self._push(key)

    def _push(self, key: Hashable) -> None:
        # key is dirty and not processing: hand it out or enqueue it.
        if self._getters:
            task = next(iter(self._getters))
            del self._getters[task]
            self._take(key)
            trio.lowlevel.reschedule(task, outcome.Value(key))
        else:
            self._queue.append(key)

    def _take(self, key: Hashable) -> None:
        del self._dirty[key]
        self._processing[key] = None

    async def get(self) -> Hashable:
        """Wait for the next key (FIFO) and mark it processing; the caller
        must call ``done(key)`` when finished.  Keys still queued at shutdown
        are handed out first; then raises :class:`QueueShutDown`.  Blocked
        callers are served first-come first-served.  Cancellable."""
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._queue:
            key = self._queue.popleft()
            self._take(key)
            await trio.lowlevel.cancel_shielded_checkpoint()
            return key
        if self._shutting_down:
            await trio.lowlevel.cancel_shielded_checkpoint()
            raise QueueShutDown(self.name)
        task = trio.lowlevel.current_task()
        self._getters[task] = None

        def abort(_: object) -> trio.lowlevel.Abort:
            del self._getters[task]
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)

    def done(self, key: Hashable) -> None:
        """Finish processing ``key``; if it was added meanwhile it is queued
        again (at the back)."""
        self._processing.pop(key, None)
        if key in self._dirty:
            self._push(key)
        elif not self._processing and self._drained is not None:
            self._drained.set()

    def len(self) -> int:
        """Number of keys waiting to be handed out (client-go ``Len``)."""
        return len(self._queue)

    __len__ = len

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def shut_down(self) -> None:
        """Stop accepting keys: later adds are ignored, delayed adds are
        dropped, and blocked ``get`` callers raise :class:`QueueShutDown`.
        Idempotent."""
        self._shutting_down = True
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        getters, self._getters = self._getters, {}
        for task in getters:
            trio.lowlevel.reschedule(task, outcome.Error(QueueShutDown(self.name)))

    async def shut_down_with_drain(self) -> None:
        """``shut_down`` then wait until every handed-out key is ``done``
        (client-go ``ShutDownWithDrain``)."""
        self.shut_down()
        if self._processing:
            if self._drained is None:
                self._drained = trio.Event()
            await self._drained.wait()
        else:
            await trio.lowlevel.checkpoint()

    def __aiter__(self) -> WorkQueue:
        return self

    async def __anext__(self) -> Hashable:
        """``async for key in queue`` ends at shutdown."""
        try:
            return await self.get()
        except QueueShutDown:
            raise StopAsyncIteration from None

    # --- delaying queue (client-go delaying_queue.go) ---------------------
    def add_after(self, key: Hashable, delay: float) -> None:
        """Add ``key`` after ``delay`` virtual seconds (``<= 0``: now).  If
        the key is already waiting, the earlier ready time wins.  Ignored
        after shutdown."""
        if self._shutting_down:
            return
        self._requeues += 1
        if delay <= 0:
            self.add(key)
            return
        ready = trio.current_time() + delay
        existing = self._waiting.get(key)
        if existing is not None:
            if existing.when <= ready:
                return
            existing.cancel()
        if self._timers is None:
            self._timers = current_timers()
        self._waiting[key] = self._timers.call_at(ready, self._ready, key)

    def _ready(self, key: Hashable) -> None:
        del self._waiting[key]
        self.add(key)

    def cancel_after(self, key: Hashable) -> None:
        """Drop ``key`` if it is waiting to be added (:meth:`add_after`): a check that is no
        longer needed (an upstream controller's check would find nothing to do; dropping it
        keeps a pending timer from holding the cluster unsettled). No effect on a key already
        in the queue."""
        waiting = self._waiting.pop(key, None)
        if waiting is not None:
            waiting.cancel()

    # --- rate-limiting queue (client-go rate_limiting_queue.go) -----------
    def add_rate_limited(self, key: Hashable) -> None:
        """Add ``key`` after the delay the rate limiter decides (records a
        failure for per-key limiters)."""
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: Hashable) -> None:
        """Reset the rate limiter's failure count for ``key`` (call after a
        successful sync).  Does not remove the key from the queue."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: Hashable) -> int:
        """How many times ``key`` was rate-limited since its last ``forget``."""
        return self.rate_limiter.num_requeues(key)

    def next_ready_time(self) -> float | None:
        """Virtual time at which the earliest delayed key becomes ready, or None."""
        if not self._waiting:
            return None
        return min(h.when for h in self._waiting.values())

    def statistics(self) -> WorkQueueStatistics:
        """A :class:`WorkQueueStatistics` snapshot."""
        return WorkQueueStatistics(
            depth=len(self._queue),
            processing=len(self._processing),
            waiting=len(self._waiting),
            requeues=self._requeues,
            tasks_waiting=len(self._getters),
            shutting_down=self._shutting_down,
        )
