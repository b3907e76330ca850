"""A worker whose PostgreSQL connections stop answering mid-crawl (without closing, as in a
network partition) still finishes: the stalled write is retried on a new connection, the
stalled connections are given up when the storage closes, every page is stored once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.distributed.harness import (
    PATIENCE,
    Cluster,
    crawl_alone,
    serve_demo_web,
)
from tests.integration.distributed.test_workers import assert_complete
from tests.unit.distributed.proxy import StallingProxy
from topicrawl.demoweb import DemoWebServer


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    yield from serve_demo_web(seed=11, hosts=4, pages_per_host=12)


@pytest.fixture(scope="module")
def single_process_urls(
    server: DemoWebServer, tmp_path_factory: pytest.TempPathFactory
) -> set[str]:
    return crawl_alone(server, tmp_path_factory.mktemp("single") / "crawl.db")


@pytest.fixture
async def cluster(
    server: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(server=server, redis_url=redis_url, postgres_url=postgres_url, tmp=tmp_path)
    yield made
    await made.cleanup()


async def test_a_worker_whose_database_connections_stall_mid_crawl_finishes(
    cluster: Cluster, single_process_urls: set[str]
) -> None:
    proxy = StallingProxy(5432)
    await proxy.start()
    try:
        cluster.delay = 0.1
        # Each database attempt bounded at 3 s (120 s by default), so the test is short.
        cluster.start_worker(
            "w1", pg_port=proxy.port, env={"TOPICRAWL_STORAGE__ATTEMPT_TIMEOUT": "3"}
        )
        await cluster.wait_for_pages(10)
        assert proxy.stall() > 0  # every connection the worker has open stops answering
        codes = await cluster.wait_all(timeout=PATIENCE)
        assert codes == {"w1": 0}, cluster.log("w1")
    finally:
        cluster.stop_all()
        await proxy.close()
    assert_complete(cluster, await cluster.stored(), single_process_urls)
