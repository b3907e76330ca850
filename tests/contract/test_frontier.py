"""The Frontier contract (see ``topicrawl.core.protocols.Frontier``), for every implementation.

To add an implementation, add one entry to ``FACTORIES`` (and to ``DURABLE`` if reopening the
same place resumes the crawl).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REDIS_URL, require_service
from topicrawl.core.errors import FrontierError
from topicrawl.core.models import Lease, Request
from topicrawl.core.protocols import Frontier
from topicrawl.distributed import RedisFrontier
from topicrawl.engine.crawl import RenewsLeases
from topicrawl.frontier import MemoryFrontier, SqliteFrontier


class FakeClock:
    """Seconds since the epoch, moved by hand."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# A factory opens a frontier at `place` (a path unique to it; the same place again means
# "reopen the same crawl") with the given clock and constructor options.
Factory = Callable[..., Awaitable[Frontier]]


async def _memory(place: Path, clock: FakeClock, **options: Any) -> Frontier:
    return MemoryFrontier(clock=clock, **options)


async def _sqlite(place: Path, clock: FakeClock, **options: Any) -> Frontier:
    return await SqliteFrontier(place.with_suffix(".db"), clock=clock, **options).open()


async def _sqlite_spill(place: Path, clock: FakeClock, **options: Any) -> Frontier:
    """SQLite keeping at most 4 keys of a host in memory (the rest read back from the table)."""
    options.setdefault("spill_limit", 4)
    return await _sqlite(place, clock, **options)


class _TestRedisFrontier(RedisFrontier):
    """Drops its namespace when closed, so each test leaves Redis as it found it."""

    async def close(self) -> None:
        if self._redis is not None:
            await self.drop()
        await super().close()


async def _redis(place: Path, clock: FakeClock, **options: Any) -> Frontier:
    require_service("Redis", "127.0.0.1", 6379)
    namespace = f"contract-{uuid.uuid4().hex}"
    frontier = _TestRedisFrontier(
        REDIS_URL, namespace=namespace, exact=True, clock=clock, **options
    )
    return await frontier.open()


FACTORIES: dict[str, Factory] = {
    "memory": _memory,
    "redis": _redis,
    "sqlite": _sqlite,
    "sqlite-spill": _sqlite_spill,
}
DURABLE = ["sqlite", "sqlite-spill"]

