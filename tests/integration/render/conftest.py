"""A browser pool over the system Chromium and a small script-driven site to render."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web

from tests.web.browser import CHROMIUM, require_browser
from topicrawl.core.config import BrowserSettings
from topicrawl.core.errors import PermanentFetchError
from topicrawl.render import BrowserPool, Fetched

SHELL = (
    b"<!DOCTYPE html><html><head><title>shell</title><script src='/app.js'></script></head>"
    b"<body><div id='app'></div></body></html>"
)
APP = b"""
fetch('/links.json').then(r => r.json()).then(d => {
  for (const u of d.links) {
    const a = document.createElement('a'); a.href = u; a.textContent = 'to ' + u;
    document.getElementById('app').appendChild(a);
  }
});
"""


@dataclass
class Site:
    """A loopback site: ``/app.js`` builds links from ``/links.json``; ``/hang.js`` never
    answers; ``/slow.js`` answers after ``slow`` seconds; every request is logged."""

    base: str = ""
    seen: list[tuple[str, str]] = field(default_factory=list)
    slow: float = 1.5

    def url(self, path: str) -> str:
        return self.base + path


async def _serve(site: Site) -> AsyncIterator[web.AppRunner]:
    @web.middleware
    async def log(request: web.Request, handler: Callable) -> web.StreamResponse:  # type: ignore[type-arg]
        site.seen.append((request.method, request.path))
        return await handler(request)

    async def hang(_: web.Request) -> web.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def slow(_: web.Request) -> web.Response:
        await asyncio.sleep(site.slow)
        return web.Response(body=b"document.title = 'slow done';", content_type="text/javascript")

    async def app_js(_: web.Request) -> web.Response:
        return web.Response(body=APP, content_type="text/javascript")

    async def links(_: web.Request) -> web.Response:
        return web.json_response({"links": ["/a.html", "/b.html", "/c.html"]})

    async def anything(_: web.Request) -> web.Response:
        return web.Response(body=b"{}", content_type="application/json")

    app = web.Application(middlewares=[log])
    app.router.add_get("/app.js", app_js)
    app.router.add_get("/links.json", links)
    app.router.add_get("/hang.js", hang)
    app.router.add_get("/slow.js", slow)
    app.router.add_route("*", "/{tail:.*}", anything)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield runner
    await runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    made = Site()
    async for _ in _serve(made):
        yield made


@pytest.fixture
async def make_pool(site: Site) -> AsyncIterator[Callable[..., BrowserPool]]:
    """Builds pools whose scripts and XHR are fetched straight from the site."""
    require_browser()
    pools: list[BrowserPool] = []
    async with aiohttp.ClientSession() as session:

        async def fetch(url: str, _page: str, max_bytes: int) -> Fetched:
            async with session.get(url) as response:
                body = await response.read()
            if len(body) > max_bytes:
                raise PermanentFetchError(url, "too large")
            return Fetched(response.status, response.content_type, body)

        def make(**options: object) -> BrowserPool:
            settings = BrowserSettings(**{"executable": CHROMIUM, **options})  # type: ignore[arg-type]
            pool = BrowserPool(settings=settings, fetch=fetch, user_agent="topicrawl-test")
            pools.append(pool)
            return pool

        yield make
        for pool in pools:
            await pool.close()
