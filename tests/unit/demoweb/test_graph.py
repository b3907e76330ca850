"""The generated demo web as data: determinism, topics, structure, URLs, robots, rendering."""

from __future__ import annotations

import re
from collections import Counter
from urllib.parse import urljoin

import jieba
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb import TOPICS, DemoWeb, HrefStyle, Kind, ServedLink, normalise_path
from topicrawl.demoweb.render import GARBAGE, render_document, robots_txt

PORT = 8123


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return DemoWeb.generate().at_port(PORT)


@pytest.fixture(scope="module")
def served(web: DemoWeb) -> dict[str, list[ServedLink]]:
    """Every document's served links, by page URL (computed once for the module)."""
    return {web.url_of(p): web.served_links(web.url_of(p)) for p in web.pages if p.is_document}


def test_same_seed_gives_identical_web_and_other_seed_does_not(web: DemoWeb) -> None:
    again = DemoWeb.generate(seed=7).at_port(PORT)
    assert again == web
    assert [render_document(again, p) for p in again.pages[:50] if p.is_document] == [
        render_document(web, p) for p in web.pages[:50] if p.is_document
    ]
    other = DemoWeb.generate(seed=8).at_port(PORT)
    assert [p.title for p in other.pages] != [p.title for p in web.pages]


def test_hosts_are_consecutive_loopback_addresses_half_english_half_chinese(web: DemoWeb) -> None:
    assert [h.address for h in web.hosts] == [f"127.0.0.{i}" for i in range(2, 8)]
    assert [h.lang for h in web.hosts] == ["en"] * 3 + ["zh"] * 3
    custom = DemoWeb.generate(hosts=2, pages_per_host=12, base_address="127.0.5.10")
    assert [h.address for h in custom.hosts] == ["127.0.5.10", "127.0.5.11"]


def test_every_topic_has_articles_in_both_languages(web: DemoWeb) -> None:
    assert len(TOPICS) >= 6
    seen = {(p.true_topic, p.lang) for p in web.pages if p.kind is Kind.ARTICLE}
    for topic in TOPICS:
        assert (topic.id, "en") in seen
        assert (topic.id, "zh") in seen
    assert (None, "en") in seen  # off-topic articles exist too


def test_chinese_text_is_real_chinese_that_jieba_segments(web: DemoWeb) -> None:
    page = next(p for p in web.pages if p.kind is Kind.ARTICLE and p.lang == "zh")
    assert re.search(r"[\u4e00-\u9fff]{20}", page.text.replace("，", "").replace("。", ""))
    words = [w for w in jieba.lcut(page.text) if len(w) > 1]
    assert len(words) > 20


def test_topic_keywords_name_the_topic_in_both_languages() -> None:
    astronomy = next(t for t in TOPICS if t.id == "astronomy")
    words = astronomy.keywords().split()
    assert words[0] == "astronomy"
    assert "telescope" in words
    assert "天文" in words
    assert "望远镜" in words


def test_topics_overlap_so_relevance_is_not_trivially_separable(web: DemoWeb) -> None:
    football = [p for p in web.pages if p.true_topic == "football" and p.lang == "en"]
    text = " ".join(p.text for p in football)
    # Cross-topic mentions: words of other topics appear on football pages.
    assert "telescope" in text or "recipe" in text or "stock" in text
    shared = [w for w in ("season", "star", "field") if w in text]
    assert shared


def test_article_structure_has_nav_related_body_and_footer_blocks(web: DemoWeb) -> None:
    articles = [p for p in web.pages if p.kind is Kind.ARTICLE]
    same_topic = cross_topic = cross_host = 0
    for page in articles:
        blocks = Counter(link.block for link in page.links)
        assert blocks["nav"] == 8
        assert blocks["footer"] >= 6
        assert blocks["partners"] == 5
        assert blocks["related"] >= 3
        assert blocks["body"] >= 1
        for link in page.links:
            if link.block == "related":
                target = web.lookup(link.host, link.target)
                assert target is not None
                same_topic += target.true_topic == page.true_topic
                cross_topic += target.true_topic != page.true_topic
                cross_host += link.host != page.host
        assert 3 <= len(page.paragraphs) <= 6
    assert same_topic > 3 * cross_topic > 0
    assert cross_host > 0


def test_links_of_returns_absolute_hrefs_as_served(
    web: DemoWeb, served: dict[str, list[ServedLink]]
) -> None:
    styles: Counter[HrefStyle] = Counter()
    for page in web.pages:
        if not page.is_document:
            continue
        url = web.url_of(page)
        assert [s.url for s in served[url]] == web.links_of(url)
        for link, out in zip(page.links, served[url], strict=True):
            styles[link.style] += 1
            assert out.url == (out.href if "://" in out.href else urljoin(url, out.href))
            if link.style is HrefStyle.UPPER:
                assert out.url.startswith("HTTP://")
            target = web.lookup(link.host, link.target) if link.host in web.bases() else None
            if target is not None:
                assert web.resolve(out.url) == web.url_of(target)
    assert set(styles) == set(HrefStyle)
    hrefs = [s.href for links in served.values() for s in links]
    assert any(h.startswith("../") for h in hrefs)
    assert any("utm_source=" in h for h in hrefs)
    assert any("#comments" in h for h in hrefs)


