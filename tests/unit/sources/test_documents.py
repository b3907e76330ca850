"""Safe reading of source documents: gzip caps, hostile XML, dates, URL admission."""

from __future__ import annotations

import gzip

import pytest

from tests.unit.sources.hostile import BILLION_LAUGHS, xxe
from topicrawl.core.config import FetchSettings
from topicrawl.core.errors import BodyTooLarge
from topicrawl.parse.urls import Scope
from topicrawl.sources.documents import (
    SOURCE_CONTENT_TYPES,
    HostileXml,
    MalformedDocument,
    SourceStats,
    UrlGate,
    gunzip_capped,
    iter_xml,
    local_name,
    parse_date,
    source_fetch_settings,
    xml_root,
)

URL = "http://a.test/sitemap.xml"


def test_plain_bodies_pass_through_and_gzip_is_inflated() -> None:
    body = b"<urlset/>"
    assert gunzip_capped(body, url=URL, max_bytes=10) is body
    assert gunzip_capped(gzip.compress(body), url=URL, max_bytes=100) == body
    two_members = gzip.compress(b"<a>") + gzip.compress(b"</a>")
    assert gunzip_capped(two_members, url=URL, max_bytes=100) == b"<a></a>"


def test_a_gzip_bomb_stops_at_the_cap() -> None:
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)  # 64 MiB from ~64 KB
    assert len(bomb) < 100_000
    with pytest.raises(BodyTooLarge):
        gunzip_capped(bomb, url=URL, max_bytes=1_000_000)
    exact = gzip.compress(b"x" * 1000)
    assert len(gunzip_capped(exact, url=URL, max_bytes=1000)) == 1000
    with pytest.raises(BodyTooLarge):
        gunzip_capped(exact, url=URL, max_bytes=999)


def test_corrupt_and_cut_gzip_are_malformed() -> None:
    data = gzip.compress(b"<urlset>" * 100)
    with pytest.raises(MalformedDocument, match="cut short"):
        gunzip_capped(data[: len(data) // 2], url=URL, max_bytes=10_000)
    with pytest.raises(MalformedDocument, match="corrupt"):
        gunzip_capped(b"\x1f\x8b" + b"\x08\x00" + b"junk" * 10, url=URL, max_bytes=10_000)


def test_billion_laughs_is_refused_at_once() -> None:
    with pytest.raises(HostileXml):
        list(iter_xml(BILLION_LAUGHS, url=URL, tags=("loc",)))
    with pytest.raises(HostileXml):
        xml_root(BILLION_LAUGHS, url=URL)


def test_external_entities_are_refused_and_never_read(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    with pytest.raises(HostileXml) as caught:
        list(iter_xml(xxe(str(secret)), url=URL, tags=("loc",)))
    assert "TOPSECRET" not in str(caught.value)


def test_damaged_xml_is_recovered_and_non_xml_refused() -> None:
    body = b"<urlset><url><loc>http://a.test/?a=1&b=2</loc></url><url><loc>http://a.test/x"
    locs = [e.text for e in iter_xml(body, url=URL, tags=("loc",))]
    assert locs[0] is not None
    assert locs[0].startswith("http://a.test/?a=1")
    with pytest.raises(MalformedDocument):
        list(iter_xml(b"\x00\x01 not xml at all", url=URL, tags=("loc",)))
    with pytest.raises(MalformedDocument):
        xml_root(b"", url=URL)


def test_local_name_drops_any_namespace() -> None:
    body = b'<s:urlset xmlns:s="urn:x"><loc>1</loc><s:loc>2</s:loc><x/></s:urlset>'
    assert xml_root(body, url=URL) == "urlset"
    found = list(iter_xml(body, url=URL, tags=("loc",)))
    assert [(local_name(e), e.text) for e in found] == [("loc", "1"), ("loc", "2")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-01", 1704067200.0),
        ("2024", 1704067200.0),
        ("2024-02", 1706745600.0),
        ("2024-01-01T10:00Z", 1704103200.0),
        ("2024-01-01T10:00:30.5+02:00", 1704096030.5),
        ("Mon, 01 Jan 2024 10:00:00 GMT", 1704103200.0),
        ("Mon, 01 Jan 2024 12:00:00 +0200", 1704103200.0),
        ("yesterday", None),
        ("2024-13-45", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_date(text: str | None, expected: float | None) -> None:
    assert parse_date(text) == expected


def test_url_gate_canonicalises_scopes_dates_and_dedupes() -> None:
    stats = SourceStats()
    gate = UrlGate(stats=stats, scope=Scope.build(allowed_domains=["a.test"]), since=100.0)
    base = "http://a.test/dir/map.xml"
    assert gate.admit("page.html?utm_source=x", base=base) == "http://a.test/dir/page.html"
    assert gate.admit("HTTP://A.TEST/dir/page.html#top", base=base) is None  # duplicate
    assert gate.admit("http://b.test/", base=base) is None
    assert gate.admit("javascript:alert(1)", base=base) is None
    assert gate.admit("http://a.test/old", base=base, date=99.0) is None
    assert gate.admit("http://a.test/new", base=base, date=100.0) == "http://a.test/new"
    assert gate.admit("http://a.test/" + "x" * 3000, base=base) is None
    assert (stats.urls, stats.duplicates, stats.out_of_scope) == (2, 1, 1)
    assert (stats.invalid, stats.too_old) == (2, 1)


def test_source_fetch_settings_add_the_xml_types_once() -> None:
    settings = source_fetch_settings(FetchSettings())
    assert settings.content_types[:2] == ("text/html", "application/xhtml+xml")
    assert set(SOURCE_CONTENT_TYPES) <= set(settings.content_types)
    again = source_fetch_settings(settings)
    assert again.content_types == settings.content_types
