"""A local site for the topic crawler processes: numbered pages, slow pages, robots.txt."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web


@dataclass
class Site:
    """The running site; ``hits`` counts requests per path."""

    port: int
    hits: Counter[str] = field(default_factory=Counter)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    state = Site(port=0)

    async def page(request: web.Request) -> web.Response:
        state.hits[request.path] += 1
        n = int(request.match_info["n"])
        await asyncio.sleep(0.03)
        body = (
            f"<html><head><title>Page {n}</title></head><body><p>Text of page {n}.</p>"
            f"<a href='/p/{n + 1}'>next</a> <a href='/private/{n}'>hidden</a></body></html>"
        )
        return web.Response(text=body, content_type="text/html")

    async def slow(request: web.Request) -> web.Response:
        state.hits[request.path] += 1
        await asyncio.sleep(float(request.query.get("s", "1.5")))
        return web.Response(text="<title>slow</title><p>finally</p>", content_type="text/html")

    async def private(request: web.Request) -> web.Response:
        state.hits[request.path] += 1
        return web.Response(text="secret", content_type="text/html")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nDisallow: /private/\n")

    app = web.Application()
    app.router.add_get("/p/{n}", page)
    app.router.add_get("/slow/{n}", slow)
    app.router.add_get("/private/{n}", private)
    app.router.add_get("/robots.txt", robots)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    state.port = runner.addresses[0][1]
    try:
        yield state
    finally:
        await runner.cleanup()
