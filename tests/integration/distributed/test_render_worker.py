"""A distributed worker renders script shells too (``topicrawl worker --render auto``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.distributed.harness import PATIENCE, Cluster
from tests.web.browser import require_browser
from topicrawl.demoweb import DemoWeb, DemoWebServer


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=2, pages_per_host=6)
    with DemoWebServer(web, spa_hosts=[web.hosts[1].address]).run_in_thread() as demo:
        yield demo


@pytest.fixture
async def cluster(
    server: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(
        server=server,
        redis_url=redis_url,
        postgres_url=postgres_url,
        tmp=tmp_path,
        namespace=f"render-{uuid.uuid4().hex[:12]}",
        schema=f"render_{uuid.uuid4().hex[:12]}",
    )
    yield made
    await made.cleanup()


async def test_a_worker_follows_links_that_exist_only_after_rendering(cluster: Cluster) -> None:
    require_browser()
    web = cluster.server.web
    spa = web.hosts[1].address
    # What a crawl that does not render can reach on the app host: its home page and the
    # pages the other host links to.
    linked = {
        link.target
        for page in web.pages
        if page.host != spa
        for link in page.links
        if link.host == spa
    }
    unrendered = len(linked | {"/"})
    cluster.start_worker("w1", extra=["--render", "auto"])
    codes = await cluster.wait_all(timeout=PATIENCE * 4)
    assert codes == {"w1": 0}, cluster.log("w1")
    stored = [url for url, _ in await cluster.stored()]
    on_app = [url for url in stored if f"//{spa}:" in url]
    assert len(on_app) > unrendered + 5, (len(on_app), unrendered)
