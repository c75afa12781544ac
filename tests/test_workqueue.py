"""client-go workqueue semantics on Trio, in virtual time."""

from __future__ import annotations

from collections import deque

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from k8semu.client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    WorkQueue,
    WorkQueueStatistics,
    default_controller_rate_limiter,
)
from k8semu.sim.clock import VirtualClock, run_virtual


@pytest.fixture
def vclock() -> VirtualClock:
    return VirtualClock()


async def test_adds_are_deduplicated_and_fifo(vclock: VirtualClock) -> None:
    q = WorkQueue("test")
    for key in ["default/a", "default/b", "default/a", "kube-system/c", "default/b"]:
        q.add(key)
    assert q.len() == 3
    assert [await q.get(), await q.get(), await q.get()] == [
        "default/a",
        "default/b",
        "kube-system/c",
    ]
    assert q.statistics() == WorkQueueStatistics(
        depth=0, processing=3, waiting=0, requeues=0, tasks_waiting=0, shutting_down=False
    )


async def test_key_added_while_processing_is_requeued_after_done(vclock: VirtualClock) -> None:
    q = WorkQueue()
    q.add("ns/pod")
    key = await q.get()
    q.add("ns/pod")
    q.add("ns/pod")
    assert q.len() == 0  # not handed to a second worker meanwhile
    with trio.move_on_after(1):
        await q.get()
        pytest.fail("key handed out while still processing")
    q.done(key)
    assert q.len() == 1
    assert await q.get() == "ns/pod"
    q.done("ns/pod")
    assert q.statistics().processing == 0


async def test_blocked_getters_are_served_in_arrival_order(vclock: VirtualClock) -> None:
    q = WorkQueue()
    got: list[tuple[int, str]] = []

    async def worker(i: int) -> None:
        got.append((i, await q.get()))

    async with trio.open_nursery() as nursery:
        for i in range(3):
            nursery.start_soon(worker, i)
            await trio.testing.wait_all_tasks_blocked()
        assert q.statistics().tasks_waiting == 3
        for key in ["x", "y", "z"]:
            q.add(key)
    # who got what is fixed; the order the three resume in is up to Trio
    assert sorted(got) == [(0, "x"), (1, "y"), (2, "z")]


async def test_exponential_backoff_5ms_doubling_capped_at_1000s() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("ns/a") for _ in range(25)]
    assert delays[:5] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert delays[17] == 0.005 * 2**17  # 655.36 s
    assert delays[18:] == [1000.0] * 7
    assert limiter.num_requeues("ns/a") == 25
    assert limiter.when("ns/b") == 0.005  # per key
    limiter.forget("ns/a")
    assert limiter.num_requeues("ns/a") == 0
    assert limiter.when("ns/a") == 0.005
    for _ in range(5000):  # no overflow far past the cap
        limiter.when("ns/c")
    assert limiter.when("ns/c") == 1000.0


async def test_default_controller_limiter_combines_bucket_10qps_burst_100(
    vclock: VirtualClock,
) -> None:
    limiter = default_controller_rate_limiter()
    first = [limiter.when(f"ns/p{i}") for i in range(100)]
    assert first == [0.005] * 100  # burst of 100 tokens: per-item delay wins
    assert limiter.when("ns/p100") == pytest.approx(0.1)
    assert limiter.when("ns/p101") == pytest.approx(0.2)
    assert limiter.num_requeues("ns/p0") == 1
    await trio.sleep(10.3)  # refills 103 tokens, capped at the burst of 100
    assert [limiter.when(f"ns/q{i}") for i in range(100)] == [0.005] * 100
    assert limiter.when("ns/q100") == pytest.approx(0.1)


def test_bucket_and_max_of_limiters_standalone() -> None:
    now = [0.0]
    bucket = BucketRateLimiter(qps=2.0, burst=1, now=lambda: now[0])
    assert [bucket.when("k") for _ in range(3)] == [0.0, 0.5, 1.0]
    assert bucket.num_requeues("k") == 0
    combined = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(1.0, 60.0), bucket)
    now[0] = 100.0
    assert combined.when("k") == 1.0
    assert combined.when("k") == 2.0
    assert combined.num_requeues("k") == 2


async def test_add_rate_limited_requeues_at_backoff_times(vclock: VirtualClock) -> None:
    q = WorkQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.005, 1000.0))
    seen: list[float] = []
    q.add("ns/a")
    for _ in range(4):
        key = await q.get()
        seen.append(trio.current_time())
        q.add_rate_limited(key)  # sync failed: retry with back-off
        q.done(key)
    assert q.num_requeues("ns/a") == 4
    assert seen == pytest.approx([0.0, 0.005, 0.015, 0.035])
    q.forget("ns/a")
    assert q.num_requeues("ns/a") == 0
    assert q.statistics().requeues == 4


