"""Two ``topicrawl worker`` processes under ``--assignment success-table``: a host that
refuses one of them (403 to its requests, which come through its proxy) is handed to the
other after the first refusals, and the other crawls it; both heartbeats carry the node's
queue and processing latency.

The refused node, "far", joins while "near" is busy with many slow pages (two sites of 121
pages, 1.5 s each, two at a time), so far's policy gives far the new host (near's expected
delay is longer: 1.5 s per fetch against the 1 s assumed for a node not yet measured).
Idle-node sharing and taking are off for far: they move work by readiness alone, whatever a
node's policy learnt (said in topicrawl.distributed.feedback).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from aiohttp import web

from tests.integration.distributed.harness import PATIENCE, Cluster, serve_demo_web
from tests.integration.distributed.latencysites import LatencySites, serve_latency_sites
from topicrawl.demoweb import DemoWebServer
from topicrawl.distributed import NodeRegistry

PAGES = 121  # per site: pages 0-120, each linking to the next three
FAR_SEEDS = [f"p/{n}.html" for n in range(40, 52)]  # pages that link to none
# Seconds a page takes: longer than the 1 s a node's latency counts for before it has any
# measure, so far (new, nothing measured) has the shorter expected delay when it joins.
LATENCY = 1.5
OPTIONS = ("--allow-domain", "127.0.0.1", "--assignment", "success-table")


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    """The demo web the cluster fixture wants (the crawl is of the latency sites)."""
    yield from serve_demo_web(seed=5, hosts=1, pages_per_host=5)


@pytest.fixture
def sites() -> Iterator[LatencySites]:
    # Three sites and a fourth port, far's "proxy": the same server, which refuses site 0's
    # pages to what comes through it.
    with serve_latency_sites(hosts=4, pages=PAGES, latency=LATENCY) as served:
        yield served


@pytest.mark.slow  # 3 minutes of slow pages: near must still be busy when far joins
async def test_a_host_that_refuses_a_worker_is_handed_to_the_other(
    cluster: Cluster, sites: LatencySites
) -> None:
    *site_ports, gateway = sites.ports
    blocked = f"127.0.0.1:{site_ports[0]}"
    refused: list[str] = []

    def refuse(request: web.Request) -> bool:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        # A proxied request names its target in its request line (request.host drops the port).
        target = f"{request.url.host}:{request.url.port}"
        if sockname is None or sockname[1] != gateway or target != blocked:
            return False
        refused.append(request.path)
        return True

    sites.refuse = refuse
    # Neither node may be declared dead on a loaded machine: that moves hosts by itself.
    cluster.heartbeat, cluster.timeout = 1.0, 20.0
    bases = [f"http://127.0.0.1:{port}/" for port in site_ports]
    far_env = {
        "TOPICRAWL_FETCH__PROXIES": f"http://127.0.0.1:{gateway}",
        "TOPICRAWL_DISTRIBUTED__SHARE_HOSTS": "false",
        "TOPICRAWL_DISTRIBUTED__STEAL_MIN": "0",
    }
    await cluster.create_schema()
    registry = await NodeRegistry(
        cluster.redis_url, namespace=cluster.namespace, heartbeat_timeout=cluster.timeout
    ).open()
    try:
        near_options = (*OPTIONS, "--concurrency", "2")  # busy for about 3 minutes
        cluster.start_worker("near", seeds=bases[1:], allow_domains=False, extra=near_options)
        await cluster.wait_crawling(registry, "near")
        await _wait_measured(registry, "near")
        cluster.start_worker(
            "far",
            seeds=[bases[0] + p for p in FAR_SEEDS],
            allow_domains=False,
            extra=OPTIONS,
            env=far_env,
        )
        codes = await cluster.wait_all(timeout=PATIENCE)
        assert set(codes.values()) == {0}, (codes, cluster.log("far"), cluster.log("near"))
        nodes = {n.node: n for n in await registry.nodes()}
    finally:
        await registry.close()
    far_log = " ".join(cluster.log("far").split())  # the log's lines are wrapped
    seen = {host: len(times) for host, times in sites.arrivals.items()}
    assert f"host {blocked} refuses node far: handed to near" in far_log, (
        refused,
        blocked,
        seen,
        far_log,
        cluster.log("near"),
    )
    # Far fetched site 0 only until its first answers came: two requests in flight, and a
    # pop or two for each freed slot while the hand-over was on its way to Redis.
    assert 1 <= len(refused) <= 6, refused
    # Near fetched (directly, once each) and stored the rest of site 0.
    rest = set(FAR_SEEDS) - {path.removeprefix("/") for path in refused}
    connection = await cluster.pg()
    try:
        rows = await connection.fetch(
            f'SELECT url FROM "{cluster.schema}".pages WHERE url LIKE $1', f"http://{blocked}/%"
        )
    finally:
        await connection.close()
    assert {r["url"].removeprefix(f"http://{blocked}/") for r in rows} == rest
    assert len(sites.arrivals[blocked]) == len(rest)
    for node in ("near", "far"):
        assert (nodes[node].latency or 0.0) > 0, nodes[node]
        assert nodes[node].queue is not None, nodes[node]


async def _wait_measured(registry: NodeRegistry, node: str) -> None:
    """Wait until ``node``'s heartbeat carries its processing latency."""
    deadline = time.monotonic() + PATIENCE
    while not any(n.node == node and n.latency for n in await registry.nodes()):
        assert time.monotonic() < deadline, f"{node} never published a latency"
        await asyncio.sleep(0.05)
