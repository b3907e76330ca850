"""Lease headroom: a host without delay may have pages in hand beyond its request cap."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Request
from topicrawl.core.protocols import Frontier
from topicrawl.frontier import MemoryFrontier, SqliteFrontier

Opener = Callable[..., Awaitable[Frontier]]


@pytest.fixture(params=["memory", "sqlite"])
async def open_frontier(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    opened: list[Frontier] = []

    async def open_it(**options: Any) -> Frontier:
        frontier: Frontier
        if request.param == "memory":
            frontier = MemoryFrontier(**options)
        else:
            frontier = await SqliteFrontier(tmp_path / f"f{len(opened)}.db", **options).open()
        opened.append(frontier)
        return frontier

    yield open_it
    for frontier in opened:
        await frontier.close()


async def _leases(frontier: Frontier, host: str) -> int:
    await frontier.push([Request(url=f"http://{host}/{i}") for i in range(10)])
    count = 0
    while await frontier.pop() is not None:
        count += 1
    return count


async def test_a_host_without_delay_gets_the_headroom(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=2, lease_headroom=3)
    assert await _leases(frontier, "a.test") == 5


async def test_a_host_with_a_delay_gets_no_headroom(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=2, lease_headroom=3, default_delay=0.0)
    await frontier.set_host_delay("slow.test", 0.000_001)  # robots.txt Crawl-delay
    await frontier.push([Request(url=f"http://slow.test/{i}") for i in range(10)])
    popped = 0
    for _ in range(50):  # the delay is over at once; only the lease cap stops pops
        if await frontier.pop() is not None:
            popped += 1
    assert popped == 2
    assert await _leases(frontier, "fast.test") == 5


async def test_headroom_must_not_be_negative() -> None:
    with pytest.raises(ConfigError, match="lease_headroom"):
        MemoryFrontier(lease_headroom=-1)
