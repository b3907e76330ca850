"""What the dashboard tests share: a hostile site, crawls into a database, a live server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import uvicorn

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWebServer
from topicrawl.engine import run_crawl
from topicrawl.web.app import DashboardConfig, create_app

T = TypeVar("T")

MARKER = "PWNED"  # what a script from a crawled page would print, show or send if it ran
SEARCH_WORD = "quokka"  # in every hostile page's text, nowhere in the demo web


def _hostile_pages(trap: str) -> dict[str, str]:
    """Pages that would run script in a careless dashboard; each says ``quokka``."""
    run = f"alert('{MARKER}');console.log('{MARKER}');fetch('{trap}?fetch')"
    return {
        "/script.html": (
            f"<title>script tag</title><p>{SEARCH_WORD} script</p><script>{run}</script>"
        ),
        "/handlers.html": (
            f'<title>handlers</title><body onload="{run}"><p>{SEARCH_WORD} handlers</p>'
            f'<img src="/nope.png" onerror="{run}"><div onmouseover="{run}">hover</div></body>'
        ),
        "/jslink.html": (
            f"<title>javascript link</title><p>{SEARCH_WORD} links</p>"
            f'<a href="javascript:{run}">click me</a>'
        ),
        "/refresh.html": (
            f'<title>meta refresh</title><meta http-equiv="refresh" content="0;url={trap}?refresh">'
            f"<p>{SEARCH_WORD} refresh</p>"
        ),
        "/svg.html": (
            f"<title>svg</title><p>{SEARCH_WORD} svg</p>"
            f'<svg xmlns="http://www.w3.org/2000/svg"><script>{run}</script>'
            f'<image href="{trap}?svgimage" onload="{run}"/></svg>'
        ),
        "/title.html": (
            f"<title>&lt;img src=x onerror=alert('{MARKER}')&gt;&lt;b&gt;bold title</title>"
            f"<p>{SEARCH_WORD} title markup</p>"
        ),
    }


@dataclass
class HostileSite:
    """Serves the hostile pages on loopback and records every request a browser makes."""

    server: ThreadingHTTPServer
    browser_requests: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def seeds(self) -> tuple[str, ...]:
        return (f"{self.base}/",)


@contextlib.contextmanager
def hostile_site() -> Iterator[HostileSite]:
    """The hostile site in a thread; its index links every page."""
    site: HostileSite

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if "Chrome" in self.headers.get("User-Agent", ""):
                site.browser_requests.append(self.path)
            pages = _hostile_pages(f"{site.base}/trap")
            if self.path == "/":
                links = "".join(f'<a href="{path}">{path}</a> ' for path in pages)
                self._send(200, f"<title>hostile index</title><p>{SEARCH_WORD}</p>{links}")
            elif self.path in pages:
                self._send(200, pages[self.path])
            else:
                self._send(404, "<title>missing</title>")

        def _send(self, status: int, html: str) -> None:
            body = f"<!DOCTYPE html><html><head></head><body>{html}</body></html>".encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site = HostileSite(server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def crawl_settings(
    seeds: tuple[str, ...], hosts: tuple[str, ...], db: Path, **extra: object
) -> CrawlSettings:
    options: dict[str, object] = {
        "seeds": seeds,
        "topics": ("astronomy telescope galaxy planet",),
        "strategy": "focused",
        "max_pages": 0,
        "concurrency": 8,
        "parse_workers": 0,
        "politeness": {"per_host": 4},
        "scope": {"allowed_domains": hosts, "max_depth": 6},
        "fetch": {"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 0.5},
        "storage": {"url": str(db), "flush_interval": 0.2, "keep_body": True},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]


def crawl_demo(
    server: DemoWebServer, db: Path, hostile: HostileSite | None = None, **extra: object
) -> None:
    """A focused crawl of the demo web (and of the hostile site, when given) into ``db``."""
    bases = server.web.bases()
    seeds, hosts = tuple(bases.values()), tuple(bases)
    if hostile is not None:
        seeds, hosts = (*seeds, *hostile.seeds()), (*hosts, "127.0.0.1")
    run_async(run_crawl(crawl_settings(seeds, hosts, db, **extra)))


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end on a loop of its own thread (Playwright's sync API keeps
    a loop running in the test's thread)."""
    return in_thread(lambda: asyncio.run(coroutine))


def in_thread(work: Callable[[], T]) -> T:
    """Call ``work`` in a thread of its own (so it may run an event loop) and return its result."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


@dataclass
class LiveDashboard:
    """A dashboard served by uvicorn from a thread, on a port of its own."""

    base: str
    token: str | None


@contextlib.contextmanager
def live_dashboard(
    db: Path, *, token: str | None = None, redis_url: str | None = None, namespace: str = ""
) -> Iterator[LiveDashboard]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = DashboardConfig(
        db_url=str(db), port=port, token=token, redis_url=redis_url, namespace=namespace
    )
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the dashboard did not start")
        time.sleep(0.05)
    try:
        yield LiveDashboard(base=f"http://127.0.0.1:{port}", token=token)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
