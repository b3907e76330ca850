"""RedisFrontier with nodes: each pops only its hosts, takes work when idle, gives leases back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from tests.contract.test_frontier import FakeClock
from tests.unit.distributed.test_redis_frontier import commands_in_redis
from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.core.models import Request
from topicrawl.distributed import RedisFrontier

Open = Callable[..., Awaitable[RedisFrontier]]

OWNERS = {"a.test": "n1", "b.test": "n1", "c.test": "n2"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def open_node(redis_url: str, clock: FakeClock) -> AsyncIterator[Open]:
    """Opens frontiers for nodes of one fresh namespace, with n1 and n2 live members."""
    namespace = f"part-{uuid.uuid4().hex}"
    client = Redis.from_url(redis_url)
    await client.sadd(f"topicrawl:{{{namespace}}}:members", "n1", "n2")
    opened: list[RedisFrontier] = []

    async def open_frontier(node: str | None, **options: Any) -> RedisFrontier:
        options.setdefault("propose_owner", OWNERS.get)
        frontier = RedisFrontier(
            redis_url, namespace=namespace, exact=True, node=node, clock=clock, **options
        )
        opened.append(await frontier.open())
        return frontier

    yield open_frontier
    await opened[0].drop()
    for frontier in opened:
        await frontier.close()
    await client.aclose()


def req(url: str, score: float = 0.0) -> Request:
    return Request(url=url, score=score)


async def pop_all(frontier: RedisFrontier) -> list[str]:
    urls = []
    while (lease := await frontier.pop()) is not None:
        urls.append(lease.request.url)
        assert await frontier.ack(lease)
    return urls


async def test_each_node_pops_only_the_hosts_it_holds(open_node: Open) -> None:
    n1 = await open_node("n1", steal_min=0, max_per_host=10)
    n2 = await open_node("n2", steal_min=0, max_per_host=10)
    urls = [f"http://{h}/{i}" for i in range(3) for h in OWNERS]
    assert await n1.push([req(u) for u in urls]) == 9
    assert await n1.hosts_of("n1") == {"a.test", "b.test"}
    assert await n1.owners() == OWNERS
    got2 = await pop_all(n2)
    assert sorted(got2) == sorted(u for u in urls if "c.test" in u)
    assert sorted(await pop_all(n1)) == sorted(u for u in urls if "c.test" not in u)
    assert await n1.host_counts(["n1", "n2", "n3"]) == {"n1": 2, "n2": 1, "n3": 0}


async def test_a_host_proposed_for_a_node_not_live_goes_to_the_pool(open_node: Open) -> None:
    pusher = await open_node(None, propose_owner=lambda host: "ghost")
    n2 = await open_node("n2", steal_min=0)
    await pusher.push([req("http://a.test/1"), req("http://c.test/1")])
    assert await pusher.owners() == {}
    # An idle node adopts pool hosts as it pops them.
    assert sorted(await pop_all(n2)) == ["http://a.test/1", "http://c.test/1"]
    assert await n2.owners() == {"a.test": "n2", "c.test": "n2"}


async def test_an_idle_node_takes_a_ready_host_from_a_busy_one(open_node: Open) -> None:
    n1 = await open_node("n1", steal_min=2)
    n2 = await open_node("n2", steal_min=2)
    await n1.push([req("http://a.test/1", 1.0), req("http://b.test/1", 0.5)])
    # n1 has two ready hosts (at least steal_min): n2 takes n1's best one.
    lease = await n2.pop()
    assert lease is not None
    assert lease.request.url == "http://a.test/1"
    assert (await n1.owners())["a.test"] == "n2"
    # n1 is left with one ready host, fewer than steal_min: n2 takes nothing more.
    assert await n2.pop() is None
    assert await n2.next_ready_in() == pytest.approx(0.2)
    assert list(await pop_all(n1)) == ["http://b.test/1"]


async def test_taking_work_is_off_with_steal_min_zero(open_node: Open) -> None:
    n1 = await open_node("n1", steal_min=0)
    n2 = await open_node("n2", steal_min=0)
    await n1.push([req(f"http://{h}/1") for h in ("a.test", "b.test")])
    assert await n2.pop() is None
    assert await n2.peek() is None
    assert await n1.peek() is not None


async def test_politeness_holds_across_nodes_when_a_host_moves(
    open_node: Open, clock: FakeClock
) -> None:
    n1 = await open_node("n1", steal_min=0, default_delay=2.0)
    n2 = await open_node("n2", steal_min=0, default_delay=2.0)
    await n1.push([req("http://a.test/1"), req("http://a.test/2")])
    first = await n1.pop()
    assert first is not None
    assert await n1.assign_hosts({"a.test": "n2"}) == 1
    assert await n2.pop() is None  # a.test was fetched 0 s ago; its delay is 2 s
    assert await n2.next_ready_in() == pytest.approx(0.2)  # polls at most every 0.2 s
    clock.advance(2.0)
    second = await n2.pop()
    assert second is not None
    assert second.request.url == "http://a.test/2"
    assert await n1.pop() is None


async def test_a_dead_nodes_leases_come_back_at_once(open_node: Open) -> None:
    n1 = await open_node("n1", steal_min=0, max_per_host=5)
    n2 = await open_node("n2", steal_min=0, max_per_host=5)
    await n1.push([req(f"http://a.test/{i}") for i in range(3)] + [req("http://c.test/0")])
    held = [await n1.pop() for _ in range(3)]
    assert all(lease is not None for lease in held)
    mine = await n2.pop()
    assert mine is not None
    assert await n2.release_node("n1") == 3
    assert (await n2.queued(), await n2.in_flight()) == (3, 1)
    # The dead node's late acks are refused; n2's own lease is untouched.
    assert not await n1.ack(held[0])  # type: ignore[arg-type]
    assert await n2.ack(mine)
    await n2.assign_hosts({"a.test": "n2"})
    assert sorted(await pop_all(n2)) == [f"http://a.test/{i}" for i in range(3)]
    assert await n2.release_node("n1") == 0


async def test_expired_leases_leave_the_nodes_lease_set(open_node: Open, clock: FakeClock) -> None:
    n1 = await open_node("n1", steal_min=0, lease_ttl=10.0)
    await n1.push([req("http://a.test/1")])
    assert await n1.pop() is not None
    clock.advance(11.0)
    assert await n1.reclaim_expired() == 1
    # Nothing is put back twice when the node is later declared dead.
    assert await n1.release_node("n1") == 0
    assert await n1.queued() == 1


async def test_moving_a_waiting_host_keeps_its_place_in_time(
    open_node: Open, clock: FakeClock
) -> None:
    n1 = await open_node("n1", steal_min=0, default_delay=1.0)
    n2 = await open_node("n2", steal_min=0, default_delay=1.0)
    await n1.push([req("http://a.test/1"), req("http://a.test/2"), req("http://b.test/1")])
    assert await n1.pop() is not None
    await n1.assign_hosts({"a.test": "n2", "b.test": ""})  # b.test back to the pool
    assert await n1.owners() == {"a.test": "n2"}
    assert [lease.request.url for lease in [await n2.pop()] if lease] == ["http://b.test/1"]
    clock.advance(1.0)
    lease = await n2.pop()
    assert lease is not None
    assert lease.request.url == "http://a.test/2"


async def test_observer_cannot_push_and_adopts_the_crawls_limits(
    open_node: Open, redis_url: str
) -> None:
    n1 = await open_node("n1", steal_min=0, max_per_host=1)
    await n1.push([req("http://a.test/1"), req("http://a.test/2")])
    assert await n1.pop() is not None
    observer = RedisFrontier(redis_url, namespace=n1.namespace, observer=True, max_per_host=50)
    async with observer:
        with pytest.raises(FrontierError, match="observer"):
            await observer.push([req("http://z.test/")])
        # Releasing with the crawl's limit (1) keeps a.test at its limit until then.
        assert await observer.release_node("n1") == 1
    assert await n1.in_flight() == 0


def test_node_ids_are_checked() -> None:
    with pytest.raises(ConfigError, match="node id"):
        RedisFrontier("redis://127.0.0.1:6379/15", namespace="x", node="bad~id")


async def test_deferred_acks_take_effect_at_flush(open_node: Open, clock: FakeClock) -> None:
    n1 = await open_node("n1", steal_min=0, defer_acks=True, lease_ttl=10.0)
    await n1.push([req("http://a.test/1"), req("http://a.test/2")])
    first, second = await n1.pop(), await n1.pop()
    assert first is not None
    assert second is not None
    assert await n1.ack(first)
    # Held back: the URL still counts as in flight, so a worker killed now (its page maybe
    # not yet stored) has it put back rather than lost.
    assert await n1.in_flight() == 2
    await n1.flush()
    assert await n1.in_flight() == 1
    clock.advance(11.0)
    assert not await n1.ack(second)  # expired by the local clock: refused at once
    await n1.flush()
    assert await n1.reclaim_expired() == 1
    assert await n1.queued() == 1


async def test_an_idle_node_shares_another_nodes_host_within_its_limits(
    open_node: Open, clock: FakeClock
) -> None:
    n1 = await open_node("n1", steal_min=2, share=True, max_per_host=2)
    n2 = await open_node("n2", steal_min=2, share=True, max_per_host=2)
    await n1.push([req(f"http://a.test/{i}", 1.0 - i / 10) for i in range(4)])
    # One ready host is too few to take (steal_min 2): n2 pops from it, n1 keeps it.
    assert await n2.next_ready_in() == 0.0
    shared = await n2.pop()
    assert shared is not None
    assert shared.request.url == "http://a.test/0"
    assert await n1.owners() == {"a.test": "n1"}
    own = await n1.pop()
    assert own is not None
    assert own.request.url == "http://a.test/1"
    # Two requests in flight to a.test, over both nodes: the host's limit.
    assert await n2.pop() is None
    assert await n1.pop() is None
    # The shared request ends: its slot goes back with n2's next pop, which gets a.test/2.
    await n2.fetched(shared)
    clock.advance(1.0)
    again = await n2.pop()
    assert again is not None
    assert again.request.url == "http://a.test/2"
    assert await n2.ack(shared)
    assert await n1.ack(own)
    # Acks of shared leases count like any other: nothing is handed out twice.
    assert await n2.ack(again)
    assert await pop_all(n1) == ["http://a.test/3"]
    assert await n1.queued() == 0


async def test_a_shared_host_keeps_its_delay_across_nodes(
    open_node: Open, clock: FakeClock
) -> None:
    n1 = await open_node("n1", steal_min=0, share=True, default_delay=2.0)
    n2 = await open_node("n2", steal_min=0, share=True, default_delay=2.0)
    await n1.push([req("http://a.test/1"), req("http://a.test/2")])
    assert await n1.pop() is not None
    assert await n2.pop() is None  # fetched 0 s ago by n1; its delay is 2 s
    clock.advance(2.0)
    lease = await n2.pop()
    assert lease is not None
    assert lease.request.url == "http://a.test/2"
    assert await n1.owners() == {"a.test": "n1"}


async def test_a_node_that_is_not_idle_does_not_share(open_node: Open) -> None:
    n1 = await open_node("n1", steal_min=0, share=True)
    n2 = await open_node("n2", steal_min=0, share=True)
    await n1.push([req("http://a.test/1", 0.1), req("http://c.test/1", 0.9)])
    # n2 holds c.test (ready): it pops its own host before any of n1's.
    lease = await n2.pop()
    assert lease is not None
    assert lease.request.url == "http://c.test/1"
    shared = await n2.pop()
    assert shared is not None
    assert shared.request.url == "http://a.test/1"
    assert await n2.pop() is None


async def test_a_sharing_node_that_stops_popping_still_returns_its_request_slots(
    open_node: Open,
) -> None:
    n1 = await open_node("n1", steal_min=0, share=True, max_per_host=1)
    n2 = await open_node("n2", steal_min=0, share=True, max_per_host=1)
    await n1.push([req("http://a.test/1"), req("http://a.test/2")])
    first = await n1.pop()
    assert first is not None
    assert await n2.pop() is None  # a.test's one request slot is taken
    # n1's request is done, but n1 pops no more (busy parsing, say): the slot still goes
    # back on its own, and n2 takes the next URL of the host n1 holds.
    await n1.fetched(first)
    for _ in range(500):
        second = await n2.pop()
        if second is not None:
            break
        await asyncio.sleep(0.02)
    assert second is not None
    assert second.request.url == "http://a.test/2"
    assert await n1.owners() == {"a.test": "n1"}


async def test_a_sharing_pop_takes_a_run_of_a_shared_hosts_leases_in_rank_order(
    open_node: Open, redis_url: str
) -> None:
    """An idle node's pop of several leases from another node's host takes them in a few
    commands for all (some 25 a lease before: one lease a step), up to the host's limit, and
    stops where another node's ready host ranks first, as single pops would."""
    owners = {**OWNERS, "d.test": "n3"}
    n1 = await open_node("n1", steal_min=0, share=True, max_per_host=4, propose_owner=owners.get)
    n2 = await open_node("n2", steal_min=0, share=True, max_per_host=4, propose_owner=owners.get)
    await n1._client().sadd(f"{n1.prefix}members", "n3")
    # a.test is n1's (scores 0.9 .. 0.4), d.test is n3's (0.65): both ready, n2 has none.
    await n1.push([req(f"http://a.test/{i}", 0.9 - i / 10) for i in range(6)])
    await n1.push([req("http://d.test/1", 0.65)])
    leases = await n2._pop_leases(8)
    assert [lease.request.url for lease in leases] == [
        "http://a.test/0",
        "http://a.test/1",
        "http://a.test/2",
        "http://d.test/1",
        "http://a.test/3",
    ]
    assert await n1.owners() == {"a.test": "n1", "d.test": "n3"}
    assert await n1.pop() is None  # a.test has 4 in flight over the nodes: its limit
    # A run of one shared host with nothing ranked between: one step for all of it.
    await n1.push([req(f"http://b.test/{i}", 0.3 - i / 100) for i in range(10)])
    taken: list[Any] = []

    async def pop() -> None:
        taken.extend(await n2._pop_leases(8))

    commands = await commands_in_redis(redis_url, n2.namespace, pop())
    assert [lease.host for lease in taken] == ["b.test"] * 4  # its limit
    assert commands <= 40, commands


