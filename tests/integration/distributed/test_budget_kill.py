"""A worker killed with pages reserved but not stored leaves the crawl no page short of its
limit: the reservations belong to the leases and come back with them (issue 27)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from tests.integration.distributed.harness import PATIENCE, Cluster, serve_demo_web
from topicrawl.demoweb import DemoWebServer

LIMIT = 30  # of the 48 pages of the demo web below


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    yield from serve_demo_web(seed=11, hosts=4, pages_per_host=12)


@pytest.fixture
async def cluster(
    server: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(server=server, redis_url=redis_url, postgres_url=postgres_url, tmp=tmp_path)
    yield made
    await made.cleanup()


async def _reserved(client: Redis, cluster: Cluster) -> int:
    return int(await client.hget(cluster.prefix + "budget", "reserved") or 0)


async def test_kill_9_between_reservation_and_storage_leaves_no_page_short(
    cluster: Cluster,
) -> None:
    await cluster.create_schema()
    client = Redis.from_url(cluster.redis_url)
    try:
        async with cluster.writes_held():
            # w1 fetches, reserves and buffers pages, but cannot store one.
            w1 = cluster.start_worker("w1", max_pages=LIMIT)
            deadline = time.monotonic() + PATIENCE
            while await _reserved(client, cluster) < 3:
                assert w1.poll() is None, cluster.log("w1")
                assert time.monotonic() < deadline, "w1 reserved no pages"
                await asyncio.sleep(0.05)
            await cluster.wait_for_a_held_write()
            w1.kill()  # SIGKILL: its buffered pages are lost, its reservations were made
            w1.wait(30)
            lost = await _reserved(client, cluster)
        assert await cluster.count() == 0
        assert lost >= 3
        # w2 finds w1 dead (heartbeat timeout 1.5 s): w1's leases, and with them its
        # reservations, go back; the crawl still stores exactly its limit.
        cluster.start_worker("w2", max_pages=LIMIT)
        codes = await cluster.wait_all(timeout=PATIENCE)
        assert codes["w2"] == 0, cluster.log("w2")
        stored = await cluster.stored()
        assert len({url for url, _ in stored}) == len(stored)
        assert len(stored) == LIMIT, cluster.log("w2")
        assert await _reserved(client, cluster) == LIMIT
        assert not await client.hlen(cluster.prefix + "budgeted")
    finally:
        await client.aclose()
