"""URL canonicalisation, fingerprints, hosts, registered domains and scope rules."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from topicrawl.parse.urls import (
    _PLAIN,
    TRACKING_PARAMS,
    InvalidUrl,
    Scope,
    _canonicalize_slow,
    canonicalize,
    fingerprint,
    fingerprints,
    host_of,
    registered_domain,
)

# --- canonicalize --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("HTTP://WWW.Example.COM/a/b", "http://www.example.com/a/b"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
        ("http://example.com/?utm_source=x&id=3&fbclid=y&GCLID=z", "http://example.com/?id=3"),
        ("http://example.com/?utm_source=x", "http://example.com/"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/%7Euser/a%20b/%e2%82%ac", "http://example.com/~user/a%20b/%E2%82%AC"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com./a", "http://example.com/a"),
        ("http://example.com:080/", "http://example.com/"),
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("  http://example.com/a  ", "http://example.com/a"),
        ("http://example.com/a;", "http://example.com/a"),
        ("http://example.com/%a%41", "http://example.com/%25aA"),
    ],
)
def test_canonicalize(url: str, canonical: str) -> None:
    assert canonicalize(url) == canonical


@pytest.mark.parametrize(
    "url",
    [
        "",
        "example.com/a",
        "/relative/path",
        "//example.com/a",
        "ftp://example.com/",
        "mailto:a@example.com",
        "javascript:alert(1)",
        "http://",
        "http:///a",
        "http://./",
        "http://..",
        "http://[::1/",
        "http://example.com:99999/",
        "http://exa mple.com/",
        "http://a<b>.com/",
    ],
)
def test_canonicalize_rejects(url: str) -> None:
    with pytest.raises(InvalidUrl):
        canonicalize(url)


def test_tracking_params_are_only_visitor_and_campaign_ids() -> None:
    assert {"utm_source", "gclid", "fbclid"} <= TRACKING_PARAMS
    assert canonicalize("http://example.com/?page=2&id=7") == "http://example.com/?id=7&page=2"


def test_almost_plain_urls_do_not_backtrack() -> None:
    # A pattern with ambiguous path segments took exponential time on these.
    long_segment = "a" * 100_000
    for tail in ("%", "?q=1", "/./", ";x"):
        url = f"http://example.com/{long_segment}{tail}"
        assert canonicalize(url).startswith("http://example.com/aaa")
    assert _PLAIN.fullmatch("http://" + "a-" * 100_000 + "%") is None


LABELS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12)
PATH_CHARS = st.sampled_from([*"abcXYZ019-_~!$'()*+,=:@./", "..", "//"])
PLAIN_CANDIDATES = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}{port}/{path}",
    st.sampled_from(["http", "https"]),
    LABELS,
    st.sampled_from(["", ":8080", ":1", ":9999", ":80", ":443", ":0", ":08"]),
    st.lists(PATH_CHARS, max_size=20).map("".join),
)


@given(PLAIN_CANDIDATES)
@example("http://0:00/")
@example("http://example.com./")
@example("http://0/;")
def test_fast_path_agrees_with_the_slow_path(url: str) -> None:
    assume(_PLAIN.fullmatch(url) is not None)
    assert canonicalize(url) == url
    assert _canonicalize_slow(url) == url


URL_PARTS = st.tuples(
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "", "//", "http:"]),
    st.sampled_from(
        [
            *("a.com", "A.COM", "b.a.com.", "bücher.de", "[::1]", "1.2.3.4", "h:8080", "h:80"),
            *("h:443", "h:0", "h:99999", "", "a b", "例え.jp", "h:", "user:pw@h", "h%20", "."),
        ]
    ),
    st.lists(
        st.sampled_from([*"/abc.%2F?#&=;: ~+é€\\\t\n'\"<>", "..", "utm_source=1", "%zz", "%41"]),
        max_size=30,
    ).map("".join),
).map("".join)


@given(URL_PARTS)
@example("http://a.com/%a%41")
@example("http://..")
def test_canonicalize_is_idempotent(url: str) -> None:
    try:
        canonical = canonicalize(url)
    except InvalidUrl:
        return
    assert canonical.startswith(("http://", "https://"))
    assert canonicalize(canonical) == canonical
    assert _canonicalize_slow(canonical) == canonical


@given(st.text())
def test_canonicalize_raises_only_invalid_url(url: str) -> None:
    with contextlib.suppress(InvalidUrl):
        canonicalize(url)


# --- fingerprint, host, registered domain ---------------------------------------------------


def test_fingerprint_is_stable() -> None:
    # Stored in databases and Bloom filters: a change would orphan every stored fingerprint.
    assert fingerprint("http://example.com/") == 4141623967023570475
    assert fingerprint("https://www.example.org/news/solar.html") == -797273803147376717


@given(st.text())
def test_fingerprint_fits_a_signed_bigint(url: str) -> None:
    value = fingerprint(url)
    assert -(1 << 63) <= value < (1 << 63)
    assert fingerprint(url) == value


def test_fingerprints_of_many_urls_are_each_urls_fingerprint() -> None:
    urls = ["https://example.org/", "http://h\u00e9.test/\u4e16?q=1", "", "http://a.test/" * 50]
    assert fingerprints(urls) == [fingerprint(url) for url in urls]
    assert all(-(2**63) <= fp < 2**63 for fp in fingerprints(urls))
    assert fingerprints([]) == []


def test_fingerprint_tells_urls_apart() -> None:
    urls = [f"https://example.org/page/{i}" for i in range(10_000)]
    assert len({fingerprint(url) for url in urls}) == len(urls)


@pytest.mark.parametrize(
    ("url", "host", "domain"),
    [
        ("https://news.bbc.co.uk/x", "news.bbc.co.uk", "bbc.co.uk"),
        ("http://www.example.com:8080/a", "www.example.com:8080", "example.com"),
        ("http://127.0.0.1:8080/", "127.0.0.1:8080", "127.0.0.1"),
        ("http://localhost/", "localhost", "localhost"),
        ("http://[::1]:8080/", "[::1]:8080", "::1"),
        ("http://[fe80::1]/", "[fe80::1]", "fe80::1"),
        ("http://intranet/wiki", "intranet", "intranet"),
        ("https://example.com", "example.com", "example.com"),
    ],
)
def test_host_of_and_registered_domain(url: str, host: str, domain: str) -> None:
    assert host_of(url) == host
    assert registered_domain(url) == domain


# --- scope -------------------------------------------------------------------------------------


def test_scope_allowed_domains() -> None:
    scope = Scope.build(allowed_domains=[" Example.org. ", "news.other.com", ""])
    assert scope.allows("https://example.org/")
    assert scope.allows("https://news.example.org/a")  # its registered domain is allowed
    assert scope.allows("https://example.org:8080/")
    assert scope.allows("https://news.other.com/")
    assert not scope.allows("https://www.other.com/")  # only that host of other.com
    assert not scope.allows("https://example.com/")
    assert not scope.allows("https://example.org.evil.com/")


def test_scope_hosts_with_ports_and_ips() -> None:
    assert Scope.build(allowed_domains=["127.0.0.11"]).allows("http://127.0.0.11:8080/x")
    assert not Scope.build(allowed_domains=["127.0.0.11"]).allows("http://127.0.0.12:8080/x")
    with_port = Scope.build(allowed_domains=["127.0.0.11:8080"])
    assert with_port.allows("http://127.0.0.11:8080/x")
    assert not with_port.allows("http://127.0.0.11:9090/x")
    assert Scope.build(allowed_domains=["[::1]"]).allows("http://[::1]:8080/x")


def test_scope_patterns_and_length() -> None:
    scope = Scope.build(include=[r"/docs/", r"/api/"], exclude=[r"\.pdf$", r"/docs/private/"])
    assert scope.allows("https://example.org/docs/intro")
    assert scope.allows("https://other.example/api/v1")
    assert not scope.allows("https://example.org/blog/")
    assert not scope.allows("https://example.org/docs/manual.pdf")
    assert not scope.allows("https://example.org/docs/private/x")
    short = Scope.build(max_url_length=30)
    assert short.allows("https://example.org/short")
    assert not short.allows("https://example.org/" + "x" * 20)


def test_scope_without_rules_allows_everything() -> None:
    assert Scope().allows("https://anything.example/at/all?x=1")


def test_scope_rejects_invalid_patterns() -> None:
    with pytest.raises(ValueError, match="invalid scope pattern"):
        Scope.build(include=["("])
    with pytest.raises(ValueError, match="invalid scope pattern"):
        Scope.build(exclude=["[a-"])


def test_ip_addresses_and_bare_names_need_no_suffix_list() -> None:
    # Loading the public suffix list costs ~0.08 s and ~20 MB: a crawl of IP addresses or
    # intranet names never needs it.
    from topicrawl.parse.urls import _extractor  # noqa: PLC0415

    calls = _extractor.cache_info()
    domains = [
        registered_domain(f"http://{host}/")
        for host in ("10.1.2.3", "[2001:db8::7]", "printer", "192.0.2.99:8080")
    ]
    assert domains == ["10.1.2.3", "2001:db8::7", "printer", "192.0.2.99"]
    after = _extractor.cache_info()
    assert after.hits + after.misses == calls.hits + calls.misses
