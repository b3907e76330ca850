"""The crawler's request slots: more pages in hand than requests, politeness on requests,
and the leases a checkpoint holds back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.engine.responses import html_response
from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import FetchFailure, Page, Request, Response, StrategyResult
from topicrawl.core.protocols import Fetcher, Frontier, Strategy
from topicrawl.engine.build import _pages_in_hand
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy, ParseFn
from topicrawl.engine.parsing import ParsedDocument, parse_body
from topicrawl.focus import make_strategy
from topicrawl.frontier import MemoryFrontier, SqliteFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage

HOSTS = ("a.test", "b.test")


def tree_page(url: str, host: Callable[[int], str]) -> Response:
    """Page n of a binary tree of 40 pages: links to pages 2n+1 and 2n+2, page m on host(m)."""
    number = int(url.rsplit("/", 1)[1] or 0)
    links = "".join(
        f'<a href="http://{host(n)}/{n}">page {n}</a>'
        for n in (2 * number + 1, 2 * number + 2)
        if n < 40
    )
    html = f"<html><head><title>{number}</title></head><body>{links}</body></html>"
    return html_response(html, url, fetched_at=time.time())


class CountingFetcher:
    """Serves 40 linked pages on a.test and one on b.test; records requests in flight."""

    def __init__(self) -> None:
        self.active = dict.fromkeys(HOSTS, 0)
        self.most = dict.fromkeys(HOSTS, 0)

    async def fetch(self, request: Request) -> Response:
        host = request.url.split("/")[2]
        self.active[host] += 1
        self.most[host] = max(self.most[host], self.active[host])
        try:
            await asyncio.sleep(0.005)
        finally:
            self.active[host] -= 1
        return tree_page(request.url, lambda _: "a.test")

    async def close(self) -> None:
        pass


class SlowParser:
    """Parses after a wait, so fetched pages pile up in hand; records how many at most."""

    def __init__(self) -> None:
        self.in_hand = 0
        self.most_in_hand = 0

    async def __call__(self, response: Response) -> ParsedDocument:
        self.in_hand += 1
        self.most_in_hand = max(self.most_in_hand, self.in_hand)
        try:
            await asyncio.sleep(0.03)
        finally:
            self.in_hand -= 1
        return parse_body(response.body, response.final_url, charset="utf-8")


class InterleavedFetcher:
    """Serves 40 pages, each linking to its two successors; in breadth-first order they come in
    pairs of one host, a.test and b.test in turn. Records the fetch order."""

    def __init__(self) -> None:
        self.order: list[str] = []

    async def fetch(self, request: Request) -> Response:
        self.order.append(request.url)
        await asyncio.sleep(0.002)
        return tree_page(request.url, lambda n: HOSTS[n // 2 % 2])

    async def close(self) -> None:
        pass


async def _crawler(
    storage: SqlStorage,
    frontier: Frontier,
    parser: ParseFn,
    fetcher: Fetcher | None = None,
    **limits: Any,
) -> tuple[Crawler, Fetcher]:
    fetcher = fetcher or CountingFetcher()
    crawler = Crawler(
        fetcher=fetcher,
        frontier=frontier,
        storage=storage,
        strategy=make_strategy("bfs", topics=()),
        parse=parser,
        scope=Scope.build(),
        hosts=HostPolicy(delays=None, min_delay=0.0),
        limits=CrawlLimits(**limits),
        run_id=await storage.start_run(name="bfs", config="{}"),
    )
    return crawler, fetcher


async def test_pages_in_hand_go_beyond_requests_but_requests_stay_polite(tmp_path: Path) -> None:
    parser = SlowParser()
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=2, lease_headroom=6)
    try:
        crawler, fetcher = await _crawler(
            storage, frontier, parser, max_pages=0, concurrency=4, per_host=2, pages_in_hand=16
        )
        await crawler.seed([Request(url=f"http://{h}/0") for h in HOSTS])
        stats = await asyncio.wait_for(crawler.run(), 30)
    finally:
        await frontier.close()
        await storage.close()
    assert stats.pages == 40 + 1
    assert isinstance(fetcher, CountingFetcher)
    assert fetcher.most == {"a.test": 2, "b.test": 1}
    assert parser.most_in_hand > 4  # more pages in hand than requests in flight


class StallingStorage(SqlStorage):
    """Storage whose flush takes a while, as a big write does."""

    async def flush(self) -> None:
        await asyncio.sleep(0.05)
        await super().flush()


class NoSealing:
    """A frontier as it is, without :meth:`~topicrawl.frontier.SqliteFrontier.seal_acks`."""

    def __init__(self, frontier: SqliteFrontier) -> None:
        self._frontier = frontier

    def __getattr__(self, name: str) -> Any:
        if name in ("seal_acks", "flush_sealed"):
            raise AttributeError(name)
        return getattr(self._frontier, name)


async def test_workers_wake_when_a_checkpoint_gives_back_held_leases(tmp_path: Path) -> None:
    # One host, one lease: while a checkpoint holds the ack back, the only worker finds
    # nothing to pop and sleeps; the end of the checkpoint must wake it, not its poll timer.
    # (A durable frontier that does not seal acks, as the Redis one: a memory one has nothing
    # to hold acks back for, and a sealing one need not hold them.)
    storage = StallingStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = await SqliteFrontier(tmp_path / "frontier.db", max_per_host=1).open()
    try:
        crawler, _ = await _crawler(
            storage,
            NoSealing(frontier),  # type: ignore[arg-type]
            SlowParser(),
            max_pages=12,
            concurrency=1,
            checkpoint_interval=0.01,
        )
        polls: list[float] = []
        original = crawler._wait

        async def wait(seconds: float) -> None:
            polls.append(seconds)
            await original(60.0)  # a missed wake-up would stall the test, not just slow it

        crawler._wait = wait  # type: ignore[method-assign]
        await crawler.seed([Request(url="http://a.test/0")])
        stats = await asyncio.wait_for(crawler.run(), 20)
    finally:
        await frontier.close()
        await storage.close()
    assert stats.pages == 12
    assert polls  # the worker did find the host's only lease held by a checkpoint


async def parse(response: Response) -> ParsedDocument:
    return parse_body(response.body, response.final_url, charset="utf-8")


async def _fetch_order(tmp_path: Path, checkpoint_interval: float) -> list[str]:
    storage = StallingStorage(f"sqlite:///{tmp_path / f'{checkpoint_interval}.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=1)
    fetcher = InterleavedFetcher()
    try:
        crawler, _ = await _crawler(
            storage,
            frontier,
            parse,
            fetcher,
            concurrency=1,
            per_host=1,
            checkpoint_interval=checkpoint_interval,
        )
        await crawler.seed([Request(url="http://a.test/0")])
        await asyncio.wait_for(crawler.run(), 30)
    finally:
        await frontier.close()
        await storage.close()
    return fetcher.order


async def test_checkpoints_do_not_change_the_fetch_order_of_a_memory_frontier(
    tmp_path: Path,
) -> None:
    # One request in flight, one lease per host: had a checkpoint held a page's ack back, its
    # host would look busy and the other host's next URL would go first, so the order would
    # depend on when checkpoints ran (the demo-web benchmark crawls differed between runs).
    without_checkpoints = await _fetch_order(tmp_path, 3600.0)
    assert len(without_checkpoints) == 40
    assert await _fetch_order(tmp_path, 0.001) == without_checkpoints


def test_by_default_only_breadth_first_crawls_hold_more_urls_than_requests() -> None:
    settings = CrawlSettings(concurrency=8)
    bfs = make_strategy("bfs", topics=())
    focused = make_strategy("focused", topics=("comets",))
    assert _pages_in_hand(settings, bfs) == 24
    assert _pages_in_hand(settings, focused) == 8
    asked = CrawlSettings(concurrency=8, pages_in_hand=20)
    assert _pages_in_hand(asked, focused) == 20
    assert _pages_in_hand(CrawlSettings(concurrency=8, pages_in_hand=3), bfs) == 8


class RescoringStrategy:
    """Queues page 1 at 1.0, page 2 at 0.9, deeper pages at 0.5; page 1 then says page 2 is
    worth 0.1 (a strategy that learned something since it queued it)."""

    name = "rescoring"

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        return requests

    def on_page(self, page: Page) -> StrategyResult:
        scores = {"http://a.test/1": 1.0, "http://b.test/2": 0.9}
        requests = tuple(
            Request(url=link.url, score=scores.get(link.url, 0.5), depth=page.depth + 1)
            for link in page.links
        )
        rescored = (("http://b.test/2", 0.1),) if page.url == "http://a.test/1" else ()
        return StrategyResult(None, requests, rescored=rescored)

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return ()

    def on_idle(self, limit: int) -> Iterable[Request]:
        return ()


async def crawl_one_at_a_time(
    tmp_path: Path, strategy: Strategy, *, max_pages: int, scope: Scope | None = None
) -> list[str]:
    """Crawl :class:`InterleavedFetcher`'s pages from ``http://a.test/0`` with one request in
    flight and a memory frontier; returns the fetch order."""
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=1)
    fetcher = InterleavedFetcher()
    try:
        crawler = Crawler(
            fetcher=fetcher,
            frontier=frontier,
            storage=storage,
            strategy=strategy,
            parse=parse,
            scope=scope or Scope.build(),
            hosts=HostPolicy(delays=None, min_delay=0.0),
            limits=CrawlLimits(max_pages=max_pages, concurrency=1, per_host=1),
            run_id=await storage.start_run(name=strategy.name, config="{}"),
        )
        await crawler.seed([Request(url="http://a.test/0")])
        await asyncio.wait_for(crawler.run(), 30)
    finally:
        await frontier.close()
        await storage.close()
    return fetcher.order


async def test_the_engine_hands_a_strategys_new_scores_to_the_frontier(tmp_path: Path) -> None:
    order = await crawl_one_at_a_time(tmp_path, RescoringStrategy(), max_pages=4)
    # Page 2 (0.9 when queued) waits behind page 1's children (0.5) once lowered to 0.1.
    assert order == [
        "http://a.test/0",
        "http://a.test/1",
        "http://b.test/3",
        "http://a.test/4",
    ]


class SlowFlushStorage(SqlStorage):
    """Storage whose every flush outlasts the frontier's leases, as a write far behind does."""

    def __init__(self, url: str, seconds: float) -> None:
        super().__init__(url)
        self.seconds = seconds

    async def flush(self) -> None:
        await asyncio.sleep(self.seconds)
        await super().flush()


