"""A ``topicrawl worker`` under the default assignment (the success table) shares what it
learnt through Redis: a host that refused it (403 through its proxy) is in the crawl's shared
outcomes for that node when it ends, and a host that served it is not (only refusing rows are
shared). How a joining node uses the rows is tested in tests/unit/distributed/test_outcomes.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiohttp import web
from redis.asyncio import Redis

from tests.integration.distributed.harness import PATIENCE, Cluster, serve_demo_web
from tests.integration.distributed.latencysites import LatencySites, serve_latency_sites
from topicrawl.demoweb import DemoWebServer


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    """The demo web the cluster fixture wants (the crawl is of the latency sites)."""
    yield from serve_demo_web(seed=5, hosts=1, pages_per_host=5)


@pytest.fixture
def sites() -> Iterator[LatencySites]:
    # Two sites and a third port, the worker's "proxy": the same server, which refuses site
    # 0's pages to what comes through it.
    with serve_latency_sites(hosts=3, pages=10, latency=0.02) as served:
        yield served


async def test_a_worker_shares_the_hosts_that_refused_it(
    cluster: Cluster, sites: LatencySites
) -> None:
    *site_ports, gateway = sites.ports
    blocked, served = (f"127.0.0.1:{port}" for port in site_ports)

    def refuse(request: web.Request) -> bool:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        target = f"{request.url.host}:{request.url.port}"
        return sockname is not None and sockname[1] == gateway and target == blocked

    sites.refuse = refuse
    cluster.heartbeat, cluster.timeout = 1.0, 20.0
    await cluster.create_schema()
    cluster.start_worker(
        "a",
        seeds=[f"http://{host}/p/0.html" for host in (blocked, served)],
        allow_domains=False,
        extra=("--allow-domain", "127.0.0.1"),  # the default assignment: success-table
        env={"TOPICRAWL_FETCH__PROXIES": f"http://127.0.0.1:{gateway}"},
    )
    codes = await cluster.wait_all(timeout=PATIENCE)
    assert codes == {"a": 0}, cluster.log("a")
    client = Redis.from_url(cluster.redis_url)
    try:
        rows = await client.hgetall(cluster.prefix + "outcomes")
    finally:
        await client.aclose()
    shared = {key.decode(): value.decode() for key, value in rows.items()}
    assert set(shared) == {f"{blocked}\0a"}, (shared, cluster.log("a"))
    tries, refused = (float(x) for x in shared[f"{blocked}\0a"].split())
    assert tries >= 1
    assert refused == pytest.approx(tries)
