"""The numbers of a distributed crawl's storage run, made to add up.

Each worker adds what its counters gained since its last heartbeat to the crawl's totals in
Redis (one ``MULTI`` of ``HINCRBY``: all or nothing), so a worker killed with ``kill -9``
still counts up to its last heartbeat. The run's page count is not summed at all: it is read
from storage (the pages stored under the run), so it is exact whoever stored them. Every worker
that finishes writes the run's stats anew; the last one to finish writes the final numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from redis.asyncio import Redis
from redis.exceptions import RedisError

from topicrawl.core.errors import FrontierError
from topicrawl.core.models import CrawlStats, ErrorKind
from topicrawl.core.protocols import Storage
from topicrawl.distributed.registry import NodeRegistry, NodeState

__all__ = ["COUNTERS", "RunTotals", "node_numbers", "write_run_stats"]

COUNTERS = ("pages", "duplicates", "relevant", "errors", "robots_excluded", "bytes")


def node_numbers(stats: CrawlStats, pages: int) -> dict[str, int]:
    """A worker's counters: ``pages`` it stored; fetches that failed (``errors``); URLs its
    robots.txt checks kept it from fetching (``robots_excluded``: a rule obeyed, not an error)."""
    robots = stats.errors.get(ErrorKind.ROBOTS.value, 0)
    return {
        "pages": pages,
        "duplicates": stats.duplicates,
        "relevant": stats.relevant,
        "errors": stats.error_count - robots,
        "robots_excluded": robots,
        "bytes": stats.bytes,
    }


class RunTotals:
    """One worker's share of the crawl's totals (the hash ``totals`` in Redis).

    Args:
        client: an open Redis connection.
        prefix: the crawl's key prefix.
    """

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._key = prefix + "totals"
        self._sent = dict.fromkeys(COUNTERS, 0)

    async def add(self, numbers: Mapping[str, int]) -> None:
        """Add what ``numbers`` gained since the last call (atomically).

        Raises:
            FrontierError: Redis failed (nothing was added; the next call adds it).
        """
        delta = {name: numbers.get(name, 0) - self._sent[name] for name in COUNTERS}
        if not any(delta.values()):
            return
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                for name, gained in delta.items():
                    if gained:
                        pipe.hincrby(self._key, name, gained)
                await pipe.execute()
        except RedisError as exc:
            raise FrontierError(f"adding to the crawl's totals: {exc}") from exc
        self._sent.update({name: numbers.get(name, 0) for name in COUNTERS})

    async def read(self) -> dict[str, int]:
        """The totals over every worker so far.

        Raises:
            FrontierError: Redis failed.
        """
        try:
            raw = await self._client.hgetall(self._key)
        except RedisError as exc:
            raise FrontierError(f"reading the crawl's totals: {exc}") from exc
        found = {_text(k): int(v) for k, v in raw.items()}
        return {name: found.get(name, 0) for name in COUNTERS}


async def write_run_stats(
    storage: Storage, registry: NodeRegistry, totals: RunTotals, run_id: int
) -> dict[str, int]:
    """Write the run's stats: the totals, with ``pages`` the pages stored under the run
    (``pages_counted`` is what the workers counted: less when one was killed between
    heartbeats), how many workers took part and how many of them were lost (declared dead).
    Returns them."""
    summary = await totals.read()
    summary["pages_counted"] = summary["pages"]
    summary["pages"] = await storage.count_pages(run_id=run_id)
    nodes = await registry.nodes()
    summary["workers"] = len(nodes)
    summary["workers_lost"] = sum(1 for n in nodes if n.state is NodeState.DEAD)
    await storage.finish_run(run_id, stats=json.dumps(summary, sort_keys=True))
    return summary


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
