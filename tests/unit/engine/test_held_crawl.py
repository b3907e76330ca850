"""The crawl loop with a held host: a long hold ends the crawl once only the held host is
left (its URLs recorded as host_held failures, left queued); a short one is waited out."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.unit.engine.responses import html_response
from topicrawl.core.errors import BlockedError
from topicrawl.core.models import CrawlStats, ErrorKind, FetchFailure, Request, Response
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy
from topicrawl.engine.parsing import ParsedDocument, parse_body
from topicrawl.focus import make_strategy
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage


class HoldingFetcher:
    """a.test serves pages; b.test's robots.txt cannot be read for ``hold`` seconds."""

    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.until: float | None = None
        self.fetched: list[str] = []

    async def fetch(self, request: Request) -> Response:
        loop = asyncio.get_running_loop()
        if request.url.startswith("http://b.test/"):
            if self.until is None:
                self.until = loop.time() + self.hold
            left = self.until - loop.time()
            if left > 0:
                raise BlockedError(
                    request.url,
                    "robots.txt is unreachable",
                    kind=ErrorKind.ROBOTS,
                    retry_after=left,
                )
        self.fetched.append(request.url)
        return html_response("<html><body>page</body></html>", request.url)

    async def close(self) -> None:
        pass


class Problems:
    """The robots.txt source as the host policy sees it: no delays, one problem."""

    async def crawl_delay(self, url: str) -> float | None:
        return None

    def problem(self, url: str) -> str | None:
        return "robots.txt answered 500" if "b.test" in url else None


async def _parse(response: Response) -> ParsedDocument:
    return parse_body(response.body, response.final_url, charset="utf-8")


async def _crawl(
    tmp_path: Path, fetcher: HoldingFetcher
) -> tuple[CrawlStats, list[FetchFailure], int]:
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=1)
    try:
        crawler = Crawler(
            fetcher=fetcher,
            frontier=frontier,
            storage=storage,
            strategy=make_strategy("bfs", topics=()),
            parse=_parse,
            scope=Scope.build(),
            hosts=HostPolicy(delays=Problems(), min_delay=0.0),
            limits=CrawlLimits(concurrency=2, hold_patience=5.0),
            run_id=await storage.start_run(name="bfs", config="{}"),
        )
        seeds = [Request(url=f"http://{h}/{n}") for h in ("a.test", "b.test") for n in range(3)]
        await crawler.seed(seeds)
        async with asyncio.timeout(30):  # hang guard
            stats = await crawler.run()
        failures = [f async for f in storage.iter_failures()]
        left = await frontier.queued()
    finally:
        await frontier.close()
        await storage.close()
    return stats, failures, left


async def test_a_long_hold_ends_the_crawl_and_its_urls_are_recorded(tmp_path: Path) -> None:
    fetcher = HoldingFetcher(hold=600.0)
    stats, failures, left = await _crawl(tmp_path, fetcher)
    assert sorted(fetcher.fetched) == [f"http://a.test/{n}" for n in range(3)]
    # Every b.test URL: the one leased and put back, and the two never handed out.
    assert sorted(f.url for f in failures) == [f"http://b.test/{n}" for n in range(3)]
    assert {f.kind for f in failures} == {ErrorKind.HOST_HELD}
    assert "robots.txt answered 500" in failures[0].message
    assert left == 3
    assert list(stats.held) == ["b.test"]
    assert stats.held["b.test"].reason == "robots.txt answered 500"
    assert stats.errors == {"host_held": 3}


async def test_a_short_hold_is_waited_out(tmp_path: Path) -> None:
    fetcher = HoldingFetcher(hold=0.3)
    stats, failures, left = await _crawl(tmp_path, fetcher)
    assert len(fetcher.fetched) == 6
    assert failures == []
    assert left == 0
    assert stats.held == {}
