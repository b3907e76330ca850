"""The crawler tells ``on_fetch`` how each fetch went: the HTTP status of an answer (403 and
429 included), 0 when no answer came, nothing for failures that say nothing of the host; a
listener that raises does not stop the crawl."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.unit.engine.responses import html_response
from topicrawl.core.errors import (
    BlockedError,
    PermanentFetchError,
    RetryableFetchError,
    RobotsDisallowed,
)
from topicrawl.core.models import ErrorKind, FetchOutcome, Request, Response
from topicrawl.engine.crawl import Crawler, CrawlLimits, FetchOutcomeFn, HostPolicy
from topicrawl.engine.parsing import ParsedDocument, parse_body
from topicrawl.focus import make_strategy
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage


class ScriptedFetcher:
    """Each URL's path says how its fetch goes."""

    async def fetch(self, request: Request) -> Response:
        path = request.url.split("/", 3)[3]
        if path == "forbidden":
            raise PermanentFetchError(
                request.url, "client error 403", kind=ErrorKind.HTTP_CLIENT, status=403
            )
        if path == "throttled":
            raise BlockedError(request.url, "429 Too Many Requests", status=429, retry_after=0.0)
        if path == "silent":
            raise RetryableFetchError(request.url, "timed out", kind=ErrorKind.TIMEOUT)
        if path == "disallowed":
            raise RobotsDisallowed(request.url, "robots.txt disallows it")
        await asyncio.sleep(0.01)
        return html_response("<html><body>page</body></html>", request.url)

    async def close(self) -> None:
        pass


class NoDelays:
    async def crawl_delay(self, url: str) -> float | None:
        return None

    def problem(self, url: str) -> str | None:
        return None


async def _parse(response: Response) -> ParsedDocument:
    return parse_body(response.body, response.final_url, charset="utf-8")


async def _crawl(tmp_path: Path, urls: list[str], on_fetch: FetchOutcomeFn) -> int:
    """Crawl ``urls``; the pages stored."""
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=1)
    try:
        crawler = Crawler(
            fetcher=ScriptedFetcher(),
            frontier=frontier,
            storage=storage,
            strategy=make_strategy("bfs", topics=()),
            parse=_parse,
            scope=Scope.build(),
            hosts=HostPolicy(delays=NoDelays(), min_delay=0.0),
            limits=CrawlLimits(concurrency=2, max_blocked=1),
            run_id=await storage.start_run(name="bfs", config="{}"),
            on_fetch=on_fetch,
        )
        await crawler.seed([Request(url=u) for u in urls])
        async with asyncio.timeout(30):  # hang guard
            stats = await crawler.run()
        return stats.pages
    finally:
        await frontier.close()
        await storage.close()


async def test_each_fetch_is_reported_with_its_status_and_seconds(tmp_path: Path) -> None:
    heard: list[FetchOutcome] = []
    urls = [
        "http://a.test/ok",
        "http://a.test/forbidden",
        "http://b.test/throttled",
        "http://c.test/silent",
        "http://d.test/disallowed",
    ]
    pages = await _crawl(tmp_path, urls, heard.append)
    assert pages == 1
    statuses = sorted((o.host, o.status) for o in heard)
    # The 429 is tried twice (max_blocked 1: once put back, then failed); robots.txt's
    # refusal is not an answer of the host to this node and is not reported.
    assert statuses == [
        ("a.test", 200),
        ("a.test", 403),
        ("b.test", 429),
        ("b.test", 429),
        ("c.test", 0),
    ]
    assert all(o.seconds >= 0 for o in heard)
    ok = next(o for o in heard if o.status == 200)
    assert ok.seconds >= 0.01
    assert [o.refused for o in heard if o.host != "c.test"].count(True) == 3
    assert next(o for o in heard if o.host == "c.test").lost


async def test_a_failing_listener_does_not_stop_the_crawl(tmp_path: Path) -> None:
    def broken(outcome: FetchOutcome) -> None:
        raise RuntimeError("listener bug")

    pages = await _crawl(tmp_path, [f"http://a.test/ok{i}" for i in range(3)], broken)
    assert pages == 3
