"""Defaults and small items of issue 27: PostgreSQL URLs (item 5), timing defaults and their
checks (item 6), a Redis pool sized from the concurrency (item 7)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import uuid

import asyncpg
import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError
from topicrawl.distributed import DistributedSettings, RedisFrontier, load_distributed
from topicrawl.distributed.worker import check_timing, redis_pool_size
from topicrawl.storage import SqlStorage


async def test_a_mixed_case_schema_is_created_and_used(postgres_url: str) -> None:
    schema = f"Crawl_{uuid.uuid4().hex[:8]}"
    storage = SqlStorage(f"{postgres_url}?schema={schema}")
    await storage.open()
    try:
        await storage.start_run(name="bfs", config="{}")
        assert await storage.count_pages() == 0
    finally:
        await storage.close()
    connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
    try:
        tables = await connection.fetchval(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema
        )
        runs = await connection.fetchval(f'SELECT count(*) FROM "{schema}".runs')
        await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await connection.close()
    assert tables > 0
    assert runs == 1


async def test_libpq_parameters_are_passed_to_asyncpg(postgres_url: str) -> None:
    schema = f"url_{uuid.uuid4().hex[:8]}"
    url = f"{postgres_url}?sslmode=disable&schema={schema}&target_session_attrs=any"
    storage = SqlStorage(url)
    await storage.open()
    try:
        assert await storage.count_pages() == 0
    finally:
        await storage.close()
    connection = await asyncpg.connect(postgres_url.replace("+asyncpg", ""))
    try:
        await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await connection.close()


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("sslmode=sometimes", "sslmode='sometimes'"),
        ("keepalives=1", "keepalives not supported"),
        ("sslmode=disable&sslmode=require", "give it once"),
    ],
)
async def test_a_bad_url_parameter_is_refused_clearly(
    postgres_url: str, query: str, said: str
) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(")):
        SqlStorage(f"{postgres_url}?{query}")


def test_a_worker_with_a_bad_url_parameter_exits_2_with_the_reason(
    postgres_url: str, redis_url: str
) -> None:
    argv = [sys.executable, "-m", "topicrawl.cli", "worker", "--redis", redis_url]
    argv += ["--namespace", f"it-{uuid.uuid4().hex[:8]}", "--seed", "http://127.0.0.1:9/"]
    argv += ["--db", f"{postgres_url}?foo=bar"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "foo not supported" in " ".join(done.stderr.split())


def test_timing_defaults_find_a_dead_worker_within_seconds() -> None:
    settings = DistributedSettings()
    assert (settings.heartbeat_interval, settings.heartbeat_timeout) == (5.0, 15.0)
    assert settings.lock_ttl <= settings.heartbeat_timeout
    check_timing(CrawlSettings(), settings)  # the default lease TTL outlasts the timeout


def test_a_lock_ttl_past_the_heartbeat_timeout_is_refused() -> None:
    with pytest.raises(ConfigError, match="lock_ttl"):
        load_distributed(heartbeat_interval=5, heartbeat_timeout=15, lock_ttl=60)


def test_a_lease_ttl_shorter_than_the_heartbeat_timeout_is_refused() -> None:
    settings = CrawlSettings(fetch={"timeout": 5.0}, frontier={"lease_ttl": 10.0})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="lease_ttl"):
        check_timing(settings, DistributedSettings())


async def test_a_pool_sized_for_concurrency_128_serves_every_page_in_hand(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = CrawlSettings(concurrency=128)
    frontier = RedisFrontier(
        redis_url,
        namespace=f"pool-{uuid.uuid4().hex}",
        max_connections=redis_pool_size(settings),
        exact=True,
    )
    await frontier.open()
    try:
        with caplog.at_level(logging.WARNING):
            answers = await asyncio.gather(
                *(frontier.seen(f"http://h{i % 7}.test/{i}") for i in range(3 * 128 + 100))
            )
        assert answers == [False] * (3 * 128 + 100)
        assert not [r for r in caplog.records if "unreachable" in r.getMessage()]
    finally:
        await frontier.drop()
        await frontier.close()
