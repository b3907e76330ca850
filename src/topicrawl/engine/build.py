"""The composition root: settings in, a ready crawl out; the only place that wires parts."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError, StorageError
from topicrawl.core.models import CrawlStats, Request, Response
from topicrawl.core.protocols import Frontier, Storage, Strategy
from topicrawl.engine.crawl import (
    Crawler,
    CrawlLimits,
    FetchOutcomeFn,
    HostPolicy,
    PageBudget,
    ProgressFn,
    body_within,
)
from topicrawl.engine.kg import open_kg
from topicrawl.engine.learning import LearningCheckpoints, restore_learning, save_learning
from topicrawl.engine.parsers import open_parser_library
from topicrawl.engine.parsing import PageParser, default_parse_workers
from topicrawl.engine.revisit import open_revisit
from topicrawl.engine.samples import CrawlSampler, SampleSink
from topicrawl.engine.video import BodyFetch, VideoStage
from topicrawl.fetch import HttpFetcher, ProxyPool, RobotsCache
from topicrawl.focus import BfsStrategy, make_strategy
from topicrawl.frontier import MemoryFrontier, SqliteFrontier
from topicrawl.frontier.sqlite import frontier_lock
from topicrawl.parse.urls import InvalidUrl, Scope, canonicalize, registered_domain
from topicrawl.storage import SqlStorage

if TYPE_CHECKING:
    from topicrawl.engine.render import RenderStage

__all__ = [
    "MAX_CONCURRENCY",
    "CrawlReport",
    "check_limits",
    "open_crawl",
    "open_storage",
    "run_crawl",
    "sqlite_path",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CrawlReport:
    """What a finished crawl tells its caller."""

    stats: CrawlStats
    run_id: int
    storage_url: str
    queued_left: int
    video: Mapping[str, int] = field(default_factory=dict)  # the video stage's counts
    render: Mapping[str, int] = field(default_factory=dict)  # the render stage's counts


def sqlite_path(storage_url: str) -> Path | None:
    """The SQLite file behind a storage URL, or None for a server database."""
    if storage_url.startswith(("postgresql:", "postgresql+", "postgres:")):
        return None
    if storage_url.startswith("sqlite:///"):
        return Path(storage_url.removeprefix("sqlite:///"))
    return Path(storage_url)


@contextlib.asynccontextmanager
async def open_storage(url: str) -> AsyncIterator[SqlStorage]:
    """Open a crawl database (SQLite path or postgresql:// URL) to read results.

    Raises:
        StorageError: the database does not exist or cannot be opened.
    """
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        raise StorageError(f"database {path} does not exist")
    storage = SqlStorage(url)
    await storage.open()
    try:
        yield storage
    finally:
        await storage.close()


MAX_CONCURRENCY = 1024
"""Requests in flight at most. Each request is a task, and an idle task wakes whenever a page
is done: with 4,000 requests (12,000 tasks breadth-first) a crawl of the Python docs made 5.6
pages/s against 35 with 64 and 24 with 1,000, and with 100,000 it made almost none (its
robots.txt fetch timed out on the starved event loop)."""

MAX_TASKS = 4 * MAX_CONCURRENCY
"""Pages in hand (tasks) at most, for the same reason."""


def check_limits(settings: CrawlSettings) -> None:
    """Refuse a concurrency the crawl cannot use.

    Raises:
        ConfigError: concurrency above ``fetch.connections`` (the requests beyond the pool
            would only wait for a connection, and time out waiting) or above
            :data:`MAX_CONCURRENCY`, or pages in hand above :data:`MAX_TASKS`.
    """
    concurrency, connections = settings.concurrency, settings.fetch.connections
    if concurrency > connections:
        raise ConfigError(
            f"concurrency {concurrency} is more than fetch.connections {connections}: the "
            "requests beyond the connection pool would only wait for a connection (and time "
            "out waiting); lower --concurrency or raise fetch.connections"
        )
    if concurrency > MAX_CONCURRENCY:
        raise ConfigError(
            f"concurrency {concurrency} is more than {MAX_CONCURRENCY}: every request is a "
            "task that wakes whenever a page is done, and beyond that the crawl spends its "
            "time waking them; run more worker processes instead"
        )
    if settings.pages_in_hand > MAX_TASKS:
        raise ConfigError(
            f"pages_in_hand {settings.pages_in_hand} is more than {MAX_TASKS} (see concurrency)"
        )


def _seed_requests(seeds: Sequence[str], max_url_length: int) -> list[Request]:
    requests = []
    for seed in seeds:
        try:
            url = canonicalize(seed)
        except InvalidUrl as exc:
            raise ConfigError(f"invalid seed {seed!r}: {exc}") from exc
        if len(url) > max_url_length:
            raise ConfigError(
                f"seed {seed[:80]!r}... is {len(url)} characters long, more than "
                f"fetch.max_url_length {max_url_length}: it would never be fetched"
            )
        requests.append(Request(url=url, depth=0))
    return requests


def _scope(settings: CrawlSettings, seeds: Sequence[Request]) -> Scope:
    starts = [r.url for r in seeds] + list(settings.feeds)
    domains = settings.scope.allowed_domains or tuple(
        sorted({registered_domain(u) for u in starts})
    )
    try:
        return Scope.build(
            allowed_domains=domains,
            include=settings.scope.include,
            exclude=settings.scope.exclude,
            max_url_length=settings.fetch.max_url_length,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def _pages_in_hand(settings: CrawlSettings, strategy: Strategy) -> int:
    """URLs the crawl works on at once: as asked, else 3x concurrency for breadth-first.

    Breadth-first needs the room: where it reaches a site's index pages (the Java docs: a
    run of 1-3.5 MB pages, ~0.7 s of parsing in all), the pages fetched meanwhile wait for
    the parser, and with 1.5x concurrency in hand they filled every place, so requests in
    flight fell from 64 to ~20 for most of a second (100 ms latency variant). With 3x they
    stayed at 60-64. Held bodies stay capped by ``max_held_bytes`` either way.

    A scoring strategy gets no more than its requests by default: a URL popped while pages in
    hand have not yet scored their links is chosen on less (Python docs, 2 in flight: focused
    needed 1.65x the oracle's fetches to 90 % recall with 3 in hand, 1.51-1.55x with 2).
    """
    asked = settings.pages_in_hand
    if asked:
        return max(asked, settings.concurrency)
    if isinstance(strategy, BfsStrategy):
        return settings.concurrency * 3
    return settings.concurrency


async def _open_frontier(settings: CrawlSettings, pages_in_hand: int) -> Frontier:
    politeness, options = settings.politeness, settings.frontier
    path = sqlite_path(settings.storage.url)
    # A host's leases last until its pages are stored, its requests only until their bodies
    # arrive: the extra pages in hand may all be of one host (the crawler caps its requests).
    headroom = pages_in_hand - settings.concurrency
    if options.kind == "memory" or path is None:
        return MemoryFrontier(
            default_delay=politeness.delay,
            max_per_host=politeness.per_host,
            lease_headroom=headroom,
            lease_ttl=options.lease_ttl,
            bloom_capacity=options.bloom_capacity,
            bloom_error_rate=options.bloom_error_rate,
        )
    frontier = SqliteFrontier(
        path,
        default_delay=politeness.delay,
        max_per_host=politeness.per_host,
        lease_headroom=headroom,
        lease_ttl=options.lease_ttl,
        bloom_capacity=options.bloom_capacity,
        bloom_error_rate=options.bloom_error_rate,
        spill_limit=options.memory_keys_per_host,
        spill_total=options.memory_keys_total if options.memory_keys_per_host else 0,
        busy_timeout=settings.storage.busy_timeout,
    )
    await frontier.open()
    return frontier


async def _source_requests(
    settings: CrawlSettings,
    fetcher: HttpFetcher,
    robots: RobotsCache | None,
    scope: Scope,
    seeds: Sequence[Request],
) -> list[Request]:
    """Start URLs from the seed hosts' sitemaps and from feeds, when the settings ask."""
    if not settings.sitemaps and not settings.feeds:
        return []
    from topicrawl.sources import (  # noqa: PLC0415 - lxml only when sources are used
        FeedSource,
        SitemapSource,
        fetcher_documents,
        source_fetch_settings,
    )

    documents = fetcher_documents(
        HttpFetcher(
            settings=source_fetch_settings(settings.fetch),
            robots=robots,
            scope=None,
            session=fetcher.session,
        )
    )
    found: list[Request] = []
    cap = settings.fetch.max_body_bytes
    if settings.sitemaps:
        sites = list(dict.fromkeys(r.url for r in seeds))
        sitemaps = SitemapSource(
            fetch=documents, sites=sites, robots=robots, scope=scope, max_bytes=cap
        )
        found += [r async for r in sitemaps.requests()]
        log.info("sitemaps gave %d URLs (%s)", len(found), sitemaps.stats)
    if settings.feeds:
        feeds = FeedSource(fetch=documents, feeds=settings.feeds, scope=scope, max_bytes=cap)
        before = len(found)
        found += [r async for r in feeds.requests()]
        log.info("feeds gave %d URLs (%s)", len(found) - before, feeds.stats)
    return found


@contextlib.asynccontextmanager
async def open_crawl(
    settings: CrawlSettings,
    *,
    on_progress: ProgressFn | None = None,
    frontier: Frontier | None = None,
    run_id: int | None = None,
    storage_retries: int = 4,
    learning_interval: float = 30.0,
    node: str | None = None,
    metrics_port: int | None = None,
    page_budget: PageBudget | None = None,
    on_fetch: FetchOutcomeFn | None = None,
) -> AsyncIterator[Crawler]:
    """Build every part of a crawl from settings, seed it, and close everything afterwards.

    A distributed worker passes its own open ``frontier`` (left open afterwards: the caller
    owns it) and the ``run_id`` its crawl writes under (neither started nor finished here:
    the run spans every worker), and may allow more ``storage_retries`` (retries of a database
    call whose connection dropped) to ride out a database restart, and a ``page_budget`` that
    shares the page limit between processes. A focused strategy's
    learned state is saved every ``learning_interval`` seconds when it changed, and at the end.
    Live samples (``settings.storage.samples_interval``) are labelled with ``node`` (the
    worker's id); ``metrics_port`` serves the process's Prometheus metrics on 127.0.0.1.
    ``on_fetch`` is told how each fetch went (a worker's assignment policy learns from it).

    Raises:
        ConfigError: the settings name something unknown (strategy, patterns, seeds), a seed
            is too long, or the concurrency is more than the crawl can use.
        StorageError: the database cannot be opened.
    """
    check_limits(settings)
    seeds = _seed_requests(settings.seeds, settings.fetch.max_url_length)
    scope = _scope(settings, seeds)
    strategy = make_strategy(settings.strategy, topics=settings.topics, **settings.strategy_options)
    storage: Storage = SqlStorage(
        settings.storage.url,
        batch_size=settings.storage.batch_size,
        flush_interval=settings.storage.flush_interval,
        keep_body=settings.storage.keep_body,
        keep_link_scores=settings.storage.link_scores,
        busy_timeout=settings.storage.busy_timeout,
        retries=storage_retries,
        attempt_timeout=settings.storage.attempt_timeout,
    )
    async with contextlib.AsyncExitStack() as stack:
        await storage.open()
        stack.push_async_callback(storage.close)
        # The knowledge graph (kg, helper s14-kg): its analyzer goes to the parse workers, its
        # wrapper around the strategy boosts preferred entities' links; None when unused.
        kg = await stack.enter_async_context(
            open_kg(settings.kg, settings.storage.url, strategy, max_depth=settings.scope.max_depth)
        )
        library = await stack.enter_async_context(
            open_parser_library(settings.parsers, settings.storage.url)
        )
        workers = settings.parse_workers
        workers = default_parse_workers() if workers < 0 else workers
        parser = PageParser(
            workers=workers,
            analyzer=getattr(strategy, "analyzer", None),
            entities=kg.analyzer if kg is not None else None,
            library=library,
        )
        stack.push_async_callback(parser.close)
        await parser.start()
        await restore_learning(strategy, settings.storage.url)
        in_hand = _pages_in_hand(settings, strategy)
        if frontier is None:
            path = sqlite_path(settings.storage.url)
            if settings.frontier.kind == "memory" and path is not None:
                # The lock the SQLite frontier takes: one crawl at a time on a database.
                stack.enter_context(frontier_lock(path))
            frontier = await _open_frontier(settings, in_hand)
            stack.push_async_callback(frontier.close)
        proxies = (
            ProxyPool(
                settings.fetch.proxies,
                max_latency=settings.fetch.proxy_max_latency,
                bench_seconds=settings.fetch.proxy_bench_seconds,
            )
            if settings.fetch.proxies
            else None
        )
        # With workers, bodies travel to them undecoded and they decode (off the event loop).
        fetcher = HttpFetcher(
            settings=settings.fetch, scope=scope, proxies=proxies, decode=workers == 0
        )
        stack.push_async_callback(fetcher.close)
        robots = (
            RobotsCache(
                session=fetcher.session,
                user_agent=settings.fetch.user_agent,
                error_ttl=settings.politeness.robots_error_ttl,
                max_crawl_delay=settings.politeness.max_crawl_delay,
                proxies=proxies,
            )
            if settings.politeness.obey_robots
            else None
        )
        fetcher.robots = robots

        async def fetch_extra(url: str, parent: str, max_bytes: int) -> bytes:
            return await crawler.fetch_extra(url, parent, max_bytes)  # made just below

        video, extra_fetcher = _video_stage(
            settings,
            fetcher=fetcher,
            robots=robots,
            scope=scope,
            proxies=proxies,
            fetch=fetch_extra,
        )
        render = await _render_stage(
            stack,
            settings,
            fetcher=fetcher,
            robots=robots,
            proxies=proxies,
            fetch=lambda url, parent, resource_fetcher: crawler.fetch_politely(
                resource_fetcher, url, parent
            ),
        )
        own_run = run_id is None
        if run_id is None:
            run_id = await storage.start_run(
                name=settings.strategy, config=settings.model_dump_json(exclude={"seeds"})
            )
        learning = LearningCheckpoints(
            strategy, settings.storage.url, run_id=run_id, interval=learning_interval
        )
        revisit = await open_revisit(stack, settings.revisit, settings.storage.url, run_id)
        crawler = Crawler(
            fetcher=fetcher,
            frontier=frontier,
            storage=storage,
            strategy=kg.strategy if kg is not None else strategy,
            parse=parser,
            scope=scope,
            hosts=HostPolicy(delays=robots, min_delay=settings.politeness.delay),
            limits=CrawlLimits(
                max_pages=settings.max_pages,
                max_depth=settings.scope.max_depth,
                concurrency=settings.concurrency,
                per_host=settings.politeness.per_host,
                pages_in_hand=in_hand,
                follow_nofollow=settings.scope.follow_nofollow,
                checkpoint_interval=settings.storage.flush_interval,
                shared_storage=not own_run,
                hold_patience=settings.politeness.hold_patience,
                max_seconds=settings.revisit.max_seconds,
            ),
            run_id=run_id,
            on_progress=on_progress,
            on_checkpoint=_checkpoints(
                learning,
                kg.record if kg is not None else None,
                library.sync if library is not None else None,
            ),
            page_budget=page_budget,
            revisit=revisit,
            video=video,
            extra_fetcher=extra_fetcher,
            render=render,
            on_fetch=on_fetch,
        )
        await _observe(stack, crawler, storage, settings, node=node, metrics_port=metrics_port)
        await crawler.seed(
            [*seeds, *await _source_requests(settings, fetcher, robots, scope, seeds)]
        )
        try:
            yield crawler
        finally:
            if kg is not None:
                try:
                    await kg.record()
                except StorageError:  # the pages are stored; only their entity index is short
                    log.exception("could not record the last pages' entities")
            await save_learning(strategy, settings.storage.url, run_id=run_id)
            if own_run:
                await _finish_run(storage, run_id, crawler)


async def _observe(
    stack: contextlib.AsyncExitStack,
    crawler: Crawler,
    storage: Storage,
    settings: CrawlSettings,
    *,
    node: str | None,
    metrics_port: int | None,
) -> None:
    """Start the live samples and the metrics endpoint, when asked for, until ``stack`` ends."""
    interval = settings.storage.samples_interval
    if not interval and metrics_port is None:
        return
    sampler = CrawlSampler(
        crawler=crawler,
        sink=storage if interval and isinstance(storage, SampleSink) else None,
        # Without stored samples, the metrics' frontier gauges are still read this often.
        interval=interval or 1.0,
        node=node,
    )
    if metrics_port is not None:
        from topicrawl.engine.metrics import (  # noqa: PLC0415 - optional dependency
            CrawlCollector,
            serve_metrics,
        )

        port = stack.enter_context(
            serve_metrics(CrawlCollector(crawler, sampler, node=node), port=metrics_port)
        )
        log.info("metrics at http://127.0.0.1:%d/metrics", port)
    await stack.enter_async_context(sampler.running())


def _checkpoints(
    first: Callable[[], Awaitable[None]], *more: Callable[[], Awaitable[None]] | None
) -> Callable[[], Awaitable[None]]:
    """One checkpoint callback that runs ``first`` and each of ``more`` given, every one even
    when an earlier one fails."""
    rest = [step for step in more if step is not None]
    if not rest:
        return first

    async def every() -> None:
        try:
            await first()
        finally:
            if rest:
                await _checkpoints(rest[0], *rest[1:])()

    return every


async def _finish_run(storage: Storage, run_id: int, crawler: Crawler) -> None:
    stats = crawler.stats
    await storage.finish_run(
        run_id,
        stats=json.dumps(
            {
                "pages": stats.pages,
                "duplicates": stats.duplicates,
                "relevant": stats.relevant,
                "errors": stats.errors,
                "bytes": stats.bytes,
                "seconds": stats.finished_at - stats.started_at,
            }
        ),
    )


async def run_crawl(
    settings: CrawlSettings, *, on_progress: ProgressFn | None = None
) -> CrawlReport:
    """Run a whole crawl from settings and report; resumes if the database has one under way."""
    async with open_crawl(settings, on_progress=on_progress) as crawler:
        stats = await crawler.run()
        left = await crawler.frontier.queued()
        return CrawlReport(
            stats=stats,
            run_id=crawler.run_id,
            storage_url=settings.storage.url,
            queued_left=left,
            video=dict(crawler.video_counts),
            render=dict(crawler.render_counts),
        )


# Content types a manifest or media file may come as (servers label them loosely).
_MEDIA_CONTENT_TYPES = ("application/*", "video/*", "audio/*", "text/*", "binary/*")


def _video_stage(
    settings: CrawlSettings,
    *,
    fetcher: HttpFetcher,
    robots: RobotsCache | None,
    scope: Scope,
    proxies: ProxyPool | None,
    fetch: BodyFetch,
) -> tuple[VideoStage | None, HttpFetcher | None]:
    """The video stage and its fetcher for manifests and media files (same session, robots
    and scope as pages; another content-type filter and size cap), or None when off."""
    video = settings.video
    if not video.detect:
        return None, None
    cap = max(video.max_manifest_bytes, video.max_media_bytes if video.fetch_media else 0)
    extra_settings = settings.fetch.model_copy(
        update={"content_types": _MEDIA_CONTENT_TYPES, "max_body_bytes": cap}
    )
    extra = HttpFetcher(
        settings=extra_settings, scope=scope, proxies=proxies, session=fetcher.session
    )
    extra.robots = robots
    return VideoStage(settings=video, fetch=fetch), extra


# -- render --
# Content types a script or XHR may come as (servers label them loosely).
_SCRIPT_CONTENT_TYPES = ("application/*", "text/*")

PoliteFetch = Callable[[str, str, HttpFetcher], Awaitable[Response]]


async def _render_stage(
    stack: contextlib.AsyncExitStack,
    settings: CrawlSettings,
    *,
    fetcher: HttpFetcher,
    robots: RobotsCache | None,
    proxies: ProxyPool | None,
    fetch: PoliteFetch,
) -> RenderStage | None:
    """The render stage (None with ``render`` never: nothing is imported or started), its
    browser pool closed with ``stack``. Scripts and XHR go through their own fetcher (same
    session and robots.txt as pages; any scope, scripts' content types, the browser's caps,
    no retries) and the crawl's polite fetch."""
    if settings.render == "never":
        return None
    if importlib.util.find_spec("playwright") is None:
        raise ConfigError(
            f"--render {settings.render} needs Playwright for Python: pip install"
            " 'topicrawl[render]', and the system Chromium (apt-get install chromium)"
        )
    from topicrawl.engine.render import RenderStage  # noqa: PLC0415 - only when rendering
    from topicrawl.render import BrowserPool, Fetched, RenderMode, RenderPolicy  # noqa: PLC0415

    browser = settings.browser
    resource_settings = settings.fetch.model_copy(
        update={
            "content_types": _SCRIPT_CONTENT_TYPES,
            "max_body_bytes": browser.resource_bytes,
            "timeout": browser.resource_timeout,
            "retries": 0,
        }
    )
    resources = HttpFetcher(
        settings=resource_settings, proxies=proxies, session=fetcher.session, decode=False
    )
    resources.robots = robots

    async def fetch_resource(url: str, page_url: str, max_bytes: int) -> Fetched:
        response = await fetch(url, page_url, resources)
        raw = body_within(response, url, max_bytes, cap="the page's room")
        return Fetched(response.status, response.content_type, raw)

    pool = BrowserPool(settings=browser, fetch=fetch_resource, user_agent=settings.fetch.user_agent)
    stack.push_async_callback(pool.close)
    policy = RenderPolicy(
        mode=RenderMode(settings.render),
        min_text=browser.min_text,
        hinted_text=browser.hinted_text,
        site_rules=browser.site_rules,
    )
    return RenderStage(policy=policy, pool=pool, max_bytes=settings.fetch.max_body_bytes)


# -- end render --
