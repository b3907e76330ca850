"""The admission check: one set of limits (depth, URL length, scope, fetched redirect targets)
for every request, and every way a request reaches the frontier goes through it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from tests.unit.engine.responses import html_response
from topicrawl.core.errors import PermanentFetchError
from topicrawl.core.models import (
    ErrorKind,
    FetchFailure,
    Page,
    Request,
    Response,
    StrategyResult,
)
from topicrawl.engine.admission import Admission, Refusal
from topicrawl.engine.crawl import Crawler, CrawlLimits, HostPolicy
from topicrawl.engine.parsing import ParsedDocument, parse_body
from topicrawl.frontier import MemoryFrontier
from topicrawl.parse.urls import Scope
from topicrawl.storage import SqlStorage

SCOPE = Scope.build(allowed_domains=("a.test",), exclude=("/private/",), max_url_length=60)
LONG = "http://a.test/" + "x" * 60


def test_each_limit_is_applied_and_counted() -> None:
    admission = Admission(scope=SCOPE, max_depth=2)
    requests = [
        Request(url="http://a.test/ok", depth=2),
        Request(url="http://a.test/deep", depth=3),
        Request(url=LONG, depth=0),
        Request(url="http://b.test/", depth=0),
        Request(url="http://a.test/private/1", depth=1),
    ]
    assert admission.admit(requests) == [requests[0]]
    assert admission.refused[Refusal.TOO_DEEP] == 1
    assert admission.refused[Refusal.URL_TOO_LONG] == 1
    assert admission.refused[Refusal.OUT_OF_SCOPE] == 2


def test_a_redirect_target_is_claimed_once_and_then_refused() -> None:
    admission = Admission(scope=SCOPE, max_depth=5)
    assert admission.claim_redirect_target("http://a.test/target")
    assert not admission.claim_redirect_target("http://a.test/target")
    assert admission.refusal(Request(url="http://a.test/target", depth=1)) is Refusal.FETCHED


def test_refused_start_urls_are_explained() -> None:
    admission = Admission(scope=SCOPE, max_depth=5)
    kept, refused = admission.sort([Request(url=LONG), Request(url="http://a.test/")])
    assert [r.url for r in kept] == ["http://a.test/"]
    assert refused[0].refusal.kind is ErrorKind.URL_TOO_LONG
    assert "74 characters is over max_url_length 60" in refused[0].message


def _bad(depth: int, tag: str) -> list[Request]:
    """One request over each limit, from the path ``tag``."""
    return [
        Request(url=f"http://a.test/{tag}/deep", depth=depth + 10),
        Request(url=f"http://a.test/{tag}/" + "y" * 60, depth=depth),
        Request(url=f"http://b.test/{tag}", depth=depth),
        Request(url=f"http://a.test/private/{tag}", depth=depth),
    ]


class EveryPathStrategy:
    """Offers requests over the limits through each path: seeds, a page's links, links held
    back (on_idle), and links added after an error; plus one good link per path."""

    name = "every-path"

    def __init__(self) -> None:
        self.idle_calls = 0

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        return [*requests, *_bad(0, "seed")]

    def on_page(self, page: Page) -> StrategyResult:
        if page.url != "http://a.test/0":
            return StrategyResult(None, ())
        good = Request(url="http://a.test/fails", depth=1)
        return StrategyResult(None, (good, *_bad(1, "page")))

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return [Request(url="http://a.test/after-error", depth=2), *_bad(2, "error")]

    def on_idle(self, limit: int) -> Iterable[Request]:
        self.idle_calls += 1
        if self.idle_calls > 1:
            return ()
        return [Request(url="http://a.test/revived", depth=1), *_bad(1, "idle")]


class PathFetcher:
    """Serves any URL; ``/fails`` fails for good. Records what was fetched."""

    def __init__(self) -> None:
        self.fetched: list[str] = []

    async def fetch(self, request: Request) -> Response:
        self.fetched.append(request.url)
        if request.url.endswith("/fails"):
            raise PermanentFetchError(request.url, "gone", kind=ErrorKind.HTTP_NOT_FOUND)
        return html_response("<html><body>page</body></html>", request.url)

    async def close(self) -> None:
        pass


async def _parse(response: Response) -> ParsedDocument:
    return parse_body(response.body, response.final_url, charset="utf-8")


async def test_every_path_that_queues_goes_through_the_one_check(tmp_path: Path) -> None:
    storage = SqlStorage(f"sqlite:///{tmp_path / 'crawl.db'}")
    await storage.open()
    frontier = MemoryFrontier(max_per_host=1)
    fetcher = PathFetcher()
    try:
        crawler = Crawler(
            fetcher=fetcher,
            frontier=frontier,
            storage=storage,
            strategy=EveryPathStrategy(),
            parse=_parse,
            scope=SCOPE,
            hosts=HostPolicy(delays=None, min_delay=0.0),
            limits=CrawlLimits(max_depth=3, concurrency=1),
            run_id=await storage.start_run(name="every-path", config="{}"),
        )
        await crawler.seed([Request(url="http://a.test/0")])
        async with asyncio.timeout(30):  # hang guard
            await crawler.run()
        failures = [f async for f in storage.iter_failures()]
    finally:
        await frontier.close()
        await storage.close()
    assert sorted(fetcher.fetched) == sorted(
        [
            "http://a.test/0",
            "http://a.test/fails",
            "http://a.test/after-error",
            "http://a.test/revived",
        ]
    )
    refused = crawler.admission.refused
    # Four paths (seeds, page, error, idle), one request over each limit in each.
    assert refused[Refusal.TOO_DEEP] == 4
    assert refused[Refusal.URL_TOO_LONG] == 4
    assert refused[Refusal.OUT_OF_SCOPE] == 8
    # The refused start URLs were said and recorded, not dropped in silence.
    seed_failures = {f.url: f.kind for f in failures if "/seed" in f.url}
    assert sorted(seed_failures.values()) == sorted(
        [
            ErrorKind.OUT_OF_SCOPE,
            ErrorKind.URL_TOO_LONG,
            ErrorKind.OUT_OF_SCOPE,
            ErrorKind.OUT_OF_SCOPE,
        ]
    )