def test_resolve_ignores_case_query_fragment_dot_segments_and_escapes(web: DemoWeb) -> None:
    base = web.base_url("127.0.0.2")
    article = next(p for p in web.pages if p.kind is Kind.ARTICLE and p.host == "127.0.0.2")
    url = web.url_of(article)
    variants = [
        url + "?utm_source=x&utm_medium=y",
        url + "#comments",
        url.replace("http://", "HTTP://"),
        base + "lab/../" + article.path.lstrip("/"),
        base + "./" + article.path.lstrip("/"),
    ]
    assert {web.resolve(v) for v in variants} == {url}
    iri = web.resolve(base + "lab/天文.html")
    assert (
        iri
        == web.resolve(base + "lab/%e5%a4%a9%e6%96%87.html")
        == base + "lab/%E5%A4%A9%E6%96%87.html"
    )
    assert web.resolve(base + "no/such/page.html") is None
    assert web.find("http://127.0.0.2:1/") is None  # wrong port
    assert web.find("ftp://127.0.0.2:8123/") is None
    with pytest.raises(KeyError):
        web.page(base + "missing.html")


def test_true_topic_and_unknown_urls(web: DemoWeb) -> None:
    section = web.base_url("127.0.0.2") + "astronomy/"
    assert web.true_topic(section) == "astronomy"
    assert web.true_topic(web.base_url("127.0.0.3")) is None  # home pages are hubs
    with pytest.raises(KeyError):
        web.true_topic(web.base_url("127.0.0.2") + "nothing-here")


def test_unbound_web_has_no_urls() -> None:
    web = DemoWeb.generate(hosts=1, pages_per_host=3)
    with pytest.raises(ValueError, match="not bound"):
        web.urls()


def test_special_resources_exist_and_are_linked(
    web: DemoWeb, served: dict[str, list[ServedLink]]
) -> None:
    base = web.base_url("127.0.0.2")
    linked = {web.resolve(s.url) for links in served.values() for s in links}
    for path, kind in [
        ("lab/", Kind.LAB),
        ("lab/redirect-301", Kind.REDIRECT),
        ("lab/redirect-chain", Kind.REDIRECT),
        ("lab/loop-a", Kind.REDIRECT),
        ("lab/error-500", Kind.ERROR),
        ("lab/flaky.html", Kind.FLAKY),
        ("lab/slow.html", Kind.SLOW),
        ("lab/huge.html", Kind.HUGE),
        ("lab/bomb.html", Kind.BOMB),
        ("lab/broken.html", Kind.BROKEN),
        ("files/report.pdf", Kind.FILE),
        ("files/chart.png", Kind.FILE),
        ("files/archive.zip", Kind.FILE),
        ("api/stats.json", Kind.FILE),
        ("calendar/2024/01", Kind.CALENDAR),
        ("private/index.html", Kind.PRIVATE),
        ("search", Kind.LAB),
    ]:
        page = web.page(base + path)
        assert page.kind is kind
        assert base + path in linked, path
    assert web.page(base + "lab/huge.html").size > 5_000_000
    assert web.page(base + "lab/bomb.html").size > 100_000_000
    noindex = web.page(base + "lab/noindex.html")
    assert noindex.noindex
    assert noindex.nofollow
    dup = next(p for p in web.pages if p.duplicate_of)
    original = web.lookup(dup.host, dup.duplicate_of or "")
    assert original is not None
    assert original.paragraphs == dup.paragraphs
    assert original.path != dup.path
    lab_links = web.links_of(base + "lab/")
    assert any(len(u) > 2048 for u in lab_links)
    assert any(u.startswith("http://127.0.0.254:") for u in lab_links)  # a host that is down
    assert any(web.find(u) is None and u.startswith(base) for u in lab_links)  # a 404


def test_articles_link_to_pages_that_answer_404(
    web: DemoWeb, served: dict[str, list[ServedLink]]
) -> None:
    dead = [
        u
        for p in web.pages
        if p.kind is Kind.ARTICLE
        for u in (s.url for s in served[web.url_of(p)])
        if web.find(u) is None and "retired" in u
    ]
    assert len(dead) >= 6


def test_nofollow_links_lead_to_sponsored_pages(web: DemoWeb) -> None:
    nofollow = {link.target for p in web.pages for link in p.links if link.nofollow}
    assert nofollow
    assert all(t.startswith("/ads/") for t in nofollow)


def test_calendar_trap_is_endless_within_four_digit_years(web: DemoWeb) -> None:
    base = web.base_url("127.0.0.2")
    january = web.links_of(base + "calendar/2024/01")
    assert base + "calendar/2023/12" in january
    assert base + "calendar/2024/02" in january
    assert web.find(base + "calendar/5000/07") is not None
    assert web.find(base + "calendar/2024/13") is None
    last = web.links_of(base + "calendar/9999/12")
    assert last == [base, base + "calendar/9999/11"]  # the year 10000 is not linked
    assert web.find(web.base_url("127.0.0.3") + "calendar/2024/01") is None  # one trap host


