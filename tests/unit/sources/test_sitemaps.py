"""Sitemaps: parsing every form, nested indexes with caps and a cycle guard, discovery."""

from __future__ import annotations

import gzip

import pytest

from tests.unit.sources.fakes import FakeWeb
from tests.unit.sources.hostile import BILLION_LAUGHS, xxe
from topicrawl.core.errors import BodyTooLarge
from topicrawl.parse.urls import Scope
from topicrawl.sources.documents import HostileXml, MalformedDocument
from topicrawl.sources.sitemaps import SitemapEntry, SitemapSource, parse_sitemap

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
SITE = "http://a.test"


def urlset(*locs: str, extra: str = "") -> str:
    items = "".join(f"<url><loc>{loc}</loc>{extra}</url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{items}</urlset>'


def index(*locs: str) -> str:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f"<sitemapindex {NS}>{items}</sitemapindex>"


async def collect(source: SitemapSource) -> list[SitemapEntry]:
    return [entry async for entry in source.entries()]


def test_urlset_fields_are_read_and_bad_values_dropped() -> None:
    body = (
        f"<urlset {NS}>"
        "<url><loc> http://a.test/a </loc><lastmod>2024-01-01</lastmod>"
        "<priority>0.8</priority><changefreq>Daily</changefreq></url>"
        "<url><loc>/b</loc><lastmod>soon</lastmod><priority>7</priority>"
        "<changefreq>sometimes</changefreq></url>"
        "<url><lastmod>2024-01-01</lastmod></url>"  # no loc: skipped
        "</urlset>"
    ).encode()
    parsed = parse_sitemap(body, url=f"{SITE}/maps/s.xml")
    assert parsed.kind == "urlset"
    assert parsed.urls == (
        SitemapEntry(
            url="http://a.test/a",
            lastmod=1704067200.0,
            priority=0.8,
            changefreq="daily",
            sitemap=f"{SITE}/maps/s.xml",
        ),
        SitemapEntry(url="http://a.test/b", sitemap=f"{SITE}/maps/s.xml"),
    )


def test_namespace_free_index_text_and_feed_sitemaps() -> None:
    parsed = parse_sitemap(
        b"<sitemapindex><sitemap><loc>http://a.test/1.xml</loc>"
        b"<lastmod>2024-01-02</lastmod></sitemap></sitemapindex>",
        url=SITE + "/",
    )
    assert parsed.kind == "sitemapindex"
    assert parsed.sitemaps == (("http://a.test/1.xml", 1704153600.0),)
    text = parse_sitemap(
        b"\xef\xbb\xbfhttp://a.test/x\n\n  https://a.test/y  \nnot a url\n", url=SITE
    )
    assert [e.url for e in text.urls] == ["http://a.test/x", "https://a.test/y"]
    rss = parse_sitemap(
        b"<rss><channel><item><link>http://a.test/p</link>"
        b"<pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item></channel></rss>",
        url=SITE,
    )
    assert (rss.kind, rss.urls) == (
        "rss",
        (SitemapEntry("http://a.test/p", 1704067200.0, sitemap=SITE),),
    )


def test_wrong_documents_and_hostile_xml_are_refused(tmp_path) -> None:
    with pytest.raises(MalformedDocument, match="root"):
        parse_sitemap(b"<html><body>hi</body></html>", url=SITE)
    with pytest.raises(MalformedDocument):
        parse_sitemap(b"just some words\n", url=SITE)
    with pytest.raises(HostileXml):
        parse_sitemap(BILLION_LAUGHS, url=SITE)
    secret = tmp_path / "s"
    secret.write_text("TOPSECRET")
    with pytest.raises(HostileXml):
        parse_sitemap(xxe(str(secret)), url=SITE)


def test_url_cap_truncates_one_document() -> None:
    parsed = parse_sitemap(
        urlset(*(f"{SITE}/{n}" for n in range(10))).encode(), url=SITE, max_urls=3
    )
    assert [e.url for e in parsed.urls] == [f"{SITE}/0", f"{SITE}/1", f"{SITE}/2"]
    assert parsed.truncated


async def test_nested_indexes_gzip_cycles_and_duplicates() -> None:
    web = FakeWeb(
        {
            f"{SITE}/root.xml": index(f"{SITE}/a.xml.gz", f"{SITE}/b.xml", f"{SITE}/root.xml"),
            f"{SITE}/a.xml.gz": gzip.compress(urlset(f"{SITE}/1", f"{SITE}/2").encode()),
            # b lists a duplicate and points back at the root and at a.xml: a cycle.
            f"{SITE}/b.xml": index(f"{SITE}/root.xml", f"{SITE}/c.xml"),
            f"{SITE}/c.xml": urlset(f"{SITE}/2", f"{SITE}/3?utm_source=x"),
        }
    )
    source = SitemapSource(fetch=web, sitemaps=[f"{SITE}/root.xml"])
    assert [e.url for e in await collect(source)] == [f"{SITE}/1", f"{SITE}/2", f"{SITE}/3"]
    assert web.fetched == [f"{SITE}/root.xml", f"{SITE}/a.xml.gz", f"{SITE}/b.xml", f"{SITE}/c.xml"]
    assert source.stats.documents == 4
    assert source.stats.duplicates == 1
    assert not source.stats.truncated


async def test_depth_and_sitemap_caps() -> None:
    chain = {f"{SITE}/{n}.xml": index(f"{SITE}/{n + 1}.xml") for n in range(5)}
    chain[f"{SITE}/5.xml"] = urlset(f"{SITE}/deep")
    deep = SitemapSource(fetch=FakeWeb(chain), sitemaps=[f"{SITE}/0.xml"], max_depth=2)
    assert await collect(deep) == []
    assert deep.read == [f"{SITE}/0.xml", f"{SITE}/1.xml", f"{SITE}/2.xml"]
    assert deep.stats.truncated
    enough = SitemapSource(fetch=FakeWeb(chain), sitemaps=[f"{SITE}/0.xml"], max_depth=5)
    assert [e.url for e in await collect(enough)] == [f"{SITE}/deep"]
    few = SitemapSource(fetch=FakeWeb(chain), sitemaps=[f"{SITE}/0.xml"], max_sitemaps=3)
    assert await collect(few) == []
    assert len(few.read) == 3
    assert few.stats.truncated


async def test_url_cap_over_several_sitemaps_and_scope_and_since() -> None:
    web = FakeWeb(
        {
            f"{SITE}/1.xml": urlset(f"{SITE}/a", "http://other.test/x", f"{SITE}/b"),
            f"{SITE}/2.xml": urlset(f"{SITE}/c", f"{SITE}/d"),
        }
    )
    maps = [f"{SITE}/1.xml", f"{SITE}/2.xml"]
    scope = Scope.build(allowed_domains=["a.test"])
    capped = SitemapSource(fetch=web, sitemaps=maps, scope=scope, max_urls=3)
    assert [e.url for e in await collect(capped)] == [f"{SITE}/a", f"{SITE}/b", f"{SITE}/c"]
    assert capped.stats.out_of_scope == 1
    assert capped.stats.truncated
    dated = FakeWeb(
        {
            f"{SITE}/i.xml": (
                f"<sitemapindex {NS}><sitemap><loc>{SITE}/old.xml</loc><lastmod>2020-01-01"
                f"</lastmod></sitemap><sitemap><loc>{SITE}/new.xml</loc></sitemap></sitemapindex>"
            ),
            f"{SITE}/new.xml": (
                f"<urlset {NS}><url><loc>{SITE}/fresh</loc><lastmod>2024-06-01</lastmod></url>"
                f"<url><loc>{SITE}/stale</loc><lastmod>2023-01-01</lastmod></url>"
                f"<url><loc>{SITE}/undated</loc></url></urlset>"
            ),
        }
    )
    since = SitemapSource(fetch=dated, sitemaps=[f"{SITE}/i.xml"], since=1704067200.0)
    assert [e.url for e in await collect(since)] == [f"{SITE}/fresh", f"{SITE}/undated"]
    assert f"{SITE}/old.xml" not in dated.fetched
    assert since.stats.too_old == 2


async def test_failures_are_recorded_and_the_walk_goes_on(tmp_path) -> None:
    secret = tmp_path / "s"
    secret.write_text("TOPSECRET")
    web = FakeWeb(
        {
            f"{SITE}/i.xml": index(
                *(f"{SITE}/{n}.xml" for n in ("missing", "laughs", "xxe", "big", "ok"))
            ),
            f"{SITE}/laughs.xml": BILLION_LAUGHS,
            f"{SITE}/xxe.xml": xxe(str(secret)),
            f"{SITE}/big.xml": gzip.compress(b" " * 2_000_000),
            f"{SITE}/ok.xml": urlset(f"{SITE}/fine"),
        }
    )
    source = SitemapSource(fetch=web, sitemaps=[f"{SITE}/i.xml"], max_bytes=1_000_000)
    assert [e.url for e in await collect(source)] == [f"{SITE}/fine"]
    failures = source.stats.failures
    assert set(failures) == {f"{SITE}/{n}.xml" for n in ("missing", "laughs", "xxe", "big")}
    assert failures[f"{SITE}/laughs.xml"].startswith("HostileXml")
    assert failures[f"{SITE}/big.xml"].startswith(BodyTooLarge.__name__)
    assert all("TOPSECRET" not in message for message in failures.values())


async def test_discovery_reads_robots_txt_and_falls_back_to_sitemap_xml() -> None:
    web = FakeWeb(
        {
            f"{SITE}/robots.txt": "User-agent: *\nDisallow: /x\nSitemap: /maps/one.xml\n"
            "Sitemap: http://cdn.test/two.xml\n",
            "http://b.test/sitemap.xml": urlset("http://b.test/home"),
        }
    )
    source = SitemapSource(fetch=web)
    assert await source.discover("a.test") == [f"{SITE}/maps/one.xml", "http://cdn.test/two.xml"]
    assert await source.discover("http://b.test/some/page") == ["http://b.test/sitemap.xml"]
    fallback = SitemapSource(fetch=web, sites=["http://b.test/"])
    assert [e.url for e in await collect(fallback)] == ["http://b.test/home"]


async def test_discovery_through_a_robots_directory() -> None:
    class Directory:
        def __init__(self) -> None:
            self.asked: list[str] = []

        async def sitemaps(self, host: str) -> list[str]:
            self.asked.append(host)
            return [f"{SITE}/listed.xml"]

    directory = Directory()
    web = FakeWeb({f"{SITE}/listed.xml": urlset(f"{SITE}/p")})
    source = SitemapSource(fetch=web, sites=["http://A.test:80/x"], robots=directory)
    requests = [r async for r in source.requests()]
    assert [r.url for r in requests] == [f"{SITE}/p"]
    assert directory.asked == [f"{SITE}/"]
    assert f"{SITE}/robots.txt" not in web.fetched


async def test_requests_carry_the_priority() -> None:
    web = FakeWeb({f"{SITE}/s.xml": urlset(f"{SITE}/p", extra="<priority>0.3</priority>")})
    [request] = [r async for r in SitemapSource(fetch=web, sitemaps=[f"{SITE}/s.xml"]).requests()]
    assert (request.url, request.depth, request.score) == (f"{SITE}/p", 0, 0.3)
    assert dict(request.reasons) == {"sitemap_priority": 0.3}


def test_caps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="caps"):
        SitemapSource(fetch=FakeWeb({}), max_urls=0)
