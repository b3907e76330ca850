"""Two ``topicrawl worker`` processes under ``--assignment success-table``: a host that
refuses one of them (403 to its requests, which come through its proxy) is handed to the
other after the first refusals, and the other crawls it; both heartbeats carry the node's
queue and processing latency.

The refused node, "far", joins while "near" is busy with many slow pages, so far's policy
gives far the new host (near's expected delay is longer: 1.5 s per fetch against the 1 s
assumed for a node not yet measured). Idle-node sharing and taking are
off for far: they move work by readiness alone, whatever a node's policy learnt (said in
topicrawl.distributed.feedback).
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


@pytest.mark.slow  # about 3 minutes of slow pages: near must still be busy when far joins
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
        cluster.start_worker("near", seeds=bases[1:], allow_domains=False, extra=OPTIONS)
        await cluster.wait_crawling(registry, "near")
        await _wait_measured(registry, "near")
        far_seeds = [f"{bases[0]}p/{n}.html" for n in range(1, 7)]
        cluster.start_worker(
            "far", seeds=far_seeds, allow_domains=False, extra=OPTIONS, env=far_env
        )
        deadline = time.monotonic() + PATIENCE
        owner_key = cluster.prefix + "owner"
        while not refused or await registry.client.hget(owner_key, blocked) != b"near":
            code = cluster.procs["far"].poll()
            assert code is None, f"far exited ({code}): {cluster.log('far')}"
            assert time.monotonic() < deadline, (
                f"site 0 was not refused to far and handed to near: refused {refused}, "
                f"owner {await registry.client.hget(owner_key, blocked)!r}, arrivals "
                f"{ {h: len(t) for h, t in sites.arrivals.items()} }, nodes "
                f"{await registry.nodes()}\n{cluster.log('far')}"
            )
            await asyncio.sleep(0.05)
        codes = await cluster.wait_all(timeout=PATIENCE)
        assert set(codes.values()) == {0}, (codes, cluster.log("far"), cluster.log("near"))
        nodes = {n.node: n for n in await registry.nodes()}  # (left: their hosts handed back)
    finally:
        await registry.close()
    # Far fetched site 0 only until its first answers came: two requests in flight, and
    # maybe a pop or two made while the hand-over was on its way to Redis.
    assert 1 <= len(refused) <= 4, refused
    # Near crawled the rest of site 0: every seed not refused, and what they link to.
    paths = {f"/p/{n}.html" for n in range(1, 7)} - set(refused)
    grown = True
    while grown:
        links = {f"/p/{k}.html" for p in paths for k in _links(p)}
        grown = not links <= paths
        paths |= links
    connection = await cluster.pg()
    try:
        rows = await connection.fetch(
            f'SELECT url FROM "{cluster.schema}".pages WHERE url LIKE $1', f"http://{blocked}/%"
        )
    finally:
        await connection.close()
    assert {r["url"].removeprefix(f"http://{blocked}") for r in rows} == paths
    assert len(sites.arrivals[blocked]) == len(paths)  # each fetched once, directly
    for node in ("near", "far"):
        assert (nodes[node].latency or 0.0) > 0, nodes[node]
        assert nodes[node].queue is not None, nodes[node]


async def _wait_measured(registry: NodeRegistry, node: str) -> None:
    """Wait until ``node``'s heartbeat carries its processing latency."""
    deadline = time.monotonic() + PATIENCE
    while not any(n.node == node and n.latency for n in await registry.nodes()):
        assert time.monotonic() < deadline, f"{node} never published a latency"
        await asyncio.sleep(0.05)


def _links(path: str) -> range:
    """The pages page ``path`` links to (see slowsite.page_response)."""
    number = int(path.removeprefix("/p/").removesuffix(".html"))
    return range(3 * number + 1, min(3 * number + 4, PAGES))
