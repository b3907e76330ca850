from __future__ import annotations

from pathlib import Path

import pytest

from topicrawl.core.models import Request
from topicrawl.core.protocols import KnownUrls
from topicrawl.frontier import MemoryFrontier, SqliteFrontier
from topicrawl.frontier.dedupe import SeenUrls

URLS = [f"http://a.test/{i}" for i in range(5)]


async def _check(frontier: MemoryFrontier | SqliteFrontier) -> None:
    assert isinstance(frontier, KnownUrls)
    await frontier.push([Request(url=URLS[1]), Request(url=URLS[3])])
    lease = await frontier.pop()
    assert lease is not None
    await frontier.ack(lease)  # a fetched URL stays known
    assert frontier.known(URLS) == [False, True, False, True, False]
    assert frontier.known([]) == []
    # Asking marks nothing: the unknown URLs are still new to push.
    assert await frontier.push([Request(url=URLS[0]), Request(url=URLS[1])]) == 1


async def test_memory_frontier_knows_its_urls() -> None:
    await _check(MemoryFrontier())


async def test_sqlite_frontier_knows_its_urls_also_after_a_restart(tmp_path: Path) -> None:
    frontier = SqliteFrontier(tmp_path / "f.db")
    await frontier.open()
    try:
        await _check(frontier)
        await frontier.flush()
    finally:
        await frontier.close()
    again = SqliteFrontier(tmp_path / "f.db")
    await again.open()
    try:
        assert again.known(URLS) == [True, True, False, True, False]
    finally:
        await again.close()


def test_bloom_false_positives_are_settled_exactly() -> None:
    seen = SeenUrls(capacity=8, error_rate=0.5)  # a tiny, very lossy filter
    seen.filter_new(list(range(0, 2000, 2)))
    assert seen.contains_many(list(range(2000))) == [i % 2 == 0 for i in range(2000)]


@pytest.mark.parametrize("count", [0, 1])
def test_known_of_empty_frontier(count: int) -> None:
    assert MemoryFrontier().known(URLS[:count]) == [False] * count