async def test_add_after_fires_at_virtual_time_and_keeps_earliest(vclock: VirtualClock) -> None:
    q = WorkQueue()
    q.add_after("ns/late", 30)
    q.add_after("ns/a", 10)
    q.add_after("ns/a", 20)  # later ready time is ignored
    q.add_after("ns/b", 5)
    q.add_after("ns/b", 2)  # earlier ready time wins
    q.add_after("ns/now", 0)
    assert q.statistics().waiting == 3
    assert await q.get() == "ns/now" and trio.current_time() == 0.0
    assert await q.get() == "ns/b" and trio.current_time() == 2.0
    assert await q.get() == "ns/a" and trio.current_time() == 10.0
    assert await q.get() == "ns/late" and trio.current_time() == 30.0
    with trio.move_on_after(100):
        await q.get()
        pytest.fail("superseded delayed add fired")


async def test_same_instant_delayed_adds_keep_registration_order(vclock: VirtualClock) -> None:
    q = WorkQueue()
    keys = [f"ns/p{i}" for i in range(30)]
    for key in keys:
        q.add_after(key, 1.0)
    await trio.sleep(1.0)
    assert [await q.get() for _ in keys] == keys


async def test_shutdown_wakes_getters_after_draining(vclock: VirtualClock) -> None:
    q = WorkQueue()
    results: list[str] = []

    async def worker() -> None:
        async for key in q:
            results.append(key)
            q.done(key)
        results.append("stopped")

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(worker)
        await trio.testing.wait_all_tasks_blocked()
        q.add_after("ns/never", 5)
        q.shut_down()
        q.add("ns/ignored")
    assert results == ["stopped"] * 3
    assert q.shutting_down and q.statistics().waiting == 0
    q2 = WorkQueue()
    q2.add("ns/left")
    q2.shut_down()
    assert await q2.get() == "ns/left"  # drained first, like client-go
    with pytest.raises(QueueShutDown):
        await q2.get()


async def test_shut_down_with_drain_waits_for_done(vclock: VirtualClock) -> None:
    q = WorkQueue()
    q.add("ns/a")
    key = await q.get()

    async def finish_later() -> None:
        await trio.sleep(3)
        q.done(key)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(finish_later)
        await q.shut_down_with_drain()
        assert trio.current_time() == 3.0


async def test_cancelled_getter_loses_no_key(vclock: VirtualClock) -> None:
    q = WorkQueue()
    with trio.move_on_after(1):
        await q.get()
    q.add("ns/a")
    assert q.statistics().tasks_waiting == 0
    assert await q.get() == "ns/a"


# --- property tests -----------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c", "d", "e"])
WORKERS = st.integers(0, 3)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), KEYS),
        st.tuples(st.just("get"), WORKERS),
        st.tuples(st.just("done"), WORKERS),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops=OPS)
def test_queue_matches_model_with_four_workers(ops: list[tuple[str, object]]) -> None:
    async def main() -> None:
        q = WorkQueue()
        queue: deque[str] = deque()
        dirty: set[str] = set()
        processing: set[str] = set()
        held: dict[int, str | None] = dict.fromkeys(range(4))
        for op, arg in ops:
            if op == "add":
                if arg not in dirty:
                    dirty.add(arg)
                    if arg not in processing:
                        queue.append(arg)
                q.add(arg)
            elif op == "get":
                if held[arg] is not None or not queue:
                    continue  # the worker is busy, or get() would block
                expected = queue.popleft()
                dirty.discard(expected)
                processing.add(expected)
                key = await q.get()
                assert key == expected
                assert key not in [k for k in held.values() if k is not None]
                held[arg] = key
            else:
                key = held[arg]
                if key is None:
                    continue
                held[arg] = None
                processing.discard(key)
                if key in dirty:
                    queue.append(key)
                q.done(key)
            stats = q.statistics()
            assert (q.len(), stats.processing) == (len(queue), len(processing))

    run_virtual(main)


@settings(max_examples=60, deadline=None)
@given(
    adds=st.lists(st.tuples(st.integers(0, 20), KEYS), min_size=1, max_size=40),
    work=st.lists(st.integers(0, 5), min_size=1, max_size=10),
)
def test_concurrent_workers_never_share_a_key(
    adds: list[tuple[int, str]], work: list[int]
) -> None:
    async def main() -> None:
        q = WorkQueue()
        active: dict[str, int] = {}
        starts: list[tuple[float, str]] = []

        async def worker(w: int) -> None:
            n = 0
            async for key in q:
                assert key not in active, f"{key} processed by {active.get(key)} and {w}"
                active[key] = w
                starts.append((trio.current_time(), key))
                await trio.sleep(work[(w + n) % len(work)])
                n += 1
                del active[key]
                q.done(key)

        async def producer() -> None:
            for at, key in sorted(adds):
                await trio.sleep_until(at)
                q.add(key)
            await trio.sleep(1000)
            await q.shut_down_with_drain()

        async with trio.open_nursery() as nursery:
            for w in range(4):
                nursery.start_soon(worker, w)
            nursery.start_soon(producer)
        # every add is followed by a processing start of that key
        for at, key in adds:
            assert any(t >= at and k == key for t, k in starts)

    run_virtual(main)
