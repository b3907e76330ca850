"""HttpFetcher through a real forward HTTP proxy (a small aiohttp app) on loopback."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

import aiohttp
import pytest
from aiohttp import web

from tests.unit.fetch.servers import Servers, Sleeps, closed_port, fetcher_for, html, settings
from topicrawl.core.errors import RetryableFetchError
from topicrawl.core.models import ErrorKind, Request
from topicrawl.fetch import ProxyPool

T = TypeVar("T")
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "host"}


async def start_proxy(servers: Servers, seen: list[str]) -> str:
    """A forward proxy: takes absolute-form requests and replays them upstream."""
    upstream = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.Response:
        seen.append(str(request.url))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with upstream.get(request.url, headers=headers, allow_redirects=False) as answer:
            body = await answer.read()
            back = {
                k: v
                for k, v in answer.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length"
            }
            return web.Response(status=answer.status, body=body, headers=back)

    base = await servers.serve({"/{tail:.*}": forward})
    servers.on_close(upstream.close)
    return base


class FirstChoice(random.Random):
    """An rng that always picks the first candidate, to make the proxy order known."""

    def choice(self, seq: Sequence[T]) -> T:  # type: ignore[override]
        return seq[0]


async def page(_: web.Request) -> web.Response:
    return html("<html><body>via proxy</body></html>")


async def moved(_: web.Request) -> web.Response:
    return web.Response(status=302, headers={"Location": "/page"})


async def test_requests_and_redirects_go_through_the_proxy(servers: Servers) -> None:
    target = await servers.serve({"/page": page, "/moved": moved})
    seen: list[str] = []
    proxy = await start_proxy(servers, seen)
    pool = ProxyPool([proxy], max_latency=5.0, bench_seconds=60.0)
    async with fetcher_for(settings=settings(), proxies=pool) as fetcher:
        response = await fetcher.fetch(Request(url=f"{target}/moved"))
    assert response.text == "<html><body>via proxy</body></html>"
    assert response.final_url == f"{target}/page"
    assert seen == [f"{target}/moved", f"{target}/page"]
    (state,) = pool.states()
    assert state.successes == 2
    assert state.latency is not None


async def test_a_dead_proxy_is_benched_and_another_one_used(
    servers: Servers, sleeps: Sleeps
) -> None:
    target = await servers.serve({"/page": page})
    seen: list[str] = []
    live = await start_proxy(servers, seen)
    dead = f"http://127.0.0.1:{closed_port()}"
    pool = ProxyPool([dead, live], max_latency=5.0, bench_seconds=60.0, rng=FirstChoice())
    async with fetcher_for(settings=settings(retries=0), proxies=pool, sleep=sleeps) as fetcher:
        for _ in range(5):
            response = await fetcher.fetch(Request(url=f"{target}/page"))
            assert response.status == 200
    states = {s.proxy: s for s in pool.states()}
    assert states[dead].failures == 1  # tried first, once, then benched
    assert states[dead].benched_until > 0
    assert states[live].successes == 5
    assert len(seen) == 5
    assert sleeps.waits == []  # switching proxies does not wait


async def test_only_dead_proxies_fail_with_kind_proxy(servers: Servers, sleeps: Sleeps) -> None:
    target = await servers.serve({"/page": page})
    dead = [f"http://127.0.0.1:{closed_port()}" for _ in range(2)]
    pool = ProxyPool(dead, max_latency=5.0, bench_seconds=60.0)
    async with fetcher_for(settings=settings(retries=1), proxies=pool, sleep=sleeps) as fetcher:
        with pytest.raises(RetryableFetchError) as caught:
            await fetcher.fetch(Request(url=f"{target}/page"))
    assert caught.value.kind is ErrorKind.PROXY
    assert all(s.failures >= 1 for s in pool.states())