def test_section_without_slash_redirects(web: DemoWeb) -> None:
    page = web.page(web.base_url("127.0.0.2") + "astronomy")
    assert page.kind is Kind.REDIRECT
    assert page.status == 301
    assert page.redirect is not None
    assert page.redirect.target == "/astronomy/"


def test_robots_rules_and_crawl_delay(web: DemoWeb) -> None:
    text = robots_txt(web, "127.0.0.3")
    assert "Crawl-delay: 0.05" in text
    assert f"Sitemap: http://127.0.0.3:{PORT}/sitemap.xml" in text
    assert "Crawl-delay" not in robots_txt(web, "127.0.0.2")
    base = web.base_url("127.0.0.2")
    assert web.robots_disallowed(base + "private/index.html")
    assert web.robots_disallowed(base + "private/salaries.html")
    assert not web.robots_disallowed(base + "private/press-kit.html")  # longer Allow wins
    assert not web.robots_disallowed(base + "robots.txt")
    assert not web.robots_disallowed(base + "astronomy/")
    assert not web.robots_disallowed("http://example.invalid/private/")


def test_robots_disallowed_agrees_with_protego_everywhere(
    web: DemoWeb, served: dict[str, list[ServedLink]]
) -> None:
    agents = {}
    for host in web.hosts:
        agents[host.address] = Protego.parse(robots_txt(web, host.address))
    urls = web.urls() + [s.url for links in served.values() for s in links]
    for url in urls:
        host = url.split("/")[2].split(":")[0].lower()
        if host in agents:
            allowed = agents[host].can_fetch(url.split("#")[0], "topicrawl")
            assert web.robots_disallowed(url) == (not allowed), url
    assert agents["127.0.0.3"].crawl_delay("topicrawl") == pytest.approx(0.05)
    assert not agents["127.0.0.2"].can_fetch(web.base_url("127.0.0.2"), "BadBot")


def test_every_document_renders_and_anchors_match_served_links(
    web: DemoWeb, served: dict[str, list[ServedLink]]
) -> None:
    for page in web.pages:
        if not page.is_document or page.kind in {Kind.HUGE, Kind.BOMB}:
            continue
        body = render_document(web, page)
        tree = HTMLParser(body.decode(page.encoding, errors="replace"))
        anchors = tree.css("a")
        links = served[web.url_of(page)]
        assert [a.attributes.get("href") for a in anchors] == [s.href for s in links]
        for anchor, link in zip(anchors, links, strict=True):
            parents = set()
            node = anchor.parent
            while node is not None:
                parents.add(node.tag)
                node = node.parent
            assert parents & {"nav", "ul", "p"}, link
            rel = anchor.attributes.get("rel") or ""
            assert ("nofollow" in rel) == link.nofollow
        if page.noindex:
            assert tree.css_first('meta[name="robots"]').attributes["content"] == "noindex,nofollow"


def test_charset_lies_are_what_they_claim(web: DemoWeb) -> None:
    base = web.base_url("127.0.0.2")
    mislabeled = web.page(base + "lab/gbk-utf8-header.html")
    body = render_document(web, mislabeled)
    assert (mislabeled.encoding, mislabeled.header_charset) == ("gbk", "utf-8")
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    assert mislabeled.title in body.decode("gbk")
    unlabeled = render_document(web, web.page(base + "lab/gbk-no-charset.html"))
    assert b"charset" not in unlabeled
    latin = render_document(web, web.page(base + "lab/utf8-as-latin1.html"))
    assert b'<meta charset="iso-8859-1">' in latin
    assert re.search("[\u4e00-\u9fff]", latin.decode("utf-8"))
    broken = render_document(web, web.page(base + "lab/broken.html"))
    assert GARBAGE in broken
    assert b"</div></div>" in broken
    assert b"</p>" not in broken


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hosts": 0}, "hosts"),
        ({"pages_per_host": 0}, "pages_per_host"),
        ({"base_address": "10.0.0.1"}, "127.0.0.0/8"),
        ({"base_address": "not-an-ip"}, "IPv4"),
        ({"base_address": "127.0.0.250", "hosts": 6}, ".254"),
    ],
)
def test_bad_arguments_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        DemoWeb.generate(**kwargs)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_lookups_never_raise_on_hostile_urls(web: DemoWeb, junk: str) -> None:
    for url in (junk, web.base_url("127.0.0.2") + junk, "http://[" + junk):
        assert web.find(url) is None or web.resolve(url) is not None
        assert isinstance(web.robots_disallowed(url), bool)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab/.%2E天?#"), max_size=30))
def test_normalise_path_is_idempotent(path: str) -> None:
    once = normalise_path("/" + path)
    assert once.startswith("/")
    assert normalise_path(once) == once
