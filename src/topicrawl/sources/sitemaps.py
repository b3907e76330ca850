"""Sitemaps as seed sources: discovered from robots.txt, read safely, nested indexes followed.

A site's sitemaps are the ``Sitemap:`` lines of its robots.txt or, when it lists none,
``/sitemap.xml``. :func:`parse_sitemap` reads a ``<urlset>`` (``loc``, ``lastmod``,
``priority``, ``changefreq``), a ``<sitemapindex>``, a plain-text sitemap (one URL a line)
or an RSS/Atom feed used as a sitemap; gzip bodies are inflated under the size cap.
:class:`SitemapSource` walks indexes breadth-first with a depth cap and a cycle guard, and
caps the sitemaps it fetches and the URLs it yields.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol
from urllib.parse import urljoin, urlsplit

from lxml import etree
from protego import Protego

from topicrawl.core.errors import FetchError
from topicrawl.core.models import Request
from topicrawl.parse.urls import InvalidUrl, Scope, canonicalize
from topicrawl.sources.documents import (
    FetchDocument,
    MalformedDocument,
    SourceStats,
    UrlGate,
    element_text,
    gunzip_capped,
    iter_xml,
    local_name,
    parse_date,
    release,
    xml_root,
)
from topicrawl.sources.feeds import parse_feed

__all__ = [
    "ParsedSitemap",
    "SitemapDirectory",
    "SitemapEntry",
    "SitemapSource",
    "parse_sitemap",
]

logger = logging.getLogger(__name__)

CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_FEED_ROOTS = frozenset({"rss", "RDF", "feed"})
_THREAD_BYTES = 256 * 1024  # parse bigger bodies in a worker thread, off the event loop
_MAX_FIELD_CHARS = 4096


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """A URL a sitemap lists, with its last modification (epoch UTC), priority (0..1) and
    change frequency when the sitemap gives valid ones, and the sitemap that listed it."""

    url: str
    lastmod: float | None = None
    priority: float | None = None
    changefreq: str | None = None
    sitemap: str = ""


@dataclass(frozen=True, slots=True)
class ParsedSitemap:
    """One sitemap document: page entries (``urls``, absolute but not yet canonical) and,
    for an index, the child sitemaps with their lastmod. ``truncated``: the URL cap cut it."""

    url: str
    kind: str  # "urlset", "sitemapindex", "text" or a feed kind ("rss", "rdf", "atom")
    urls: tuple[SitemapEntry, ...] = ()
    sitemaps: tuple[tuple[str, float | None], ...] = ()
    truncated: bool = False


class SitemapDirectory(Protocol):
    """Knows a host's sitemaps from its robots.txt (``RobotsCache`` is one)."""

    async def sitemaps(self, host: str) -> list[str]: ...


def _field(element: etree._Element) -> str:
    return element_text(element).strip()[:_MAX_FIELD_CHARS]


