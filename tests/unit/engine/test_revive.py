"""A crawl whose frontier runs dry asks its strategy for held-back links, and keeps asking
while what it gets back is already known."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tests.unit.engine.test_crawler_slots import crawl_one_at_a_time
from topicrawl.core.models import FetchFailure, Page, Request, StrategyResult
from topicrawl.parse.urls import Scope

SEED = "http://a.test/0"  # where crawl_one_at_a_time starts


class HoldingStrategy:
    """Queues nothing; holds back, in this order, a link to the seed (fetched already),
    ``elsewhere`` links out of the crawl's scope, and each of ``new``; ``on_idle`` hands them
    out ``limit`` at a time. With ``forever``, it offers the seed again and again."""

    name = "holding"

    def __init__(self, *, elsewhere: int, new: Iterable[str], forever: bool = False) -> None:
        outside = [f"http://elsewhere.test/{n}" for n in range(elsewhere)]
        self.held = [Request(url=url) for url in (SEED, *outside, *new)]
        self.forever = forever
        self.asked = 0

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        return requests

    def on_page(self, page: Page) -> StrategyResult:
        return StrategyResult(None, ())

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return ()

    def on_idle(self, limit: int) -> Iterable[Request]:
        self.asked += 1
        if self.forever:
            return [Request(url=SEED)] * limit
        given, self.held = self.held[:limit], self.held[limit:]
        return given


async def _crawl(tmp_path: Path, strategy: HoldingStrategy) -> list[str]:
    scope = Scope.build(allowed_domains=("a.test", "b.test"))
    return await crawl_one_at_a_time(tmp_path, strategy, max_pages=10, scope=scope)


async def test_held_back_links_behind_known_ones_are_still_crawled(tmp_path: Path) -> None:
    # 151 links the frontier cannot take first: more than two on_idle calls' worth (64 each
    # with one request in flight).
    strategy = HoldingStrategy(elsewhere=150, new=["http://a.test/1", "http://b.test/2"])
    assert await _crawl(tmp_path, strategy) == [SEED, "http://a.test/1", "http://b.test/2"]


async def test_a_strategy_offering_the_same_known_links_forever_ends_the_crawl(
    tmp_path: Path,
) -> None:
    strategy = HoldingStrategy(elsewhere=0, new=(), forever=True)
    assert await _crawl(tmp_path, strategy) == [SEED]
    assert strategy.asked == 2  # the second call offered nothing new
