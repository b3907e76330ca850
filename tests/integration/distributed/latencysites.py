"""Several one-port sites (one host each) that answer after a latency and record when each
request arrived, per host: for tests of the per-host delay at the server's end."""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web

from tests.integration.distributed.slowsite import page_response


@dataclass
class LatencySites:
    """``hosts`` sites of pages 0..pages-1, each linking to the next three, answered after
    ``latency`` seconds; ``arrivals`` maps each host (``127.0.0.1:port``) to the monotonic
    times its page requests arrived."""

    hosts: int
    pages: int
    latency: float
    ports: list[int] = field(default_factory=list)
    arrivals: dict[str, list[float]] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)  # (host + path) answered 503 once already
    extras: bool = False  # the first page also links to a redirect and a once-failing page
    # Requests answered 403 instead (checked as they come: may be set once serving).
    refuse: Callable[[web.Request], bool] | None = None

    def bases(self) -> list[str]:
        return [f"http://127.0.0.1:{port}/" for port in self.ports]

    async def page(self, request: web.Request) -> web.Response:
        if self.refuse is not None and self.refuse(request):
            return web.Response(status=403, text="forbidden")
        self.arrivals.setdefault(request.host, []).append(time.monotonic())
        await asyncio.sleep(self.latency)
        number = int(request.match_info.get("n", "0"))
        if self.extras and request.path == "/":
            links = f'<a href="/r/{self.pages}">r</a> <a href="/e/{self.pages + 1}">e</a>'
            return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        return page_response(number, self.pages)

    async def robots(self, request: web.Request) -> web.Response:
        """robots.txt (recorded like a page): everything allowed."""
        self.arrivals.setdefault(request.host, []).append(time.monotonic())
        return web.Response(text="User-agent: *\nAllow: /\n")

    async def redirect(self, request: web.Request) -> web.Response:
        """/r/N redirects to page N (recorded: the hop is a request of its own)."""
        self.arrivals.setdefault(request.host, []).append(time.monotonic())
        raise web.HTTPFound(f"/p/{request.match_info['n']}.html")

    async def flaky(self, request: web.Request) -> web.Response:
        """/e/N answers 503 the first time (the fetcher retries), then page N."""
        key = request.host + request.path
        if key not in self.failed:
            self.arrivals.setdefault(request.host, []).append(time.monotonic())
            self.failed.add(key)
            return web.Response(status=503, text="busy")
        return await self.page(request)

    def closest(self) -> dict[str, float]:
        """Per host, the least time between two requests arriving one after the other."""
        gaps: dict[str, float] = {}
        for host, times in self.arrivals.items():
            ordered = sorted(times)
            gaps[host] = min((b - a for a, b in itertools.pairwise(ordered)), default=float("inf"))
        return gaps


@contextmanager
def serve_latency_sites(
    *, hosts: int, pages: int, latency: float, extras: bool = False
) -> Iterator[LatencySites]:
    """Serve the sites on 127.0.0.1 (free ports) from a thread of their own (a test's event
    loop may be running); robots.txt is a 404, unless ``extras``: then robots.txt, the
    redirects /r/N and the once-failing /e/N are served and recorded too."""
    sites = LatencySites(hosts=hosts, pages=pages, latency=latency, extras=extras)
    app = web.Application()
    app.router.add_get("/", sites.page)
    app.router.add_get("/p/{n}.html", sites.page)
    if extras:
        app.router.add_get("/robots.txt", sites.robots)
        app.router.add_get("/r/{n}", sites.redirect)
        app.router.add_get("/e/{n}", sites.flaky)
    runner = web.AppRunner(app, access_log=None)

    async def start() -> None:
        await runner.setup()
        for _ in range(hosts):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            await web.TCPSite(runner, "127.0.0.1", port).start()
            sites.ports.append(port)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(30)
        yield sites
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
