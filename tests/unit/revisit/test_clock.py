"""The simulated clock jumps to the time waited for; the system clock really waits."""

from __future__ import annotations

import asyncio
import time

import pytest

from topicrawl.revisit.clock import LockstepClock, SimulatedClock, SystemClock


async def test_the_simulated_clock_jumps_and_never_goes_back() -> None:
    clock = SimulatedClock(100.0)
    assert clock.now() == 100.0
    await clock.sleep_until(7 * 86_400.0)
    assert clock.now() == 7 * 86_400.0
    await clock.sleep_until(50.0)  # in the past: returns at once, time stays
    assert clock.now() == 7 * 86_400.0
    assert clock.jumps == 1


def test_a_simulated_clock_needs_a_finite_start() -> None:
    with pytest.raises(ValueError, match="finite"):
        SimulatedClock(float("nan"))


async def test_the_system_clock_waits_until_the_time() -> None:
    clock = SystemClock()
    target = clock.now() + 0.05
    await clock.sleep_until(target)
    assert time.time() >= target
    await clock.sleep_until(0.0)  # long past: no wait


async def test_a_lockstep_clock_moves_only_when_every_party_waits() -> None:
    clock = LockstepClock(0.0, parties=2)
    seen: list[tuple[str, float]] = []
    busy = asyncio.Event()

    async def early() -> None:
        await clock.sleep_until(10.0)
        seen.append(("early", clock.now()))
        clock.leave()

    async def late() -> None:
        await busy.wait()  # working, not waiting on the clock: time must not move
        seen.append(("late starts", clock.now()))
        await clock.sleep_until(30.0)
        seen.append(("late", clock.now()))
        clock.leave()

    async with asyncio.TaskGroup() as group:
        group.create_task(early())
        group.create_task(late())
        for _ in range(5):
            await asyncio.sleep(0)
        assert clock.now() == 0.0  # one party waits for 10, the other is busy
        busy.set()
    assert seen == [("late starts", 0.0), ("early", 10.0), ("late", 30.0)]


async def test_a_lockstep_clock_wakes_every_party_due_at_the_same_time() -> None:
    clock = LockstepClock(5.0, parties=3)
    woke: list[float] = []

    async def party(when: float) -> None:
        await clock.sleep_until(when)
        woke.append(clock.now())
        clock.leave()

    async with asyncio.TaskGroup() as group:
        for when in (7.0, 7.0, 9.0):
            group.create_task(party(when))
    assert woke == [7.0, 7.0, 9.0]
    await clock.sleep_until(1.0)  # past: at once
    assert clock.now() == 9.0
