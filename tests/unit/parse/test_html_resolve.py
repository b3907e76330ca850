"""Link resolution: the quick join for plain relative paths agrees with urllib's urljoin."""

from __future__ import annotations

import re
from urllib.parse import urljoin

from hypothesis import example, given
from hypothesis import strategies as st

from topicrawl.parse.html import _directory_of, _join, _Resolver
from topicrawl.parse.urls import InvalidUrl, canonicalize

SEGMENTS = st.sampled_from(
    ["", ".", "..", "a", "b.html", "c-d_e~f", "%41", "%zz", "é", "x y", "x;y", "x:y", "\\"]
)
QUERIES = st.sampled_from(["", "?", "?q=1", "?a=1&utm_source=x", "?x=/..", "?k=a:b"])
FRAGMENTS = st.sampled_from(["", "#", "#frag", "#a/../b"])
HOSTS = st.sampled_from(["example.org", "www.example.org:8080", "127.0.0.11:8080", "[::1]"])


@st.composite
def paths(draw: st.DrawFn, *, max_size: int = 6) -> str:
    return "/".join(draw(st.lists(SEGMENTS, max_size=max_size)))


@st.composite
def base_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https"]))
    return f"{scheme}://{draw(HOSTS)}/{draw(paths())}{draw(QUERIES)}"


@st.composite
def hrefs(draw: st.DrawFn) -> str:
    prefix = draw(
        st.sampled_from(["", "/", "//", "./", "../", "http:", "http://", "https://other.example/"])
    )
    return prefix + draw(paths()) + draw(QUERIES) + draw(FRAGMENTS)


@given(base=base_urls(), href=hrefs())
@example(base="http://example.org/a/b/c", href="../../../x")
@example(base="http://example.org/a//b/", href="c/./d/..")
@example(base="http://example.org/a/", href="/./x/.")
@example(base="http://example.org/a/", href="x?")
@example(base="http://example.org/./", href="a")
def test_join_equals_urljoin(base: str, href: str) -> None:
    directory = _directory_of(base)
    href = href.partition("#")[0]
    assert _join(directory, href) == urljoin(directory, href)
    assert _join(base, href) == urljoin(base, href)


def expected(base: str, href: str) -> str | None:
    """What resolving an href must give: urljoin on the full base URL, then canonicalize."""
    cleaned = href.strip("".join(map(chr, range(0x21))))
    for char in "\t\n\r":
        cleaned = cleaned.replace(char, "")
    if not cleaned.partition("#")[0]:
        return None
    if re.fullmatch(r"(?i)https?://(?:[/?#].*)?", cleaned, flags=re.DOTALL):
        # A scheme with an empty authority is no URL (as in browsers), though urljoin would
        # take the base's host.
        return None
    try:
        return canonicalize(urljoin(base, cleaned))
    except (InvalidUrl, ValueError):
        return None


@given(base=base_urls(), href=hrefs(), padding=st.sampled_from(["", " ", "\n", "\t\x01"]))
@example(base="http://example.org/", href="http://", padding="")
@example(base="http://example.org/a?q", href="http:?x", padding="")
@example(base="http://example.org/a?q", href="//?x", padding="")
def test_resolver_equals_urljoin_then_canonicalize(base: str, href: str, padding: str) -> None:
    try:
        page = canonicalize(base)
    except InvalidUrl:
        return
    assert _Resolver(page).resolve(padding + href + padding) == expected(page, href)


@given(href=hrefs())
def test_resolver_output_is_canonical(href: str) -> None:
    url = _Resolver("https://example.org/dir/page?x=1").resolve(href)
    if url is not None:
        assert url.startswith(("http://", "https://"))
        assert canonicalize(url) == url


def test_other_schemes_are_never_resolved() -> None:
    resolver = _Resolver("https://example.org/dir/")
    for href in ("mailto:a@b.c", "javascript:x", "tel:1", "data:,x", "ftp://example.org/", "a:b"):
        assert resolver.resolve(href) is None
