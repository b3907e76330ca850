"""RSS and Atom feeds as seed sources: each entry's link becomes a request.

:func:`parse_feed` reads RSS 2.0 (and 0.9x), RSS 1.0 (RDF) and Atom 1.0 from bytes: the
feed's title and, per entry, the link (Atom's ``rel="alternate"`` link, resolved against
``xml:base`` and the feed URL; RSS's ``<link>``, else a permalink ``<guid>``), the title
(Atom ``type="html"`` titles stripped to text) and the published and updated dates.
:class:`FeedSource` fetches feeds through an injected :data:`FetchDocument` and yields the
entries' requests, canonical, deduplicated and in scope.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

from lxml import etree
from selectolax.lexbor import LexborHTMLParser

from topicrawl.core.errors import FetchError
from topicrawl.core.models import Request
from topicrawl.parse.urls import Scope
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

__all__ = ["Feed", "FeedEntry", "FeedKind", "FeedSource", "parse_feed"]

logger = logging.getLogger(__name__)

MAX_TITLE_CHARS = 500
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_RDF_ABOUT = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"
_SPACES = re.compile(r"\s+")
_ROOTS = {"rss": "rss", "RDF": "rdf", "feed": "atom"}
_RECORD_PARENTS = frozenset({"channel", "RDF", "feed"})
_SKIPPED_RELS = frozenset({"self", "edit", "enclosure", "replies", "via", "license", "hub"})
_THREAD_BYTES = 256 * 1024  # parse bigger bodies in a worker thread, off the event loop

FeedKind = str
"""``"rss"``, ``"rdf"`` (RSS 1.0) or ``"atom"``."""


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One feed entry: its absolute link (not yet canonical), title and dates (epoch UTC)."""

    url: str
    title: str = ""
    published: float | None = None
    updated: float | None = None
    id: str = ""

    @property
    def date(self) -> float | None:
        """The entry's date: published if given, else updated."""
        return self.published if self.published is not None else self.updated


@dataclass(frozen=True, slots=True)
class Feed:
    """A parsed feed. ``truncated`` says entries past ``max_entries`` were left out."""

    url: str
    kind: FeedKind
    title: str
    entries: tuple[FeedEntry, ...]
    truncated: bool = False


def _text(element: etree._Element) -> str:
    return _SPACES.sub(" ", element_text(element)).strip()


def _title(element: etree._Element) -> str:
    kind = (element.get("type") or "").lower()
    text = _text(element)
    if kind in {"html", "text/html"} and "<" in text:
        body = LexborHTMLParser(f"<body>{text[: MAX_TITLE_CHARS * 8]}</body>").body
        text = _SPACES.sub(" ", body.text(separator=" ") if body is not None else "").strip()
    return text[:MAX_TITLE_CHARS]


def _base(element: etree._Element, url: str) -> str:
    """The URL relative links in ``element`` resolve against: the feed URL with every
    ``xml:base`` from the root down applied."""
    chain = []
    node: etree._Element | None = element
    while node is not None:
        declared = node.get(_XML_BASE)
        if declared:
            chain.append(declared.strip())
        node = node.getparent()
    base = url
    for declared in reversed(chain):
        base = urljoin(base, declared)
    return base


def _atom_link(entry: etree._Element, url: str) -> str:
    best = ""
    best_rank = 99
    for child in entry:
        if local_name(child) != "link" or not child.get("href"):
            continue
        rel = (child.get("rel") or "alternate").strip().lower()
        if rel in _SKIPPED_RELS:
            continue
        kind = (child.get("type") or "").lower()
        rank = (0 if rel == "alternate" else 2) + (0 if kind in {"", "text/html"} else 1)
        if rank < best_rank:
            best, best_rank = urljoin(_base(child, url), (child.get("href") or "").strip()), rank
    return best


def _entry(record: etree._Element, kind: FeedKind, url: str) -> FeedEntry | None:
    link = title = ident = ""
    published = updated = None
    permalink = ""
    for child in record:
        name = local_name(child)
        if name == "title":
            title = _title(child)
        elif name == "link" and kind != "atom":
            link = link or _text(child)
        elif name == "guid":
            ident = _text(child)
            if (child.get("isPermaLink") or "true").strip().lower() != "false":
                permalink = ident
        elif name == "id":
            ident = _text(child)
        elif name in {"pubDate", "published", "issued"} or (name == "date" and kind != "atom"):
            published = published if published is not None else parse_date(_text(child))
        elif name in {"updated", "modified"}:
            updated = parse_date(_text(child))
    if kind == "atom":
        link = _atom_link(record, url)
        if not link and ident.startswith(("http://", "https://")):
            link = ident
    elif kind == "rdf":
        link = link or (record.get(_RDF_ABOUT) or "").strip()
    link = link or (permalink if permalink.startswith(("http://", "https://", "/")) else "")
    if not link:
        return None
    return FeedEntry(
        url=urljoin(_base(record, url), link),
        title=title,
        published=published,
        updated=updated,
        id=ident[:MAX_TITLE_CHARS],
    )


