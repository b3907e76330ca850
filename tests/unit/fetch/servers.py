"""Real loopback HTTP servers and fetcher helpers for the fetch tests."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from topicrawl.core.config import FetchSettings
from topicrawl.fetch import HttpFetcher

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Servers:
    """Starts aiohttp apps on 127.0.0.1 and counts the requests each path gets."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self._servers: list[TestServer] = []
        self._cleanups: list[Callable[[], Awaitable[None]]] = []

    def on_close(self, cleanup: Callable[[], Awaitable[None]]) -> None:
        """Run ``cleanup`` after the servers are closed."""
        self._cleanups.append(cleanup)

    async def serve(self, routes: dict[str, Handler]) -> str:
        """Start an app serving ``routes`` (path -> handler); return its base URL."""

        @web.middleware
        async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
            self.hits[request.path] += 1
            return await handler(request)

        app = web.Application(middlewares=[count])
        for path, handler in routes.items():
            app.router.add_route("GET", path, handler)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        self._servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    async def close(self) -> None:
        for server in self._servers:
            await server.close()
        for cleanup in self._cleanups:
            await cleanup()


class Sleeps:
    """An injectable ``sleep`` that records the waits and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def settings(**overrides: Any) -> FetchSettings:
    """Fetch settings for tests: tiny backoff, short timeouts."""
    values: dict[str, Any] = {"timeout": 5.0, "connect_timeout": 2.0, "backoff_base": 0.01}
    values.update(overrides)
    return FetchSettings(**values)


@asynccontextmanager
async def fetcher_for(**kwargs: Any) -> AsyncIterator[HttpFetcher]:
    """An HttpFetcher that is closed afterwards; ``settings`` may be given as a dict."""
    fetcher = HttpFetcher(**kwargs)
    try:
        yield fetcher
    finally:
        await fetcher.close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def html(text: str, *, charset: str = "utf-8", status: int = 200) -> web.Response:
    return web.Response(
        body=text.encode(charset),
        status=status,
        headers={"Content-Type": f"text/html; charset={charset}"},
    )


@asynccontextmanager
async def raw_http(answer: bytes) -> AsyncIterator[str]:
    """A loopback server that answers every connection with ``answer``, byte for byte (for
    responses aiohttp's own server will not produce, e.g. without a Content-Type)."""

    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(reply, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()
