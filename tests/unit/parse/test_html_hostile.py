"""parse_html on hostile input: it never raises, and what it returns stays well-formed."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topicrawl.core.models import ParsedPage
from topicrawl.parse.html import (
    MAX_ANCHOR_CHARS,
    MAX_BLOCK_TEXT_CHARS,
    MAX_LINKS,
    MAX_TITLE_CHARS,
    parse_html,
)
from topicrawl.parse.urls import canonicalize

PAGE = "https://example.org/dir/page.html"

TAGS = [
    "a", "area", "p", "div", "ul", "li", "table", "tr", "td", "nav", "span", "b", "br",
    "script", "style", "svg", "template", "noscript", "iframe", "title", "base", "meta", "link",
    "html", "head", "body", "math", "wbr", "img", "select", "option", "textarea", "form",
]  # fmt: skip
HREFS = st.one_of(
    st.sampled_from(
        [
            "/", "a.html", "../b", "?q=1", "#x", "//other.example/p", "HTTP://EX.ORG:80/A",
            "javascript:1", "mailto:x@y", "http://[::1", "https://ex.org/%zz?utm_source=1",
            "\x00", " \n/x\t ", "http://a..b/", "http://./", "https://xn--/",
        ]
    ),
    st.text(max_size=40),
)  # fmt: skip
ATTRIBUTES = st.one_of(
    st.builds(lambda h: f' href="{h}"', HREFS),
    st.builds(lambda h: f" href='{h}", HREFS),  # unterminated quote
    st.sampled_from([" rel=nofollow", ' rel="NoFollow x"', " alt='alt text'", ' lang="en"']),
    st.sampled_from([' name="robots" content="none"', ' rel="canonical" href="/c"', " title=t"]),
    st.text(max_size=20),
)
TOKENS = st.one_of(
    st.builds(lambda t, a: f"<{t}{''.join(a)}>", st.sampled_from(TAGS), st.lists(ATTRIBUTES)),
    st.builds(lambda t: f"</{t}>", st.sampled_from(TAGS)),
    st.text(max_size=30),
    st.sampled_from(["<!--", "-->", "<![CDATA[", "]]>", "<!doctype html>", "&amp;", "&#0;", "&"]),
    st.sampled_from(["<", ">", "\x00", "\ufeff", "\r\n", "\u2028", "<a", "<a href=", "</"]),
)
SOUP = st.lists(TOKENS, max_size=60).map("".join)


def check(parsed: ParsedPage) -> None:
    assert len(parsed.title) <= MAX_TITLE_CHARS
    assert "\x00" not in parsed.text
    for line in parsed.text.split("\n") if parsed.text else ():
        assert line
        assert line == " ".join(line.split())
    assert len(parsed.links) <= MAX_LINKS
    seen_blocks = -1
    for link in parsed.links:
        assert link.url.startswith(("http://", "https://"))
        assert canonicalize(link.url) == link.url
        assert len(link.anchor) <= MAX_ANCHOR_CHARS
        assert len(link.block_text) <= MAX_BLOCK_TEXT_CHARS
        assert 0 <= link.block <= seen_blocks + 1  # numbered in order of first use
        seen_blocks = max(seen_blocks, link.block)
        assert link.nofollow or not parsed.nofollow
    assert len({link.url for link in parsed.links}) == len(parsed.links)
    if parsed.canonical is not None:
        assert canonicalize(parsed.canonical) == parsed.canonical


@given(st.text())
def test_arbitrary_text_never_raises(html: str) -> None:
    check(parse_html(html, url=PAGE))


@given(
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=200),
    st.sampled_from([PAGE, "", "not a url", "http://[::1", "https://EXAMPLE.org:443/a/../b?x#y"]),
)
def test_any_code_points_and_page_urls(html: str, url: str) -> None:
    check(parse_html(html, url=url))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(SOUP)
def test_tag_soup_never_raises(html: str) -> None:
    check(parse_html(html, url=PAGE))


def test_deep_nesting() -> None:
    # Lexbor's tree building is quadratic in the depth of nested block elements (each <div>
    # looks for an open <p> down the stack), so the block part stays moderate; inline nesting
    # is linear and can be deep.
    html = "<div>" * 2000 + "<span>" * 100_000 + '<a href="/deep">deep</a>text'
    parsed = parse_html(html, url=PAGE)
    assert [link.url for link in parsed.links] == ["https://example.org/deep"]
    assert parsed.text == "deeptext"


def test_many_links_deep_in_inline_elements() -> None:
    # Every anchor walks up to its block; the walk is memoised, so this stays linear.
    html = "<p>" + "<span>" * 20_000 + "".join(f'<a href="/{i}">{i}</a> ' for i in range(2000))
    links = parse_html(html, url=PAGE).links
    assert len(links) == 2000
    assert {link.block for link in links} == {0}


def test_nul_bytes_and_lone_surrogates() -> None:
    html = '<title>a\x00b</title><p>x\x00y\ud800z</p><a href="/a\x00b">l\x00ink</a>'
    parsed = parse_html(html, url=PAGE)
    check(parsed)
    assert parsed.links[0].url.startswith("https://example.org/a")


def test_enormous_attribute_values() -> None:
    huge = "x" * 1_000_000
    html = f'<a href="/{huge}" title="{huge}">big</a><a href="/ok" title="{huge}"></a><p>x</p>'
    parsed = parse_html(html, url=PAGE)
    check(parsed)
    assert [(link.url, len(link.anchor)) for link in parsed.links] == [
        ("https://example.org/ok", MAX_ANCHOR_CHARS)
    ]


def test_hundred_thousand_links() -> None:
    html = "<ul>" + "".join(f'<li><a href="/p{i % 7000}">p{i}</a>' for i in range(100_000))
    parsed = parse_html(html, url=PAGE)
    check(parsed)
    assert len(parsed.links) == MAX_LINKS


def test_unterminated_constructs() -> None:
    for html in ("<a href='/x", "<!-- <a href=/y>y</a>", "<script><a href=/z>", "<title><a href"):
        check(parse_html(html, url=PAGE))