async def test_a_checkpoint_longer_than_a_lease_fetches_no_page_twice(tmp_path: Path) -> None:
    # The checkpoint used to hold every ack made while it ran; the leases expired meanwhile,
    # the late acks were refused, and the sweep handed their URLs out again.
    storage = SlowFlushStorage(f"sqlite:///{tmp_path / 'crawl.db'}", seconds=1.0)
    await storage.open()
    frontier = SqliteFrontier(tmp_path / "frontier.db", max_per_host=2, lease_ttl=0.3)
    await frontier.open()
    fetcher = InterleavedFetcher()
    try:
        crawler, _ = await _crawler(
            storage, frontier, SlowParser(), fetcher, max_pages=0, concurrency=2
        )
        crawler._sweep_loop = _sweep_often(crawler)  # type: ignore[method-assign]
        await crawler.seed([Request(url="http://a.test/0")])
        stats = await asyncio.wait_for(crawler.run(), 60)
    finally:
        await frontier.close()
        await storage.close()
    assert stats.pages == 40
    assert sorted(fetcher.order) == sorted(set(fetcher.order))  # each page fetched once
    assert len(fetcher.order) == 40


def _sweep_often(crawler: Crawler) -> Callable[[], Any]:
    async def sweep() -> None:
        while True:
            await asyncio.sleep(0.1)
            await crawler._frontier.reclaim_expired()

    return sweep


