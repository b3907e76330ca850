"""Fetching and safely reading the XML documents sources are made of (sitemaps, feeds).

Sources never open connections themselves: they get a :data:`FetchDocument` function, either
:func:`fetcher_documents` over topicrawl's :class:`~topicrawl.fetch.client.HttpFetcher`
(robots.txt, scope, retries, body cap) or a test's own. The crawl's fetcher usually accepts
only HTML; :func:`source_fetch_settings` gives settings that also accept XML, feeds, gzip
files and plain text, for a second fetcher sharing the first one's session and robots cache.

XML is hostile input. :func:`iter_xml` parses with lxml without resolving entities, without
the network, without loading DTDs and with libxml2's default size limits (``huge_tree`` off),
and it refuses any document whose DTD declares entities: that is how both external-entity
(XXE) and entity-expansion ("billion laughs") attacks start, and no sitemap or feed needs
one. Gzip bodies are inflated in bounded steps and refused past the size cap (gzip bombs).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin

from lxml import etree

from topicrawl.core.config import FetchSettings
from topicrawl.core.errors import BodyTooLarge, PermanentFetchError
from topicrawl.core.models import ErrorKind, Request
from topicrawl.core.protocols import Fetcher
from topicrawl.parse.urls import InvalidUrl, Scope, canonicalize

__all__ = [
    "SOURCE_CONTENT_TYPES",
    "Document",
    "FetchDocument",
    "HostileXml",
    "MalformedDocument",
    "SourceStats",
    "UrlGate",
    "element_text",
    "fetcher_documents",
    "gunzip_capped",
    "iter_xml",
    "local_name",
    "parse_date",
    "release",
    "source_fetch_settings",
    "xml_root",
]

SOURCE_CONTENT_TYPES: tuple[str, ...] = (
    "application/xml",
    "text/xml",
    "application/rss+xml",
    "application/atom+xml",
    "application/rdf+xml",
    "application/gzip",
    "application/x-gzip",
    "application/octet-stream",
    "text/plain",
)
"""Media types sitemaps and feeds are served as (gzip sitemaps are often octet-stream)."""

_GZIP_MAGIC = b"\x1f\x8b"
_INFLATE_STEP = 1 << 16


class MalformedDocument(PermanentFetchError):
    """The body is not a sitemap or feed that can be read."""

    default_kind = ErrorKind.PARSE


class HostileXml(MalformedDocument):
    """The XML declares entities (the start of XXE and entity-expansion attacks): refused."""


@dataclass(frozen=True, slots=True)
class Document:
    """A fetched source document: the URL asked for, where redirects ended, and the body."""

    url: str
    final_url: str
    body: bytes
    content_type: str


@dataclass(slots=True)
class SourceStats:
    """What a source did: documents read, failures by URL, and the URLs it kept or skipped.

    Mutable, like :class:`~topicrawl.core.models.CrawlStats`: the source updates it as it goes.
    ``truncated`` says a cap (URLs, documents, depth) stopped the source before the end.
    """

    documents: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    urls: int = 0
    invalid: int = 0
    out_of_scope: int = 0
    duplicates: int = 0
    too_old: int = 0
    truncated: bool = False

    def fail(self, url: str, error: Exception) -> None:
        """Record that the document at ``url`` could not be used (first 300 characters)."""
        self.failures[url] = f"{error.__class__.__name__}: {error}"[:300]


class UrlGate:
    """Turns the raw URLs a source lists into canonical, in-scope, first-seen URLs.

    Args:
        stats: where skipped URLs are counted.
        scope: the crawl's scope, or None to keep every http(s) URL.
        since: epoch seconds; a URL whose date is older is skipped (None keeps all; a URL
            without a date is always kept).
        max_url_length: longer URLs are invalid.
    """

    def __init__(
        self,
        *,
        stats: SourceStats,
        scope: Scope | None = None,
        since: float | None = None,
        max_url_length: int = 2048,
    ) -> None:
        self._stats = stats
        self._scope = scope
        self._since = since
        self._max_url_length = max_url_length
        self._seen: set[str] = set()

    def admit(self, raw: str, *, base: str, date: float | None = None) -> str | None:
        """The canonical URL when it is to be kept, else None (and the reason counted)."""
        raw = raw.strip()
        if not raw or len(raw) > self._max_url_length:
            self._stats.invalid += 1
            return None
        try:
            url = canonicalize(urljoin(base, raw))
        except (InvalidUrl, ValueError):
            self._stats.invalid += 1
            return None
        if len(url) > self._max_url_length:
            self._stats.invalid += 1
            return None
        if self._scope is not None and not self._scope.allows(url):
            self._stats.out_of_scope += 1
            return None
        if self._since is not None and date is not None and date < self._since:
            self._stats.too_old += 1
            return None
        if url in self._seen:
            self._stats.duplicates += 1
            return None
        self._seen.add(url)
        self._stats.urls += 1
        return url


FetchDocument = Callable[[str], Awaitable[Document]]
"""Fetches one URL; raises a :class:`~topicrawl.core.errors.FetchError` subclass on failure."""


def fetcher_documents(fetcher: Fetcher) -> FetchDocument:
    """A :data:`FetchDocument` over a topicrawl fetcher (robots.txt, scope and caps apply).

    The fetcher must accept the sources' media types: build it with
    :func:`source_fetch_settings`.
    """

    async def fetch(url: str) -> Document:
        response = await fetcher.fetch(Request(url=url))
        return Document(
            url=url,
            final_url=response.final_url,
            body=response.body,
            content_type=response.content_type,
        )

    return fetch


def source_fetch_settings(settings: FetchSettings) -> FetchSettings:
    """The crawl's fetch settings with the sources' media types added to the accepted ones."""
    accepted = tuple(dict.fromkeys((*settings.content_types, *SOURCE_CONTENT_TYPES)))
    return settings.model_copy(update={"content_types": accepted})


def gunzip_capped(body: bytes, *, url: str, max_bytes: int) -> bytes:
    """The body inflated when it is gzip data (by its magic bytes), else the body itself.

    Inflates step by step and stops as soon as the output passes ``max_bytes``, so a gzip
    bomb never sits in memory whole. Concatenated gzip members are all read.

    Raises:
        BodyTooLarge: the inflated body is over ``max_bytes``.
        MalformedDocument: the gzip data is corrupt or cut short.
    """
    if not body.startswith(_GZIP_MAGIC):
        return body
    out = bytearray()
    data = body
    while data.startswith(_GZIP_MAGIC):
        inflater = zlib.decompressobj(wbits=31)
        try:
            chunk = inflater.decompress(data, _INFLATE_STEP)
            while True:
                out += chunk
                if len(out) > max_bytes:
                    raise BodyTooLarge(url, f"gzip body inflates past the {max_bytes}-byte cap")
                if inflater.eof or not inflater.unconsumed_tail:
                    break
                chunk = inflater.decompress(inflater.unconsumed_tail, _INFLATE_STEP)
        except zlib.error as exc:
            raise MalformedDocument(url, f"corrupt gzip data: {exc}") from exc
        if not inflater.eof:
            raise MalformedDocument(url, "gzip data is cut short")
        data = inflater.unused_data
    return bytes(out)


def local_name(element: etree._Element) -> str:
    """The element's tag without its namespace (sites get sitemap namespaces wrong often)."""
    tag = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return ""
    return tag.rsplit("}", 1)[-1] if tag.startswith("{") else tag.split(":")[-1]


