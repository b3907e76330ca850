"""A worker keeps per_host requests going while its acks wait for the storage flush (issue 27,
item 1), and never more than per_host at once to the host, over all workers.

A one-host site whose pages each take 20 ms, a flush every 2 s. Before the fix a worker's
unacked leases counted against per_host, so it stored at most per_host pages per flush and
never had more than per_host leases out.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest
from aiohttp import web
from redis.asyncio import Redis

PAGES = 60
PER_HOST = 2


@dataclass
class SlowSite:
    """Pages 0..PAGES-1, each linking to the next three, answered after 20 ms; counts requests
    in flight."""

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
            links = "".join(
                f'<a href="/p/{k}.html">page {k}</a> '
                for k in range(3 * number + 1, 3 * number + 4)
                if k < PAGES
            )
            body = f"<html><head><title>p{number}</title></head><body><p>{links}</p></body></html>"
            return web.Response(text=body, content_type="text/html")
        finally:
            self.now -= 1


@pytest.fixture
def slow_site() -> Iterator[SlowSite]:
    site = SlowSite()
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


async def test_a_worker_pipelines_past_its_flush_and_keeps_per_host(
    slow_site: SlowSite, redis_url: str, postgres_url: str, tmp_path: Path
) -> None:
    namespace, schema = f"it-{uuid.uuid4().hex[:12]}", f"it_{uuid.uuid4().hex[:12]}"
    argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--quiet", "--node-id", "w1"]
    argv += ["--redis", redis_url, "--namespace", namespace, "--strategy", "bfs"]
    argv += ["--db", f"{postgres_url}?schema={schema}", "--max-pages", "0"]
    argv += ["--concurrency", "4", "--per-host", str(PER_HOST), "--ignore-robots"]
    argv += ["--seed", f"http://127.0.0.1:{slow_site.port}/p/0.html"]
    env = {**os.environ, "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "2", "TOPICRAWL_PARSE_WORKERS": "0"}
    log = tmp_path / "worker.log"
    client = Redis.from_url(redis_url)
    most_leases = 0
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(1200):  # at most ~120 s; the old code needed ~60 s, the new ~3 s
            most_leases = max(most_leases, await client.hlen(f"topicrawl:{{{namespace}}}:lease"))
            if proc.poll() is not None:
                break
            await asyncio.sleep(0.1)
        assert proc.wait(30) == 0, log.read_text(errors="replace")
        connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
        try:
            stored = await connection.fetchval(f'SELECT count(*) FROM "{schema}".pages')
            await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
        finally:
            await connection.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        keys = [key async for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
    assert stored == PAGES
    assert len(slow_site.served) == PAGES
    assert slow_site.most <= PER_HOST
    # Pages stored but not yet flushed keep their leases, not their host's request slots.
    assert most_leases > PER_HOST
