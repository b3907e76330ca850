"""A page's extracted record reaches the strategy on the Page it is given."""

from __future__ import annotations

import asyncio
import time
import tomllib
from collections.abc import Iterable
from pathlib import Path

from tests.unit.engine.responses import html_response
from topicrawl.core.models import FetchFailure, Page, Request, Response, StrategyResult
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy
from topicrawl.engine.parsing import PageParser
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.methods import ParserLibrary, config_from_mapping
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage

from ..parse.methods.pages import SCHEMA_TOML, page

FILM = "https://filmsite.com/film/1.html"
OTHER = "https://other.org/page.html"


class Films:
    async def fetch(self, request: Request) -> Response:
        body = page("v1") if request.url == FILM else "<html><body>hello</body></html>"
        return html_response(body, request.url, fetched_at=time.time())

    async def close(self) -> None:
        pass


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.records: dict[str, object] = {}

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        return list(requests)

    def on_page(self, page: Page) -> StrategyResult:
        self.records[page.url] = page.record
        return StrategyResult(None, ())

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return ()

    def on_idle(self, limit: int) -> Iterable[Request]:
        return ()


async def test_the_strategy_sees_each_page_record(tmp_path: Path) -> None:
    strategy = Recording()
    library = ParserLibrary(config_from_mapping(tomllib.loads(SCHEMA_TOML)))
    parser = PageParser(workers=0, library=library)
    frontier = MemoryFrontier(max_per_host=1)
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    try:
        crawler = Crawler(
            fetcher=Films(),
            frontier=frontier,
            storage=storage,
            strategy=strategy,
            parse=parser,
            scope=Scope.build(),
            hosts=HostPolicy(delays=None, min_delay=0.0),
            limits=CrawlLimits(max_pages=0, concurrency=2, pages_in_hand=4),
            run_id=await storage.start_run(name="records", config="{}"),
        )
        await crawler.seed([Request(url=FILM), Request(url=OTHER)])
        await asyncio.wait_for(crawler.run(), 60)
    finally:
        await parser.close()
        await frontier.close()
        await storage.close()
    film = strategy.records[FILM]
    assert isinstance(film, dict)
    assert film["title"] == "The Quiet Harbour"
    assert film["plays"] == 1_200_000
    assert strategy.records[OTHER] is None
