"""The crawler's value objects: frozen, typed, and free of behaviour beyond small derivations."""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

__all__ = [
    "EMPTY_REASONS",
    "CrawlStats",
    "EntityMention",
    "ErrorKind",
    "FetchFailure",
    "FetchOutcome",
    "HeldHost",
    "Lease",
    "Link",
    "LinkScore",
    "MediaUrl",
    "Page",
    "PageEntities",
    "PageVideo",
    "ParsedPage",
    "RelationMention",
    "Request",
    "Response",
    "StrategyResult",
]

EMPTY_REASONS: Mapping[str, float] = MappingProxyType({})


class ErrorKind(enum.StrEnum):
    """Why a fetch failed, as stored and counted (``errors/<kind>``)."""

    TIMEOUT = "timeout"
    CONNECTION = "connection"
    DNS = "dns"
    HTTP_CLIENT = "http_4xx"
    HTTP_NOT_FOUND = "http_404"
    HTTP_SERVER = "http_5xx"
    BLOCKED = "blocked"
    ROBOTS = "robots"
    HOST_HELD = "host_held"  # not fetched: its host was held (robots.txt unreadable, long wait)
    OUT_OF_SCOPE = "out_of_scope"
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    TOO_LARGE = "too_large"
    CONTENT_TYPE = "content_type"
    URL_TOO_LONG = "url_too_long"
    DECODE = "decode"
    PARSE = "parse"
    PROXY = "proxy"
    RENDER = "render"  # the browser could not render the page (crash, caps)
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Request:
    """A URL the crawl wants to fetch, with the priority and provenance it was queued with.

    ``url`` is canonical (see :func:`topicrawl.parse.urls.canonicalize`). ``score`` is the
    frontier priority: higher is fetched sooner. ``reasons`` holds the component scores that
    made up ``score`` (for example ``{"anchor": 0.4, "inherited": 0.2}``), so a user can see
    why a link got its priority. ``inherited`` is the relevance the URL inherits from its
    parent, carried along for strategies that decay it down the link graph.
    """

    url: str
    score: float = 0.0
    depth: int = 0
    parent_url: str | None = None
    anchor: str = ""
    inherited: float = 0.0
    reasons: Mapping[str, float] = field(
        default_factory=lambda: EMPTY_REASONS, compare=False, hash=False
    )


@dataclass(frozen=True, slots=True)
class Lease:
    """A request handed out by the frontier: the holder must ``ack`` or ``reclaim`` it.

    ``token`` identifies this hand-out (a reclaimed-and-leased-again URL gets a new token), so
    a late ack of an expired lease can be recognised and ignored. ``expires_at`` is wall-clock
    seconds since the epoch; after it the frontier may give the URL to someone else.
    """

    request: Request
    token: str
    host: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class Response:
    """A fetched HTTP response, after redirects, decompression and size capping.

    ``url`` is what was asked for, ``final_url`` where the redirects ended (canonical).
    ``redirects`` lists the intermediate URLs in order. ``text`` is the body decoded with
    ``encoding`` (detected when the declared one was missing or wrong), or ``None`` for
    non-text content and when the fetcher left decoding to the parser; ``charset`` is what
    the Content-Type header declared, if anything.
    """

    url: str
    final_url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    content_type: str
    encoding: str | None
    text: str | None
    fetched_at: float
    elapsed: float
    redirects: tuple[str, ...] = ()
    charset: str | None = None


class Link(NamedTuple):
    """An outgoing link of a page.

    ``block`` numbers the DOM block the anchor sits in (0, 1, ... in document order); every
    link of one block shares ``block_text``, the block's extended anchor text: the anchor
    texts of all links in the block joined, which focused strategies score once for the block.

    A named tuple rather than a frozen dataclass (the other models): a page carries hundreds
    of links, and building or unpickling a slotted frozen dataclass costs about ten times as
    much (measured: 4 us against 0.4 us a link; 1.3 ms against 0.1 ms to unpickle 150).
    """

    url: str
    anchor: str
    block: int = 0
    block_text: str = ""
    nofollow: bool = False


