"""The success table shared through a real Redis: a node that joins starts from what the
others learnt, later changes reach it, rows without a refusal stay local, and the standalone
coordinator places hosts by the workers' default policy and what they learnt."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from tests.unit.distributed.test_partitioned_frontier import (  # noqa: F401 - fixtures
    Open,
    clock,
    open_node,
)
from topicrawl.core.models import FetchOutcome, Request
from topicrawl.distributed import (
    Heartbeat,
    NodeInfo,
    NodeLoad,
    NodeRegistry,
    RedisFrontier,
    RendezvousPolicy,
)
from topicrawl.distributed.coordinator import serve
from topicrawl.distributed.feedback import FetchFeedback, HostAssigner
from topicrawl.distributed.outcomes import SharedOutcomes
from topicrawl.distributed.partition import AssignmentPolicy
from topicrawl.distributed.policies import SuccessTablePolicy
from topicrawl.distributed.settings import DistributedSettings

VIEW = [NodeLoad(node=n, concurrency=4) for n in ("a", "b", "c")]


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[tuple[Redis, str]]:
    client = Redis.from_url(redis_url)
    prefix = f"topicrawl:{{outcomes-{uuid.uuid4().hex}}}:"
    yield client, prefix
    keys = [key async for key in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def _node(redis: tuple[Redis, str], node: str) -> SharedOutcomes:
    client, prefix = redis
    return SharedOutcomes(client, prefix=prefix, node=node, table=SuccessTablePolicy())


async def test_a_node_that_joins_starts_from_what_another_learnt(
    redis: tuple[Redis, str],
) -> None:
    a = _node(redis, "a")
    a.table.observe("shop.test", "a", latency=0.1, status=403)
    a.note("shop.test", refused=True)
    a.table.observe("fine.test", "a", latency=0.1, status=200)
    a.note("fine.test", refused=False)
    assert await a.publish() == 1  # the row without a refusal stays local
    # A node that joins without the shared table may hand shop.test to a (two choices draw
    # anew each time); with it, never.
    assert "a" in {SuccessTablePolicy().owner("shop.test", VIEW) for _ in range(60)}
    b = _node(redis, "b")
    assigner = HostAssigner(b.table)
    assigner.update(VIEW)
    b._on_learnt = assigner.forget_all
    assigner.propose("shop.test")  # cached before b learnt anything
    assert await b.pull() == 1
    assert b.table.refuses("shop.test", "a")
    assert b.table.row("fine.test", "a") is None
    assert assigner.propose("shop.test") != "a"
    assert "a" not in {b.table.owner("shop.test", VIEW) for _ in range(60)}
    assert await b.pull() == 0  # nothing new since


async def test_a_refusal_that_decays_away_reaches_the_others(redis: tuple[Redis, str]) -> None:
    a, b = _node(redis, "a"), _node(redis, "b")
    a.table.observe("shop.test", "a", latency=0.1, status=429)
    a.note("shop.test", refused=True)
    await a.publish()
    await b.pull()
    assert b.table.refuses("shop.test", "a")
    for _ in range(10):  # the host serves a again
        a.table.observe("shop.test", "a", latency=0.1, status=200)
        a.note("shop.test", refused=False)
    assert not a.table.refuses("shop.test", "a")
    assert await a.publish() == 1
    assert await b.pull() == 1
    assert not b.table.refuses("shop.test", "a")
    assert b.table.row("shop.test", "a") == a.table.row("shop.test", "a")


async def test_a_node_keeps_its_own_rows_and_takes_them_back_after_a_restart(
    redis: tuple[Redis, str],
) -> None:
    a = _node(redis, "a")
    a.table.observe("shop.test", "a", latency=0.1, status=403)
    a.note("shop.test", refused=True)
    await a.publish()
    client, prefix = redis
    # Another writer's stale copy of a's row is not taken over a's own (a is its only writer).
    stale = SharedOutcomes(client, prefix=prefix, node="a", table=SuccessTablePolicy())
    stale.table.observe("shop.test", "a", latency=0.1, status=200)
    stale.note("shop.test", refused=True)
    await stale.publish()
    await a.pull()
    assert a.table.refuses("shop.test", "a")
    # a restarted (same id, empty table) starts from its own shared rows.
    again = _node(redis, "a")
    assert await again.pull() == 1
    assert again.table.row("shop.test", "a") == stale.table.row("shop.test", "a")
    await client.hset(prefix + "outcomes", "bad.test\0a", "not numbers")
    await client.zadd(prefix + "outcomes:changed", {"bad.test\0a": 10**6})
    assert await _node(redis, "c").pull() == 1  # the malformed row is skipped, not fatal


async def test_the_feedback_of_a_worker_shares_its_refusals_at_once(
    redis: tuple[Redis, str],
) -> None:
    a = _node(redis, "a")
    assigner = HostAssigner(a.table)
    assigner.update(VIEW[:1])  # a alone: nothing is handed on
    owners = _NoOwners()
    feedback = FetchFeedback(node="a", assigner=assigner, frontier=owners, shared=a)
    stop = asyncio.Event()
    task = asyncio.create_task(a.run(stop, interval=3600.0))  # only a refusal wakes it
    b = _node(redis, "b")
    try:
        await asyncio.sleep(0)
        feedback(FetchOutcome("shop.test", 403, 0.1))
        async with asyncio.timeout(10):
            while not b.table.refuses("shop.test", "a"):
                await b.pull()
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        await task
    assert a.published == 1


class _NoOwners:
    async def owners_of(self, hosts: object) -> dict[str, str]:
        return {}

    async def assign_hosts(self, owners: object) -> int:
        return 0


@pytest.mark.parametrize("given", [None, RendezvousPolicy()], ids=["default", "rendezvous"])
async def test_the_standalone_coordinator_places_by_the_workers_default_policy(
    redis_url: str, given: AssignmentPolicy | None
) -> None:
    """Hosts that refused n2 (learnt by n2 earlier, shared) stay off n2 when it joins under
    the default policy; rendezvous, the old default, gives n2 its share of them."""
    namespace = f"outcomes-{uuid.uuid4().hex}"
    settings = DistributedSettings(
        redis_url=redis_url,
        namespace=namespace,
        heartbeat_timeout=60.0,
        lock_ttl=3.0,
        coordinator_interval=0.05,
    )
    registry = await NodeRegistry(redis_url, namespace=namespace, heartbeat_timeout=60.0).open()
    frontiers: list[RedisFrontier] = []
    try:
        hosts = [f"h{i}.test" for i in range(40)]
        refused = SharedOutcomes(
            registry.client, prefix=registry.prefix, node="n2", table=SuccessTablePolicy()
        )
        for host in hosts:
            refused.table.observe(host, "n2", latency=0.1, status=403)
            refused.note(host, refused=True)
        await refused.publish()
        for name in ("n1", "n2"):
            await registry.register(NodeInfo(node=name, machine="box", pid=1))
            assert await registry.heartbeat(
                name, Heartbeat(pages=0, pages_per_second=1.0, errors=0)
            )
            if name == "n1":
                n1 = await RedisFrontier(
                    redis_url, namespace=namespace, exact=True, node="n1",
                    propose_owner=lambda host: "n1",
                ).open()  # fmt: skip
                frontiers.append(n1)
                await n1.push([Request(url=f"http://{h}/") for h in hosts])
                stop = asyncio.Event()
                # The first round records n1 as the members; n2 then joins.
                first = asyncio.create_task(serve(settings, holder="c1", stop=stop, policy=given))
                async with asyncio.timeout(20):
                    while not await registry.client.sismember(
                        registry.prefix + "assigned-members", "n1"
                    ):
                        await asyncio.sleep(0.02)
                stop.set()
                await first
        stop = asyncio.Event()
        rounds = asyncio.create_task(serve(settings, holder="c1", stop=stop, policy=given))
        async with asyncio.timeout(20):
            while not await registry.client.sismember(registry.prefix + "assigned-members", "n2"):
                await asyncio.sleep(0.02)
        stop.set()
        await rounds
        moved = await n1.hosts_of("n2")
    finally:
        for frontier in frontiers:
            await frontier.close()
        keys = [key async for key in registry.client.scan_iter(match=registry.prefix + "*")]
        if keys:
            await registry.client.delete(*keys)
        await registry.close()
    if given is None:
        assert moved == set()
    else:
        assert moved  # rendezvous ignores what n2 learnt


async def test_an_idle_node_does_not_pop_or_take_a_host_that_refused_it(
    open_node: Open,  # noqa: F811
    redis_url: str,
) -> None:
    n1 = await open_node("n1", propose_owner=lambda host: "n1", steal_min=0)
    await n1.push([Request(url=f"http://x.test/{i}") for i in range(3)])
    await n1.push([Request(url=f"http://y.test/{i}") for i in range(2)])
    sharer = await open_node("n2", steal_min=0, share=True)
    taker = await open_node("n2", steal_min=1, share=False)
    client = Redis.from_url(redis_url)
    try:
        n2 = SharedOutcomes(client, prefix=sharer.prefix, node="n2", table=SuccessTablePolicy())
        n2.table.observe("x.test", "n2", latency=0.1, status=403)
        n2.note("x.test", refused=True)
        await n2.publish()
        # x.test (pushed first, so first in n1's ready set) is passed over, shared or taken.
        shared = await sharer.pop()
        assert shared is not None
        assert shared.host == "y.test"
        assert await n1.owners_of(["y.test"]) == {"y.test": "n1"}  # popped, not taken
        taken = await taker.pop()
        assert taken is not None
        assert taken.host == "y.test"
        assert await n1.owners_of(["x.test", "y.test"]) == {"x.test": "n1", "y.test": "n2"}
        assert await sharer.pop() is None
        # Once x.test serves n2 again (its row no longer rules n2 out), n2 may pop it.
        for _ in range(10):
            n2.table.observe("x.test", "n2", latency=0.1, status=200)
            n2.note("x.test", refused=False)
        await n2.publish()
        again = await sharer.pop()
        assert again is not None
        assert again.host == "x.test"
    finally:
        await client.aclose()