def parse_feed(body: bytes, *, url: str, max_entries: int = 10_000) -> Feed:
    """Read an RSS, RDF or Atom document.

    Args:
        body: the XML (already inflated; see
            :func:`~topicrawl.sources.documents.gunzip_capped`).
        url: the feed's URL, for relative links and errors.
        max_entries: entries past this many are left out (``Feed.truncated``).

    Raises:
        HostileXml: the document declares XML entities.
        MalformedDocument: not XML, or XML that is no feed.
    """
    root = xml_root(body, url=url)
    kind = _ROOTS.get(root)
    if kind is None:
        raise MalformedDocument(url, f"<{root[:40]}> is not a feed's root element")
    title = ""
    entries: list[FeedEntry] = []
    truncated = False
    for element in iter_xml(body, url=url, tags=("item", "entry", "title")):
        name = local_name(element)
        parent = element.getparent()
        where = local_name(parent) if parent is not None else ""
        if name == "title":
            if not title and where in {"channel", "feed"}:
                title = _title(element)
            continue
        if where not in _RECORD_PARENTS:
            continue  # an "item" or "entry" element of some extension, not a feed entry
        if len(entries) >= max_entries:
            truncated = True
            break
        entry = _entry(element, kind, url)
        if entry is not None:
            entries.append(entry)
        release(element)
    return Feed(url=url, kind=kind, title=title, entries=tuple(entries), truncated=truncated)


class FeedSource:
    """Requests for the entries of RSS and Atom feeds; implements ``core.protocols.Source``.

    Feeds are fetched one after another through ``fetch``; a feed that fails is recorded in
    :attr:`stats` and the others are still read.

    Args:
        fetch: fetches a feed URL (see :func:`~topicrawl.sources.documents.fetcher_documents`).
        feeds: the feed URLs.
        scope: the crawl's scope; entries outside it are skipped (None keeps all).
        since: epoch seconds; entries dated before it are skipped.
        max_entries: cap on entries per feed.
        max_bytes: cap on a feed's size after gzip inflation.
        max_urls: cap on URLs over all feeds.
    """

    def __init__(
        self,
        *,
        fetch: FetchDocument,
        feeds: Sequence[str],
        scope: Scope | None = None,
        since: float | None = None,
        max_entries: int = 10_000,
        max_bytes: int = 5_000_000,
        max_urls: int = 100_000,
    ) -> None:
        if max_entries < 1 or max_bytes < 1 or max_urls < 1:
            raise ValueError("max_entries, max_bytes and max_urls must be positive")
        self._fetch = fetch
        self._feeds = tuple(dict.fromkeys(feeds))
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._max_urls = max_urls
        self.stats = SourceStats()
        self._gate = UrlGate(stats=self.stats, scope=scope, since=since)
        self.feeds: list[Feed] = []
        """Every feed read so far (entries included)."""

    async def read(self, url: str) -> Feed:
        """Fetch and parse one feed.

        Raises:
            FetchError: the fetch failed, the body is over the cap, or it is not a feed.
        """
        document = await self._fetch(url)
        body = gunzip_capped(document.body, url=url, max_bytes=self._max_bytes)
        if len(body) > _THREAD_BYTES:
            return await asyncio.to_thread(
                parse_feed, body, url=document.final_url, max_entries=self._max_entries
            )
        return parse_feed(body, url=document.final_url, max_entries=self._max_entries)

    async def entries(self) -> AsyncIterator[tuple[str, FeedEntry]]:
        """``(canonical URL, entry)`` for every new, in-scope entry of every feed."""
        for feed_url in self._feeds:
            try:
                feed = await self.read(feed_url)
            except FetchError as exc:
                logger.warning("feed %s skipped: %s", feed_url, exc)
                self.stats.fail(feed_url, exc)
                continue
            self.stats.documents += 1
            self.feeds.append(feed)
            self.stats.truncated |= feed.truncated
            for entry in feed.entries:
                if self.stats.urls >= self._max_urls:
                    self.stats.truncated = True
                    return
                url = self._gate.admit(entry.url, base=feed.url, date=entry.date)
                if url is not None:
                    yield url, entry

    async def requests(self) -> AsyncIterator[Request]:
        """A depth-0 request per entry, with the entry's title as its anchor text."""
        async for url, entry in self.entries():
            yield Request(url=url, anchor=entry.title)
