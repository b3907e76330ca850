"""A domain added to a running crawl (``crawl-ns add-seeds``) is in every running worker's
scope at once, not from its next heartbeat on: a link to it found right after is followed
(issue 27)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import asyncpg
from aiohttp import web
from redis.asyncio import Redis

PATIENCE = 300.0  # seconds a wait for something sure to happen may last before failing


@dataclass
class TwoSites:
    """Site A (127.0.0.1) whose page /wait answers only once ``release`` is set, linking to
    site B (127.0.0.2, another registered domain); the paths each site served."""

    port: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    served: list[str] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None

    def url(self, site: str, path: str) -> str:
        ip = "127.0.0.1" if site == "a" else "127.0.0.2"
        return f"http://{ip}:{self.port}{path}"

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None
        return self._loop

    async def page(self, request: web.Request) -> web.Response:
        where = "a" if request.host.startswith("127.0.0.1") else "b"
        self.served.append(f"{where}{request.path}")
        links = ""
        if where == "a" and request.path == "/":
            links = '<a href="/wait">wait</a>'
        elif where == "a" and request.path == "/wait":
            while not self.release.is_set():
                await asyncio.sleep(0.02)
            links = f'<a href="{self.url("b", "/b0")}">b</a>'
        body = f"<html><head><title>{request.path}</title></head><body>{links}</body></html>"
        return web.Response(text=body, content_type="text/html")


@contextmanager
def serve_two_sites() -> Iterator[TwoSites]:
    """Serve both sites on one free port from a thread of their own (its own event loop)."""
    sites = TwoSites()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        sites.port = probe.getsockname()[1]
    ready = threading.Event()
    stop: list[asyncio.Event] = []

    async def serve() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", sites.page)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        for ip in ("127.0.0.1", "127.0.0.2"):
            await web.TCPSite(runner, ip, sites.port).start()
        stop.append(asyncio.Event())
        sites._loop = asyncio.get_running_loop()
        ready.set()
        await stop[0].wait()
        await runner.cleanup()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(60), "the test sites did not start"
    try:
        yield sites
    finally:
        sites.release.set()
        loop = sites.loop
        loop.call_soon_threadsafe(stop[0].set)
        thread.join(10)


async def test_a_link_to_a_domain_added_while_running_is_followed_at_once(
    redis_url: str, postgres_url: str
) -> None:
    namespace, schema = f"it-{uuid.uuid4().hex[:12]}", f"it_{uuid.uuid4().hex[:12]}"
    where = ["--redis", redis_url, "--namespace", namespace]
    env = {**os.environ, "TOPICRAWL_PARSE_WORKERS": "0", "TOPICRAWL_PAGES_IN_HAND": "1"}
    env["TOPICRAWL_FETCH__TIMEOUT"] = str(PATIENCE)
    env["TOPICRAWL_FRONTIER__LEASE_TTL"] = str(6 * PATIENCE)
    with serve_two_sites() as sites:
        # One page at a time, and a heartbeat (its scope refresh) far beyond the test: the
        # link to B on /wait is judged before any other URL is popped.
        argv = [sys.executable, "-m", "topicrawl.cli", "worker", *where, "--node-id", "w1"]
        argv += ["--db", f"{postgres_url}?schema={schema}", "--strategy", "bfs"]
        argv += ["--concurrency", "1", "--ignore-robots", "--seed", sites.url("a", "/")]
        argv += ["--heartbeat-interval", "600", "--heartbeat-timeout", "1200"]
        argv += ["--quiet"]
        worker = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + PATIENCE
            while "a/wait" not in sites.served:
                assert worker.poll() is None, worker.communicate()[1]
                assert time.monotonic() < deadline, "the worker never asked for /wait"
                await asyncio.sleep(0.05)
            # B's seed is a page no link leads to; its domain is what matters here.
            add = [sys.executable, "-m", "topicrawl.cli", "crawl-ns", "add-seeds", *where]
            added = await asyncio.to_thread(
                subprocess.run,
                [*add, "--seed", sites.url("b", "/seed")],
                env=env,
                capture_output=True,
                text=True,
                timeout=PATIENCE,
                check=False,
            )
            assert added.returncode == 0, added.stderr
            await asyncio.sleep(2.0)  # the announcement's way to the worker (not asserted on)
            sites.release.set()
            _, errors = await asyncio.to_thread(worker.communicate, timeout=PATIENCE)
            assert worker.returncode == 0, errors
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
            await _drop(redis_url, postgres_url, namespace, schema)
    assert {"a/", "a/wait", "b/seed", "b/b0"} <= set(sites.served), sites.served


async def _drop(redis_url: str, postgres_url: str, namespace: str, schema: str) -> None:
    client = Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
    connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()
