"""A response is only ever read by the request that asked for it (issue #26 item 1).

A raw server sends what HTTP libraries will not: bytes past the announced Content-Length,
a whole second response after a pause (on the idle pooled connection), bodies shorter
than announced. After each, the next requests over the same pool must get their own pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest

from tests.hostile.server import (
    SMUGGLED,
    Exchange,
    Handler,
    HostileServer,
    page_body,
    response_head,
)
from tests.unit.fetch.servers import fetcher_for, settings
from topicrawl.core.errors import RetryableFetchError
from topicrawl.core.models import ErrorKind, Request
from topicrawl.fetch import HttpFetcher, RobotsCache

SMUGGLE = response_head(200, {"Content-Type": "text/html", "Content-Length": str(len(SMUGGLED))})
# A smuggled response whose body never comes: a request that reads it waits forever.
ENDLESS = response_head(200, {"Content-Type": "text/html", "Content-Length": "100000"})


def _head(body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return response_head(200, {"Content-Type": "text/html", "Content-Length": str(size)})


async def _surplus_later(ex: Exchange) -> None:
    """The page, then (while the connection idles in the pool) a whole second response."""
    await ex.page(page_body(ex.path))
    await asyncio.sleep(0.05)
    await ex.send(SMUGGLE + SMUGGLED)


async def _surplus_same_write(ex: Exchange) -> None:
    """Content-Length announces the page; the smuggled response follows in the same write."""
    body = page_body(ex.path)
    ex.remember(body)
    await ex.send(_head(body) + body + SMUGGLE + SMUGGLED)


async def _surplus_split(ex: Exchange) -> None:
    """Half of a smuggled response right after the body, the rest once the connection idles."""
    body = page_body(ex.path)
    ex.remember(body)
    await ex.send(_head(body) + body + SMUGGLE[:20])
    await asyncio.sleep(0.05)
    await ex.send(SMUGGLE[20:] + SMUGGLED)


async def _surplus_endless(ex: Exchange) -> None:
    await ex.page(page_body(ex.path))
    await asyncio.sleep(0.05)
    await ex.send(ENDLESS + b"<title>half")


async def _short_then_close(ex: Exchange) -> None:
    body = page_body(ex.path)
    await ex.send(_head(body, len(body) + 500) + body)
    ex.keep_alive = False


async def _short_then_stall(ex: Exchange) -> None:
    body = page_body(ex.path)
    await ex.send(_head(body, len(body) + 500) + body)
    await asyncio.sleep(30)


async def _ok(ex: Exchange) -> None:
    await ex.page(page_body(ex.path))


CASES: dict[str, Callable[[Exchange], Awaitable[None]]] = {
    "later": _surplus_later,
    "same-write": _surplus_same_write,
    "split": _surplus_split,
    "endless": _surplus_endless,
}


def _route(path: str, index: int) -> Handler | None:
    if path.startswith("/ok/"):
        return _ok
    if path == "/short-close":
        return _short_then_close
    if path == "/short-stall":
        return _short_then_stall
    return CASES.get(path.strip("/"))


@pytest.fixture
async def server() -> AsyncIterator[HostileServer]:
    async with HostileServer(route=_route) as running:
        yield running


async def _fetch_in_turn(
    fetcher: HttpFetcher, base: str, paths: list[str]
) -> dict[str, bytes | ErrorKind]:
    got: dict[str, bytes | ErrorKind] = {}
    for path in paths:
        await asyncio.sleep(0.15)  # the pooled connection idles meanwhile
        try:
            got[path] = (await fetcher.fetch(Request(url=base + path))).body
        except RetryableFetchError as exc:
            got[path] = exc.kind
    return got


OK = ["/ok/1", "/ok/2", "/ok/3", "/ok/4"]


@pytest.mark.parametrize("case", list(CASES))
async def test_surplus_bytes_never_answer_the_next_request(
    server: HostileServer, case: str
) -> None:
    async with fetcher_for(settings=settings(connections=1, timeout=2.0, retries=0)) as fetcher:
        got = await asyncio.wait_for(_fetch_in_turn(fetcher, server.base(), [f"/{case}", *OK]), 30)
    assert got == {path: page_body(path) for path in [f"/{case}", *OK]}


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/short-close", ErrorKind.CONNECTION), ("/short-stall", ErrorKind.TIMEOUT)],
)
async def test_a_short_body_fails_and_its_connection_is_not_reused(
    server: HostileServer, path: str, kind: ErrorKind
) -> None:
    async with fetcher_for(settings=settings(connections=1, timeout=1.0, retries=0)) as fetcher:
        got = await asyncio.wait_for(_fetch_in_turn(fetcher, server.base(), [path, *OK]), 30)
    assert got == {path: kind, **{p: page_body(p) for p in OK}}


async def test_the_watchdog_ends_a_read_that_aiohttp_never_times_out(
    server: HostileServer,
) -> None:
    """With aiohttp's own connector (no guard), the smuggled endless response is read as the
    next page's, and aiohttp's total timeout does not fire on it: our watchdog ends it."""
    plain = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(total=1.0)
    )
    try:
        fetcher = HttpFetcher(settings=settings(timeout=1.0, retries=0), session=plain)
        got = await asyncio.wait_for(
            _fetch_in_turn(fetcher, server.base(), ["/endless", "/ok/1"]), 20
        )
    finally:
        await plain.close()
    assert got == {"/endless": page_body("/endless"), "/ok/1": ErrorKind.TIMEOUT}


async def test_only_the_connection_that_got_surplus_bytes_is_closed(
    server: HostileServer,
) -> None:
    """The connection that received bytes while idle is closed; others are still reused."""
    async with fetcher_for(settings=settings(connections=1, retries=0)) as fetcher:
        await _fetch_in_turn(fetcher, server.base(), ["/ok/1", "/ok/2", "/later", *OK])
    assert server.connections == 2


async def test_the_robots_watchdog_ends_a_read_that_aiohttp_never_times_out(
    server: HostileServer,
) -> None:
    """The same poisoned read on a robots.txt fetch: the host is held as unreachable."""
    plain = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
    try:
        async with plain.get(server.base() + "/endless") as response:
            await response.read()
        await asyncio.sleep(0.15)
        robots = RobotsCache(
            session=plain, user_agent="t", error_ttl=60, max_crawl_delay=1, timeout=0.2
        )
        decision = await asyncio.wait_for(robots.decide(server.base() + "/ok/1"), 20)
    finally:
        await plain.close()
    assert not decision.allowed
    assert decision.retry_after is not None
