"""A namespace's agreed settings, seeds, scope and page budget (real Redis)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from topicrawl.core.config import load_settings
from topicrawl.core.errors import ConfigError, LeaseLost
from topicrawl.core.models import Lease, Request
from topicrawl.distributed.namespace import (
    Namespace,
    SharedScope,
    differences,
    given_part,
    list_namespaces,
    shared_part,
)
from topicrawl.distributed.progress import WorkerProgress, progress_line
from topicrawl.distributed.redis_frontier import RedisFrontier, namespace_prefix
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


async def _leases(
    namespace: Namespace, redis_url: str, count: int, *, lease_ttl: float = 1.5, first: int = 0
) -> list[Lease]:
    """``count`` leases popped from a frontier on the namespace (its URLs, numbered from
    ``first``, pushed first)."""
    # Short leases: a reservation refused while others are not final waits at most that long.
    frontier = RedisFrontier(
        redis_url, namespace=namespace.name, max_per_host=1000, exact=True, lease_ttl=lease_ttl
    )
    async with frontier:
        await frontier.push(
            [Request(url=f"http://a.example.org/{i}") for i in range(first, first + count)]
        )
        leases = [await frontier.pop() for _ in range(count)]
    assert all(leases)
    return [lease for lease in leases if lease is not None]


@pytest.fixture
async def frontier(namespace: Namespace, redis_url: str) -> AsyncIterator[RedisFrontier]:
    async with RedisFrontier(
        redis_url, namespace=namespace.name, max_per_host=1000, exact=True
    ) as made:
        yield made


async def test_concurrent_reservations_never_pass_the_limit(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=50))
    # Long leases (none is gone before its reservation is asked for, however loaded the
    # machine), and the crawl already stopping: a reservation refused while others are not yet
    # final gives up at once instead of waiting for them as long as its lease lasts (300 s;
    # that wait and its end on the stop are test_a_wait_for_reservations_to_settle_...'s).
    stopping = asyncio.Event()
    stopping.set()

    async def reserve(leases: list[Lease]) -> list[int | None]:
        return await asyncio.gather(
            *(frontier.reserve_page(lease, [], stopping=stopping) for lease in leases)
        )

    granted = await reserve(await _leases(namespace, redis_url, 90, lease_ttl=300.0))
    assert sum(g is not None for g in granted) == 50
    assert frontier.reserved_here == 50
    assert await namespace.limit_reached()
    await namespace.set_max_pages(60)
    assert not await namespace.limit_reached()
    granted = await reserve(await _leases(namespace, redis_url, 20, first=90, lease_ttl=300.0))
    assert sum(g is not None for g in granted) == 10


async def test_a_refused_reservation_queues_none_of_the_pages_links(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=1))
    first, second = await _leases(namespace, redis_url, 2)
    links = [Request(url="http://a.example.org/new")]
    assert await frontier.reserve_page(first, links) == 1
    # Not final yet: the second waits for it (and gives up as its lease ends).
    assert await frontier.reserve_page(second, [Request(url="http://a.example.org/other")]) is None
    assert await frontier.queued() == 1  # the first page's link only
    # The refused page's link is not taken as pushed: another page linking to it pushes it.
    assert frontier.known(["http://a.example.org/new", "http://a.example.org/other"]) == [
        True,
        False,
    ]
    # A retried call (its reply lost) does not reserve twice.
    assert await frontier.reserve_page(first, []) == 0
    assert (await namespace.state()).reserved == 1


async def test_a_reservation_is_final_when_acked_and_given_back_when_reclaimed(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=3))
    stored, dropped, expired, rest = await _leases(namespace, redis_url, 4)
    for lease in (stored, dropped, expired):
        assert await frontier.reserve_page(lease, []) is not None
    assert await frontier.reserve_page(rest, []) is None
    assert await frontier.ack(stored)
    assert await frontier.reclaim(dropped)  # e.g. its worker's storage failed
    assert (await namespace.state()).reserved == 2
    assert await frontier.reserve_page(rest, []) is not None
    assert await frontier.ack(rest)
    assert await frontier.reclaim(stored) is False  # acked: final, nothing given back
    assert (await namespace.state()).reserved == 3


async def test_a_revisit_keeps_the_stored_pages_reservation(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=2))
    first, second = await _leases(namespace, redis_url, 2)
    assert await frontier.reserve_page(first, []) is not None
    assert await frontier.revisit(first, due=time.time() + 3600)  # stored, due again later
    assert (await namespace.state()).reserved == 1
    assert await frontier.reserve_page(second, []) is not None
    assert await namespace.limit_reached()


async def test_reset_keeps_the_settings_and_seeds(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=5))
    (lease,) = await _leases(namespace, redis_url, 1)
    await frontier.reserve_page(lease, [])
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


async def test_a_refused_reservation_waits_for_one_that_may_come_back(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=1))
    dead, alive = await _leases(namespace, redis_url, 2)
    assert await frontier.reserve_page(dead, []) is not None
    waiting = asyncio.create_task(frontier.reserve_page(alive, []))
    await asyncio.sleep(0.3)
    assert not waiting.done()  # the limit is reached, but not with final reservations
    assert await frontier.reclaim(dead)  # e.g. its worker was found dead
    assert await waiting == 0
    assert (await namespace.state()).reserved == 1


async def test_a_wait_for_reservations_to_settle_ends_when_the_crawl_stops(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    # The reservation it waits for is this crawl's own page, whose ack a stopping crawl no
    # longer sends: the wait would last the lease (lease_ttl, 300 s by default). It must end
    # with the stop, the page refused (its lease is then reclaimed by the caller).
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=1))
    mine, other = await _leases(namespace, redis_url, 2, lease_ttl=300.0)
    assert await frontier.reserve_page(mine, []) is not None
    stopping = asyncio.Event()
    waiting = asyncio.create_task(frontier.reserve_page(other, [], stopping=stopping))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    stopping.set()
    async with asyncio.timeout(5.0):  # not the lease's time
        assert await waiting is None
    assert (await namespace.state()).reserved == 1


async def test_a_lease_lost_before_its_reservation_reserves_nothing(
    namespace: Namespace, frontier: RedisFrontier, redis_url: str
) -> None:
    # A worker's lease can go back while its page is in hand (the worker was declared dead
    # for a moment, or the lease expired). Its reservation used to be made all the same,
    # under a token nothing would ever ack or give back: the page counted for ever as
    # "not final", so at the limit every other page waited out its lease instead of being
    # refused (a worker that did not end).
    await namespace.join(load_settings(None, seeds=("http://a.example.org/",), max_pages=2))
    lost, kept, late = await _leases(namespace, redis_url, 3, lease_ttl=300.0)
    assert await frontier.reclaim(lost)  # e.g. its node was found dead
    with pytest.raises(LeaseLost):
        await frontier.reserve_page(lost, [Request(url="http://a.example.org/from-lost")])
    assert not await frontier.seen("http://a.example.org/from-lost")  # its links not queued
    assert (await namespace.state()).reserved == 0
    assert await frontier.reserve_page(kept, []) is not None
    assert await frontier.ack(kept)
    second = (await _leases(namespace, redis_url, 1, lease_ttl=300.0))[0]
    assert await frontier.reserve_page(second, []) is not None
    assert await frontier.ack(second)
    async with asyncio.timeout(5.0):  # refused at once: every reservation is final
        assert await frontier.reserve_page(late, []) is None
