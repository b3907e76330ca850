from __future__ import annotations

import asyncio

import pytest

from topicrawl.engine.slots import RequestSlots, RequestSpacing


async def _hold(
    slots: RequestSlots, host: str, active: dict[str, int], most: dict[str, int]
) -> None:
    await slots.acquire(host)
    try:
        active[host] = active.get(host, 0) + 1
        active["*"] = active.get("*", 0) + 1
        for key in (host, "*"):
            most[key] = max(most.get(key, 0), active[key])
        await asyncio.sleep(0.01)
    finally:
        active[host] -= 1
        active["*"] -= 1
        slots.release(host)


async def test_requests_stay_under_the_total_and_per_host_caps() -> None:
    slots = RequestSlots(total=5, per_host=2)
    active: dict[str, int] = {}
    most: dict[str, int] = {}
    hosts = ["a.test"] * 10 + ["b.test"] * 10 + [f"h{i}.test" for i in range(10)]
    await asyncio.gather(*(_hold(slots, host, active, most) for host in hosts))
    assert most["a.test"] == 2
    assert most["b.test"] == 2
    assert most["*"] == 5
    assert all(slots.in_use(host) == 0 for host in hosts)  # nothing kept for finished hosts


async def test_without_a_per_host_cap_only_the_total_counts() -> None:
    slots = RequestSlots(total=3, per_host=0)
    active: dict[str, int] = {}
    most: dict[str, int] = {}
    await asyncio.gather(*(_hold(slots, "a.test", active, most) for _ in range(9)))
    assert most["a.test"] == 3


async def test_a_cancelled_wait_gives_back_what_it_held() -> None:
    slots = RequestSlots(total=1, per_host=1)
    await slots.acquire("a.test")
    waiter = asyncio.create_task(slots.acquire("a.test"))
    other = asyncio.create_task(slots.acquire("b.test"))  # has its host slot, waits for total
    await asyncio.sleep(0)
    assert slots.in_use("a.test") == 2
    waiter.cancel()
    other.cancel()
    await asyncio.gather(waiter, other, return_exceptions=True)
    assert slots.in_use("a.test") == 1
    assert slots.in_use("b.test") == 0
    slots.release("a.test")
    await asyncio.wait_for(slots.acquire("b.test"), 1.0)  # the total slot came back


def test_caps_are_checked() -> None:
    with pytest.raises(ValueError, match="total"):
        RequestSlots(total=0, per_host=1)
    with pytest.raises(ValueError, match="per_host"):
        RequestSlots(total=1, per_host=-1)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_spacing_lets_one_request_of_a_host_start_per_delay() -> None:
    clock = _Clock()
    spacing = RequestSpacing(clock=clock)
    assert await spacing.claim("a", 0.5) == 0.0
    assert await spacing.claim("a", 0.5) == pytest.approx(0.5)  # the next waits the delay out
    assert await spacing.claim("b", 0.5) == 0.0  # another host is not held up
    clock.now += 0.2
    assert await spacing.claim("a", 0.5) == pytest.approx(0.3)
    clock.now += 0.3
    assert await spacing.claim("a", 0.5) == 0.0
    # A request that starts late pushes the next one back: the delay runs from its start.
    clock.now += 2.0
    assert await spacing.claim("a", 0.5) == 0.0
    assert await spacing.claim("a", 0.5) == pytest.approx(0.5)
