"""A frontier riding out a Redis outage: Redis reached through a proxy that is cut, then back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from tests.unit.distributed.proxy import CuttableProxy
from topicrawl.core.errors import FrontierError
from topicrawl.core.models import Request
from topicrawl.distributed import RedisFrontier


@pytest.fixture
async def proxy(redis_url: str) -> AsyncIterator[CuttableProxy]:
    parts = urlsplit(redis_url)
    running = CuttableProxy(parts.hostname or "127.0.0.1", parts.port or 6379)
    await running.start()
    yield running
    await running.cut()


def through(redis_url: str, port: int) -> str:
    parts = urlsplit(redis_url)
    return parts._replace(netloc=f"127.0.0.1:{port}").geturl()


async def test_operations_wait_out_a_short_outage(redis_url: str, proxy: CuttableProxy) -> None:
    frontier = RedisFrontier(
        through(redis_url, proxy.port),
        namespace=f"outage-{uuid.uuid4().hex}",
        exact=True,
        retry_for=10.0,
    )
    await frontier.open()
    try:
        await frontier.push([Request(url="http://a.test/1"), Request(url="http://a.test/2")])
        await proxy.cut()

        async def restore() -> None:
            await asyncio.sleep(0.5)
            await proxy.start()

        back = asyncio.create_task(restore())
        lease = await frontier.pop()  # waits for Redis to be reachable again
        await back
        assert lease is not None
        assert lease.request.url == "http://a.test/1"
        assert await frontier.ack(lease)
        assert (await frontier.queued(), await frontier.in_flight()) == (1, 0)
    finally:
        await frontier.drop()
        await frontier.close()


async def test_a_longer_outage_is_an_error_that_names_redis(
    redis_url: str, proxy: CuttableProxy
) -> None:
    frontier = RedisFrontier(
        through(redis_url, proxy.port),
        namespace=f"outage-{uuid.uuid4().hex}",
        exact=True,
        retry_for=0.3,
    )
    await frontier.open()
    await proxy.cut()
    try:
        with pytest.raises(FrontierError, match=r"Redis at redis://127\.0\.0\.1:\d+/\d+ failed"):
            await frontier.pop()
    finally:
        await proxy.start()
        await frontier.drop()
        await frontier.close()
