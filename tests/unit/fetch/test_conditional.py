"""Conditional requests for revisits: validators go with the request, a 304 is an answer."""

from __future__ import annotations

from aiohttp import web

from tests.unit.fetch.servers import Servers, fetcher_for, html, settings
from topicrawl.core.models import Request
from topicrawl.engine.revisit import ConditionalFetcher
from topicrawl.fetch import HttpFetcher

PAGE = "<html><head><title>t</title></head><body>same</body></html>"


def test_http_fetcher_can_send_validators() -> None:
    assert isinstance(HttpFetcher(settings=settings()), ConditionalFetcher)


async def test_a_matching_etag_gets_304_with_an_empty_body(servers: Servers) -> None:
    sent: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        sent.append(request.headers.get("If-None-Match"))
        if request.headers.get("If-None-Match") == '"v1"':
            return web.Response(status=304, headers={"ETag": '"v1"'})
        response = html(PAGE)
        response.headers["ETag"] = '"v1"'
        return response

    base = await servers.serve({"/p": handler})
    async with fetcher_for(settings=settings()) as fetcher:
        first = await fetcher.fetch(Request(url=f"{base}/p"))
        again = await fetcher.fetch(Request(url=f"{base}/p"), headers={"If-None-Match": '"v1"'})
        changed = await fetcher.fetch(Request(url=f"{base}/p"), headers={"If-None-Match": '"v0"'})
    assert first.status == 200
    assert first.headers["ETag"] == '"v1"'
    assert (again.status, again.body, again.headers["ETag"]) == (304, b"", '"v1"')
    assert changed.status == 200
    assert changed.body == PAGE.encode()
    assert sent == [None, '"v1"', '"v0"']


async def test_validators_do_not_follow_a_redirect(servers: Servers) -> None:
    sent: list[str | None] = []

    async def moved(request: web.Request) -> web.Response:
        return web.Response(status=301, headers={"Location": "/new"})

    async def new(request: web.Request) -> web.Response:
        sent.append(request.headers.get("If-Modified-Since"))
        return html(PAGE)

    base = await servers.serve({"/old": moved, "/new": new})
    async with fetcher_for(settings=settings()) as fetcher:
        response = await fetcher.fetch(
            Request(url=f"{base}/old"),
            headers={"If-Modified-Since": "Wed, 01 Jan 2025 00:00:00 GMT"},
        )
    assert response.status == 200
    assert sent == [None]