async def test_a_page_whose_lease_was_lost_is_counted_by_the_node_that_stored_it_last(
    open_node: Open,
) -> None:
    """A node thought dead while it stores a page: its leases and reservations go back, and
    another node fetches, reserves and stores the page again. Each node counted the page it
    reserved (103 counted for 102 stored in a three-worker crawl); only reservations made final
    by an ack (or not settled yet) count, so the nodes' counts add up to the pages stored."""
    slow = await open_node("n1", steal_min=0, max_per_host=10, defer_acks=True)
    other = await open_node("n2", steal_min=0, max_per_host=10, defer_acks=True)
    await slow.push([req("http://a.test/1"), req("http://a.test/2")])
    kept, lost = await slow.pop(), await slow.pop()
    assert kept is not None
    assert lost is not None
    for lease in (kept, lost):
        assert await slow.reserve_page(lease, []) == 0
    assert slow.pages_here == 2  # in hand: not settled yet
    assert await slow.ack(kept)
    await slow.flush()
    assert (slow.pages_here, slow.final_here) == (2, 1)
    assert await other.release_node("n1") == 1  # n1 thought dead (a late heartbeat)
    await other.assign_hosts({"a.test": "n2"})
    again = await other.pop()
    assert again is not None
    assert again.request.url == lost.request.url
    assert await other.reserve_page(again, []) == 0
    assert await slow.ack(lost)  # n1 stored the page too: its ack is held, then refused
    await slow.flush()
    assert await other.ack(again)
    await other.flush()
    assert (slow.reserved_here, other.reserved_here) == (2, 1)  # reservations made
    assert (slow.pages_here, other.pages_here) == (1, 1)  # pages that count: 2, as stored
    assert (await other.in_flight(), await other.queued()) == (0, 0)
