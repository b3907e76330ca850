"""The simulated clock jumps to the time waited for; the system clock really waits."""

from __future__ import annotations

import time

import pytest

from topicrawl.revisit.clock import SimulatedClock, SystemClock


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
