"""Several workers on one host: an idle worker shares a busy node's host (its politeness kept
in Redis for all), and a worker killed with ``kill -9`` loses nothing and doubles nothing."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.distributed.harness import (
    PATIENCE,
    Cluster,
    crowded,
    expected_urls,
    handed_out,
    serve_demo_web,
)
from topicrawl.demoweb import DemoWebServer
from topicrawl.distributed import NodeRegistry, NodeState

DELAY = 0.1  # the per-host delay: all workers together fetch the host at most this often
LAG = 0.5  # seconds a request may reach the server after its hand-out (see test_workers)
WORKERS = ("w1", "w2", "w3")


@pytest.fixture(scope="module")
def one_host() -> Iterator[DemoWebServer]:
    yield from serve_demo_web(seed=21, hosts=1, pages_per_host=70)


@pytest.fixture
async def cluster(
    one_host: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(server=one_host, redis_url=redis_url, postgres_url=postgres_url, tmp=tmp_path)
    yield made
    await made.cleanup()


@pytest.fixture
async def registry(cluster: Cluster) -> AsyncIterator[NodeRegistry]:
    """The crawl's schema made and its node registry open (closed after the test)."""
    await cluster.create_schema()
    opened = await NodeRegistry(
        cluster.redis_url, namespace=cluster.namespace, heartbeat_timeout=cluster.timeout
    ).open()
    yield opened
    await opened.close()


async def start_three(cluster: Cluster, registry: NodeRegistry) -> str:
    """Start three workers with writes held until all have registered and the host has its
    owner; returns the owner."""
    async with cluster.writes_held():
        for name in WORKERS:
            cluster.start_worker(name)
        await cluster.wait_registered(registry, WORKERS)
        await cluster.wait_for_a_held_write()
        # Read until the host has one owner: under load a node can be thought dead for a
        # moment (a late heartbeat) and its host handed on, with no owner in between.
        deadline = time.monotonic() + PATIENCE
        while len(owners := await registry.client.hgetall(cluster.prefix + "owner")) != 1:
            assert time.monotonic() < deadline, owners
            await asyncio.sleep(0.1)
    return next(iter(owners.values())).decode()


async def run_stats(cluster: Cluster) -> dict[str, int]:
    connection = await cluster.pg()
    try:
        rows = await connection.fetch(f'SELECT stats FROM "{cluster.schema}".runs')
    finally:
        await connection.close()
    assert len(rows) == 1
    stats: dict[str, int] = json.loads(rows[0]["stats"])
    return stats


def assert_each_page_once(cluster: Cluster, stored: list[tuple[str, str]]) -> None:
    urls = [url for url, _ in stored]
    assert len(urls) == len(set(urls)), "a URL was stored twice"
    web = cluster.server.web
    assert {web.resolve(final) for _, final in stored} == expected_urls(cluster.server)


def explain(cluster: Cluster) -> dict[str, object]:
    """What a count that does not add up needs: the paths fetched more than once and what the
    workers said about lost leases and late heartbeats."""
    paths: dict[str, int] = {}
    for record in cluster.server.access_log():
        if "robots.txt" not in record.path:
            paths[record.path] = paths.get(record.path, 0) + 1
    said = [
        f"{name}: {line}"
        for name in WORKERS
        for line in cluster.log(name).splitlines()
        if "declared dead" in line or "not stored" in line or "heartbeat" in line
    ]
    return {"fetched twice": {p: n for p, n in paths.items() if n > 1}, "said": said[:20]}


async def test_three_workers_share_one_host_politely(
    cluster: Cluster, registry: NodeRegistry
) -> None:
    cluster.delay = DELAY
    cluster.server.clear_log()
    owner = await start_three(cluster, registry)
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert set(codes.values()) == {0}, (codes, cluster.log("w1"))
    nodes = {n.node: n for n in await registry.nodes()}
    stored = await cluster.stored()
    assert_each_page_once(cluster, stored)
    # One host, one owner: the two idle workers shared it and stored pages too.
    pages = {name: node.pages for name, node in nodes.items()}
    assert all(count > 0 for count in pages.values()), (owner, pages)
    assert all(node.state is NodeState.LEFT for node in nodes.values())
    # Each node's count is final (its last heartbeat), and they add up to what is stored.
    assert sum(pages.values()) == len(stored)
    stats = await run_stats(cluster)
    assert stats["pages"] == stats["pages_counted"] == len(stored), (stats, explain(cluster))
    assert stats["workers"] == 3
    # Politeness holds for the host over the three workers (see test_workers' test).
    arrivals = handed_out(cluster.server)
    assert sum(len(times) - 1 for times in arrivals.values()) > 30
    too_close = {
        host: found
        for host, times in arrivals.items()
        if (found := crowded(times, delay=DELAY, lag=LAG))
    }
    assert not too_close, too_close


async def test_kill_9_of_a_sharing_worker_loses_nothing_and_stores_nothing_twice(
    cluster: Cluster, registry: NodeRegistry
) -> None:
    owner = await start_three(cluster, registry)
    # The owner dies holding leases (its fetched pages wait for the held writes).
    async with cluster.writes_held():
        await cluster.wait_for_a_held_write()
        victim = cluster.procs.pop(owner)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        await cluster.wait_declared_dead(registry, owner)
        # Its host went to a live node (the least loaded: neither held one).
        owners = await registry.client.hgetall(cluster.prefix + "owner")
        assert {v.decode() for v in owners.values()} <= set(WORKERS) - {owner}
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert set(codes.values()) == {0}, codes
    nodes = {n.node: n for n in await registry.nodes()}
    stored = await cluster.stored()
    assert_each_page_once(cluster, stored)
    assert nodes[owner].state is NodeState.DEAD
    assert all(nodes[name].pages > 0 for name in nodes if name != owner), nodes
    # The run's stats count every stored page, the dead worker's included.
    stats = await run_stats(cluster)
    assert stats["pages"] == len(stored)
    assert stats["workers"] == 3
    assert stats["workers_lost"] == 1


async def test_a_worker_paused_past_its_heartbeat_stores_nothing_twice_and_counts_add_up(
    cluster: Cluster, registry: NodeRegistry
) -> None:
    """A worker that stops answering (SIGSTOP: a swap storm, a debugger) while its pages wait
    to be written is declared dead; its leases and page reservations go to the others, which
    fetch those pages again. Resumed, it writes its pages and finds its acks refused. Each page
    is stored once, and the workers' counts add up to what is stored (the paused worker
    counted the pages it had reserved as its own: more counted than stored)."""
    owner = await start_three(cluster, registry)
    paused = cluster.procs[owner]
    async with cluster.writes_held():
        await cluster.wait_for_a_held_write()
        paused.send_signal(signal.SIGSTOP)
        try:
            await cluster.wait_declared_dead(registry, owner)
        finally:
            paused.send_signal(signal.SIGCONT)
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert set(codes.values()) == {0}, (codes, cluster.log(owner))
    nodes = {n.node: n for n in await registry.nodes()}
    stored = await cluster.stored()
    assert_each_page_once(cluster, stored)
    assert "declared dead; registering again" in cluster.log(owner)
    pages = {name: node.pages for name, node in nodes.items()}
    assert sum(pages.values()) == len(stored), (pages, explain(cluster))
    stats = await run_stats(cluster)
    assert stats["pages"] == stats["pages_counted"] == len(stored), (stats, explain(cluster))
