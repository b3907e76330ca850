"""RedisFrontier counts requests in flight, not leases, against max_per_host (issue 27, item 1).

A worker's acks wait for its storage's flush; its leases must not hold the host meanwhile, or
a worker stores at most per_host pages per flush interval. Leases stay out until acked, so a
crash before the flush still re-delivers the URL.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tests.contract.test_frontier import FakeClock
from topicrawl.core.models import Lease, Request
from topicrawl.distributed import RedisFrontier
from topicrawl.distributed.popgate import PopGate

Open = Callable[..., Awaitable[RedisFrontier]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def open_worker(redis_url: str, clock: FakeClock) -> AsyncIterator[Open]:
    """Opens worker frontiers on one fresh namespace: deferred acks, per_host 2."""
    namespace = f"slots-{uuid.uuid4().hex}"
    opened: list[RedisFrontier] = []

    async def open_frontier(**options: Any) -> RedisFrontier:
        options = {"max_per_host": 2, "defer_acks": True, "exact": True, **options}
        frontier = RedisFrontier(redis_url, namespace=namespace, clock=clock, **options)
        opened.append(await frontier.open())
        return frontier

    yield open_frontier
    live = [frontier for frontier in opened if not frontier._closed]
    await live[0].drop()
    for frontier in live:
        await frontier.close()


def pages(n: int) -> list[Request]:
    return [Request(url=f"http://one.test/{i}", score=-float(i)) for i in range(n)]


async def pop_some(frontier: RedisFrontier) -> list[Lease]:
    leases = []
    while (lease := await frontier.pop()) is not None:
        leases.append(lease)
    return leases


async def test_fetched_requests_free_the_host_while_their_acks_wait_for_the_flush(
    open_worker: Open,
) -> None:
    worker = await open_worker()
    await worker.push(pages(6))
    first = await pop_some(worker)
    assert len(first) == 2  # two requests in flight: the host is full
    for lease in first:
        await worker.fetched(lease)
        assert await worker.ack(lease)  # held until the flush: still out in Redis
    second = await pop_some(worker)
    assert [lease.request.url for lease in second] == ["http://one.test/2", "http://one.test/3"]
    assert await worker.in_flight() == 4  # four leases out, two requests in flight
    await worker.flush()
    assert await worker.in_flight() == 2


async def test_one_workers_fetched_requests_free_the_host_for_another(open_worker: Open) -> None:
    busy, idle = await open_worker(), await open_worker()
    await busy.push(pages(4))
    leases = await pop_some(busy)
    assert len(leases) == 2
    assert await idle.pop() is None  # per-host limit across workers
    for lease in leases:
        await busy.fetched(lease)
    await busy.flush()  # the slots go back with the next pop or flush
    assert (await idle.pop()) is not None


async def test_a_lease_whose_request_was_done_is_still_redelivered_if_never_acked(
    open_worker: Open, clock: FakeClock
) -> None:
    dead = await open_worker(lease_ttl=30.0)
    alive = await open_worker(lease_ttl=30.0)
    await dead.push(pages(1))
    lost = await dead.pop()
    assert lost is not None
    await dead.fetched(lost)
    assert await dead.ack(lost)  # held back; the worker dies before its flush
    await dead.close()  # gone, its held ack with it
    clock.advance(30.0)
    assert await alive.reclaim_expired() == 1
    again = await alive.pop()
    assert again is not None
    assert again.request.url == lost.request.url


async def test_a_dead_workers_request_slots_come_back_when_they_expire(
    open_worker: Open, clock: FakeClock
) -> None:
    dead = await open_worker(lease_ttl=300.0, request_ttl=20.0)
    alive = await open_worker(lease_ttl=300.0, request_ttl=20.0)
    await dead.push(pages(4))
    assert len(await pop_some(dead)) == 2
    await dead.close()  # killed mid-request: its slots are never given back
    clock.advance(19.0)
    assert await alive.pop() is None
    clock.advance(1.0)
    taken = await pop_some(alive)
    assert len(taken) == 2
    assert await alive.in_flight() == 4  # the dead worker's leases still wait for expiry


async def test_a_released_nodes_slots_and_leases_go_back_at_once(open_worker: Open) -> None:
    dead = await open_worker(node="n1")
    alive = await open_worker(node="n2", steal_min=1)
    await dead.push(pages(3))
    leases = await pop_some(dead)
    assert len(leases) == 2
    await dead.fetched(leases[0])
    await dead.flush()
    assert await alive.release_node("n1") == 2
    await alive.assign_hosts({"one.test": "n2"})
    urls = sorted(lease.request.url for lease in await pop_some(alive))
    assert urls == ["http://one.test/0", "http://one.test/1"]


async def test_the_gate_answers_idle_pops_locally_until_a_slot_is_freed(
    open_worker: Open,
) -> None:
    worker = await open_worker(pop_gate=60.0)
    other = await open_worker()
    await worker.push(pages(4))
    leases = await pop_some(worker)
    assert len(leases) == 2
    await other.push([Request(url="http://two.test/0")])
    assert await worker.pop() is None  # gated: the other worker's push is not seen yet
    assert await worker.next_ready_in() == pytest.approx(60.0, abs=1.0)
    await worker.fetched(leases[0])
    assert await worker.next_ready_in() == 0.0
    lease = await worker.pop()
    assert lease is not None  # one probe for the freed slot: the best ready host
    assert lease.request.url in {"http://one.test/2", "http://two.test/0"}


def test_the_gate_opens_for_local_work_and_after_its_probe_interval() -> None:
    now = [0.0]
    gate = PopGate(probe_interval=0.05, clock=lambda: now[0])
    assert gate.closed_for() is None
    gate.open_one()  # while open: no credit piles up
    assert gate.closed_for() is None
    gate._closed_at = 0.0  # as after an empty pop
    assert gate.closed_for() == pytest.approx(0.05)
    now[0] = 0.05
    assert gate.closed_for() == pytest.approx(0.005)
    gate.open()
    assert gate.closed_for() is None


async def test_pops_queued_behind_one_are_served_by_its_round_trip(open_worker: Open) -> None:
    worker = await open_worker(pop_gate=0.05, max_per_host=100)
    await worker.push(pages(20))
    asked: list[int] = []
    pop_leases = worker._pop_leases

    async def counted(most: int) -> list[Lease]:
        asked.append(most)
        return await pop_leases(most)

    worker._pop_leases = counted  # type: ignore[method-assign]
    leases = await asyncio.gather(*(worker.pop() for _ in range(8)))
    urls = {lease.request.url for lease in leases if lease is not None}
    assert len(urls) == 8
    assert len(asked) < 8  # the pops behind the first were leased for in its round trip
    for lease in leases:
        assert lease is not None
        assert await worker.ack(lease)
    await worker.flush()
    assert await worker.in_flight() == 0


async def test_request_starts_are_spaced_for_all_workers_of_a_namespace(open_worker: Open) -> None:
    """claim_request keeps a host's next request start in Redis (Redis's own clock), so
    two workers' requests to one host start at least the delay apart."""
    one, two = await open_worker(), await open_worker()
    assert await one.claim_request("one.test", 30.0) == 0.0
    wait = await two.claim_request("one.test", 30.0)
    assert 25.0 < wait <= 30.0  # the other worker's request started just now
    assert await one.claim_request("one.test", 30.0) == pytest.approx(wait, abs=1.0)
    assert await two.claim_request("other.test", 30.0) == 0.0  # other hosts go on