class SlowSaveStorage(SqlStorage):
    """Storage whose every page waits longer than a lease lasts, as behind a writer far
    behind on a loaded machine."""

    def __init__(self, url: str, seconds: float) -> None:
        super().__init__(url)
        self.seconds = seconds

    async def save_page(self, page: Page, **kwargs: Any) -> None:  # type: ignore[override]
        await asyncio.sleep(self.seconds)
        await super().save_page(page, **kwargs)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_pages_in_hand_longer_than_a_lease_keep_it_and_are_fetched_once(
    tmp_path: Path, kind: str
) -> None:
    # Session 18's long crawl: while its storage was behind, pages waited to be stored past
    # their lease, the sweep gave their URLs out again and they were fetched and stored twice.
    storage = SlowSaveStorage(f"sqlite:///{tmp_path / 'crawl.db'}", seconds=2.5)
    await storage.open()
    frontier: MemoryFrontier | SqliteFrontier
    if kind == "memory":
        frontier = MemoryFrontier(max_per_host=2, lease_ttl=1.0)
    else:
        frontier = SqliteFrontier(tmp_path / "frontier.db", max_per_host=2, lease_ttl=1.0)
    await frontier.open()
    fetcher = InterleavedFetcher()
    try:
        crawler, _ = await _crawler(storage, frontier, parse, fetcher, max_pages=8, concurrency=4)
        crawler._SWEEP_EVERY = 0.2
        await crawler.seed([Request(url="http://a.test/0")])
        stats = await asyncio.wait_for(crawler.run(), 120)
    finally:
        await frontier.close()
        await storage.close()
    assert stats.pages == 8
    assert sorted(fetcher.order) == sorted(set(fetcher.order))  # each page fetched once
    assert crawler.leases_renewed > 0
