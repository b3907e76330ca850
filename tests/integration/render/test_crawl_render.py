"""Crawls of a demo-web single-page-app host: links that exist only after its script runs are
followed with --render auto and never seen with never; the browser's requests are polite."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.browser import CHROMIUM, require_browser
from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.spa import DATA_PATH, SCRIPT_PATH
from topicrawl.engine import open_storage, run_crawl


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=2, pages_per_host=8)
    demo = DemoWebServer(web, spa_hosts=[web.hosts[1].address])
    with demo.run_in_thread():
        yield demo


def _settings(server: DemoWebServer, db: Path, render: str) -> CrawlSettings:
    spa = server.web.hosts[1].address
    return CrawlSettings(
        seeds=(server.web.base_url(spa),),
        strategy="bfs",
        max_pages=40,
        concurrency=4,
        parse_workers=0,
        render=render,  # type: ignore[arg-type]
        browser={"executable": CHROMIUM, "pages": 2},  # type: ignore[arg-type]
        scope={"allowed_domains": (spa,)},  # type: ignore[arg-type]
        storage={"url": str(db), "flush_interval": 0.2},  # type: ignore[arg-type]
    )


async def _stored(db: Path) -> list[str]:
    async with open_storage(str(db)) as storage:
        return [page.url async for page in storage.iter_pages()]


async def test_auto_follows_links_that_only_exist_after_the_script_runs(
    server: DemoWebServer, tmp_path: Path
) -> None:
    require_browser()
    spa = server.web.hosts[1].address
    server.clear_log()
    report = await run_crawl(_settings(server, tmp_path / "auto.db", "auto"))
    stored = await _stored(tmp_path / "auto.db")
    assert len(stored) > 10
    assert report.render["pages/rendered"] == len(stored)
    assert report.render["signals/empty_root"] == len(stored)
    log = server.access_log(spa)
    documents = [
        r.path
        for r in log
        if r.status == 200 and not r.path.startswith("/_spa/") and r.path != "/robots.txt"
    ]
    # Each page was fetched once: the browser rendered the bytes the crawl had.
    assert len(documents) == len(set(documents)) == len(stored)
    # The script came from the host once (then from the pool's cache), the data once a page.
    assert sum(r.path == SCRIPT_PATH for r in log) == 1
    assert sum(r.path.startswith(DATA_PATH) for r in log) == len(stored)


async def test_never_sees_only_the_shell(server: DemoWebServer, tmp_path: Path) -> None:
    report = await run_crawl(_settings(server, tmp_path / "never.db", "never"))
    only = server.web.base_url(server.web.hosts[1].address)
    assert await _stored(tmp_path / "never.db") == [only]
    assert report.render == {}


async def test_the_browsers_requests_obey_robots_txt(tmp_path: Path) -> None:
    require_browser()
    web = DemoWeb.generate(seed=5, hosts=2, pages_per_host=8)
    spa = web.hosts[1]
    closed = dataclasses.replace(spa, disallow=(*spa.disallow, "/_spa/"))
    web = dataclasses.replace(web, hosts=(web.hosts[0], closed))
    with DemoWebServer(web, spa_hosts=[spa.address]).run_in_thread() as server:
        report = await run_crawl(_settings(server, tmp_path / "robots.db", "auto"))
        log = server.access_log(spa.address)
    assert not [r for r in log if r.path.startswith("/_spa/")]
    assert report.render["pages/rendered"] == 1  # the home page, whose script got nothing
    assert report.render["requests/failed"] == 1
    assert await _stored(tmp_path / "robots.db") == [server.web.base_url(spa.address)]
