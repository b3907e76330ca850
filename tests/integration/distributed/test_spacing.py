"""``politeness.delay`` spaces the requests that reach a host, over all workers of a crawl.

The delay is the least time between two requests to one host arriving at the server (as in
``topicrawl crawl``, see tests/integration/engine/test_request_spacing.py), whatever
``per_host`` allows in flight. Many hosts with slow answers and few request slots make URLs
handed out by the frontier wait for a slot, so hand-outs spaced by the delay could start
together; the tests record arrival times at the server and hold every two consecutive
requests to a host to the delay, with one worker and with two.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.distributed.harness import PATIENCE, Cluster, serve_demo_web
from tests.integration.distributed.latencysites import LatencySites, serve_latency_sites
from topicrawl.demoweb import DemoWebServer
from topicrawl.distributed import NodeRegistry
from topicrawl.distributed.registry import NodeStatus

DELAY = 0.25
# Seconds two arrivals may come closer than the delay: a request's way from its start in the
# worker to the server's handler.
TOLERANCE = 0.05
# Many requests allowed in flight to a host, few in all: only the delay keeps a host's apart.
OPTIONS = ("--per-host", "8", "--concurrency", "3", "--allow-domain", "127.0.0.1")


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoWebServer]:
    yield from serve_demo_web(seed=5, hosts=1, pages_per_host=5)  # the harness wants one


@pytest.fixture
def sites() -> Iterator[LatencySites]:
    with serve_latency_sites(hosts=12, pages=12, latency=0.2) as served:
        yield served


@pytest.fixture
async def cluster(
    demo: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(server=demo, redis_url=redis_url, postgres_url=postgres_url, tmp=tmp_path)
    made.delay = DELAY
    yield made
    await made.cleanup()


async def _crawl_together(
    cluster: Cluster, sites: LatencySites, workers: int
) -> dict[str, NodeStatus]:
    """Crawl the sites with ``workers`` workers, all of them in before the crawl goes on;
    their registry entries at the end."""
    names = [f"w{i}" for i in range(1, workers + 1)]
    await cluster.create_schema()
    registry = await NodeRegistry(
        cluster.redis_url, namespace=cluster.namespace, heartbeat_timeout=cluster.timeout
    ).open()
    try:
        async with cluster.writes_held():
            for name in names:
                cluster.start_worker(name, seeds=sites.bases(), allow_domains=False, extra=OPTIONS)
            await cluster.wait_registered(registry, names)
            await cluster.wait_for_a_held_write()
        codes = await cluster.wait_all(timeout=PATIENCE)
        assert set(codes.values()) == {0}, (codes, cluster.log("w1"))
        return {n.node: n for n in await registry.nodes()}
    finally:
        await registry.close()


@pytest.mark.parametrize("workers", [1, 2])
async def test_requests_to_a_host_are_spaced_by_the_delay(
    cluster: Cluster, sites: LatencySites, workers: int
) -> None:
    nodes = await _crawl_together(cluster, sites, workers)
    assert len(await cluster.stored()) == 12 * 12
    assert all(node.pages > 0 for node in nodes.values()), nodes
    gaps = sites.closest()
    assert len(gaps) == 12
    assert all(gap >= DELAY - TOLERANCE for gap in gaps.values()), gaps


async def test_robots_redirects_and_retries_are_spaced_across_workers(cluster: Cluster) -> None:
    # Two workers, two hosts, a delay of 0.5 s: every request reaching a host is recorded,
    # its robots.txt, the redirect hop of /r/N and the first (503) answer of /e/N included;
    # none comes closer than the delay to the one before.
    delay = 0.5
    cluster.delay = delay
    with serve_latency_sites(hosts=2, pages=4, latency=0.05, extras=True) as sites:
        await _crawl_together(cluster, sites, 2)
        arrivals = {host: len(times) for host, times in sites.arrivals.items()}
        gaps = sites.closest()
    # Per host: robots.txt (once per worker that fetched from it), "/", the redirect hop
    # /r/4 and its target, the 503 of /e/5 and its retry.
    assert len(arrivals) == 2, arrivals
    assert all(6 <= n <= 7 for n in arrivals.values()), arrivals
    assert all(gap >= delay - TOLERANCE for gap in gaps.values()), gaps
