"""A worker always ends: when its storage fails with the page limit reserved, and when it is
sent SIGTERM while its writes cannot go through (issue 27, the hang of session 16).

Real worker processes on the real Redis and PostgreSQL. Each wait is bounded well below the
leases' lifetime (``LEASE_TTL``), so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator

import pytest
from redis.asyncio import Redis

from tests.integration.distributed.harness import PATIENCE, Cluster, serve_demo_web
from tests.unit.distributed.proxy import CuttableProxy
from topicrawl.demoweb import DemoWebServer

LIMIT = 20  # pages of the crawl (the demo web below has 48)
# Seconds a worker may take to end once its storage failed or it was told to stop: far
# below its leases' 600 s, which is what a page waiting for the page budget used to wait out.
BOUND = 90.0


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    yield from serve_demo_web(seed=11, hosts=4, pages_per_host=12)


async def budget(cluster: Cluster) -> tuple[int, int]:
    """(pages reserved, reservations not yet final) of the crawl's page budget."""
    client = Redis.from_url(cluster.redis_url)
    try:
        reserved = await client.hget(cluster.prefix + "budget", "reserved")
        pending = await client.hlen(cluster.prefix + "budgeted")
    finally:
        await client.aclose()
    return int(reserved or 0), int(pending)


async def wait_budget_full(cluster: Cluster, name: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while (await budget(cluster))[0] < LIMIT:
        assert time.monotonic() < deadline, cluster.log(name)
        await asyncio.sleep(0.05)


async def finish(cluster: Cluster, name: str) -> int:
    """Wait at most BOUND seconds for the worker to end (the others may go on); its exit
    code."""
    proc = cluster.procs[name]
    deadline = time.monotonic() + BOUND
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            # The worker writes its asyncio tasks and where each waits to its log on SIGUSR1:
            # the failure then names what it waits on.
            proc.send_signal(signal.SIGUSR1)
            await asyncio.sleep(3.0)
            pytest.fail(f"{name} did not end within {BOUND:.0f} s:\n{cluster.log(name)[-12000:]}")
        await asyncio.sleep(0.1)
    return proc.returncode


async def complete_with_another_worker(cluster: Cluster) -> None:
    """A second worker finishes the crawl: the limit's pages, each stored once."""
    cluster.start_worker("w2", max_pages=LIMIT)
    assert await finish(cluster, "w2") == 0, cluster.log("w2")
    await assert_limit_stored_once(cluster)


async def assert_limit_stored_once(cluster: Cluster) -> None:
    urls = [url for url, _ in await cluster.stored()]
    assert len(urls) == len(set(urls)), "a page was stored twice"
    assert len(urls) == LIMIT
    assert await budget(cluster) == (LIMIT, 0)


async def test_a_worker_whose_storage_fails_at_the_page_limit_ends(cluster: Cluster) -> None:
    """Two workers; the page limit is fully reserved, the reserved pages' acks wait for
    checkpoints that cannot write (writes held), and the pages still in hand wait for those
    reservations to settle. Then w1 loses PostgreSQL (the proxy between them is cut; storage
    not retried): its checkpoint fails and its crawl stops, so its own reservations will not
    settle. Its pages waiting for the budget must give up then, not wait out their leases
    (600 s): w1 ends with a database error and its leases go back, and w0 completes the
    crawl: the limit's pages, each stored once."""
    await cluster.create_schema()
    proxy = CuttableProxy("127.0.0.1", 5432)
    await proxy.start()
    try:
        async with cluster.writes_held():
            cluster.start_worker("w0", max_pages=LIMIT)
            cluster.start_worker(
                "w1",
                max_pages=LIMIT,
                pg_port=proxy.port,
                env={"TOPICRAWL_DISTRIBUTED__STORAGE_RETRIES": "0"},
            )
            await wait_budget_full(cluster, "w1")
            await cluster.wait_for_a_held_write()
            assert await budget(cluster) == (LIMIT, LIMIT)  # none final yet
            await proxy.cut()
            code = await finish(cluster, "w1")
    finally:
        await proxy.cut()
    assert code == 4, cluster.log("w1")  # a database error, said so
    assert "database error" in cluster.log("w1")
    assert await finish(cluster, "w0") == 0, cluster.log("w0")
    await assert_limit_stored_once(cluster)


async def test_sigterm_ends_a_worker_whose_writes_cannot_go_through(cluster: Cluster) -> None:
    """SIGTERM while every write of the worker waits on a lock (and pages wait for the page
    budget): the worker ends within its stop grace, whatever it waits for; nothing it had
    not stored is lost, and nothing is stored twice."""
    await cluster.create_schema()
    env = {"TOPICRAWL_DISTRIBUTED__STOP_GRACE": "5"}
    async with cluster.writes_held():
        proc = cluster.start_worker("w1", max_pages=LIMIT, env=env)
        await wait_budget_full(cluster, "w1")
        await cluster.wait_for_a_held_write()
        proc.send_signal(signal.SIGTERM)
        code = await finish(cluster, "w1")
    assert code == 128 + signal.SIGTERM, cluster.log("w1")
    await complete_with_another_worker(cluster)
