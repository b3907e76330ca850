"""Sources over real loopback HTTP: through HttpFetcher and RobotsCache, and on the demo web."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator, Iterator

import pytest
from aiohttp import web

from tests.unit.fetch.servers import Servers
from topicrawl.core.config import FetchSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer, Kind
from topicrawl.demoweb.render import feed_entries
from topicrawl.fetch import HttpFetcher
from topicrawl.fetch.robots import RobotsCache
from topicrawl.parse.urls import Scope
from topicrawl.sources import (
    FeedSource,
    SitemapSource,
    fetcher_documents,
    source_fetch_settings,
)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    running = Servers()
    yield running
    await running.close()


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoWebServer]:
    with DemoWebServer(DemoWeb.generate()).run_in_thread() as running:
        yield running


async def _fetcher(settings: FetchSettings) -> HttpFetcher:
    fetcher = HttpFetcher(settings=settings)
    fetcher.robots = RobotsCache(
        session=fetcher.session, user_agent=settings.user_agent, error_ttl=60, max_crawl_delay=1
    )
    return fetcher


def _xml(body: bytes, ctype: str = "application/xml", **headers: str) -> web.Response:
    return web.Response(body=body, headers={"Content-Type": ctype, **headers})


async def test_sitemaps_through_the_fetcher_obey_robots_and_inflate_gzip(
    servers: Servers,
) -> None:
    base = ""

    async def robots(_: web.Request) -> web.Response:
        return web.Response(text=f"User-agent: *\nDisallow: /secret/\nSitemap: {base}/index.xml\n")

    async def index(_: web.Request) -> web.Response:
        body = f"<sitemapindex {NS}>" + "".join(
            f"<sitemap><loc>{base}{p}</loc></sitemap>"
            for p in ("/a.xml.gz", "/b.xml", "/secret/c.xml", "/page.html")
        )
        return _xml((body + "</sitemapindex>").encode())

    def urlset(*paths: str) -> bytes:
        locs = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
        return f"<urlset {NS}>{locs}</urlset>".encode()

    async def gz_file(_: web.Request) -> web.Response:
        return _xml(gzip.compress(urlset("/1", "/2")), "application/x-gzip")

    async def gz_encoded(_: web.Request) -> web.Response:
        return _xml(gzip.compress(urlset("/3")), "text/xml", **{"Content-Encoding": "gzip"})

    async def secret(_: web.Request) -> web.Response:
        return _xml(urlset("/hidden"))

    async def page(_: web.Request) -> web.Response:
        return web.Response(text="<html></html>", content_type="text/html")

    base = await servers.serve(
        {
            "/robots.txt": robots,
            "/index.xml": index,
            "/a.xml.gz": gz_file,
            "/b.xml": gz_encoded,
            "/secret/c.xml": secret,
            "/page.html": page,
        }
    )
    fetcher = await _fetcher(source_fetch_settings(FetchSettings(retries=0)))
    try:
        assert fetcher.robots is not None
        source = SitemapSource(
            fetch=fetcher_documents(fetcher), sites=[base], robots=fetcher.robots
        )
        urls = [r.url async for r in source.requests()]
    finally:
        await fetcher.close()
    assert urls == [f"{base}/1", f"{base}/2", f"{base}/3"]
    failures = source.stats.failures
    assert set(failures) == {f"{base}/secret/c.xml", f"{base}/page.html"}
    assert failures[f"{base}/secret/c.xml"].startswith("RobotsDisallowed")
    assert failures[f"{base}/page.html"].startswith("MalformedDocument")
    assert servers.hits["/secret/c.xml"] == 0


async def test_the_crawl_fetcher_settings_refuse_xml(servers: Servers) -> None:
    async def sitemap(_: web.Request) -> web.Response:
        return _xml(f"<urlset {NS}><url><loc>http://x.test/</loc></url></urlset>".encode())

    base = await servers.serve({"/sitemap.xml": sitemap})
    fetcher = HttpFetcher(settings=FetchSettings(retries=0))
    try:
        source = SitemapSource(fetch=fetcher_documents(fetcher), sitemaps=[f"{base}/sitemap.xml"])
        assert [r async for r in source.requests()] == []
    finally:
        await fetcher.close()
    assert source.stats.failures[f"{base}/sitemap.xml"].startswith("ContentTypeRejected")


async def test_demo_web_sitemaps_list_every_home_section_and_article(demo: DemoWebServer) -> None:
    web_ = demo.web
    fetcher = await _fetcher(source_fetch_settings(FetchSettings()))
    try:
        assert fetcher.robots is not None
        source = SitemapSource(
            fetch=fetcher_documents(fetcher),
            sites=list(web_.bases().values()),
            robots=fetcher.robots,
            scope=Scope.build(allowed_domains=[h.address for h in web_.hosts]),
        )
        entries = [e async for e in source.entries()]
    finally:
        await fetcher.close()
    listed = (Kind.HOME, Kind.SECTION, Kind.ARTICLE)
    truth = [web_.url_of(p) for p in web_.pages if p.kind in listed and p.duplicate_of is None]
    assert sorted(e.url for e in entries) == sorted(truth)
    assert len(entries) == len(web_.hosts) * 68
    assert source.read == [f"{b}sitemap.xml" for b in web_.bases().values()]
    assert source.stats.failures == {}
    assert all(e.lastmod is not None for e in entries)


@pytest.mark.parametrize("path", ["feed.rss", "feed.atom"])
async def test_demo_web_feeds_give_their_articles(demo: DemoWebServer, path: str) -> None:
    web_ = demo.web
    fetcher = await _fetcher(source_fetch_settings(FetchSettings()))
    feeds = [f"{b}{path}" for b in web_.bases().values()]
    try:
        source = FeedSource(fetch=fetcher_documents(fetcher), feeds=feeds)
        got = [(url, e.title, e.date) async for url, e in source.entries()]
    finally:
        await fetcher.close()
    truth = [
        (web_.url_of(page), page.title, when.timestamp())
        for host in web_.hosts
        for page, when in feed_entries(web_, host.address)
    ]
    assert got == truth
    assert len(got) == 20 * len(web_.hosts)
    assert source.stats.failures == {}
    assert {f.title for f in source.feeds} == {h.name for h in web_.hosts}
