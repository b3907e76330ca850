"""A strategy that raises ends the crawl with its error: it never leaves the crawl's other
workers waiting forever for a lease nobody will finish."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.unit.engine.responses import html_response
from tests.unit.engine.test_crawler_slots import parse
from topicrawl.core.models import FetchFailure, Page, Request, Response, StrategyResult
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage

STALLED = "http://a.test/stalled"
FAILING = "http://b.test/failing"


class StallingFetcher:
    """Never answers for ``STALLED`` (it stays in flight), answers the rest at once."""

    async def fetch(self, request: Request) -> Response:
        if request.url == STALLED:
            await asyncio.Event().wait()
        await asyncio.sleep(0.001)
        return html_response("<title>x</title><p>x</p>", request.url)

    async def close(self) -> None:
        pass


class FailingStrategy:
    name = "failing"

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        return requests

    def on_page(self, page: Page) -> StrategyResult:
        raise TypeError("a bug in the strategy")

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return ()

    def on_idle(self, limit: int) -> Iterable[Request]:
        return ()


async def test_a_strategy_error_ends_the_crawl_while_other_workers_wait(tmp_path: Path) -> None:
    # The failing page's worker wakes the idle workers as it raises; Python 3.11's
    # asyncio.wait_for lost the cancellation of a waiter woken at that moment, so 31 workers
    # went on polling a frontier whose one lease (STALLED) nobody would finish.
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=4)
    try:
        crawler = Crawler(
            fetcher=StallingFetcher(),
            frontier=frontier,
            storage=storage,
            strategy=FailingStrategy(),
            parse=parse,
            scope=Scope.build(allowed_domains=("a.test", "b.test")),
            hosts=HostPolicy(delays=None, min_delay=0.0),
            limits=CrawlLimits(max_pages=0, concurrency=32, per_host=4),
            run_id=await storage.start_run(name="failing", config="{}"),
        )
        failing = [Request(url=f"{FAILING}/{n}") for n in range(40)]
        await crawler.seed([Request(url=STALLED), *failing])
        run = asyncio.create_task(crawler.run())
        done, _ = await asyncio.wait({run}, timeout=30)  # a hang guard, not a speed check
        if not done:
            crawler.stop()  # the stuck workers see this and end; then the test fails
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(run, 10)
            pytest.fail("the crawl went on after its strategy failed")
        with pytest.raises(ExceptionGroup) as raised:
            run.result()
        assert raised.group_contains(TypeError, match="a bug in the strategy")
    finally:
        await frontier.close()
        await storage.close()
