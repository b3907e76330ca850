"""Crawls seeded from the demo web's sitemaps and feeds (sources wired into the engine)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.model import Kind
from topicrawl.demoweb.render import feed_entries
from topicrawl.engine import open_storage, run_crawl
from topicrawl.parse.urls import canonicalize


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=2, pages_per_host=20)
    demo = DemoWebServer(web, slow_delay=0.2)
    with demo.run_in_thread():
        yield demo


def _settings(server: DemoWebServer, db: Path, **extra: object) -> CrawlSettings:
    bases = server.web.bases()
    options: dict[str, object] = {
        "strategy": "bfs",
        "max_pages": 0,
        "concurrency": 4,
        "parse_workers": 0,
        "scope": {"allowed_domains": tuple(bases), "max_depth": 0},
        "fetch": {"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 1.0},
        "storage": {"url": str(db), "flush_interval": 0.2},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]


async def _fetched(db: Path) -> set[str]:
    async with open_storage(str(db)) as storage:
        return {page.url async for page in storage.iter_pages() if page.status == 200}


async def test_sitemaps_seed_every_listed_page(server: DemoWebServer, tmp_path: Path) -> None:
    web = server.web
    host = next(iter(web.bases()))
    root = web.base_url(host)
    listed = {
        canonicalize(web.url_of(p))
        for p in web.pages
        if p.host == host
        and p.kind in {Kind.HOME, Kind.SECTION, Kind.ARTICLE}
        and p.duplicate_of is None
    }
    db = tmp_path / "sitemaps.db"
    # Depth 0: links are not followed, so every page beyond the seed came from the sitemap.
    await run_crawl(_settings(server, db, seeds=(root,), sitemaps=True))
    assert await _fetched(db) == listed | {canonicalize(root)}
    without = tmp_path / "plain.db"
    await run_crawl(_settings(server, without, seeds=(root,)))
    assert await _fetched(without) == {canonicalize(root)}


async def test_a_feed_alone_seeds_its_entries(server: DemoWebServer, tmp_path: Path) -> None:
    web = server.web
    host = next(iter(web.bases()))
    feed = web.base_url(host) + "feed.atom"
    db = tmp_path / "feed.db"
    await run_crawl(_settings(server, db, feeds=(feed,)))
    expected = {canonicalize(web.url_of(page)) for page, _ in feed_entries(web, host)}
    assert len(expected) > 5
    assert await _fetched(db) == expected
