"""Virtual time: VirtualClock modes, deterministic Timers, run_virtual."""

from __future__ import annotations

import time

import pytest
import trio
import trio.testing

from k8semu.sim.clock import Timers, VirtualClock, current_timers, run_virtual


@pytest.fixture
def vclock() -> VirtualClock:
    # pytest-trio runs the test on any Clock returned by a fixture.
    return VirtualClock()


async def test_an_hour_of_sleep_takes_no_wall_time(vclock: VirtualClock) -> None:
    wall = time.perf_counter()
    await trio.sleep(3600)
    assert vclock.now() == 3600.0
    assert trio.current_time() == 3600.0
    assert time.perf_counter() - wall < 0.05


def test_start_offset_and_return_value() -> None:
    async def main() -> float:
        await trio.sleep(1.5)
        return trio.current_time()

    assert run_virtual(main, start=1000.0) == 1001.5


async def test_move_on_after_uses_virtual_time(vclock: VirtualClock) -> None:
    with trio.move_on_after(30) as scope:
        await trio.sleep_forever()
    assert scope.cancelled_caught
    assert vclock.now() == 30.0


async def test_fail_after_raises_too_slow(vclock: VirtualClock) -> None:
    with pytest.raises(trio.TooSlowError):
        with trio.fail_after(5):
            await trio.sleep(10)
    assert vclock.now() == 5.0


async def test_time_stands_still_while_tasks_run(vclock: VirtualClock) -> None:
    for _ in range(100):
        await trio.lowlevel.checkpoint()
    assert vclock.now() == 0.0


async def test_wait_all_tasks_blocked_wins_over_jump(vclock: VirtualClock) -> None:
    woke: list[float] = []

    async def sleeper() -> None:
        await trio.sleep(10)
        woke.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sleeper)
        await trio.testing.wait_all_tasks_blocked()
        assert vclock.now() == 0.0 and woke == []
    assert woke == [10.0]


def test_realtime_mode_runs_at_speed() -> None:
    clock = VirtualClock.realtime(speed=100.0)
    assert clock.speed == 100.0 and not clock.is_virtual

    async def main() -> None:
        await trio.sleep(5)  # 5 virtual seconds = 50 ms wall

    wall = time.perf_counter()
    trio.run(main, clock=clock)
    elapsed = time.perf_counter() - wall
    assert 0.045 <= elapsed < 0.2
    assert clock.now() >= 5.0


def test_switching_modes_keeps_time_continuous() -> None:
    clock = VirtualClock(start=50.0)
    clock.jump(10)
    clock.set_speed(1000.0)
    assert clock.now() >= 60.0
    clock.set_speed(None)
    frozen = clock.now()
    assert clock.is_virtual and clock.now() == frozen
    with pytest.raises(ValueError):
        clock.set_speed(0)
    with pytest.raises(ValueError):
        clock.jump(-1)


def _same_instant_order(run: object) -> tuple[list[str], list[str]]:
    async def main() -> tuple[list[str], list[str]]:
        timers = current_timers()
        fired: list[str] = []
        registered: list[str] = []

        async def sleeper(name: str, key: int) -> None:
            registered.append(name)  # same step as the timer registration
            await timers.sleep_until(5.0, key)
            fired.append(name)

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(sleeper, f"t{i}", 0)
            await trio.testing.wait_all_tasks_blocked()
            timers.call_at(5.0, fired.append, "cb")
            nursery.start_soon(sleeper, "urgent", -1)
        return fired, registered

    return run(main)  # type: ignore[operator]


def test_equal_deadlines_fire_in_registration_order_any_scheduler() -> None:
    # Start order of the 12 sleepers is itself random under plain trio.run,
    # so compare against their actual registration order.
    for run in (lambda f: trio.run(f, clock=VirtualClock()), run_virtual):
        for _ in range(15):
            fired, registered = _same_instant_order(run)
            assert fired[0] == "urgent"  # lower key first
            assert fired[1:-1] == registered[:12]  # same key: registration order
            assert fired[-1] == "cb"  # registered after the twelve


def test_registration_order_independent_of_trio_randomness() -> None:
    async def main() -> list[int]:
        timers = current_timers()
        fired: list[int] = []
        for i in range(50):
            timers.call_at(1.0 + (i % 3), fired.append, i)
        await trio.sleep(10)
        return fired

    expected = [i for t in range(3) for i in range(50) if i % 3 == t]
    for _ in range(10):
        assert trio.run(main, clock=VirtualClock()) == expected


def test_sleepers_registered_in_order_wake_in_order() -> None:
    async def main() -> list[int]:
        timers = current_timers()
        fired: list[int] = []
        parked = 0

        async def sleeper(i: int) -> None:
            nonlocal parked
            # Register strictly in i order (each waits for its turn).
            while parked != i:
                await trio.lowlevel.checkpoint()
            parked += 1
            await timers.sleep_until(2.0)
            fired.append(i)

        async with trio.open_nursery() as nursery:
            for i in range(20):
                nursery.start_soon(sleeper, i)
        return fired

    for _ in range(10):
        assert trio.run(main, clock=VirtualClock()) == list(range(20))


async def test_timer_sleep_is_cancellable_and_handles_cancel(vclock: VirtualClock) -> None:
    timers = current_timers()
    with trio.move_on_after(1):
        await timers.sleep(100)
    assert vclock.now() == 1.0
    handle = timers.call_later(5, pytest.fail, "cancelled timer fired")
    handle.cancel()
    await timers.sleep(10)
    assert vclock.now() == 11.0


async def test_explicit_driver_in_nursery(vclock: VirtualClock) -> None:
    timers = Timers()
    with pytest.raises(RuntimeError):
        await timers.sleep(1)
    async with trio.open_nursery() as nursery:
        await nursery.start(timers.run)
        await timers.sleep(7)
        assert vclock.now() == 7.0
        nursery.cancel_scope.cancel()


def test_run_virtual_scheduling_is_reproducible() -> None:
    async def trace() -> tuple[tuple[int, int], ...]:
        out: list[tuple[int, int]] = []

        async def worker(n: int) -> None:
            for i in range(20):
                out.append((n, i))
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            for n in range(5):
                nursery.start_soon(worker, n)
        return tuple(out)

    assert len({run_virtual(trace, seed=7) for _ in range(5)}) == 1
    assert run_virtual(trace, seed=1) != run_virtual(trace, seed=2)
