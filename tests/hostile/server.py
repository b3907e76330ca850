"""A web server that misbehaves on purpose, over raw asyncio sockets.

HTTP libraries refuse to lie about Content-Length, send bytes after a body or drip headers,
so this one writes its answers byte by byte itself. Every page it serves as a page is
remembered in :attr:`HostileServer.sent` (canonical URL -> SHA-256 of the body as a client
should read it), so a test can check each stored page against what was sent for its URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from topicrawl.demoweb.threaded import ThreadedServer
from topicrawl.parse.urls import canonicalize

__all__ = ["Exchange", "Handler", "HostileServer", "Route", "page_body", "response_head"]

MAX_REQUEST_HEAD = 64 * 1024
SMUGGLED = b"<html><head><title>SMUGGLED</title></head><body><p>not yours</p></body></html>"


def page_body(
    path: str,
    links: tuple[str, ...] = (),
    extra: str = "",
    *,
    about: str = "java thread concurrency",
) -> bytes:
    """A small page whose title and text name its own path (the marker a test checks)."""
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f"<!DOCTYPE html><html><head><title>page {path}</title></head><body>"
        f"<h1>page {path}</h1><p>marker {path}: {about}</p>"
        f"<ul>{anchors}</ul>{extra}</body></html>"
    ).encode()


def response_head(status: int, headers: Mapping[str, str] | list[tuple[str, str]]) -> bytes:
    items = headers.items() if isinstance(headers, Mapping) else headers
    lines = [f"HTTP/1.1 {status} X"] + [f"{name}: {value}" for name, value in items]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


@dataclass
class Exchange:
    """One request on a connection, and the means to answer it."""

    server: HostileServer
    path: str
    port: int
    writer: asyncio.StreamWriter
    keep_alive: bool = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def remember(self, body: bytes, path: str | None = None) -> None:
        """Note ``body`` as the page this server sent for ``path`` (default: the request's)."""
        url = f"http://127.0.0.1:{self.port}{path or self.path}"
        self.server.sent[canonicalize(url)] = hashlib.sha256(body).hexdigest()

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def page(
        self, body: bytes, *, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> None:
        """A well-formed answer with Content-Length, remembered as this URL's page."""
        values = {"Content-Type": "text/html; charset=utf-8", "Content-Length": str(len(body))}
        values.update(headers or {})
        if status < 300:
            self.remember(body)
        await self.send(response_head(status, values) + body)

    async def redirect(self, location: str, status: int = 302) -> None:
        await self.send(response_head(status, {"Location": location, "Content-Length": "0"}))


Handler = Callable[[Exchange], Awaitable[None]]
Route = Callable[[str, int], Handler | None]


@dataclass
class HostileServer(ThreadedServer):
    """Serves ``route(path)`` on ``ports`` listeners of 127.0.0.1 (0: an ephemeral port).

    ``route`` gets the raw path (with query) and the listener's index and returns the
    handler, or None for a 404. Answers on a connection are written in order; a handler
    sets ``keep_alive = False`` to close the connection after it.
    """

    route: Route
    listeners: int = 1
    sent: dict[str, str] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    connections: int = 0
    _servers: list[asyncio.Server] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    thread_name = "hostile-server"

    def base(self, index: int = 0) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"

    async def start(self) -> object:
        for index in range(self.listeners):
            server = await asyncio.start_server(
                lambda r, w, i=index: self._serve(r, w, i), "127.0.0.1", 0, limit=MAX_REQUEST_HEAD
            )
            self._servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._servers.clear()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, index: int
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                    return
                path = head.split(b"\r\n", 1)[0].split(b" ")[1].decode("latin-1")
                self.requests.append(f"{index}:{path}")
                exchange = Exchange(self, path, self.ports[index], writer)
                handler = self.route(path, index)
                if handler is None:
                    await exchange.page(b"<html><title>404</title></html>", status=404)
                else:
                    await handler(exchange)
                if not exchange.keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
