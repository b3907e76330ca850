"""Feeds: RSS 2.0, RSS 1.0 and Atom entries (links, titles, dates), caps and hostile XML."""

from __future__ import annotations

import pytest

from tests.unit.sources.fakes import FakeWeb
from tests.unit.sources.hostile import BILLION_LAUGHS, xxe
from topicrawl.parse.urls import Scope
from topicrawl.sources.documents import HostileXml, MalformedDocument
from topicrawl.sources.feeds import FeedEntry, FeedSource, parse_feed

FEED = "http://a.test/blog/feed.xml"
JAN1 = 1704067200.0

RSS = b"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
<title> The  Blog </title><link>http://a.test/</link>
<item><title>First &amp; best</title><link>http://a.test/p1</link>
  <guid isPermaLink="false">id-1</guid><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item>
<item><title>Guid only</title><guid>http://a.test/p2</guid><dc:date>2024-01-01</dc:date></item>
<item><title>Relative</title><link>p3.html</link></item>
<item><title>No link at all</title><guid isPermaLink="false">x</guid></item>
</channel></rss>"""

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://a.test/news/">
<title type="html">&lt;b&gt;News&lt;/b&gt;</title>
<link rel="self" href="http://a.test/news/atom"/>
<entry><title type="html">A &lt;em&gt;bold&lt;/em&gt; move</title>
  <link rel="edit" href="/edit/1"/><link rel="enclosure" href="/a.mp3"/>
  <link rel="alternate" type="application/pdf" href="one.pdf"/>
  <link rel="alternate" type="text/html" href="one.html"/>
  <id>tag:a.test,2024:1</id><published>2024-01-01T00:00:00Z</published>
  <updated>2024-01-02T00:00:00Z</updated></entry>
<entry xml:base="/deep/"><title>Two</title><link href="two"/><updated>2024-01-01T00:00:00Z</updated>
  </entry>
<entry><title>Id link</title><id>http://a.test/three</id></entry>
</feed>"""

RDF = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
 xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="http://a.test/"><title>Old school</title></channel>
<item rdf:about="http://a.test/r1"><title>R1</title><dc:date>2024-01-01T00:00:00Z</dc:date></item>
<item rdf:about="http://a.test/ignored"><title>R2</title><link>http://a.test/r2</link></item>
</rdf:RDF>"""


def test_rss2_entries() -> None:
    feed = parse_feed(RSS, url=FEED)
    assert (feed.kind, feed.title, feed.truncated) == ("rss", "The Blog", False)
    assert feed.entries == (
        FeedEntry("http://a.test/p1", "First & best", published=JAN1, id="id-1"),
        FeedEntry("http://a.test/p2", "Guid only", published=JAN1, id="http://a.test/p2"),
        FeedEntry("http://a.test/blog/p3.html", "Relative"),
    )


def test_atom_entries_pick_the_html_alternate_and_apply_xml_base() -> None:
    feed = parse_feed(ATOM, url="http://a.test/news/atom")
    assert (feed.kind, feed.title) == ("atom", "News")
    first, second, third = feed.entries
    assert first == FeedEntry(
        "http://a.test/news/one.html",
        "A bold move",
        published=JAN1,
        updated=JAN1 + 86400,
        id="tag:a.test,2024:1",
    )
    assert first.date == JAN1
    assert (second.url, second.date) == ("http://a.test/deep/two", JAN1)
    assert third.url == "http://a.test/three"


def test_rss1_entries() -> None:
    feed = parse_feed(RDF, url=FEED)
    assert feed.kind == "rdf"
    assert feed.title == "Old school"
    assert [(e.url, e.title, e.date) for e in feed.entries] == [
        ("http://a.test/r1", "R1", JAN1),
        ("http://a.test/r2", "R2", None),
    ]


def test_entry_cap_and_long_titles() -> None:
    items = "".join(
        f"<item><title>{'t' * 2000}</title><link>http://a.test/{n}</link></item>" for n in range(50)
    )
    feed = parse_feed(f"<rss><channel>{items}</channel></rss>".encode(), url=FEED, max_entries=5)
    assert [e.url for e in feed.entries] == [f"http://a.test/{n}" for n in range(5)]
    assert feed.truncated
    assert len(feed.entries[0].title) == 500


def test_not_a_feed_and_hostile_feeds(tmp_path) -> None:
    with pytest.raises(MalformedDocument, match="root"):
        parse_feed(b"<urlset/>", url=FEED)
    with pytest.raises(HostileXml):
        parse_feed(BILLION_LAUGHS.replace(b"urlset", b"rss"), url=FEED)
    secret = tmp_path / "s"
    secret.write_text("TOPSECRET")
    with pytest.raises(HostileXml):
        parse_feed(xxe(str(secret), root="rss"), url=FEED)


async def test_feed_source_merges_feeds_in_scope_and_survives_failures() -> None:
    web = FakeWeb({FEED: RSS, "http://a.test/atom": ATOM, "http://a.test/bad": BILLION_LAUGHS})
    source = FeedSource(
        fetch=web,
        feeds=["http://a.test/missing", FEED, "http://a.test/bad", "http://a.test/atom", FEED],
        scope=Scope.build(allowed_domains=["a.test"], exclude=[r"/deep/"]),
        since=JAN1,
    )
    requests = [r async for r in source.requests()]
    assert [(r.url, r.anchor) for r in requests] == [
        ("http://a.test/p1", "First & best"),
        ("http://a.test/p2", "Guid only"),
        ("http://a.test/blog/p3.html", "Relative"),
        ("http://a.test/news/one.html", "A bold move"),
        ("http://a.test/three", "Id link"),
    ]
    assert web.fetched.count(FEED) == 1
    assert set(source.stats.failures) == {"http://a.test/missing", "http://a.test/bad"}
    assert source.stats.out_of_scope == 1
    assert [f.kind for f in source.feeds] == ["rss", "atom"]


async def test_feed_source_url_cap() -> None:
    source = FeedSource(fetch=FakeWeb({FEED: RSS}), feeds=[FEED], max_urls=2)
    assert [url async for url, _ in source.entries()] == ["http://a.test/p1", "http://a.test/p2"]
    assert source.stats.truncated
