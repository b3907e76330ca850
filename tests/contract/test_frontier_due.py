"""Due times (revisits) in the Frontier contract, for every implementation.

Uses the fixtures of ``test_frontier.py``: a fetched page queued again with ``revisit`` is
handed out only from its due time on, keeps its score, and a durable frontier keeps the due
time across a restart once flushed.
"""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import REDIS_URL, require_service
from tests.contract import test_frontier as contract
from tests.contract.test_frontier import FakeClock, Opener, req
from topicrawl.distributed import RedisFrontier

# The contract suite's fixtures, under their own names so pytest finds them here too.
clock = contract.clock
open_frontier = contract.open_frontier
open_durable = contract.open_durable


async def test_a_revisited_page_is_not_handed_out_before_it_is_due(
    open_frontier: Opener, clock: FakeClock
) -> None:
    frontier = await open_frontier()
    await frontier.push([req("http://a.test/page", 1.0)])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.revisit(lease, due=clock.now + 100.0)
    assert await frontier.queued() == 1
    assert await frontier.in_flight() == 0
    assert await frontier.pop() is None
    assert await frontier.next_ready_in() == pytest.approx(100.0)
    clock.advance(99.0)
    assert await frontier.pop() is None
    clock.advance(1.0)
    again = await frontier.pop()
    assert again is not None
    assert again.request.url == "http://a.test/page"
    assert again.request.score == 1.0
    assert await frontier.ack(again)
    assert await frontier.queued() == 0


async def test_due_pages_leave_by_score_and_undue_ones_wait(
    open_frontier: Opener, clock: FakeClock
) -> None:
    frontier = await open_frontier(max_per_host=10)
    await frontier.push([req(f"http://a.test/{i}", float(i)) for i in range(4)])
    leases = [await frontier.pop() for _ in range(4)]
    assert all(lease is not None for lease in leases)
    dues = {"http://a.test/3": 50.0, "http://a.test/2": 10.0, "http://a.test/1": 10.0}
    for lease in leases:
        assert lease is not None
        url = lease.request.url
        if url in dues:
            assert await frontier.revisit(lease, due=clock.now + dues[url])
        else:
            assert await frontier.ack(lease)
    clock.advance(20.0)
    first = await frontier.pop()
    second = await frontier.pop()
    assert first is not None
    assert second is not None
    assert [first.request.url, second.request.url] == ["http://a.test/2", "http://a.test/1"]
    assert await frontier.pop() is None  # /3 is not due until 50 s
    clock.advance(30.0)
    third = await frontier.pop()
    assert third is not None
    assert third.request.url == "http://a.test/3"


async def test_a_due_time_in_the_past_is_ready_at_once(
    open_frontier: Opener, clock: FakeClock
) -> None:
    frontier = await open_frontier()
    await frontier.push([req("http://a.test/late")])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.revisit(lease, due=clock.now - 5.0)
    again = await frontier.pop()
    assert again is not None
    assert again.request.url == "http://a.test/late"


async def test_revisit_of_a_stale_lease_is_refused(open_frontier: Opener, clock: FakeClock) -> None:
    frontier = await open_frontier(lease_ttl=10.0)
    await frontier.push([req("http://a.test/x")])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.ack(lease)
    assert not await frontier.revisit(lease, due=clock.now + 1.0)
    await frontier.flush()
    assert await frontier.queued() == 0
    with pytest.raises(ValueError, match="finite"):
        await frontier.revisit(lease, due=float("inf"))


async def test_a_revisited_url_is_not_pushed_twice(open_frontier: Opener, clock: FakeClock) -> None:
    frontier = await open_frontier()
    await frontier.push([req("http://a.test/p")])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.revisit(lease, due=clock.now + 10.0)
    await frontier.flush()
    assert await frontier.push([req("http://a.test/p")]) == 0
    assert await frontier.queued() == 1


async def test_reopening_keeps_due_times(open_durable: Opener, clock: FakeClock) -> None:
    frontier = await open_durable("crawl", max_per_host=10)
    await frontier.push([req("http://a.test/due", 2.0), req("http://a.test/now", 1.0)])
    first = await frontier.pop()
    second = await frontier.pop()
    assert first is not None
    assert second is not None
    assert await frontier.revisit(first, due=clock.now + 60.0)
    assert await frontier.revisit(second, due=clock.now)
    await frontier.close()
    reopened = await open_durable("crawl", max_per_host=10)
    assert await reopened.queued() == 2
    now_ready = await reopened.pop()
    assert now_ready is not None
    assert now_ready.request.url == "http://a.test/now"
    assert await reopened.pop() is None
    assert await reopened.next_ready_in() == pytest.approx(60.0)
    clock.advance(60.0)
    due = await reopened.pop()
    assert due is not None
    assert due.request.url == "http://a.test/due"


async def test_redis_holds_a_revisit_until_flush_with_deferred_acks(clock: FakeClock) -> None:
    require_service("Redis", "127.0.0.1", 6379)
    frontier = contract._TestRedisFrontier(
        REDIS_URL, namespace=f"due-{uuid.uuid4().hex}", exact=True, clock=clock, defer_acks=True
    )
    await frontier.open()
    try:
        await frontier.push([req("http://a.test/held")])
        lease = await frontier.pop()
        assert lease is not None
        assert await frontier.revisit(lease, due=clock.now + 30.0)
        assert await frontier.in_flight() == 1  # held, like an ack, until the checkpoint
        await frontier.flush()
        assert await frontier.in_flight() == 0
        assert await frontier.pop() is None
        clock.advance(30.0)
        again = await frontier.pop()
        assert again is not None
        assert again.request.url == "http://a.test/held"
    finally:
        await frontier.close()


async def test_redis_due_times_outlive_the_worker_that_set_them(clock: FakeClock) -> None:
    require_service("Redis", "127.0.0.1", 6379)
    namespace = f"due-{uuid.uuid4().hex}"
    first = await RedisFrontier(REDIS_URL, namespace=namespace, exact=True, clock=clock).open()
    second = contract._TestRedisFrontier(REDIS_URL, namespace=namespace, exact=True, clock=clock)
    try:
        await first.push([req("http://a.test/due")])
        lease = await first.pop()
        assert lease is not None
        assert await first.revisit(lease, due=clock.now + 45.0)
        await first.close()  # the worker goes away; its revisit stays in Redis
        await second.open()
        assert await second.queued() == 1
        assert await second.pop() is None
        assert await second.next_ready_in() == pytest.approx(45.0)
        clock.advance(45.0)
        again = await second.pop()
        assert again is not None
        assert again.request.url == "http://a.test/due"
    finally:
        await first.close()
        await second.close()