def _priority(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _record(element: etree._Element) -> dict[str, str]:
    fields: dict[str, str] = {}
    for child in element:
        name = local_name(child)
        if name in {"loc", "lastmod", "priority", "changefreq"} and name not in fields:
            fields[name] = _field(child)
    return fields


def _parse_text(body: bytes, url: str, max_urls: int) -> ParsedSitemap:
    entries: list[SitemapEntry] = []
    for line in body.decode("utf-8", errors="replace").splitlines():
        loc = line.strip().removeprefix("\ufeff")
        if not loc.startswith(("http://", "https://")):
            continue
        if len(entries) >= max_urls:
            return ParsedSitemap(url=url, kind="text", urls=tuple(entries), truncated=True)
        entries.append(SitemapEntry(url=loc[:_MAX_FIELD_CHARS], sitemap=url))
    if not entries and body.strip():
        raise MalformedDocument(url, "neither XML nor a list of URLs")
    return ParsedSitemap(url=url, kind="text", urls=tuple(entries))


def parse_sitemap(body: bytes, *, url: str, max_urls: int = 50_000) -> ParsedSitemap:
    """Read a sitemap, sitemap index, text sitemap or feed (already inflated).

    Relative ``loc`` values are resolved against ``url``. Entries past ``max_urls`` (page
    URLs plus child sitemaps) are left out and ``truncated`` is set.

    Raises:
        HostileXml: the XML declares entities.
        MalformedDocument: not a sitemap in any of the accepted forms.
    """
    if not body.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return _parse_text(body, url, max_urls)
    kind = xml_root(body, url=url)
    if kind in _FEED_ROOTS:
        return _from_feed(body, url, max_urls)
    if kind not in {"urlset", "sitemapindex"}:
        raise MalformedDocument(url, f"<{kind[:40]}> is not a sitemap's root element")
    urls: list[SitemapEntry] = []
    children: list[tuple[str, float | None]] = []
    truncated = False
    for element in iter_xml(body, url=url, tags=("url", "sitemap")):
        if len(urls) + len(children) >= max_urls:
            truncated = True
            break
        name = local_name(element)
        fields = _record(element)
        release(element)
        loc = fields.get("loc", "")
        if not loc:
            continue
        if not loc.startswith(("http://", "https://")):
            loc = urljoin(url, loc)
        lastmod = parse_date(fields.get("lastmod"))
        if name == "sitemap":
            children.append((loc, lastmod))
            continue
        freq = fields.get("changefreq", "").lower()
        urls.append(
            SitemapEntry(
                url=loc,
                lastmod=lastmod,
                priority=_priority(fields.get("priority", "")),
                changefreq=freq if freq in CHANGEFREQS else None,
                sitemap=url,
            )
        )
    return ParsedSitemap(
        url=url, kind=kind, urls=tuple(urls), sitemaps=tuple(children), truncated=truncated
    )


def _from_feed(body: bytes, url: str, max_urls: int) -> ParsedSitemap:
    feed = parse_feed(body, url=url, max_entries=max_urls)
    entries = tuple(SitemapEntry(url=e.url, lastmod=e.date, sitemap=url) for e in feed.entries)
    return ParsedSitemap(url=url, kind=feed.kind, urls=entries, truncated=feed.truncated)


def _origin(site: str) -> str:
    parts = urlsplit(canonicalize(site if "://" in site else f"http://{site}"))
    return f"{parts.scheme}://{parts.netloc}/"


class SitemapSource:
    """Requests for the URLs in sites' sitemaps; implements ``core.protocols.Source``.

    Sitemaps are those given in ``sitemaps`` plus those discovered for each of ``sites``
    (robots.txt ``Sitemap:`` lines, through ``robots`` when given, else by fetching
    robots.txt with ``fetch``; ``/sitemap.xml`` when robots.txt lists none). They are read
    one at a time, breadth-first; a sitemap that fails is recorded in :attr:`stats` and the
    walk goes on.

    Args:
        fetch: fetches a URL (see :func:`~topicrawl.sources.documents.fetcher_documents`).
        sitemaps: sitemap URLs to read.
        sites: site URLs (or ``host[:port]``) whose sitemaps are to be discovered.
        robots: where robots.txt ``Sitemap:`` lines come from (e.g. the crawl's RobotsCache).
        scope: the crawl's scope; URLs outside it are skipped (None keeps all).
        since: epoch seconds; URLs and child sitemaps with an older lastmod are skipped.
        max_urls: cap on URLs yielded over all sitemaps.
        max_sitemaps: cap on sitemap documents fetched.
        max_depth: how deep sitemap indexes may nest (0: indexes are not followed).
        max_bytes: cap on a sitemap's size after gzip inflation (use the fetcher's cap).

    Raises:
        ValueError: a cap is not positive (``max_depth`` may be 0).
    """

    def __init__(
        self,
        *,
        fetch: FetchDocument,
        sitemaps: Sequence[str] = (),
        sites: Sequence[str] = (),
        robots: SitemapDirectory | None = None,
        scope: Scope | None = None,
        since: float | None = None,
        max_urls: int = 100_000,
        max_sitemaps: int = 200,
        max_depth: int = 4,
        max_bytes: int = 5_000_000,
    ) -> None:
        if min(max_urls, max_sitemaps, max_bytes) < 1 or max_depth < 0:
            raise ValueError("the caps must be positive (max_depth may be 0)")
        self._fetch = fetch
        self._sitemaps = tuple(sitemaps)
        self._sites = tuple(sites)
        self._robots = robots
        self._since = since
        self._max_urls = max_urls
        self._max_sitemaps = max_sitemaps
        self._max_depth = max_depth
        self._max_bytes = max_bytes
        self.stats = SourceStats()
        self._gate = UrlGate(stats=self.stats, scope=scope, since=since)
        self.read: list[str] = []
        """The sitemaps read so far, in order."""

    async def discover(self, site: str) -> list[str]:
        """The sitemap URLs of a site: its robots.txt ``Sitemap:`` lines, else /sitemap.xml."""
        origin = _origin(site)
        listed: list[str] = []
        if self._robots is not None:
            listed = await self._robots.sitemaps(origin)
        else:
            robots_url = origin + "robots.txt"
            try:
                document = await self._fetch(robots_url)
                text = document.body[: 500 * 1024].decode("utf-8", errors="replace")
                listed = list(Protego.parse(text).sitemaps)
            except FetchError as exc:
                logger.info("robots.txt of %s unavailable (%s): trying /sitemap.xml", site, exc)
        found = [urljoin(origin, s.strip()) for s in listed if s.strip()]
        return found or [origin + "sitemap.xml"]

    async def _parse(self, url: str) -> ParsedSitemap:
        document = await self._fetch(url)
        body = gunzip_capped(document.body, url=url, max_bytes=self._max_bytes)
        # Enough for the URLs still wanted, or for an index's children up to the sitemap cap.
        budget = max(self._max_urls - self.stats.urls, self._max_sitemaps, 1)
        if len(body) > _THREAD_BYTES:
            return await asyncio.to_thread(
                parse_sitemap, body, url=document.final_url, max_urls=budget
            )
        return parse_sitemap(body, url=document.final_url, max_urls=budget)

    async def entries(self) -> AsyncIterator[SitemapEntry]:
        """Every new, in-scope URL of every sitemap (canonical), in the order read."""
        queue: deque[tuple[str, int]] = deque((s, 0) for s in self._sitemaps)
        for site in self._sites:
            queue.extend((s, 0) for s in await self.discover(site))
        visited: set[str] = set()
        while queue:
            raw, depth = queue.popleft()
            try:
                url = canonicalize(raw)
            except InvalidUrl:
                self.stats.invalid += 1
                continue
            if url in visited:
                continue
            if len(visited) >= self._max_sitemaps:
                self.stats.truncated = True
                logger.info("sitemap cap of %d reached; %s not read", self._max_sitemaps, url)
                return
            visited.add(url)
            try:
                parsed = await self._parse(url)
            except FetchError as exc:
                logger.warning("sitemap %s skipped: %s", url, exc)
                self.stats.fail(url, exc)
                continue
            self.stats.documents += 1
            self.read.append(url)
            self.stats.truncated |= parsed.truncated
            for child, lastmod in parsed.sitemaps:
                if depth >= self._max_depth:
                    self.stats.truncated = True
                elif self._since is None or lastmod is None or lastmod >= self._since:
                    queue.append((child, depth + 1))
                else:
                    self.stats.too_old += 1
            for entry in parsed.urls:
                if self.stats.urls >= self._max_urls:
                    self.stats.truncated = True
                    return
                canonical = self._gate.admit(entry.url, base=parsed.url, date=entry.lastmod)
                if canonical is not None:
                    yield replace(entry, url=canonical)

    async def requests(self) -> AsyncIterator[Request]:
        """A depth-0 request per URL; the sitemap priority (when given) is its score."""
        async for entry in self.entries():
            if entry.priority is None:
                yield Request(url=entry.url)
            else:
                priority = entry.priority
                yield Request(url=entry.url, score=priority, reasons={"sitemap_priority": priority})
