"""A database connection that stops answering without closing (a silent partition, a session
stuck in the driver) must not hold a write, and with it the crawl, for ever."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from tests.unit.distributed.proxy import StallingProxy
from topicrawl.core.errors import StorageError
from topicrawl.core.models import Page
from topicrawl.storage import SqlStorage
from topicrawl.storage.errors import with_retries
from topicrawl.storage.target import parse_target

TARGET = parse_target("postgresql://localhost/test")


async def test_an_attempt_that_never_ends_fails_as_a_lost_connection_and_is_retried() -> None:
    calls = 0

    async def stuck_once() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()  # never answers
        return "written"

    done = await with_retries(
        stuck_once, target=TARGET, doing="writing", retries=2, backoff=0.0, attempt_timeout=0.05
    )
    assert (done, calls) == ("written", 2)


async def test_attempts_that_never_end_give_up_with_a_storage_error() -> None:
    async def stuck() -> None:
        await asyncio.Event().wait()

    with pytest.raises(StorageError, match="writing"):
        await with_retries(
            stuck, target=TARGET, doing="writing", retries=1, backoff=0.0, attempt_timeout=0.05
        )


@pytest.fixture
async def schema_url(postgres_url: str) -> AsyncIterator[tuple[str, str]]:
    """A fresh schema's name and the server's plain URL; dropped afterwards."""
    schema = f"t_stall_{uuid.uuid4().hex[:12]}"
    plain = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
    yield schema, plain
    connection = await asyncpg.connect(plain)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


def _page(n: int) -> Page:
    url = f"http://example.org/{n}"
    return Page(
        url=url,
        final_url=url,
        status=200,
        depth=0,
        fetched_at=time.time(),
        content_type="text/html",
        title=f"page {n}",
        text="text",
        links=(),
    )


async def test_a_write_on_a_stalled_connection_is_retried_on_a_new_one(
    schema_url: tuple[str, str],
) -> None:
    schema, plain = schema_url
    proxy = StallingProxy(5432)
    await proxy.start()
    url = f"postgresql://postgres@127.0.0.1:{proxy.port}/test?schema={schema}"
    # No command timeout: only the bound on the whole attempt can end the stalled write.
    storage = SqlStorage(
        url, command_timeout=None, attempt_timeout=2.0, retries=3, retry_backoff=0.05
    )
    try:
        await storage.open()
        run_id = await storage.start_run(name="bfs", config="{}")
        await storage.save_page(_page(1), run_id=run_id)
        await storage.flush()
        assert proxy.stall() > 0  # the pooled connections now never answer
        await storage.save_page(_page(2), run_id=run_id)
        async with asyncio.timeout(60):  # without the bound the flush waits for ever
            await storage.flush()
        # Closing drops the pool, stalled connections too: without a bound on each close the
        # storage (and a crawl or worker ending) never finished closing.
        async with asyncio.timeout(60):
            await storage.close()
    finally:
        await proxy.close()
    connection = await asyncpg.connect(plain)
    try:
        urls = await connection.fetch(f'SELECT url FROM "{schema}".pages ORDER BY url')
    finally:
        await connection.close()
    assert [row["url"] for row in urls] == ["http://example.org/1", "http://example.org/2"]
