"""The seams between topicrawl's parts. Each has several implementations and a contract suite.

- :class:`Fetcher` only fetches.
- :class:`Frontier` only orders, dedupes and leases URLs, and keeps per-host politeness.
- :class:`Strategy` is a pure function from events to scored URLs (no I/O, no event loop).
- :class:`Storage` keeps what was fetched.
- :class:`Source` yields seed requests (seed lists, sitemaps, feeds, ...).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from topicrawl.core.models import FetchFailure, Lease, Page, Request, Response, StrategyResult

__all__ = [
    "Fetcher",
    "Frontier",
    "KnownUrls",
    "Source",
    "Storage",
    "Strategy",
    "TextAnalyzer",
]


@runtime_checkable
class Fetcher(Protocol):
    """Fetches one request. Raises a :class:`~topicrawl.core.errors.FetchError` subclass."""

    async def fetch(self, request: Request) -> Response: ...

    async def close(self) -> None: ...


@runtime_checkable
class Frontier(Protocol):
    """A max-priority queue of requests with per-host queues, politeness and leases.

    Contract (checked by ``tests/contract/test_frontier.py`` for every implementation):

    - ``push`` adds requests not seen before in this crawl and returns how many it added. A URL
      seen before is not added again, except that a URL still queued whose new score is higher
      gets the higher score (increase-key). Nothing is dropped by a Bloom false positive.
    - ``rescore`` sets the score of URLs still queued (or deferred), higher or lower, and
      returns how many changed; a URL leased, done or never pushed is left alone.
    - ``pop`` hands out a lease on the highest-scored request among *ready* hosts: a host is
      ready when it has queued requests, fewer than ``max_per_host`` leases out, and its next
      allowed fetch time has come. Equal scores leave in insertion order (FIFO), so
      ``score = -depth`` gives breadth-first order. Popping from a host moves its next allowed
      time to ``now + delay(host)``. Returns ``None`` when no host is ready.
    - ``ack`` marks the leased URL done; ``reclaim`` puts it back (after ``delay`` seconds).
      Acking or reclaiming an unknown or expired lease is a no-op that returns ``False``.
    - ``revisit`` marks the leased fetch done and queues the URL again under its score, handed
      out only from its ``due`` time on (seconds since the epoch); ``False`` for an unknown or
      expired lease. A durable implementation keeps the due time once flushed, like an ack.
    - ``reclaim_expired`` puts back every lease past its expiry and returns how many.
    - A persistent implementation, reopened after a crash, puts back the leases that were out.
      ``flush`` makes every operation so far durable (a no-op in memory); ``close`` flushes.
    - ``durable`` says whether it outlives the process (a memory frontier does not: the crawl
      then need not hold acks back while it checkpoints).
    """

    durable: bool

    async def push(self, requests: Sequence[Request]) -> int: ...

    async def pop(self) -> Lease | None: ...

    async def ack(self, lease: Lease) -> bool: ...

    async def reclaim(self, lease: Lease, *, delay: float = 0.0) -> bool: ...

    async def revisit(self, lease: Lease, *, due: float) -> bool: ...

    async def increase(self, url: str, score: float) -> bool: ...

    async def rescore(self, scores: Mapping[str, float]) -> int: ...

    async def peek(self) -> Request | None: ...

    async def reclaim_expired(self) -> int: ...

    async def set_host_delay(self, host: str, delay: float) -> None: ...

    async def next_ready_in(self) -> float | None: ...

    async def queued(self) -> int: ...

    async def in_flight(self) -> int: ...

    async def seen(self, url: str) -> bool: ...

    async def flush(self) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class KnownUrls(Protocol):
    """A frontier that can say at once, without I/O, which URLs it has seen (in-process ones).

    The engine uses it to drop already-seen links before a strategy that does not need them
    (``follows_known_links = False``, e.g. breadth-first) builds a request for each.
    """

    def known(self, urls: Sequence[str]) -> list[bool]:
        """For each URL, whether the frontier has ever had it pushed."""
        ...


class TextAnalyzer(Protocol):
    """Counts the terms of a page's title and text, as a strategy's own scorer would.

    It must pickle, and unpickle in a process that imports only what the pickle names: the
    engine sends it to its parse worker processes, which count each page's terms there.
    """

    def __call__(self, title: str, text: str) -> Mapping[str, int]: ...


class Strategy(Protocol):
    """A crawl policy: sees events, returns scored requests. Pure: no I/O.

    A strategy may set ``follows_known_links = False`` when it has no use for links the
    crawl has seen before (it neither re-scores nor counts them): the engine then hands
    ``on_page`` the page without them, when the frontier can tell (:class:`KnownUrls`).

    A strategy whose ``on_page`` sometimes does heavy work that releases the GIL (a neural
    model's inference) may say so with a true ``runs_in_thread`` (read on every page): the
    engine then runs ``on_page`` in a worker thread, so the event loop goes on fetching,
    parsing and storing meanwhile, and never calls two of the strategy's methods at once.

    A strategy that counts the terms of every page may offer the counting as ``analyzer``
    (a :class:`TextAnalyzer`, read once before the crawl): the engine's parse workers then
    count each page's terms off the event loop and hand them to ``on_page`` as
    ``page.terms``. ``page.terms`` is None when the page was parsed on the event loop or the
    analyzer failed on it; the strategy then counts the page itself.

    A strategy that holds links back in memory (offered by ``on_idle``) may say so with a
    true ``holds_back_links``: a resumed crawl then brings back, when it runs dry, the links
    of the pages stored before it that were never queued (they were held back by the process
    that stopped).
    """

    name: str

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]: ...

    def on_page(self, page: Page) -> StrategyResult: ...

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]: ...

    def on_idle(self, limit: int) -> Iterable[Request]:
        """The frontier ran dry: up to ``limit`` held-back requests worth queueing now."""
        ...


@runtime_checkable
class Storage(Protocol):
    """Keeps crawl runs, pages, links and failures. Writes may be buffered until ``flush``.

    Saving a page for a URL already stored replaces it (one row per URL), so a page fetched
    twice after a lease expiry is still one row. ``body`` and ``headers`` (the raw response)
    are kept only when the storage was opened to keep bodies (for WARC export).
    """

    async def open(self) -> None: ...

    async def start_run(self, *, name: str, config: str) -> int: ...

    async def finish_run(self, run_id: int, *, stats: str) -> None: ...

    async def save_page(
        self,
        page: Page,
        *,
        run_id: int,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None: ...

    async def save_failure(self, failure: FetchFailure, *, run_id: int) -> None: ...

    async def find_content_hash(self, content_hash: str) -> str | None: ...

    async def flush(self) -> None: ...

    async def count_pages(self, *, run_id: int | None = None) -> int: ...

    def iter_pages(self, *, with_links: bool = False) -> AsyncIterator[Page]: ...

    def iter_failures(self) -> AsyncIterator[FetchFailure]: ...

    async def close(self) -> None: ...


class Source(Protocol):
    """Yields seed requests: seed lists, sitemaps, feeds, meta-search, microblogs."""

    def requests(self) -> AsyncIterator[Request]: ...
