"""A crawl whose work is done ends, even when a fetch never returns (issue #26 item 1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.unit.engine.test_crawler_slots import CountingFetcher, SlowParser, _crawler
from topicrawl.core.models import ErrorKind, Request, Response
from topicrawl.frontier import MemoryFrontier
from topicrawl.storage import SqlStorage

pytestmark = pytest.mark.hostile


class HangingFetcher(CountingFetcher):
    """The 40-page tree, but page 5 never answers (as a fetch whose read escaped every
    timeout of the client library did)."""

    async def fetch(self, request: Request) -> Response:
        if request.url.endswith("/5"):
            await asyncio.Event().wait()
        return await super().fetch(request)


async def test_a_fetch_that_never_returns_is_abandoned_and_the_crawl_ends(
    tmp_path: Path,
) -> None:
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=2, lease_ttl=1.0)
    try:
        crawler, _ = await _crawler(
            storage, frontier, SlowParser(), HangingFetcher(), concurrency=2
        )
        await crawler.seed([Request(url="http://a.test/0")])
        stats = await asyncio.wait_for(crawler.run(), 60)  # hangs forever without the fix
        failures = [f async for f in storage.iter_failures()]
        pages = [p async for p in storage.iter_pages()]
    finally:
        await frontier.close()
        await storage.close()
    assert [(f.url, f.kind) for f in failures] == [("http://a.test/5", ErrorKind.TIMEOUT)]
    # Page 5's subtree (11, 12, 23-26) is never reached; every other page is stored.
    assert len(pages) == stats.pages == 40 - 7
