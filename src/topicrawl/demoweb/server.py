"""Serves a demo web over HTTP with aiohttp: every host on its own loopback address, one port."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from urllib.parse import parse_qs

from aiohttp import web as aioweb

from topicrawl.demoweb.changing import ChangeLog
from topicrawl.demoweb.graph import DemoWeb
from topicrawl.demoweb.model import DemoPage, Kind
from topicrawl.demoweb.render import (
    content_type,
    feed_xml,
    gzip_bomb,
    huge_chunks,
    render_document,
    robots_txt,
    sitemap_xml,
)
from topicrawl.demoweb.spa import DATA_PATH, SCRIPT_PATH, app_script, page_data, shell
from topicrawl.demoweb.threaded import ThreadedServer

__all__ = ["AccessRecord", "DemoWebServer"]

_Handler = Callable[[aioweb.Request], Awaitable[aioweb.StreamResponse]]
_NOT_FOUND = (
    b"<!DOCTYPE html><html><head><title>Not found</title></head><body><h1>404</h1></body></html>"
)


@dataclass(frozen=True, slots=True)
class AccessRecord:
    """One request the server saw: the host address it came in on, the raw path (with query),
    ``time.monotonic()`` when it arrived, and the status sent (0: the handler never answered,
    e.g. the client went away)."""

    host: str
    path: str
    at: float
    status: int
    method: str = "GET"


class DemoWebServer(ThreadedServer):
    """An aiohttp server for a :class:`DemoWeb`; use ``async with`` or :meth:`run_in_thread`.

    All hosts listen on the same port (``port=0``: an ephemeral one, the same for all).
    ``slow_delay`` is how long ``/lab/slow.html`` waits before it answers. The last
    ``log_size`` requests are kept in :meth:`access_log`. Flaky-page counters start at zero
    on every :meth:`start`. With ``changes`` (the "changing page" mode) the pages of that log
    change over time: their text says their version, their ETag is it, and a request whose
    ``If-None-Match`` matches gets 304. The hosts (addresses) in ``spa_hosts`` are single-page
    apps (see :mod:`topicrawl.demoweb.spa`): their documents are script shells.
    """

    thread_name = "demoweb"

    def __init__(
        self,
        web: DemoWeb,
        *,
        port: int = 0,
        slow_delay: float = 2.0,
        log_size: int = 10_000,
        changes: ChangeLog | None = None,
        spa_hosts: Collection[str] = (),
    ) -> None:
        if not 0 <= port <= 65535 or slow_delay < 0 or log_size < 1:
            raise ValueError("port must be 0..65535, slow_delay >= 0 and log_size >= 1")
        self._unbound = web
        self._port = port
        self._slow_delay = slow_delay
        self._log: deque[AccessRecord] = deque(maxlen=log_size)
        self._log_lock = threading.Lock()
        self._runner: aioweb.AppRunner | None = None
        self._web: DemoWeb | None = None
        self._hits: dict[tuple[str, str], int] = {}
        self._cache: dict[tuple[str, str], bytes] = {}
        self.changes = changes
        self.spa_hosts = frozenset(spa_hosts)
        unknown = self.spa_hosts - {h.address for h in web.hosts}
        if unknown:
            raise ValueError(f"spa_hosts not in the web: {sorted(unknown)}")

    @property
    def web(self) -> DemoWeb:
        """The served web, bound to the actual port.

        Raises:
            RuntimeError: the server has not been started.
        """
        if self._web is None:
            raise RuntimeError("the demo web server has not been started")
        return self._web

    @property
    def bases(self) -> dict[str, str]:
        """Base URL (``http://127.0.0.2:PORT/``) of every host, by address."""
        return self.web.bases()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self, *, attempts: int = 5) -> dict[str, str]:
        """Listen on every host address; returns the base URLs by address.

        With ``port=0`` a port free on the first address may be taken on another one; the
        server then tries another port, up to ``attempts`` times.

        Raises:
            RuntimeError: already started.
            OSError: the port (or every port tried) could not be bound on every address.
        """
        if self._runner is not None:
            raise RuntimeError("the demo web server is already started")
        error: OSError | None = None
        for _ in range(attempts):
            runner = aioweb.AppRunner(self._app(), access_log=None, shutdown_timeout=0.25)
            await runner.setup()
            try:
                port = await self._bind(runner)
            except OSError as exc:
                await runner.cleanup()
                error = exc
                if self._port:
                    break
                continue
            self._runner = runner
            self._web = self._unbound.at_port(port)
            self._hits.clear()
            self._cache.clear()
            return self.bases
        assert error is not None
        raise error

    async def _bind(self, runner: aioweb.AppRunner) -> int:
        port = self._port
        for host in self._unbound.hosts:
            site = aioweb.TCPSite(runner, host.address, port)
            await site.start()
            if port == 0:
                port = int(runner.addresses[0][1])
        return port

    async def stop(self) -> None:
        """Close every listener and connection (a no-op when not started)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- access log -----------------------------------------------------------------------------

    def access_log(self, host: str | None = None) -> list[AccessRecord]:
        """The kept requests in arrival order, optionally only those for one host address."""
        with self._log_lock:
            records = list(self._log)
        return [r for r in records if host is None or r.host == host]

    def clear_log(self) -> None:
        with self._log_lock:
            self._log.clear()

    # -- requests -------------------------------------------------------------------------------

    def _app(self) -> aioweb.Application:
        @aioweb.middleware
        async def log_requests(request: aioweb.Request, handler: _Handler) -> aioweb.StreamResponse:
            arrived = time.monotonic()
            status = 0
            try:
                response = await handler(request)
                status = response.status
                return response
            except aioweb.HTTPException as exc:
                status = exc.status
                raise
            finally:
                record = AccessRecord(
                    self._host_of(request), request.raw_path, arrived, status, request.method
                )
                with self._log_lock:
                    self._log.append(record)

        app = aioweb.Application(middlewares=[log_requests])
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    def _host_of(self, request: aioweb.Request) -> str:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        if sockname:
            return str(sockname[0])
        return (request.host or "").rsplit(":", 1)[0]

    async def _handle(self, request: aioweb.Request) -> aioweb.StreamResponse:
        web = self.web
        host = self._host_of(request)
        if host in self.spa_hosts:
            answer = self._app_resource(request)
            if answer is not None:
                return answer
        page = web.lookup(host, request.raw_path.split("?", 1)[0])
        if page is None:
            return _response(404, _NOT_FOUND, "text/html; charset=utf-8")
        kind = page.kind
        if kind is Kind.ROBOTS:
            return _response(200, robots_txt(web, host).encode(), content_type(page))
        if kind is Kind.SITEMAP:
            return _response(200, sitemap_xml(web, host).encode(), content_type(page))
        if kind is Kind.FEED:
            return _response(200, feed_xml(web, page).encode(), content_type(page))
        if kind is Kind.REDIRECT and page.redirect is not None:
            location = page.redirect.href(page=page, port=web.port)
            response = _response(page.status, b"<p>Moved.</p>", "text/html; charset=utf-8")
            response.headers["Location"] = location
            return response
        if kind is Kind.ERROR:
            return _response(500, b"<h1>Internal Server Error</h1>", content_type(page))
        if kind is Kind.FILE:
            return _response(200, page.body, content_type(page))
        if kind is Kind.BOMB:
            body = await asyncio.get_running_loop().run_in_executor(None, gzip_bomb, page.size)
            response = _response(200, body, content_type(page))
            response.headers["Content-Encoding"] = "gzip"
            return response
        if kind is Kind.HUGE:
            return await self._stream(request, page)
        if kind is Kind.FLAKY:
            key = (host, page.path)
            self._hits[key] = self._hits.get(key, 0) + 1
            if self._hits[key] <= web.flaky_failures:
                return _response(503, b"<h1>Service Unavailable</h1>", "text/html; charset=utf-8")
        if kind is Kind.SLOW:
            await asyncio.sleep(self._slow_delay)
        if host in self.spa_hosts:
            return _response(200, shell(page), "text/html; charset=utf-8")
        if self.changes is not None and self.changes.changes(host, page.path):
            return self._changing(request, page, self.changes.version(host, page.path, time.time()))
        return _response(200, self._document(page), content_type(page))

    def _app_resource(self, request: aioweb.Request) -> aioweb.Response | None:
        """The single-page app's script and page data, or None for any other path."""
        path, _, query = request.raw_path.partition("?")
        if path == SCRIPT_PATH:
            return _response(200, app_script(), "text/javascript; charset=utf-8")
        if path != DATA_PATH:
            return None
        wanted = parse_qs(query).get("path", [""])[0]
        page = self.web.lookup(self._host_of(request), wanted) if wanted else None
        if page is None or not page.is_document:
            return _response(404, b'{"error": "no such page"}', "application/json")
        return _response(200, page_data(self.web, page), "application/json; charset=utf-8")

    def _changing(self, request: aioweb.Request, page: DemoPage, version: int) -> aioweb.Response:
        etag = f'"v{version}"'
        if request.headers.get("If-None-Match") == etag:
            return aioweb.Response(status=304, headers={"ETag": etag})
        note = f"<p>Revision {version} of this page.</p></body>".encode()
        body = self._document(page).replace(b"</body>", note, 1)
        response = _response(200, body, content_type(page))
        response.headers["ETag"] = etag
        return response

    def _document(self, page: DemoPage) -> bytes:
        if page.kind is Kind.CALENDAR:  # endless: not cached
            return render_document(self.web, page)
        key = (page.host, page.path)
        body = self._cache.get(key)
        if body is None:
            body = self._cache[key] = render_document(self.web, page)
        return body

    async def _stream(self, request: aioweb.Request, page: DemoPage) -> aioweb.StreamResponse:
        """Send the huge page chunked (no Content-Length), stopping if the client goes away."""
        response = aioweb.StreamResponse(headers={"Content-Type": content_type(page)})
        await response.prepare(request)
        # A client that stops reading at its size cap resets the connection: stop sending.
        with contextlib.suppress(ConnectionError):
            for chunk in huge_chunks(self.web, page):
                await response.write(chunk)
            await response.write_eof()
        return response


def _response(status: int, body: bytes, ctype: str) -> aioweb.Response:
    return aioweb.Response(status=status, body=body, headers={"Content-Type": ctype})
