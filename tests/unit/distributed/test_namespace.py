"""A namespace's agreed settings, seeds, scope and page budget (real Redis)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from topicrawl.core.config import load_settings
from topicrawl.core.errors import ConfigError
from topicrawl.distributed.namespace import (
    Namespace,
    SharedScope,
    differences,
    given_part,
    list_namespaces,
    shared_part,
)
from topicrawl.distributed.progress import WorkerProgress, progress_line
from topicrawl.distributed.redis_frontier import namespace_prefix
from topicrawl.distributed.settings import load_distributed
from topicrawl.parse.urls import Scope


@pytest.fixture
async def namespace(redis_url: str) -> AsyncIterator[Namespace]:
    name = f"ns-{uuid.uuid4().hex[:12]}"
    client = Redis.from_url(redis_url)
    made = Namespace(client, prefix=namespace_prefix(name), name=name)
    try:
        yield made
    finally:
        await made.delete()
        await client.aclose()


def test_only_settings_given_count_as_given() -> None:
    settings = load_settings(None, concurrency=3, politeness={"delay": 0.5}, max_pages=9)
    given = given_part(settings)
    # concurrency is a node's own; the defaults of a section are not given.
    assert given == {"politeness": {"delay": 0.5}, "max_pages": 9}
    assert "concurrency" not in shared_part(settings)
    stored = shared_part(load_settings(None))
    assert differences(given, stored) == [
        "max_pages: given 9, the namespace has 1000",
        "politeness.delay: given 0.5, the namespace has 0.0",
    ]
    assert differences(given, shared_part(settings)) == []


async def test_the_first_join_creates_and_later_ones_agree_or_are_refused(
    namespace: Namespace,
) -> None:
    first = load_settings(None, seeds=("http://a.example.org/",), politeness={"delay": 0.25})
    settings, created = await namespace.join(first)
    assert created
    assert settings.seeds == ("http://a.example.org/",)
    # No crawl settings given: takes the namespace's, and adds its seed.
    joined, created = await namespace.join(load_settings(None, seeds=("http://b.example.net/x",)))
    assert not created
    assert joined.politeness.delay == 0.25
    assert set(joined.seeds) == {"http://a.example.org/", "http://b.example.net/x"}
    assert await namespace.domains() == {"example.org", "example.net"}
    with pytest.raises(ConfigError, match=r"politeness\.delay: given 1\.0"):
        await namespace.join(load_settings(None, politeness={"delay": 1.0}))
    assert len((await namespace.state()).seeds) == 2


async def test_no_seeds_and_no_namespace_is_refused_and_stores_nothing(
    namespace: Namespace,
) -> None:
    with pytest.raises(ConfigError, match="no seeds were given"):
        await namespace.join(load_settings(None))
    assert await namespace.keys() == []


async def test_seeds_outside_explicit_domains_are_refused(namespace: Namespace) -> None:
    settings = load_settings(
        None, seeds=("http://a.example.org/",), scope={"allowed_domains": ("a.example.org",)}
    )
    await namespace.join(settings)
    with pytest.raises(ConfigError, match="outside the namespace's scope"):
        await namespace.add_seeds(["http://c.example.com/"])


async def test_concurrent_reservations_never_pass_the_limit(namespace: Namespace) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=50))
    granted = await asyncio.gather(*(namespace.reserve_page() for _ in range(90)))
    assert sum(granted) == 50
    assert await namespace.limit_reached()
    await namespace.set_max_pages(60)
    assert not await namespace.limit_reached()
    granted = await asyncio.gather(*(namespace.reserve_page() for _ in range(20)))
    assert sum(granted) == 10


async def test_reset_keeps_the_settings_and_seeds(namespace: Namespace, redis_url: str) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=5))
    await namespace.reserve_page()
    await namespace.client.set(namespace.key("queued"), "x")
    assert namespace.name in await list_namespaces(namespace.client)
    await namespace.reset()
    state = await namespace.state()
    assert (state.seeds, state.reserved, state.max_pages) == (("http://a.example.org/",), 0, 5)
    assert not await namespace.client.exists(namespace.key("queued"))


async def test_a_shared_scope_widens_when_a_popped_url_is_outside_it(
    namespace: Namespace,
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",)))
    scope = Scope.build(allowed_domains=["example.org"])
    shared = SharedScope(namespace, scope, fixed=False)
    assert not scope.allows("http://b.example.net/page")
    await namespace.add_seeds(["http://b.example.net/"])
    await shared.check("http://b.example.net/page")
    assert scope.allows("http://b.example.net/page")
    fixed = Scope.build(allowed_domains=["example.org"])
    await SharedScope(namespace, fixed, fixed=True).check("http://b.example.net/page")
    assert not fixed.allows("http://b.example.net/page")


@pytest.mark.parametrize(
    "field",
    [
        "heartbeat_interval",
        "heartbeat_timeout",
        "lock_ttl",
        "coordinator_interval",
        "throughput_window",
        "min_weight",
        "redis_retry_for",
    ],
)
def test_distributed_durations_must_be_finite(field: str) -> None:
    with pytest.raises(ConfigError, match=f"{field}: Input should be less than or equal to"):
        load_distributed(**{field: float("inf")})


def test_a_progress_line_says_pages_rate_queue_and_limit() -> None:
    line = progress_line(
        WorkerProgress(
            node="w1",
            pages=1200,
            errors=3,
            crawl_pages=3400,
            max_pages=5000,
            queued=4210,
            in_flight=8,
            pages_per_second=12.46,
        )
    )
    assert line == (
        "worker w1: 1,200 pages, 12.5 pages/s, 3 errors; crawl: 3,400 of 5,000 pages,"
        " 4,210 queued, 8 in flight"
    )
