"""A strategy that says ``runs_in_thread`` works off the event loop, one call at a time."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from tests.unit.engine.responses import html_response
from topicrawl.core.errors import FetchError
from topicrawl.core.models import ErrorKind, FetchFailure, Page, Request, Response, StrategyResult
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy
from topicrawl.engine.parsing import ParsedDocument, parse_body
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage

SEEDS = tuple(f"http://h{n}.test/" for n in range(8))
FAILING = "http://h5.test/"


class Progress:
    """What the fetcher and the strategy tell each other across threads."""

    def __init__(self) -> None:
        self.waiting = threading.Event()  # the heavy on_page has started waiting
        self.moved_on = threading.Event()  # a fetch started while it waited


class WatchingFetcher:
    """Serves a page with no links for every URL (fails one); notes fetches made while the
    heavy page's strategy call waits."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    async def fetch(self, request: Request) -> Response:
        if self.progress.waiting.is_set():
            self.progress.moved_on.set()
        await asyncio.sleep(0.001)
        if request.url == FAILING:
            raise FetchError(request.url, "HTTP 500", kind=ErrorKind.HTTP_SERVER, status=500)
        return html_response("<html><body>page</body></html>", request.url, fetched_at=time.time())

    async def close(self) -> None:
        pass


class SlowJudgingStrategy:
    """``runs_in_thread`` for its first page, whose ``on_page`` then waits (up to 10 s) for
    the crawl to fetch something meanwhile: possible only off the event loop (as a focused
    strategy knows from its page count which page it will judge on). Records the thread of
    every call and how many calls ever overlapped."""

    name = "slow-judging"

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.heavy_url: str | None = None
        self.threads: dict[str, int] = {}
        self.saw_progress: bool | None = None
        self._active = 0
        self.most_active = 0
        self._guard = threading.Lock()

    @property
    def runs_in_thread(self) -> bool:
        return self.heavy_url is None

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        with self._busy():
            return list(requests)

    def on_page(self, page: Page) -> StrategyResult:
        with self._busy():
            self.threads[page.url] = threading.get_ident()
            if self.heavy_url is None:
                self.heavy_url = page.url
                self.progress.waiting.set()
                self.saw_progress = self.progress.moved_on.wait(10.0)
            return StrategyResult(None, ())

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        with self._busy():
            self.threads[request.url] = threading.get_ident()
            return ()

    def on_idle(self, limit: int) -> Iterable[Request]:
        with self._busy():
            return ()

    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
        with self._guard:
            self._active += 1
            self.most_active = max(self.most_active, self._active)
        try:
            yield
        finally:
            with self._guard:
                self._active -= 1


async def parse(response: Response) -> ParsedDocument:
    return parse_body(response.body, response.final_url, charset="utf-8")


async def test_a_heavy_page_is_handled_in_a_thread_while_the_crawl_goes_on(
    tmp_path: Path,
) -> None:
    progress = Progress()
    strategy = SlowJudgingStrategy(progress)
    frontier = MemoryFrontier(max_per_host=1)
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    try:
        crawler = Crawler(
            fetcher=WatchingFetcher(progress),
            frontier=frontier,
            storage=storage,
            strategy=strategy,
            parse=parse,
            scope=Scope.build(),
            hosts=HostPolicy(delays=None, min_delay=0.0),
            limits=CrawlLimits(max_pages=0, concurrency=2, pages_in_hand=4),
            run_id=await storage.start_run(name="threads", config="{}"),
        )
        await crawler.seed([Request(url=url) for url in SEEDS])
        stats = await asyncio.wait_for(crawler.run(), 60)
    finally:
        await frontier.close()
        await storage.close()
    assert stats.pages == len(SEEDS) - 1
    assert stats.errors == {"http_5xx": 1}
    # The heavy page waited for a fetch that only the event loop could make: it was not on it.
    assert strategy.saw_progress is True
    loop_thread = threading.get_ident()
    heavy = strategy.heavy_url
    assert strategy.threads[heavy] != loop_thread
    others = {url: ident for url, ident in strategy.threads.items() if url != heavy}
    assert set(others) == set(SEEDS) - {heavy}
    assert set(others.values()) == {loop_thread}
    assert strategy.most_active == 1  # never two strategy calls at once