def _parse_events(
    body: bytes, *, events: tuple[str, ...], tags: Sequence[str] | None
) -> etree.iterparse:
    return etree.iterparse(
        io.BytesIO(body),
        events=events,
        tag=None if tags is None else [f"{{*}}{tag}" for tag in tags],
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        recover=True,
        remove_comments=True,
        remove_pis=True,
    )


def _refuse_entities(element: etree._Element, url: str) -> None:
    dtd = element.getroottree().docinfo.internalDTD
    # lxml-stubs 0.5 lacks DTD.iterentities (lxml has had it since 2.x).
    if dtd is not None and any(True for _ in dtd.iterentities()):  # type: ignore[attr-defined]
        raise HostileXml(url, "the XML declares entities; refused")


def xml_root(body: bytes, *, url: str) -> str:
    """The local name of the document's root element; only the prolog and the root's start
    tag are parsed.

    Raises:
        HostileXml: the document's DTD declares entities.
        MalformedDocument: nothing of the body parses as XML.
    """
    try:
        for _, element in _parse_events(body, events=("start",), tags=None):
            _refuse_entities(element, url)
            return local_name(element)
    except etree.XMLSyntaxError as exc:
        raise MalformedDocument(url, f"not XML: {exc}") from exc
    raise MalformedDocument(url, "no XML element in the body")


def iter_xml(body: bytes, *, url: str, tags: Sequence[str]) -> Iterator[etree._Element]:
    """The elements named ``tags`` (in any namespace or none), each once fully read, parsed
    safely; call :func:`release` on each when done with it.

    Recovers from ordinary damage (an unescaped ``&``, an unclosed tag at the end) the way
    browsers and search engines do, so a sloppy sitemap still gives its URLs.

    Raises:
        HostileXml: the document's DTD declares entities.
        MalformedDocument: the body is not XML.
    """
    xml_root(body, url=url)  # refuses hostile and non-XML bodies before any record is read
    checked = False
    try:
        for _, element in _parse_events(body, events=("end",), tags=tags):
            if not checked:
                checked = True
                _refuse_entities(element, url)
            yield element
    except etree.XMLSyntaxError as exc:
        raise MalformedDocument(url, f"not XML: {exc}") from exc


def element_text(element: etree._Element) -> str:
    """All the text inside an element (its children's included), unstripped."""
    return "".join(str(piece) for piece in element.itertext())


def release(element: etree._Element) -> None:
    """Free a fully read record element and the siblings before it (keeps memory flat)."""
    element.clear()
    parent = element.getparent()
    if parent is not None:
        while element.getprevious() is not None:
            del parent[0]


def parse_date(value: str | None) -> float | None:
    """Seconds since the epoch (UTC) of a W3C/ISO 8601 or RFC 822 date, or None.

    Accepts ``2024``, ``2024-05``, ``2024-05-01``, ``2024-05-01T10:00Z`` (with seconds,
    fractions and offsets) and ``Wed, 01 May 2024 10:00:00 GMT``. A date without a zone is
    taken as UTC. Anything unreadable gives None.
    """
    if not value:
        return None
    text = value.strip()[:64]
    if not text:
        return None
    if text[0].isdigit():
        if len(text) == 4 and text.isdigit():
            text += "-01-01"
        elif len(text) == 7 and text[4] == "-":
            text += "-01"
        try:
            when = datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            return None
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.timestamp()
    except (OverflowError, ValueError, OSError):
        return None
