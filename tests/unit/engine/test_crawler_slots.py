"""The crawler's request slots: more pages in hand than requests, politeness on requests."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from tests.unit.engine.responses import html_response
from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import Request, Response
from topicrawl.engine.build import _pages_in_hand
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy
from topicrawl.engine.parsing import ParsedDocument, parse_body
from topicrawl.focus import make_strategy
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage

HOSTS = ("a.test", "b.test")


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
        number = int(request.url.rsplit("/", 1)[1] or 0)
        links = "".join(
            f'<a href="http://a.test/{n}">page {n}</a>'
            for n in (2 * number + 1, 2 * number + 2)
            if n < 40
        )
        html = f"<html><head><title>{number}</title></head><body>{links}</body></html>"
        return html_response(html, request.url, fetched_at=time.time())

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


async def _crawler(
    storage: SqlStorage, frontier: MemoryFrontier, parser: SlowParser, **limits: Any
) -> tuple[Crawler, CountingFetcher]:
    fetcher = CountingFetcher()
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
    assert fetcher.most == {"a.test": 2, "b.test": 1}
    assert parser.most_in_hand > 4  # more pages in hand than requests in flight


class StallingStorage(SqlStorage):
    """Storage whose flush takes a while, as a big write does."""

    async def flush(self) -> None:
        await asyncio.sleep(0.05)
        await super().flush()


async def test_workers_wake_when_a_checkpoint_gives_back_held_leases(tmp_path: Path) -> None:
    # One host, one lease: while a checkpoint holds the ack back, the only worker finds
    # nothing to pop and sleeps; the end of the checkpoint must wake it, not its poll timer.
    storage = StallingStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=1)
    try:
        crawler, _ = await _crawler(
            storage, frontier, SlowParser(), max_pages=12, concurrency=1, checkpoint_interval=0.01
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


def test_by_default_only_breadth_first_crawls_hold_more_urls_than_requests() -> None:
    settings = CrawlSettings(concurrency=8)
    bfs = make_strategy("bfs", topics=())
    focused = make_strategy("focused", topics=("comets",))
    assert _pages_in_hand(settings, bfs) == 24
    assert _pages_in_hand(settings, focused) == 8
    asked = CrawlSettings(concurrency=8, pages_in_hand=20)
    assert _pages_in_hand(asked, focused) == 20
    assert _pages_in_hand(CrawlSettings(concurrency=8, pages_in_hand=3), bfs) == 8
