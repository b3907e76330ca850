"""A paused host: nothing of it is handed out until the pause ends, its URLs (deferred ones
included) can be counted and listed, and the other hosts go on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from topicrawl.core.models import Request
from topicrawl.frontier import MemoryFrontier, SqliteFrontier
from topicrawl.frontier._schedule import FrontierCore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
async def frontier_and_clock(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[FrontierCore, Clock]]:
    clock = Clock()
    frontier: FrontierCore
    if request.param == "memory":
        frontier = MemoryFrontier(clock=clock)
    else:
        frontier = await SqliteFrontier(tmp_path / "f.db", clock=clock).open()
    try:
        yield frontier, clock
    finally:
        await frontier.close()


async def test_a_paused_host_waits_and_the_others_go_on(
    frontier_and_clock: tuple[FrontierCore, Clock],
) -> None:
    frontier, clock = frontier_and_clock
    await frontier.push([Request(url=f"http://a.test/{n}", score=1.0) for n in range(3)])
    await frontier.push([Request(url="http://b.test/0", score=0.0)])
    lease = await frontier.pop()
    assert lease is not None
    assert lease.host == "a.test"
    await frontier.pause_host("a.test", 600.0)
    await frontier.reclaim(lease, delay=600.0)
    other = await frontier.pop()
    assert other is not None
    assert other.host == "b.test"
    await frontier.ack(other)
    assert await frontier.pop() is None
    assert await frontier.queued() == 3
    assert await frontier.queued_in(["a.test"]) == 3  # the deferred one counts
    assert await frontier.queued_in(["b.test"]) == 0
    listed = await frontier.queued_requests("a.test")
    assert sorted(r.url for r in listed) == [f"http://a.test/{n}" for n in range(3)]
    assert 599 < (await frontier.next_ready_in() or 0) <= 600
    clock.now += 600.0
    back = await frontier.pop()
    assert back is not None
    assert back.host == "a.test"


async def test_a_pause_survives_a_new_host_delay(
    frontier_and_clock: tuple[FrontierCore, Clock],
) -> None:
    frontier, clock = frontier_and_clock
    await frontier.push([Request(url="http://a.test/0")])
    await frontier.pause_host("a.test", 100.0)
    await frontier.set_host_delay("a.test", 1.0)
    assert await frontier.pop() is None
    clock.now += 100.0
    assert await frontier.pop() is not None


async def test_a_bad_pause_is_refused(frontier_and_clock: tuple[FrontierCore, Clock]) -> None:
    frontier, _ = frontier_and_clock
    with pytest.raises(ValueError, match="pause"):
        await frontier.pause_host("a.test", float("inf"))
