"""SqliteFrontier with ``spill_limit``: memory holds a bounded number of keys per host, the
order URLs leave in is the unbounded frontier's, and nothing is lost or handed out twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Request
from topicrawl.frontier import SqliteFrontier

LIMIT = 8


def requests(count: int, *, hosts: int = 2, offset: int = 0) -> list[Request]:
    # Scores repeat, so sequence numbers decide ties; pushed in an order unlike the pop order.
    return [
        Request(f"http://h{i % hosts}.test/{i}", score=float((i * 37) % 11))
        for i in range(offset, offset + count)
    ]


def open_frontier(path: Path, spill_limit: int, spill_total: int = 0) -> SqliteFrontier:
    return SqliteFrontier(
        path,
        max_per_host=1000,
        spill_limit=spill_limit,
        spill_total=spill_total,
        flush_interval=3600,
    )


async def drain(frontier: SqliteFrontier) -> list[str]:
    urls: list[str] = []
    while (lease := await frontier.pop()) is not None:
        urls.append(lease.request.url)
        await frontier.ack(lease)
    return urls


async def pushed_then_drained(
    path: Path, spill_limit: int, spill_total: int = 0, *, hosts: int = 2
) -> tuple[int, list[str]]:
    async with open_frontier(path, spill_limit, spill_total) as frontier:
        for start in range(0, 400, 50):  # one page's links at a time
            await frontier.push(requests(50, hosts=hosts, offset=start))
            await frontier.flush()
        in_memory = frontier._queues.keys_in_memory()
        return in_memory, await drain(frontier)


async def test_memory_holds_at_most_the_limit_per_host_and_the_order_is_kept(
    tmp_path: Path,
) -> None:
    in_memory, spilled_order = await pushed_then_drained(tmp_path / "spill.db", LIMIT)
    unbounded, order = await pushed_then_drained(tmp_path / "all.db", 0)
    assert unbounded == 400
    assert in_memory <= 2 * LIMIT  # two hosts
    assert spilled_order == order
    assert len(set(order)) == 400


async def test_urls_pushed_after_a_spill_and_before_a_flush_still_leave_in_order(
    tmp_path: Path,
) -> None:
    orders = []
    for limit in (LIMIT, 0):
        async with open_frontier(tmp_path / f"late{limit}.db", limit) as frontier:
            await frontier.push(requests(100))
            await frontier.flush()
            first = [await frontier.pop() for _ in range(5)]
            await frontier.push(requests(30, offset=100))  # not written yet
            for lease in first:
                assert lease is not None
                await frontier.ack(lease)
            orders.append([lease.request.url for lease in first if lease] + await drain(frontier))
    assert orders[0] == orders[1]
    assert len(set(orders[0])) == 130


async def test_an_increased_score_brings_a_spilled_url_out_first(tmp_path: Path) -> None:
    async with open_frontier(tmp_path / "up.db", LIMIT) as frontier:
        await frontier.push(requests(100, hosts=1))
        await frontier.flush()
        assert frontier._queues.keys_in_memory() <= LIMIT
        await frontier.increase("http://h0.test/1", 100.0)  # score 4: spilled
        lease = await frontier.pop()
        assert lease is not None
        assert lease.request.url == "http://h0.test/1"


async def test_a_reopened_frontier_loads_at_most_the_limit_and_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "reopen.db"
    async with open_frontier(path, 0) as frontier:
        await frontier.push(requests(300))
        lease = await frontier.pop()
        assert lease is not None
        await frontier.ack(lease)
        await frontier.flush()
    async with open_frontier(path, LIMIT) as frontier:
        assert frontier._queues.keys_in_memory() <= 2 * LIMIT
        assert await frontier.queued() == 299
        urls = await drain(frontier)
    assert len(set(urls)) == 299
    assert lease.request.url not in urls


def test_a_limit_of_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="spill_limit"):
        open_frontier(tmp_path / "x.db", 1)


async def test_a_crawl_bounds_the_keys_in_memory_by_default(tmp_path: Path) -> None:
    # 347 MB of RSS at 297,000 queued URLs (session 17) with the bound off by default; a
    # million-page crawl of the scale web queues ~2 million, ~66 bytes of keys each.
    from topicrawl.core.config import CrawlSettings  # noqa: PLC0415 - engine-level check
    from topicrawl.engine.build import _open_frontier  # noqa: PLC0415

    settings = CrawlSettings(storage={"url": str(tmp_path / "crawl.db")})
    frontier = await _open_frontier(settings, pages_in_hand=settings.concurrency)
    assert isinstance(frontier, SqliteFrontier)
    try:
        for start in range(0, 2_048, 128):  # one host's URLs, a page's links at a time
            await frontier.push(requests(128, hosts=1, offset=start))
            await frontier.flush()
        assert await frontier.queued() == 2_048
        assert frontier._queues.keys_in_memory() <= 512
    finally:
        await frontier.close()


async def test_many_small_hosts_stay_within_the_total_bound_in_the_same_order(
    tmp_path: Path,
) -> None:
    """50 hosts of 8 URLs each: the per-host bound (512) keeps them all; the total bound (200)
    cuts every host to the same level, and the URLs still leave in the unbounded order."""
    in_memory, order = await pushed_then_drained(tmp_path / "total.db", 512, 200, hosts=50)
    per_host, unbounded_order = await pushed_then_drained(tmp_path / "host.db", 512, hosts=50)
    assert per_host == 400
    assert in_memory <= 200
    assert order == unbounded_order
    assert len(set(order)) == 400


def test_the_fill_level_is_the_highest_that_fits() -> None:
    from topicrawl.frontier._schedule import _fill_level  # noqa: PLC0415 - the policy alone

    assert _fill_level([10, 3, 1], 100) == 10
    assert _fill_level([10, 3, 1], 9) == 5  # 5 + 3 + 1
    assert _fill_level([10, 3, 1], 8) == 4  # 4 + 3 + 1
    assert _fill_level([10, 3, 1], 2) == 0
    assert _fill_level([], 5) == 0


async def test_the_total_bound_keeps_one_key_a_host_at_least(tmp_path: Path) -> None:
    in_memory, order = await pushed_then_drained(tmp_path / "one.db", 512, 10, hosts=50)
    assert in_memory == 50
    assert len(set(order)) == 400


def test_a_total_bound_without_a_per_host_bound_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="spill_total"):
        open_frontier(tmp_path / "x.db", 0, 100)
