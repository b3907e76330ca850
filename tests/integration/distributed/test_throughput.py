"""A worker keeps per_host requests going while its acks wait for the storage flush (issue 27,
item 1), and never more than per_host at once to the host, over all workers.

A one-host site whose pages each take 20 ms, a flush every 2 s. Before the fix a worker's
unacked leases counted against per_host, so it stored at most per_host pages per flush and
never had more than per_host leases out.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from redis.asyncio import Redis

from tests.integration.distributed.slowsite import SlowSite, serve_slow_site

PAGES = 60
PER_HOST = 2


@pytest.fixture
def slow_site() -> Iterator[SlowSite]:
    with serve_slow_site(PAGES) as site:
        yield site


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
