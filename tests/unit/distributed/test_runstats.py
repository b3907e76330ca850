"""The crawl's totals in Redis: each worker adds only what it gained, so they add up."""

from __future__ import annotations

import uuid

from redis.asyncio import Redis

from topicrawl.core.models import CrawlStats, ErrorKind
from topicrawl.distributed.runstats import RunTotals, node_numbers


def test_robots_exclusions_are_not_errors() -> None:
    stats = CrawlStats(duplicates=2, relevant=3, bytes=100)
    stats.errors = {ErrorKind.ROBOTS.value: 4, ErrorKind.TIMEOUT.value: 1}
    assert node_numbers(stats, 9) == {
        "pages": 9,
        "duplicates": 2,
        "relevant": 3,
        "errors": 1,
        "robots_excluded": 4,
        "bytes": 100,
    }


async def test_workers_add_what_they_gained_and_a_killed_one_keeps_its_share(
    redis_url: str,
) -> None:
    client = Redis.from_url(redis_url)
    prefix = f"topicrawl:{{totals-{uuid.uuid4().hex}}}:"
    try:
        first, second = RunTotals(client, prefix), RunTotals(client, prefix)
        await first.add({"pages": 5, "errors": 1})
        await first.add({"pages": 8, "errors": 1, "bytes": 10})  # adds 3 pages and 10 bytes
        await first.add({"pages": 8, "errors": 1, "bytes": 10})  # nothing new: nothing added
        # The second worker is killed after its first heartbeat: what it sent stays counted.
        await second.add({"pages": 4, "robots_excluded": 2})
        assert await first.read() == {
            "pages": 12,
            "duplicates": 0,
            "relevant": 0,
            "errors": 1,
            "robots_excluded": 2,
            "bytes": 10,
        }
    finally:
        await client.delete(prefix + "totals")
        await client.aclose()
