"""Loopback servers for the engine's integration tests: a calendar trap, a site that works,
a host whose robots.txt answers 500, and a port nobody listens on."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Routes = dict[str, Handler]


def _page(title: str, body: str) -> web.Response:
    html = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    return web.Response(text=html, content_type="text/html")


async def _calendar(request: web.Request) -> web.Response:
    """A calendar trap: every day links to the next and the previous one, for ever."""
    day = int(request.query.get("date", "0"))
    links = " ".join(
        f'<p><a href="/cal?date={d}">{label}</a></p>'
        for d, label in ((day + 1, "next day"), (day - 1, "previous day"))
    )
    return _page(f"Day {day}", f"<p>Events on day {day}: none scheduled.</p>{links}")


async def _site(request: web.Request) -> web.Response:
    """Ten pages about threads in a row, each linking to the next."""
    number = int(request.match_info["n"])
    link = f'<a href="/page/{number + 1}">java threads part {number + 1}</a>' if number < 9 else ""
    return _page(f"Java threads {number}", f"<p>Java threads and locks, part {number}.</p>{link}")


async def _robots_500(request: web.Request) -> web.Response:
    return web.Response(status=500, text="robots.txt is broken")


@asynccontextmanager
async def serve(routes: Routes) -> AsyncIterator[str]:
    """An app serving ``routes`` on 127.0.0.1 (robots.txt answers 404 unless routed); yields
    its base URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


def calendar_trap() -> Routes:
    return {"/cal": _calendar}


def working_site() -> Routes:
    return {"/page/{n}": _site}


def broken_robots() -> Routes:
    return {"/robots.txt": _robots_500, "/page/{n}": _site}


def refused_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
