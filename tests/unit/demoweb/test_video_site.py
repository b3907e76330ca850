"""The demo video site: deterministic, crawlable, every template version, truth that matches."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit

import m3u8
import pytest
from lxml import etree
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.video import (
    TEMPLATE_VERSIONS,
    CountForm,
    VersionSchedule,
    VideoServer,
    VideoSite,
    build_video_site,
    format_count,
    layout_of,
)


@pytest.fixture(scope="module")
def site() -> VideoSite:
    return build_video_site(seed=0)


def _text(body: bytes) -> str:
    return HTMLParser(body.decode("utf-8")).body.text(separator=" ")  # type: ignore[union-attr]


def test_hard_cases_leave_the_rest_of_the_site_unchanged(site: VideoSite) -> None:
    plain = build_video_site(seed=0, hard=False)
    assert set(plain.paths()) == {p for p in site.paths() if not p.startswith("/hard/")}
    for path in plain.paths()[::7]:
        assert plain.render(path, "cosmetic") == site.render(path, "cosmetic")
        assert plain.truth(path) == site.truth(path)


def test_same_seed_same_site_other_seed_other_site(site: VideoSite) -> None:
    again = build_video_site(seed=0)
    assert again.paths() == site.paths()
    for path in site.paths()[::17]:
        assert again.render(path, "structural") == site.render(path, "structural")
        assert again.truth(path) == site.truth(path)
    other = build_video_site(seed=1)
    assert [t.name for t in other.titles] != [t.name for t in site.titles]


def test_at_least_300_labelled_pages_in_every_class(site: VideoSite) -> None:
    truths = [site.truth(p) for p in site.paths()]
    assert len(truths) >= 300
    classes = Counter(t.video_class for t in truths)
    assert min(classes["play"], classes["video"], classes["none"]) >= 60
    subkinds = Counter(t.subkind for t in truths if t.kind == "negative")
    assert {s for s in subkinds if not s.startswith("hard-")} == {
        "background",
        "audio",
        "video_list",
        "mention",
    }
    hard = [p for p in site.paths() if p.startswith("/hard/")]
    assert len(hard) > 30
    assert {site.truth(p).kind for p in hard} == {"play", "negative", "list", "iframe"}
    langs = Counter(t.lang for t in truths if t.kind in ("detail", "play"))
    assert langs["en"] > 50
    assert langs["zh"] > 50


@pytest.mark.parametrize(
    ("value", "form", "written"),
    [
        (12300, CountForm.WAN, "1.23万"),
        (9870, CountForm.WAN, "9870"),
        (123_000_000, CountForm.WAN, "1.23亿"),
        (3400, CountForm.K, "3.4K"),
        (987, CountForm.K, "987"),
        (2_500_000, CountForm.K, "2.5M"),
        (12_500_000, CountForm.MILLION, "12.5 million"),
        (1234, CountForm.COMMA, "1,234"),
    ],
)
def test_count_forms(value: int, form: CountForm, written: str) -> None:
    assert format_count(value, form) == written


def test_every_page_renders_in_every_version_and_links_resolve(site: VideoSite) -> None:
    for path in site.paths():
        for version in TEMPLATE_VERSIONS:
            status, ctype, body = site.render(path, version)
            assert status == 200
            assert ctype.startswith("text/html")
            tree = HTMLParser(body.decode("utf-8"))
            for node in tree.css("a[href], source[src], img[src]"):
                ref = node.attributes.get("href") or node.attributes.get("src") or ""
                if ref.startswith("#"):
                    continue
                target = urlsplit(urljoin(site.base, ref))
                assert site.render(target.path)[0] == 200, (path, version, ref)
    assert site.render("/nothing.html")[0] == 404
    with pytest.raises(ValueError, match="unknown template version"):
        site.render("/index.html", "v9")


def test_detail_fields_are_on_the_page_as_written(site: VideoSite) -> None:
    details = [p for p in site.paths() if site.truth(p).kind == "detail"]
    for path in details:
        truth = site.truth(path).fields
        text = _text(site.render(path, "v1")[2])
        assert str(truth["title"]) in text
        for name in [*truth["directors"], *truth["actors"]]:  # type: ignore[misc]
            assert name in text
        spec_text = text.replace(",", "")
        # every count appears in one of the written forms
        for key in ("plays", "comments", "favourites"):
            value = truth[key]
            assert isinstance(value, int)
            forms = {format_count(value, form).replace(",", "") for form in CountForm}
            assert any(f in spec_text for f in forms), (path, key, value)


def test_versions_change_markup_not_truth(site: VideoSite) -> None:
    path = next(p for p in site.paths() if site.truth(p).kind == "detail")
    bodies = {v: site.render(path, v)[2] for v in TEMPLATE_VERSIONS}
    assert len({bodies[v] for v in ("v1", "cosmetic", "structural", "jsonld_only")}) == 4
    assert b'class="title"' in bodies["v1"]
    assert b'class="title"' not in bodies["cosmetic"]
    assert b"<dl>" in bodies["structural"]
    assert b"<dl>" not in bodies["v1"]
    # jsonld_only: the directors are only in the JSON-LD
    truth = site.truth(path).fields
    director = truth["directors"][0]  # type: ignore[index]
    assert director not in _text(bodies["jsonld_only"])
    blob = re.search(rb'<script type="application/ld\+json">(.*?)</script>', bodies["jsonld_only"])
    assert blob is not None
    data = json.loads(blob.group(1))
    assert data["director"][0]["name"] == director
    stats = {
        s["interactionType"].rsplit("/", 1)[1]: s["userInteractionCount"]
        for s in data["interactionStatistic"]
    }
    assert stats["WatchAction"] == truth["plays"]


def test_counts_reformatted_writes_every_big_count_differently(site: VideoSite) -> None:
    changed = 0
    for path in site.paths():
        if site.truth(path).kind != "detail":
            continue
        before, after = site.render(path, "v1")[2], site.render(path, "counts_reformatted")[2]
        strip = re.compile(rb"<b>[^<]*</b>")
        assert strip.sub(b"", before) == strip.sub(b"", after)
        changed += before != after
    assert changed >= 70


def test_ab_serves_both_layouts_stably(site: VideoSite) -> None:
    layouts = Counter(layout_of(p, "ab") for p in site.paths())
    assert layouts["v1"] > 100
    assert layouts["structural"] > 100
    for path in site.paths()[:20]:
        expected = site.render(path, layout_of(path, "ab"))[2]
        assert site.render(path, "ab")[2] == expected


def test_media_truth_is_served_and_matches_manifests(site: VideoSite) -> None:
    plays = [p for p in site.paths() if site.truth(p).kind == "play"]
    types: Counter[str] = Counter()
    for path in plays:
        media = site.truth(path).media
        assert media, path
        for item in media:
            types[item.type] += 1
            status, _, body = site.render(urlsplit(item.url).path)
            assert status == 200
            if item.type == "hls" and item.height is None:  # a master playlist
                playlist = m3u8.loads(body.decode(), uri=item.url)
                variants = {urljoin(item.url, v.uri) for v in playlist.playlists}
                assert variants == {m.url for m in media if m.type == "hls" and m.height}
            if item.type == "dash":
                root = etree.fromstring(body, etree.XMLParser(resolve_entities=False))
                reps = root.findall(".//{urn:mpeg:dash:schema:mpd:2011}Representation")
                # every video representation is listed: by its file, or by its template's
                # initialization segment
                heights = {int(r.get("height")) for r in reps if r.get("height")}
                assert heights == {m.height for m in media if m.type == "mp4"}
    assert set(types) == {"mp4", "webm", "hls", "dash"}
    for path in site.paths():
        truth = site.truth(path)
        if truth.kind != "play":
            assert truth.media == ()


def test_entities_appear_on_their_titles(site: VideoSite) -> None:
    entities = site.entities()
    assert {e.role for e in entities} == {"director", "actor"}
    assert {e.lang for e in entities} == {"en", "zh"}
    for entity in entities[::5]:
        for title_id in entity.titles:
            assert entity.name in _text(site.render(f"/title/{title_id}.html")[2])


def test_schedule_validation() -> None:
    assert VersionSchedule.after_requests(5, "cosmetic").version_at(4) == "v1"
    assert VersionSchedule.after_requests(5, "cosmetic").version_at(5) == "cosmetic"
    with pytest.raises(ConfigError):
        VersionSchedule(((1, "v1"),))
    with pytest.raises(ConfigError):
        VersionSchedule(((0, "v1"), (0, "ab")))
    with pytest.raises(ConfigError):
        VersionSchedule.fixed("v7")
    with pytest.raises(ConfigError):
        VideoServer(build_video_site(seed=0, titles=4), host="0.0.0.0")


@pytest.fixture(scope="module")
def served() -> Iterator[VideoServer]:
    schedule = VersionSchedule.after_requests(3, "structural")
    server = build_video_site(seed=0, titles=10).server(version_schedule=schedule)
    with server.run_in_thread() as running:
        yield running


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def test_server_switches_version_after_n_page_requests(served: VideoServer) -> None:
    site = served.site
    assert site.base == served.base_url
    assert site.base.startswith("http://127.0.0.1:")
    detail = next(p for p in site.paths() if site.truth(p).kind == "detail")
    play = next(p for p in site.paths() if site.truth(p).kind == "play" and site.truth(p).media)
    media = site.truth(play).media[0]
    assert media.url.startswith(site.base)
    bodies = [_get(site.url(detail))[1] for _ in range(3)]
    assert _get(media.url)[0] == 200  # media does not count as a page request
    after = _get(site.url(detail))[1]
    assert bodies[0] == site.render(detail, "v1")[2] == bodies[2]
    assert after == site.render(detail, "structural")[2]
    log = served.served()
    assert [s.version for s in log] == ["v1", "v1", "v1", "structural"]
    served.set_version("jsonld_only")
    assert served.version_now() == "jsonld_only"


def test_robots_names_a_sitemap_of_every_page(site: VideoSite) -> None:
    status, _, robots = site.render("/robots.txt")
    assert status == 200
    assert f"Sitemap: {site.base}sitemap.xml".encode() in robots
    status, ctype, body = site.render("/sitemap.xml")
    assert status == 200
    assert ctype == "application/xml"
    locs = re.findall(rb"<loc>([^<]+)</loc>", body)
    assert [loc.decode() for loc in locs] == [site.url(p) for p in site.paths()]


def test_schedule_by_seconds_switches_on_the_clock() -> None:
    schedule = VersionSchedule.after_seconds(1.5, "cosmetic")
    server = build_video_site(seed=0, titles=4).server(version_schedule=schedule)
    with server.run_in_thread() as running:
        site = running.site
        path = next(p for p in site.paths() if site.truth(p).kind == "detail")
        assert _get(site.url(path))[1] == site.render(path, "v1")[2]
        deadline = time.monotonic() + 30
        while running.version_now() != "cosmetic" and time.monotonic() < deadline:
            time.sleep(0.1)  # waiting for the switch, not timing it
        assert _get(site.url(path))[1] == site.render(path, "cosmetic")[2]
        assert [s.version for s in running.served()] == ["v1", "cosmetic"]


def test_heldout_pages_are_off_by_default_and_leave_the_rest_unchanged(site: VideoSite) -> None:
    held = build_video_site(seed=0, heldout=True, cross_base="http://127.0.0.2:1/")
    extra = [p for p in held.paths() if p not in site.paths()]
    assert all(p.startswith("/heldout/") for p in extra)
    assert len(extra) >= 20
    for path in site.paths()[::7]:
        if path != "/hard/iframe-cross.html":  # its player page is on the other host
            assert held.render(path, "v1") == site.render(path, "v1")
            assert held.truth(path) == site.truth(path)
    assert held.truth("/hard/iframe-cross.html").embeds == (
        "http://127.0.0.2:1/hard/player/cross.html",
    )
    assert held.at_base("http://127.0.0.1:9/").paths() == held.paths()
