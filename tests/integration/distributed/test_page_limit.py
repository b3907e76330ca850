"""A worker has no page limit unless given one, and says so when it stops at one (issue 27,
item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import asyncpg
import pytest
from redis.asyncio import Redis

from tests.integration.distributed.slowsite import SlowSite, serve_slow_site
from topicrawl.cli.distributed import worker_settings


@pytest.fixture
def slow_site() -> Iterator[SlowSite]:
    with serve_slow_site(40) as site:
        yield site


def test_a_worker_has_no_page_limit_unless_one_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert worker_settings(None, {}).max_pages == 0
    assert worker_settings(None, {"max_pages": 7}).max_pages == 7
    monkeypatch.setenv("TOPICRAWL_MAX_PAGES", "5")
    assert worker_settings(None, {}).max_pages == 5


async def test_a_worker_stopped_by_the_page_limit_says_so(
    slow_site: SlowSite, redis_url: str, postgres_url: str
) -> None:
    namespace, schema = f"it-{uuid.uuid4().hex[:12]}", f"it_{uuid.uuid4().hex[:12]}"
    argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--node-id", "w1"]
    argv += ["--redis", redis_url, "--namespace", namespace, "--strategy", "bfs"]
    argv += ["--db", f"{postgres_url}?schema={schema}", "--max-pages", "10"]
    argv += ["--concurrency", "2", "--per-host", "2", "--ignore-robots"]
    argv += ["--seed", f"http://127.0.0.1:{slow_site.port}/p/0.html"]
    env = {**os.environ, "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "0.2", "TOPICRAWL_PARSE_WORKERS": "0"}
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=180, check=False
        )
    finally:
        client = Redis.from_url(redis_url)
        keys = [key async for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
        connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
        try:
            stored = await connection.fetchval(f'SELECT count(*) FROM "{schema}".pages')
            await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
        finally:
            await connection.close()
    assert done.returncode == 0, done.stderr
    assert stored == 10
    said = " ".join(done.stderr.split())
    assert "the crawl reached its page limit: max_pages 10 pages stored by all workers" in said
    assert "URLs left queued" in said
    assert f"topicrawl crawl-ns set --namespace {namespace} --max-pages N" in said