class EntityMention(NamedTuple):
    """A name recognised in a page's text and the entity it was linked to.

    ``entity`` is the knowledge base's key of the entity, or of a new *found* entity when no
    known one fitted (NIL); ``start`` and ``end`` index the page's text. ``score`` is the
    linker's confidence in the choice (0-1).
    """

    entity: str
    surface: str
    type: str
    start: int
    end: int
    score: float


class RelationMention(NamedTuple):
    """A relation read from one sentence of a page, between two linked entities (keys)."""

    subject: str
    relation: str
    object: str
    confidence: float
    evidence: str


@dataclass(frozen=True, slots=True)
class MediaUrl:
    """One direct media URL of a play page: its type, what the page or manifest says of it.

    ``type`` is ``mp4``, ``webm``, ``mov``, ``hls`` or ``dash``; width, height and bitrate
    (bits per second) are None when nothing states them. ``source`` names where it was
    found (``video``, ``og``, ``twitter``, ``jsonld``, ``config``, ``hls``, ``dash``,
    ``ytdlp``, or a resolver plugin's name).
    """

    url: str
    type: str
    width: int | None = None
    height: int | None = None
    bitrate: int | None = None
    source: str = ""

    def as_dict(self) -> dict[str, object]:
        """The fields as a plain dict (for JSON storage and export)."""
        return {
            "url": self.url,
            "type": self.type,
            "width": self.width,
            "height": self.height,
            "bitrate": self.bitrate,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class PageVideo:
    """A video page's verdict as stored: ``play`` or ``video``, its media URLs, the resolver
    that listed them and what it could not read (see :mod:`topicrawl.parse.video`)."""

    video_class: str
    media: tuple[MediaUrl, ...] = ()
    resolver: str = ""
    errors: tuple[str, ...] = ()


class PageEntities(NamedTuple):
    """What knowledge-graph recognition found in one page (plain tuples: cheap to pickle)."""

    mentions: tuple[EntityMention, ...]
    relations: tuple[RelationMention, ...]


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the HTML parser extracts from one document."""

    title: str
    text: str
    links: tuple[Link, ...]
    lang: str | None = None
    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False
    main: tuple[int, int] | None = None
    """Where the text of the page's one ``<main>`` element is in ``text`` (start, end), when
    the parser was asked and found one; the rest is the site's header, menus and footer."""


@dataclass(frozen=True, slots=True)
class Page:
    """A fetched and parsed page, as strategies see it and storage keeps it.

    ``content_hash`` hashes the normalised text; ``duplicate_of`` names an earlier page with
    the same content hash, if any. ``relevance`` is filled in by the strategy, when it scores
    pages. ``score`` and ``reasons`` are those of the request the page was fetched for (so a
    strategy can read what the page inherited from its parent in ``reasons["inherited"]``).
    ``terms`` are the page's term counts by the strategy's own analyzer, when the engine's
    parse worker counted them (see :class:`~topicrawl.core.protocols.Strategy`); they are
    not stored. ``entities`` are the entities and relations recognised in the page when the
    crawl has a knowledge graph (see :mod:`topicrawl.kg`); they are stored in its tables.
    ``topic`` (the crawl topic the page is most about) and ``link_scores`` (the priority the
    strategy gave each of its links, queued or held back) are filled in by a scoring strategy
    and stored for the dashboard.
    ``record`` is the page's fields extracted by the parser library when a site schema
    applies to it (see :mod:`topicrawl.parse.methods`); stored in ``page_records``.
    ``video`` is set on video and play pages (stored in ``page_media``).
    """

    url: str
    final_url: str
    status: int
    depth: int
    fetched_at: float
    content_type: str
    title: str = ""
    text: str = ""
    links: tuple[Link, ...] = ()
    lang: str | None = None
    parent_url: str | None = None
    content_hash: str | None = None
    duplicate_of: str | None = None
    relevance: float | None = None
    score: float = 0.0
    reasons: Mapping[str, float] = field(
        default_factory=lambda: EMPTY_REASONS, compare=False, hash=False
    )
    elapsed: float = 0.0
    size: int = 0
    encoding: str | None = None
    redirects: tuple[str, ...] = ()
    noindex: bool = False
    terms: Mapping[str, int] | None = field(default=None, compare=False, hash=False, repr=False)
    entities: PageEntities | None = field(default=None, compare=False, hash=False, repr=False)
    topic: str | None = None
    link_scores: tuple[LinkScore, ...] = field(default=(), compare=False, hash=False, repr=False)
    record: Mapping[str, object] | None = field(default=None, compare=False, hash=False, repr=False)
    video: PageVideo | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """How one fetch of a lease's URL went, as the crawler tells an assignment policy:
    its host, the HTTP status of the answer (0 when no answer came: a timeout, a refused or
    reset connection, no such host, a fetch that outlived its lease) and the seconds it took."""

    host: str
    status: int
    seconds: float

    @property
    def refused(self) -> bool:
        """The server refused this fetch (403 Forbidden or 429 Too Many Requests)."""
        return self.status in {403, 429}

    @property
    def lost(self) -> bool:
        """No answer came."""
        return self.status == 0


@dataclass(frozen=True, slots=True)
class FetchFailure:
    """A URL that failed, as stored: the error's kind, message and HTTP status if any."""

    url: str
    kind: ErrorKind
    message: str
    at: float
    status: int | None = None
    depth: int = 0
    parent_url: str | None = None
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class LinkScore:
    """The priority a strategy gave one link of a page, and its component scores."""

    url: str
    score: float
    reasons: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class StrategyResult:
    """A strategy's verdict on a page: its relevance (if the strategy scores pages), whether
    that makes the page relevant (over the strategy's threshold; counts toward the harvest
    rate), the outgoing requests to queue, already scored, and new scores for links queued
    before."""

    relevance: float | None
    requests: tuple[Request, ...]
    relevant: bool = False
    rescored: tuple[tuple[str, float], ...] = ()
    """(URL, score) of links queued earlier that the strategy now values differently, lower
    as well as higher (e.g. links of a block it has since recognised as the site's
    template); the frontier re-files those still queued."""
    topic: str | None = None
    """The name of the crawl topic the page is most about (a strategy with topics)."""
    link_scores: tuple[LinkScore, ...] = ()
    """Each link's priority and component scores as scored on this page, whether it was
    queued or held back (for display; a strategy caps how many)."""


@dataclass(frozen=True, slots=True)
class HeldHost:
    """A host the crawl holds back until ``until`` (seconds since the epoch), and why."""

    host: str
    reason: str
    until: float

    def describe(self, now: float) -> str:
        """The hold in words: host, why, and when it is retried (local time, and seconds
        from ``now``)."""
        at = time.strftime("%H:%M:%S", time.localtime(self.until))
        left = max(self.until - now, 0.0)
        return f"{self.host} held ({self.reason}; retry at {at}, in {left:.0f} s)"


@dataclass(slots=True)
class CrawlStats:
    """Running counters of one crawl; mutable because the engine updates it in place."""

    pages: int = 0
    duplicates: int = 0
    relevant: int = 0
    queued: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    held: dict[str, HeldHost] = field(default_factory=dict)
    """Hosts held back now (or, after the crawl, those whose URLs were left queued)."""

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def harvest_rate(self) -> float | None:
        return self.relevant / self.pages if self.pages else None

    def pages_per_second(self, now: float) -> float:
        end = self.finished_at or now
        span = end - self.started_at
        return self.pages / span if span > 0 else 0.0
