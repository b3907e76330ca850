"""URL canonicalisation, fingerprints, hosts, registered domains and scope rules."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import xxhash
from w3lib.url import canonicalize_url, safe_url_string

if TYPE_CHECKING:
    import tldextract

__all__ = [
    "TRACKING_PARAMS",
    "InvalidUrl",
    "Scope",
    "canonicalize",
    "fingerprint",
    "fingerprints",
    "host_of",
    "registered_domain",
]

# Query parameters that identify a visitor or a campaign, never the resource.
TRACKING_PARAMS = frozenset(
    {
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_term",
        "utm_content",
        "gclid",
        "fbclid",
        "msclkid",
        "mc_cid",
        "mc_eid",
        "_ga",
    }
)

_SCHEMES = ("http", "https")


# No network fetch of the public suffix list: the snapshot bundled with tldextract is used.
# Built on first use: tldextract (with requests) costs ~20 MB, which parse workers never need.
@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    import tldextract  # noqa: PLC0415

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


class InvalidUrl(ValueError):
    """The string is not an absolute http(s) URL topicrawl can fetch."""


# Already canonical: lower-case scheme and host, no default port, no fragment, no query, and a
# path of plain characters without dot segments. Most links of real sites look like this, and
# the full w3lib path costs ~40 us a URL, which dominates a fast crawl.
# The host has no trailing dot; the port has no leading zero and is under 10000 (so it is valid),
# and is not 80 or 443 (which could be the scheme's default); rarer forms take the slow path.
# Path segments are separated by exactly one "/", and the quantifiers are possessive: a
# pattern where segments could be split two ways backtracks exponentially on a URL that
# almost matches (a long segment followed by "?" or "%").
# ";" is left out: the slow path treats it as the start of path parameters ("/a;" -> "/a").
_PATH_CHAR = r"[A-Za-z0-9\-_~!$'()*+,=:@]"
_SEGMENT = rf"{_PATH_CHAR}++(?:\.{_PATH_CHAR}++)*+"
_PLAIN = re.compile(
    r"https?://[a-z0-9](?:[a-z0-9.\-]*[a-z0-9\-])?(?::(?!80/|443/)[1-9][0-9]{0,3})?"
    rf"/(?:{_SEGMENT}(?:/{_SEGMENT})*+/?)?"
)


_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def canonicalize(url: str) -> str:
    """Return the canonical form of an absolute http(s) URL.

    Lower-cases scheme and host, drops the default port, the fragment and tracking
    parameters, sorts the query, normalises percent-encoding, and gives an empty path "/".

    Raises:
        InvalidUrl: not an absolute http(s) URL with a host.
    """
    if _PLAIN.fullmatch(url) is not None:
        return url
    url = url.strip()
    if len(url) > _MAX_CACHED_CHARS:
        return _canonicalize_uncached(url)
    return _canonicalize_slow(url)


def _canonicalize_uncached(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidUrl(f"malformed URL {url[:200]!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES or not parts.hostname:
        raise InvalidUrl(f"not an absolute http(s) URL: {url[:200]!r}")
    if any(ch in parts.hostname for ch in " \t\r\n<>\"'{}|\\^`"):
        raise InvalidUrl(f"invalid host in URL: {url[:200]!r}")
    host = parts.hostname.lower().rstrip(".")
    if not host:
        raise InvalidUrl(f"no host in URL: {url[:200]!r}")
    try:
        host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError as exc:
        raise InvalidUrl(f"invalid international host in {url[:200]!r}") from exc
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    netloc = host if port in (None, default) else f"{host}:{port}"
    query = parts.query
    if query:
        kept = [
            pair
            for pair in query.split("&")
            if pair and pair.split("=", 1)[0].lower() not in TRACKING_PARAMS
        ]
        query = "&".join(kept)
    rebuilt = f"{scheme}://{netloc}{parts.path or '/'}" + (f"?{query}" if query else "")
    # A "%" that starts no escape is escaped itself; left alone, w3lib can join it with the
    # characters an escape after it decodes to ("%a%41" -> "%aA"), and a second pass changes
    # the URL again.
    rebuilt = _STRAY_PERCENT.sub("%25", rebuilt)
    return canonicalize_url(safe_url_string(rebuilt), keep_fragments=False)


# Only URLs up to _MAX_CACHED_CHARS are cached, which bounds the cache's memory whatever URLs
# a hostile site hands out.
_MAX_CACHED_CHARS = 512
_canonicalize_slow = lru_cache(maxsize=32768)(_canonicalize_uncached)


def fingerprint(url: str) -> int:
    """A 64-bit hash of a canonical URL, the key for dedupe (signed, fits SQL BIGINT)."""
    return xxhash.xxh3_64_intdigest(url.encode("utf-8")) - (1 << 63)


_to_signed = (1 << 63).__rsub__  # x -> x - 2**63


def fingerprints(urls: Iterable[str]) -> list[int]:
    """:func:`fingerprint` of each URL, with no Python-level call per URL (a page's links are
    checked against the frontier's seen URLs at once: ~2x faster than a comprehension)."""
    return list(map(_to_signed, map(xxhash.xxh3_64_intdigest, map(str.encode, urls))))


def host_of(url: str) -> str:
    """The politeness key of a canonical URL: host, and port when not the default."""
    start = url.find("://") + 3
    end = url.find("/", start)
    return url[start:] if end < 0 else url[start:end]


@lru_cache(maxsize=65536)
def _registered_domain(host: str) -> str:
    if "." not in host or _is_ip_address(host):
        # IP addresses, localhost and bare names are their own domain; the suffix list
        # (~0.08 s and ~20 MB to load) is not needed to say so.
        return host
    extracted = _extractor()(host)
    if extracted.domain and extracted.suffix:
        return f"{extracted.domain}.{extracted.suffix}"
    # IP addresses, localhost and bare names are their own domain.
    return extracted.domain or host


def _is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def registered_domain(url: str) -> str:
    """The registrable domain (eTLD+1) of a URL, e.g. ``bbc.co.uk``; the host for IPs."""
    host = urlsplit(url).hostname or ""
    return _registered_domain(host)


@dataclass(frozen=True, slots=True)
class Scope:
    """Host-level and pattern rules for which URLs a crawl may follow.

    A URL is in scope when its host or registered domain is allowed (no allowed domains means
    any), it matches one of ``include`` (no include patterns means any), matches none of
    ``exclude``, and is no longer than ``max_url_length``.
    """

    allowed_domains: frozenset[str] = frozenset()
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    max_url_length: int = 2048
    _hosts_ok: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        *,
        allowed_domains: Iterable[str] = (),
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_url_length: int = 2048,
    ) -> Scope:
        """Compile the rules.

        Raises:
            ValueError: a pattern is not a valid regular expression.
        """
        try:
            inc = tuple(re.compile(p) for p in include)
            exc = tuple(re.compile(p) for p in exclude)
        except re.error as err:
            raise ValueError(f"invalid scope pattern {err.pattern!r}: {err}") from err
        domains = frozenset(d.strip().lower().rstrip(".") for d in allowed_domains if d.strip())
        return cls(allowed_domains=domains, include=inc, exclude=exc, max_url_length=max_url_length)

    def widen(self, domains: Iterable[str]) -> None:
        """Allow more domains (a distributed crawl's scope grows as seeds are added to it).

        A scope with no allowed domains allows any and stays so.
        """
        added = frozenset(d.strip().lower().rstrip(".") for d in domains if d.strip())
        if not self.allowed_domains or added <= self.allowed_domains:
            return
        # Frozen for hashing and sharing; the one change it allows is this widening, after
        # which the answers cached for hosts are stale.
        object.__setattr__(self, "allowed_domains", self.allowed_domains | added)
        self._hosts_ok.clear()

    def host_allowed(self, host: str) -> bool:
        if not self.allowed_domains:
            return True
        cached = self._hosts_ok.get(host)
        if cached is None:
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            cached = (
                host in self.allowed_domains
                or name in self.allowed_domains
                or _registered_domain(name) in self.allowed_domains
            )
            if len(self._hosts_ok) < 100_000:
                self._hosts_ok[host] = cached
        return cached

    def allows(self, url: str) -> bool:
        """Whether a canonical URL is in scope."""
        if len(url) > self.max_url_length:
            return False
        if not self.host_allowed(host_of(url)):
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)