Opener = Callable[..., Awaitable[Frontier]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def _opener(
    factory: Factory, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[tuple[Opener, list[Frontier]]]:
    opened: list[Frontier] = []

    async def open_frontier(place: str | None = None, **options: Any) -> Frontier:
        frontier = await factory(tmp_path / (place or f"frontier{len(opened)}"), clock, **options)
        opened.append(frontier)
        assert isinstance(frontier, Frontier)
        return frontier

    yield open_frontier, opened
    for frontier in opened:
        await frontier.close()


@pytest.fixture(params=sorted(FACTORIES))
async def open_frontier(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Opener]:
    async for opener, _ in _opener(FACTORIES[request.param], tmp_path, clock):
        yield opener


@pytest.fixture(params=DURABLE)
async def open_durable(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[Opener]:
    async for opener, _ in _opener(FACTORIES[request.param], tmp_path, clock):
        yield opener


def req(url: str, score: float = 0.0, **fields: Any) -> Request:
    return Request(url=url, score=score, **fields)


async def drain(frontier: Frontier) -> list[str]:
    """Pop and ack until nothing is ready; the URLs in order."""
    urls: list[str] = []
    while (lease := await frontier.pop()) is not None:
        urls.append(lease.request.url)
        assert await frontier.ack(lease)
    return urls


# -- ordering


async def test_pop_hands_out_the_highest_score_first(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=100)
    await frontier.push([req("http://a.test/low", 0.1), req("http://b.test/high", 0.9)])
    await frontier.push([req("http://a.test/mid", 0.5), req("http://c.test/neg", -3.0)])
    assert await drain(frontier) == [
        "http://b.test/high",
        "http://a.test/mid",
        "http://a.test/low",
        "http://c.test/neg",
    ]


async def test_equal_scores_leave_in_insertion_order(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=100)
    urls = [f"http://h{i % 3}.test/{i}" for i in range(30)]
    await frontier.push([req(url, 1.0) for url in urls[:10]])
    await frontier.push([req(url, 1.0) for url in urls[10:]])
    assert await drain(frontier) == urls


async def test_negative_depth_as_score_gives_breadth_first_order(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=100)

    def children(url: str, depth: int) -> list[Request]:
        return [req(f"{url}{c}/", -(depth + 1), depth=depth + 1) for c in "ab"]

    await frontier.push([req("http://site.test/", 0.0)])
    depths = []
    while (lease := await frontier.pop()) is not None:
        depths.append(lease.request.depth)
        if lease.request.depth < 3:
            await frontier.push(children(lease.request.url, lease.request.depth))
        await frontier.ack(lease)
    assert depths == [0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3]


async def test_peek_shows_what_pop_would_hand_out_without_leasing(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    assert await frontier.peek() is None
    await frontier.push([req("http://a.test/1", 0.2), req("http://b.test/2", 0.7)])
    peeked = await frontier.peek()
    assert peeked is not None
    assert peeked.url == "http://b.test/2"
    assert await frontier.in_flight() == 0
    lease = await frontier.pop()
    assert lease is not None
    assert lease.request == peeked


async def test_requests_come_back_with_their_fields(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    pushed = req(
        "http://a.test/page",
        0.625,
        depth=3,
        parent_url="http://a.test/",
        anchor="a page",
        inherited=0.25,
        reasons={"anchor": 0.5, "inherited": 0.125},
    )
    await frontier.push([pushed])
    lease = await frontier.pop()
    assert lease is not None
    assert lease.request == pushed
    assert dict(lease.request.reasons) == {"anchor": 0.5, "inherited": 0.125}
    assert lease.host == "a.test"


# -- dedupe and increase-key


async def test_push_adds_only_urls_not_seen_before(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    batch = [req("http://a.test/1"), req("http://a.test/2"), req("http://a.test/1")]
    assert await frontier.push(batch) == 2
    assert await frontier.push([req("http://a.test/2"), req("http://a.test/3")]) == 1
    assert await frontier.queued() == 3
    assert await frontier.push([]) == 0


async def test_a_url_is_never_queued_again_once_leased_or_acked(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    await frontier.push([req("http://a.test/1"), req("http://a.test/2")])
    done = await frontier.pop()
    out = await frontier.pop()
    assert done is not None
    assert out is not None
    assert await frontier.ack(done)
    again = [req("http://a.test/1", 5.0), req("http://a.test/2", 5.0)]
    assert await frontier.push(again) == 0
    assert await frontier.queued() == 0
    assert await frontier.pop() is None


async def test_seen_knows_every_url_ever_pushed(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    assert not await frontier.seen("http://a.test/1")
    await frontier.push([req("http://a.test/1")])
    assert await frontier.seen("http://a.test/1")
    lease = await frontier.pop()
    assert lease is not None
    await frontier.ack(lease)
    assert await frontier.seen("http://a.test/1")
    assert not await frontier.seen("http://a.test/2")


async def test_increase_moves_a_queued_url_ahead(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=100)
    await frontier.push([req(f"http://a.test/{i}", 0.1 * i) for i in range(5)])
    assert await frontier.increase("http://a.test/0", 2.0)
    assert not await frontier.increase("http://a.test/1", 0.05)  # lower: ignored
    assert not await frontier.increase("http://a.test/4", 0.4)  # equal: ignored
    assert not await frontier.increase("http://a.test/unknown", 9.0)
    lease = await frontier.pop()
    assert lease is not None
    assert lease.request.url == "http://a.test/0"
    assert lease.request.score == 2.0
    assert not await frontier.increase("http://a.test/0", 3.0)  # leased: not queued
    assert await drain(frontier) == [f"http://a.test/{i}" for i in (4, 3, 2, 1)]
    assert await frontier.queued() == 0


async def test_rescore_moves_queued_urls_up_and_down(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=100)
    await frontier.push([req(f"http://a.test/{i}", 0.1 * i) for i in range(5)])
    await frontier.push([req("http://b.test/9", 0.35)])
    changed = await frontier.rescore(
        {
            "http://a.test/4": 0.05,  # lower: from first to last but one
            "http://a.test/0": 0.25,  # higher
            "http://a.test/2": 0.2,  # unchanged: not counted
            "http://a.test/unknown": 9.0,  # never pushed: ignored
        }
    )
    assert changed == 2
    lease = await frontier.pop()
    assert lease is not None
    assert (lease.request.url, lease.request.score) == ("http://b.test/9", 0.35)
    lease = await frontier.pop()
    assert lease is not None
    assert lease.request.url == "http://a.test/3"
    assert await frontier.rescore({"http://a.test/3": 1.0}) == 0  # leased: not queued
    assert await drain(frontier) == [f"http://a.test/{i}" for i in (0, 2, 1, 4)]
    assert await frontier.queued() == 0


async def test_rescore_refuses_nan_and_changes_nothing(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=100)
    await frontier.push([req("http://a.test/1", 0.5), req("http://a.test/2", 0.4)])
    with pytest.raises(ValueError, match="NaN"):
        await frontier.rescore({"http://a.test/1": 0.1, "http://a.test/2": math.nan})
    assert await drain(frontier) == ["http://a.test/1", "http://a.test/2"]


async def test_pushing_a_queued_url_higher_raises_it_lower_is_ignored(
    open_frontier: Opener,
) -> None:
    frontier = await open_frontier(max_per_host=100)
    await frontier.push([req("http://a.test/x", 0.1), req("http://b.test/y", 0.5)])
    assert await frontier.push([req("http://a.test/x", 0.9, anchor="better")]) == 0
    assert await frontier.push([req("http://b.test/y", 0.2)]) == 0
    assert await frontier.queued() == 2
    first = await frontier.pop()
    second = await frontier.pop()
    assert first is not None
    assert second is not None
    assert (first.request.url, first.request.score, first.request.anchor) == (
        "http://a.test/x",
        0.9,
        "better",
    )
    assert (second.request.url, second.request.score) == ("http://b.test/y", 0.5)
    assert await frontier.pop() is None


async def test_repeated_increases_leave_one_entry(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=1000)
    urls = [f"http://a.test/{i}" for i in range(50)]
    await frontier.push([req(url, 0.0) for url in urls])
    for round_ in range(1, 6):
        await frontier.push([req(url, float(round_)) for url in urls])
    assert await frontier.queued() == 50
    assert sorted(await drain(frontier)) == sorted(urls)
    assert await frontier.queued() == 0


async def test_nan_score_is_refused(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    with pytest.raises(ValueError, match="NaN"):
        await frontier.push([req("http://a.test/ok"), req("http://a.test/nan", float("nan"))])
    assert await frontier.queued() == 0
    assert not await frontier.seen("http://a.test/ok")


# -- politeness and fairness


async def test_max_per_host_caps_leases_of_one_host(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=2)
    await frontier.push([req(f"http://a.test/{i}", 1.0) for i in range(5)])
    first, second = await frontier.pop(), await frontier.pop()
    assert first is not None
    assert second is not None
    assert await frontier.pop() is None
    assert await frontier.in_flight() == 2
    await frontier.ack(first)
    third = await frontier.pop()
    assert third is not None
    assert third.request.url == "http://a.test/2"


async def test_host_delay_spaces_fetches_of_a_host(open_frontier: Opener, clock: FakeClock) -> None:
    frontier = await open_frontier(default_delay=2.0)
    await frontier.push([req("http://a.test/1"), req("http://a.test/2")])
    first = await frontier.pop()
    assert first is not None
    await frontier.ack(first)
    assert await frontier.pop() is None
    assert await frontier.next_ready_in() == pytest.approx(2.0)
    clock.advance(1.5)
    assert await frontier.pop() is None
    assert await frontier.next_ready_in() == pytest.approx(0.5)
    clock.advance(0.5)
    second = await frontier.pop()
    assert second is not None
    assert second.request.url == "http://a.test/2"


async def test_set_host_delay_applies_to_that_host_from_its_last_fetch(
    open_frontier: Opener, clock: FakeClock
) -> None:
    frontier = await open_frontier(default_delay=0.0, max_per_host=10)
    await frontier.push([req(f"http://{h}.test/{i}", 1.0) for i in range(2) for h in "ab"])
    first = await frontier.pop()
    assert first is not None
    assert first.host == "a.test"
    await frontier.set_host_delay("a.test", 5.0)  # robots.txt Crawl-delay, read after fetch
    clock.advance(1.0)
    assert [(await frontier.pop()) is not None for _ in range(3)] == [True, True, False]
    assert await frontier.next_ready_in() == pytest.approx(4.0)
    clock.advance(4.0)
    last = await frontier.pop()
    assert last is not None
    assert last.request.url == "http://a.test/1"


async def test_a_big_host_does_not_starve_a_small_one(
    open_frontier: Opener, clock: FakeClock
) -> None:
    frontier = await open_frontier(default_delay=1.0)
    await frontier.push([req(f"http://big.test/{i}", 1.0) for i in range(10_000)])
    await frontier.push([req("http://small.test/only", 0.1)])
    hosts: list[str] = []
    while len(hosts) < 3:
        lease = await frontier.pop()
        if lease is None:
            clock.advance(1.0)
            continue
        hosts.append(lease.host)
        await frontier.ack(lease)
    assert hosts == ["big.test", "small.test", "big.test"]


async def test_the_lease_limit_lets_other_hosts_through(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=3)
    await frontier.push([req(f"http://big.test/{i}", 1.0) for i in range(10_000)])
    await frontier.push([req("http://small.test/only", 1.0)])
    hosts = [lease.host for _ in range(4) if (lease := await frontier.pop()) is not None]
    assert hosts == ["big.test"] * 3 + ["small.test"]


# -- leases


async def test_ack_and_reclaim_of_a_stale_lease_return_false_and_change_nothing(
    open_frontier: Opener,
) -> None:
    frontier = await open_frontier()
    await frontier.push([req("http://a.test/1"), req("http://a.test/2")])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.ack(lease)
    assert not await frontier.ack(lease)
    assert not await frontier.reclaim(lease)
    forged = Lease(request=lease.request, token="no-such-token", host="a.test", expires_at=0)
    assert not await frontier.ack(forged)
    assert not await frontier.reclaim(forged, delay=1.0)
    assert (await frontier.queued(), await frontier.in_flight()) == (1, 0)


async def test_reclaim_puts_the_url_back_in_its_place(open_frontier: Opener) -> None:
    frontier = await open_frontier(max_per_host=10)
    await frontier.push([req("http://a.test/1", 0.5), req("http://a.test/2", 0.5)])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.reclaim(lease)
    assert (await frontier.queued(), await frontier.in_flight()) == (2, 0)
    again = await frontier.pop()
    assert again is not None
    assert again.request.url == "http://a.test/1"
    assert again.token != lease.token
    assert not await frontier.ack(lease)
    assert await frontier.ack(again)


async def test_reclaim_with_delay_holds_the_url_back(
    open_frontier: Opener, clock: FakeClock
) -> None:
    frontier = await open_frontier()
    await frontier.push([req("http://a.test/retry", 1.0), req("http://b.test/other", 0.1)])
    lease = await frontier.pop()
    assert lease is not None
    assert await frontier.reclaim(lease, delay=30.0)
    assert await frontier.queued() == 2
    other = await frontier.pop()
    assert other is not None
    assert other.request.url == "http://b.test/other"
    await frontier.ack(other)
    assert await frontier.pop() is None
    assert await frontier.next_ready_in() == pytest.approx(30.0)
    clock.advance(30.0)
    retried = await frontier.pop()
    assert retried is not None
    assert retried.request.url == "http://a.test/retry"


async def test_expired_leases_are_reclaimed(open_frontier: Opener, clock: FakeClock) -> None:
    frontier = await open_frontier(lease_ttl=60.0)
    await frontier.push([req("http://a.test/1"), req("http://b.test/2")])
    lost = await frontier.pop()
    kept = await frontier.pop()
    assert lost is not None
    assert kept is not None
    assert lost.expires_at == clock.now + 60.0
    clock.advance(30.0)
    assert await frontier.reclaim_expired() == 0
    assert await frontier.ack(kept)
    clock.advance(30.0)
    assert not await frontier.ack(lost)  # expired: a late ack is ignored
    assert await frontier.in_flight() == 1
    assert await frontier.reclaim_expired() == 1
    assert await frontier.reclaim_expired() == 0
    assert (await frontier.queued(), await frontier.in_flight()) == (1, 0)
    again = await frontier.pop()
    assert again is not None
    assert again.request.url == lost.request.url
    assert not await frontier.reclaim(lost)
    assert await frontier.ack(again)


async def test_a_renewed_lease_outlives_its_first_expiry(
    open_frontier: Opener, clock: FakeClock
) -> None:
    """A holder still working on its page renews its lease; an expired lease is not renewed
    (its URL may be another holder's by then)."""
    frontier = await open_frontier(lease_ttl=60.0)
    assert isinstance(frontier, RenewsLeases)
    await frontier.push([req("http://a.test/1"), req("http://b.test/2")])
    kept = await frontier.pop()
    lost = await frontier.pop()
    assert kept is not None
    assert lost is not None
    clock.advance(50.0)
    assert await frontier.renew([kept]) == {kept.token: pytest.approx(clock.now + 60.0)}
    clock.advance(20.0)  # past both leases' first expiry
    assert await frontier.renew([lost]) == {}
    assert await frontier.reclaim_expired() == 1  # the one not renewed
    assert await frontier.ack(kept)  # the renewed one is still its holder's
    assert (await frontier.queued(), await frontier.in_flight()) == (1, 0)
    again = await frontier.pop()
    assert again is not None
    assert again.request.url == lost.request.url


async def test_next_ready_in_says_when_to_pop(open_frontier: Opener, clock: FakeClock) -> None:
    frontier = await open_frontier(default_delay=3.0, max_per_host=1, lease_ttl=100.0)
    assert await frontier.next_ready_in() is None
    await frontier.push([req("http://a.test/1"), req("http://a.test/2")])
    assert await frontier.next_ready_in() == 0.0
    lease = await frontier.pop()
    assert lease is not None
    # The host is at its lease limit: only the lease's expiry frees it.
    assert await frontier.next_ready_in() == pytest.approx(100.0)
    await frontier.ack(lease)
    assert await frontier.next_ready_in() == pytest.approx(3.0)
    clock.advance(3.0)
    assert await frontier.next_ready_in() == 0.0
    last = await frontier.pop()
    assert last is not None
    await frontier.ack(last)
    assert await frontier.next_ready_in() is None


async def test_counts(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    await frontier.push([req(f"http://a.test/{i}") for i in range(4)])
    lease = await frontier.pop()
    assert lease is not None
    assert (await frontier.queued(), await frontier.in_flight()) == (3, 1)
    await frontier.ack(lease)
    assert (await frontier.queued(), await frontier.in_flight()) == (3, 0)


async def test_a_closed_frontier_refuses_work(open_frontier: Opener) -> None:
    frontier = await open_frontier()
    await frontier.flush()
    await frontier.close()
    await frontier.close()
    with pytest.raises(FrontierError):
        await frontier.push([req("http://a.test/1")])
    with pytest.raises(FrontierError):
        await frontier.pop()


# -- durable implementations


async def _crawl_a_little(frontier: Frontier) -> tuple[list[Lease], list[Lease]]:
    await frontier.push([req(f"http://h{i % 4}.test/{i}", float(i % 3)) for i in range(40)])
    await frontier.increase("http://h1.test/1", 10.0)
    await frontier.push([req("http://h3.test/3", 5.0), req("http://h0.test/0", -1.0)])
    done = [lease for _ in range(5) if (lease := await frontier.pop()) is not None]
    out = [lease for _ in range(3) if (lease := await frontier.pop()) is not None]
    for lease in done:
        assert await frontier.ack(lease)
    return done, out


async def test_reopening_resumes_the_crawl_exactly(open_durable: Opener, clock: FakeClock) -> None:
    frontier = await open_durable("crawl", max_per_host=100)
    done, out = await _crawl_a_little(frontier)
    await frontier.close()
    # The same crawl without a restart, where the leases that were out come back.
    reference = MemoryFrontier(clock=clock, max_per_host=100)
    _, reference_out = await _crawl_a_little(reference)
    for lease in reference_out:
        await reference.reclaim(lease)

    reopened = await open_durable("crawl", max_per_host=100)
    assert (await reopened.queued(), await reopened.in_flight()) == (35, 0)
    for lease in done:
        assert await reopened.seen(lease.request.url)
        assert await reopened.push([lease.request]) == 0
    for lease in out:  # leases from before the restart are stale; their URLs are queued
        assert not await reopened.ack(lease)
    assert await drain(reopened) == await drain(reference)


async def test_reopening_keeps_host_delays(open_durable: Opener, clock: FakeClock) -> None:
    frontier = await open_durable("crawl")
    await frontier.push([req("http://a.test/1", 1.0), req("http://a.test/2", 0.0)])
    await frontier.set_host_delay("a.test", 7.0)
    await frontier.close()
    reopened = await open_durable("crawl")
    first = await reopened.pop()
    assert first is not None
    assert first.request.url == "http://a.test/1"
    await reopened.ack(first)
    assert await reopened.pop() is None
    assert await reopened.next_ready_in() == pytest.approx(7.0)


async def test_reopening_keeps_order_and_payload(open_durable: Opener) -> None:
    frontier = await open_durable("crawl", max_per_host=100)
    pushed = [
        req(f"http://h{i % 3}.test/{i}", float(i % 4), depth=i, anchor=f"a{i}", inherited=0.5)
        for i in range(24)
    ]
    await frontier.push(pushed)
    await frontier.close()
    expected = sorted(pushed, key=lambda r: (-r.score, pushed.index(r)))
    reopened = await open_durable("crawl", max_per_host=100)
    leases = [await reopened.pop() for _ in range(24)]
    assert [lease.request if lease else None for lease in leases] == expected
