"""A one-host site of slow pages for worker tests: counts the requests it has in flight."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web


def page_response(number: int, pages: int) -> web.Response:
    """Page ``number`` of ``pages``, linking to the next three."""
    links = "".join(
        f'<a href="/p/{k}.html">page {k}</a> '
        for k in range(3 * number + 1, 3 * number + 4)
        if k < pages
    )
    body = f"<html><head><title>p{number}</title></head><body><p>{links}</p></body></html>"
    return web.Response(text=body, content_type="text/html")


@dataclass
class SlowSite:
    """Pages 0..pages-1, each linking to the next three, answered after 20 ms; counts requests
    in flight."""

    pages: int = 60
    port: int = 0
    now: int = 0
    most: int = 0
    served: list[str] = field(default_factory=list)

    async def page(self, request: web.Request) -> web.Response:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.02)
            number = int(request.match_info["n"])
            self.served.append(request.path)
            return page_response(number, self.pages)
        finally:
            self.now -= 1


@contextmanager
def serve_slow_site(pages: int = 60) -> Iterator[SlowSite]:
    """Serve pages 0..pages-1 on 127.0.0.1 (a free port) in a thread."""
    site = SlowSite(pages=pages)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        site.port = probe.getsockname()[1]
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_get("/p/{n}.html", site.page)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", site.port).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield site
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.run_until_complete(runner.cleanup())
    loop.close()
