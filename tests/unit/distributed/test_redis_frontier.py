"""RedisFrontier beyond the contract: atomic pops, expiry, namespaces, Bloom, errors."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from tests.contract.test_frontier import FakeClock
from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.core.models import Request
from topicrawl.distributed import RedisFrontier, bloom_size, redis_frontier
from topicrawl.distributed.redis_frontier import redact

Open = Callable[..., Awaitable[RedisFrontier]]


@pytest.fixture
async def open_redis(redis_url: str) -> AsyncIterator[Open]:
    """Opens frontiers (by default all on one fresh namespace); drops every namespace after."""
    default = f"unit-{uuid.uuid4().hex}"
    opened: list[RedisFrontier] = []

    async def open_frontier(namespace: str | None = None, **options: Any) -> RedisFrontier:
        frontier = RedisFrontier(redis_url, namespace=namespace or default, **options)
        opened.append(await frontier.open())
        return frontier

    yield open_frontier
    for frontier in opened:
        if not frontier._closed:
            await frontier.drop()
            await frontier.close()


def req(url: str, score: float = 0.0, **fields: Any) -> Request:
    return Request(url=url, score=score, **fields)


async def test_concurrent_pops_from_two_clients_never_share_a_url(open_redis: Open) -> None:
    first = await open_redis(exact=True, max_per_host=100)
    second = await open_redis(exact=True, max_per_host=100)
    urls = [f"http://h{i % 5}.test/{i}" for i in range(50)]
    assert await first.push([req(url) for url in urls]) == 50
    pops = [(first if i % 2 else second).pop() for i in range(60)]
    leases = [lease for lease in await asyncio.gather(*pops) if lease is not None]
    assert sorted(lease.request.url for lease in leases) == sorted(urls)
    assert len({lease.token for lease in leases}) == 50
    assert (await first.queued(), await second.in_flight()) == (0, 50)


@pytest.mark.parametrize("count", [3, 2500])  # 2500: three script calls (batches of 1000)
async def test_urls_are_known_while_their_push_is_on_its_way(open_redis: Open, count: int) -> None:
    """Pages handled during a push's round trips must not push its URLs again (the crawl
    skips known links): 16 pages in flight sent 23 % of the Java docs' links twice or more."""
    frontier = await open_redis(exact=True)
    urls = [f"http://a.test/{i}" for i in range(count)]
    push = asyncio.create_task(frontier.push([req(url) for url in urls]))
    await asyncio.sleep(0)  # the first batch is sent, its answer not back
    assert not push.done()
    assert all(frontier.known(urls))
    assert await push == count
    assert frontier.known([urls[-1], "http://a.test/other"]) == [True, False]


async def test_urls_whose_push_failed_are_not_known(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontier = await open_redis(exact=True)
    assert await frontier.push([req("http://a.test/kept")]) == 1

    async def lost(name: str, args: list[str]) -> Any:
        raise FrontierError("Redis unreachable")

    monkeypatch.setattr(frontier, "_run", lost)
    with pytest.raises(FrontierError):
        await frontier.push([req("http://a.test/kept"), req("http://a.test/lost")])
    assert frontier.known(["http://a.test/kept", "http://a.test/lost"]) == [True, False]


async def test_a_dead_workers_lease_expires_and_another_worker_gets_the_url(
    open_redis: Open,
) -> None:
    clock = FakeClock()
    dead = await open_redis(exact=True, lease_ttl=30.0, clock=clock)
    alive = await open_redis(exact=True, lease_ttl=30.0, clock=clock)
    await dead.push([req("http://a.test/1", 1.0)])
    lost = await dead.pop()
    assert lost is not None
    await dead.close()  # the worker is gone without acking
    clock.advance(29.0)
    assert await alive.reclaim_expired() == 0
    assert await alive.pop() is None
    clock.advance(1.0)
    assert await alive.in_flight() == 1
    assert await alive.reclaim_expired() == 1
    again = await alive.pop()
    assert again is not None
    assert again.request == lost.request
    assert not await alive.ack(lost)  # the dead worker's lease is void
    assert await alive.ack(again)
    assert (await alive.queued(), await alive.in_flight()) == (0, 0)


async def test_namespaces_are_isolated(open_redis: Open) -> None:
    one = await open_redis(f"one-{uuid.uuid4().hex}", exact=True)
    two = await open_redis(f"two-{uuid.uuid4().hex}")
    assert await one.push([req("http://a.test/shared"), req("http://a.test/only-one")]) == 2
    assert await two.push([req("http://a.test/shared")]) == 1
    assert not await two.seen("http://a.test/only-one")
    lease = await one.pop()
    assert lease is not None
    assert (await two.queued(), await two.in_flight()) == (1, 0)
    assert await one.drop() > 0
    assert (await one.queued(), await one.in_flight()) == (0, 0)
    assert not await one.seen("http://a.test/shared")
    assert await two.seen("http://a.test/shared")
    assert await two.queued() == 1


async def test_host_delay_and_leases_are_shared_by_all_workers(open_redis: Open) -> None:
    clock = FakeClock()
    first = await open_redis(exact=True, max_per_host=1, clock=clock)
    second = await open_redis(exact=True, max_per_host=1, clock=clock)
    await first.push([req(f"http://a.test/{i}") for i in range(3)])
    lease = await first.pop()
    assert lease is not None
    assert await second.pop() is None  # the host's one lease is out, held by the other worker
    await second.set_host_delay("a.test", 10.0)
    assert await first.ack(lease)
    assert await second.pop() is None
    assert await second.next_ready_in() == pytest.approx(10.0)


def test_bloom_sizing_matches_the_formulas() -> None:
    size = bloom_size(1_000_000, 1e-7)
    assert size.bits_per_url == pytest.approx(33.55, abs=0.01)
    assert size.hashes == 23
    assert size.error_rate == pytest.approx(1e-7, rel=0.05)
    assert bloom_size(1000, 0.01).bits_per_url == pytest.approx(9.59, abs=0.01)


@given(st.integers(1, 10**9), st.floats(1e-12, 0.5))
def test_bloom_sizing_meets_the_asked_error_rate(capacity: int, rate: float) -> None:
    size = bloom_size(capacity, rate)
    assert size.hashes >= 1
    assert size.bits >= capacity * -math.log(rate) / math.log(2) ** 2
    assert size.error_rate <= rate * 1.1 + 1e-15


@pytest.mark.parametrize(("capacity", "rate"), [(0, 0.1), (10, 0.0), (10, 1.0), (10, -1.0)])
def test_impossible_bloom_options_are_config_errors(capacity: int, rate: float) -> None:
    with pytest.raises(ConfigError, match="bloom"):
        RedisFrontier("redis://x", namespace="n", bloom_capacity=capacity, bloom_error_rate=rate)


async def test_bloom_mode_false_positives_stay_near_the_configured_rate(open_redis: Open) -> None:
    frontier = await open_redis(bloom_capacity=2000, bloom_error_rate=0.01)
    assert await frontier.push([req(f"http://a.test/in/{i}") for i in range(2000)]) >= 1960
    false_hits = [await frontier.seen(f"http://a.test/out/{i}") for i in range(2000)]
    assert sum(false_hits) < 60  # expected ~20 at 1%
    assert all([await frontier.seen(f"http://a.test/in/{i}") for i in range(0, 2000, 97)])


async def test_a_namespace_cannot_switch_dedupe_mode(open_redis: Open, redis_url: str) -> None:
    bloom = await open_redis()
    with pytest.raises(ConfigError, match="dedupe"):
        await RedisFrontier(redis_url, namespace=bloom.namespace, exact=True).open()
    with pytest.raises(ConfigError, match="dedupe"):
        await RedisFrontier(redis_url, namespace=bloom.namespace, bloom_capacity=5).open()


async def test_unreachable_redis_is_a_frontier_error_naming_the_url_without_password() -> None:
    frontier = RedisFrontier("redis://crawler:s3cret@127.0.0.1:1/0", namespace="n")
    with pytest.raises(FrontierError, match=r"127\.0\.0\.1:1") as caught:
        await frontier.open()
    assert "s3cret" not in str(caught.value)
    assert "redis://crawler:***@127.0.0.1:1/0" in str(caught.value)


async def test_use_before_open_or_after_close_is_a_frontier_error(open_redis: Open) -> None:
    unopened = RedisFrontier("redis://127.0.0.1:6379/15", namespace="n")
    with pytest.raises(FrontierError, match="not open"):
        await unopened.pop()
    frontier = await open_redis()
    await frontier.drop()
    await frontier.close()
    with pytest.raises(FrontierError, match="closed"):
        await frontier.push([req("http://a.test/")])
    with pytest.raises(FrontierError, match="closed"):
        await frontier.open()


@pytest.mark.parametrize("namespace", ["", "a{b}", "a b", "x" * 101, "-lead", "a*"])
def test_bad_namespaces_are_config_errors(namespace: str) -> None:
    with pytest.raises(ConfigError, match="namespace"):
        RedisFrontier("redis://127.0.0.1/0", namespace=namespace)


def test_redact_hides_only_the_password() -> None:
    assert redact("redis://u:pw@h:6379/1") == "redis://u:***@h:6379/1"
    assert redact("rediss://:pw@h/0") == "rediss://:***@h/0"
    assert redact("redis://h:6379/0") == "redis://h:6379/0"


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=_text,
    anchor=_text,
    parent=st.none() | _text,
    score=st.floats(allow_nan=False),
    reasons=st.dictionaries(_text, st.floats(allow_nan=False, allow_infinity=False), max_size=3),
)
def test_hostile_requests_come_back_unchanged(
    redis_url: str,
    path: str,
    anchor: str,
    parent: str | None,
    score: float,
    reasons: dict[str, float],
) -> None:
    pushed = req(
        f"http://h\u00e9\t.test/{path}",
        score,
        anchor=anchor,
        parent_url=parent,
        depth=7,
        reasons=reasons,
    )

    async def round_trip() -> None:
        async with RedisFrontier(redis_url, namespace=f"h-{uuid.uuid4().hex}", exact=True) as f:
            try:
                assert await f.push([pushed]) == 1
                lease = await f.pop()
                assert lease is not None
                assert lease.request == pushed
                assert dict(lease.request.reasons) == reasons
                assert lease.host == "h\u00e9\t.test"
                assert await f.ack(lease)
            finally:
                await f.drop()

    asyncio.run(round_trip())


# -- batching: pages' pushes in one script call, a host's leases in one pop


def count_calls(frontier: RedisFrontier, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the scripts the frontier runs from now on, in order."""
    names: list[str] = []
    run = frontier._run

    async def counted(name: str, args: list[str]) -> Any:
        names.append(name)
        return await run(name, args)

    monkeypatch.setattr(frontier, "_run", counted)
    return names


async def commands_in_redis(redis_url: str, namespace: str, action: Awaitable[Any]) -> int:
    """How many commands (scripts' own included) on ``namespace``'s keys Redis runs while
    ``action`` runs, read with MONITOR (other users of the Redis are left out by the key)."""
    client = Redis.from_url(redis_url)
    marker = f"end-of-{uuid.uuid4().hex}"
    count = 0
    try:
        async with client.monitor() as monitor:
            await action
            await client.execute_command("ECHO", marker)
            while True:
                command = (await monitor.next_command())["command"]
                if marker in command:
                    return count
                if f"{{{namespace}}}" in command and not command.startswith("EVALSHA"):
                    count += 1
    finally:
        await client.aclose()


async def leases_of(frontier: RedisFrontier, count: int) -> list[Any]:
    await frontier.push([req(f"http://a.test/page{i}") for i in range(count)])
    leases = [await frontier.pop() for _ in range(count)]
    assert all(leases)
    return leases


async def test_pages_reserved_together_go_in_one_script_call(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's reservation and links were one script call each: ten pages asking at once
    now cost one (and pages asking while a call is on its way, the next one)."""
    frontier = await open_redis(exact=True, max_per_host=100)
    leases = await leases_of(frontier, 10)
    calls = count_calls(frontier, monkeypatch)
    added = await asyncio.gather(
        *(
            frontier.reserve_page(lease, [req(f"http://a.test/{i}-{j}") for j in range(3)])
            for i, lease in enumerate(leases)
        )
    )
    assert added == [3] * 10
    assert calls == ["push"]
    assert frontier.reserved_here == 10
    assert (await frontier.queued(), await frontier.in_flight()) == (30, 10)


async def test_a_refused_page_in_a_shared_call_queues_nothing_and_the_others_go_on(
    open_redis: Open,
) -> None:
    frontier = await open_redis(exact=True, max_per_host=100)
    leases = await leases_of(frontier, 4)
    assert await frontier.ack(leases[1])  # its lease is gone before its page is reserved
    results = await asyncio.gather(
        *(
            frontier.reserve_page(lease, [req(f"http://a.test/{i}-new")])
            for i, lease in enumerate(leases)
        ),
        return_exceptions=True,
    )
    assert [type(r).__name__ for r in results] == ["int", "LeaseLost", "int", "int"]
    assert frontier.known(["http://a.test/1-new", "http://a.test/2-new"]) == [False, True]
    assert await frontier.queued() == 3
    assert not await frontier.seen("http://a.test/1-new")


async def test_a_failed_shared_push_fails_each_of_its_pages_and_loses_no_lease(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script call for several pages that fails raises in each page (the crawl treats it
    as any Redis failure); their leases stay out, to be reclaimed, and the pages that
    asked after it are sent in the next call."""
    frontier = await open_redis(exact=True, max_per_host=100)
    leases = await leases_of(frontier, 6)
    run = frontier._run
    first_sent = asyncio.Event()
    release_first = asyncio.Event()
    pushes = 0

    async def flaky(name: str, args: list[str]) -> Any:
        nonlocal pushes
        if name == "push":
            pushes += 1
            if pushes == 1:
                first_sent.set()
                await release_first.wait()
            elif pushes == 2:
                raise FrontierError("Redis at redis://x failed: connection reset")
        return await run(name, args)

    monkeypatch.setattr(frontier, "_run", flaky)

    def links(i: int) -> list[Request]:
        return [req(f"http://a.test/{i}-{j}") for j in range(2)]

    first = asyncio.create_task(frontier.reserve_page(leases[0], links(0)))
    await first_sent.wait()
    behind = [asyncio.create_task(frontier.reserve_page(leases[i], links(i))) for i in (1, 2, 3)]
    await asyncio.sleep(0)
    release_first.set()
    assert await first == 2
    for task in behind:
        with pytest.raises(FrontierError):
            await task
    assert await frontier.reserve_page(leases[4], links(4)) == 2  # the next call goes through
    assert not any(frontier.known([link.url for i in (1, 2, 3) for link in links(i)]))
    assert frontier.reserved_here == 2
    assert (await frontier.queued(), await frontier.in_flight()) == (4, 6)
    for i in (1, 2, 3):  # their pages were not stored: reclaimed, their URLs come back
        assert await frontier.reclaim(leases[i])
    again = {lease.request.url for lease in [await frontier.pop() for _ in range(7)] if lease}
    assert {f"http://a.test/page{i}" for i in (1, 2, 3)} <= again


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    urls=st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from([0.0, 1.0, 2.0])),
        min_size=1,
        max_size=30,
    ),
    most=st.integers(1, 16),
    per_host=st.integers(1, 6),
)
def test_one_pop_of_several_leases_hands_out_what_single_pops_would(
    redis_url: str, urls: list[tuple[str, float]], most: int, per_host: int
) -> None:
    """A pop takes a host's next URLs together while they rank before the other hosts'
    (ties in push order); it must hand out the same URLs in the same order as pops one
    at a time would, each host's request limit and delay (c.test) included."""

    async def check() -> None:
        clock = FakeClock()
        requests = [req(f"http://{host}.test/{i}", score) for i, (host, score) in enumerate(urls)]
        popped: list[list[str]] = []
        for sizes in ([1] * most, [most]):
            frontier = RedisFrontier(
                redis_url,
                namespace=f"unit-{uuid.uuid4().hex}",
                exact=True,
                max_per_host=per_host,
                clock=clock,
            )
            await frontier.open()
            try:
                await frontier.set_host_delay("c.test", 1.0)
                await frontier.push(requests)
                leases = [lease for size in sizes for lease in await frontier._pop_leases(size)]
                popped.append([lease.request.url for lease in leases])
            finally:
                await frontier.drop()
                await frontier.close()
        assert popped[1] == popped[0]

    asyncio.run(check())


async def test_a_pop_of_a_hosts_run_of_leases_runs_a_few_commands_for_all(
    open_redis: Open, redis_url: str
) -> None:
    """One host, eight leases in one pop: some 25 commands a lease before, a few for all."""
    frontier = await open_redis(exact=True, max_per_host=8)
    await frontier.push([req(f"http://a.test/{i}") for i in range(20)])
    leases: list[Any] = []

    async def pop() -> None:
        leases.extend(await frontier._pop_leases(8))

    commands = await commands_in_redis(redis_url, frontier.namespace, pop())
    assert len(leases) == 8
    assert commands <= 40, commands


async def test_acks_and_freed_slots_run_a_few_commands_for_a_call(
    open_redis: Open, redis_url: str
) -> None:
    """A checkpoint acks hundreds of leases in one call: six or more commands each before."""
    frontier = await open_redis(exact=True, max_per_host=100, node="n1", defer_acks=True)
    leases = await leases_of(frontier, 40)
    for lease in leases:
        await frontier.fetched(lease)
        assert await frontier.ack(lease)
    commands = await commands_in_redis(redis_url, frontier.namespace, frontier.flush())
    assert (await frontier.in_flight(), await frontier.queued()) == (0, 0)
    assert commands <= 40, commands


async def test_more_held_acks_than_a_batch_all_reach_redis_and_a_failure_keeps_the_rest(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint of more acks than one script call takes (1,000; 4 here) sends them all.
    Before the fix the second batch went out empty and the acks past the first batch were
    dropped: their leases stayed out until they expired, and the crawl waited for them."""
    monkeypatch.setattr(redis_frontier, "_BATCH", 4)
    frontier = await open_redis(exact=True, max_per_host=100, node="n1", defer_acks=True)
    leases = await leases_of(frontier, 12)
    for lease in leases[:6]:
        assert await frontier.ack(lease)
    await frontier.flush()
    assert await frontier.in_flight() == 6
    run, calls = frontier._run, 0

    async def second_ack_fails(name: str, args: list[str]) -> Any:
        nonlocal calls
        if name == "ack":
            calls += 1
            if calls == 2:
                raise FrontierError("Redis went away")
        return await run(name, args)

    monkeypatch.setattr(frontier, "_run", second_ack_fails)
    for lease in leases[6:]:
        assert await frontier.ack(lease)
    with pytest.raises(FrontierError):
        await frontier.flush()  # the first batch of 4 went out, the last 2 did not
    assert await frontier.in_flight() == 2
    await frontier.flush()  # the held acks the failure left
    assert (await frontier.in_flight(), await frontier.queued()) == (0, 0)


async def test_a_renewed_lease_is_acked_past_its_first_expiry_with_held_acks(
    open_redis: Open,
) -> None:
    """A worker holding acks for its checkpoint (defer_acks) renews a page's lease: the ack,
    past the lease's first expiry, is taken and reaches Redis; a lease not renewed is refused
    by the local clock as before."""
    clock = FakeClock()
    frontier = await open_redis(exact=True, defer_acks=True, lease_ttl=60.0, clock=clock)
    kept, lost = await leases_of(frontier, 2)
    clock.advance(50.0)
    assert set(await frontier.renew([kept])) == {kept.token}
    clock.advance(20.0)
    assert await frontier.ack(kept)
    assert not await frontier.ack(lost)
    await frontier.flush()
    assert await frontier.reclaim_expired() == 1
    assert (await frontier.in_flight(), await frontier.queued()) == (0, 1)


async def test_pushes_waiting_when_the_frontier_closes_fail_as_redis_failures(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page whose shared push is cut by the frontier's close gets a FrontierError (its
    lease stays out, to come back), not a cancellation its task did not ask for."""
    frontier = await open_redis(exact=True, max_per_host=100)
    await open_redis(exact=True)  # drops the namespace at the end (a closed one cannot)
    leases = await leases_of(frontier, 3)
    run = frontier._run
    stuck = asyncio.Event()

    async def hanging(name: str, args: list[str]) -> Any:
        if name == "push":
            stuck.set()
            await asyncio.Event().wait()
        return await run(name, args)

    monkeypatch.setattr(frontier, "_run", hanging)
    first = asyncio.create_task(frontier.reserve_page(leases[0], [req("http://a.test/x")]))
    await stuck.wait()
    behind = asyncio.create_task(frontier.reserve_page(leases[1], [req("http://a.test/y")]))
    await asyncio.sleep(0)
    await frontier.close()
    for task in (first, behind):
        with pytest.raises(FrontierError, match="closed"):
            await task


async def test_a_bloom_filter_of_several_segments_dedupes(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filters past 2^30 bits span several keys (segments); small segments stand for them."""
    monkeypatch.setattr(redis_frontier, "_SEGMENT_BITS", 4096)
    frontier = await open_redis(bloom_capacity=2000, bloom_error_rate=0.01)  # 19,171 bits
    assert await frontier.push([req(f"http://a.test/in/{i}") for i in range(500)]) >= 495
    assert await frontier.push([req(f"http://a.test/in/{i}") for i in range(500)]) == 0
    assert all([await frontier.seen(f"http://a.test/in/{i}") for i in range(0, 500, 7)])
    assert sum([await frontier.seen(f"http://a.test/out/{i}") for i in range(500)]) < 10


async def test_a_revisit_makes_its_pages_reservation_final_and_a_reclaim_gives_it_back(
    open_redis: Open,
) -> None:
    frontier = await open_redis(exact=True, defer_acks=True, max_per_host=10)
    revisited, given_back = await leases_of(frontier, 2)
    for lease in (revisited, given_back):
        assert await frontier.reserve_page(lease, []) == 0
    assert await frontier.revisit(revisited, due=frontier._clock() + 3600)
    assert await frontier.reclaim(given_back)
    assert frontier.pages_here == 1  # the revisit is held: unsettled, counted
    await frontier.flush()
    assert (frontier.pages_here, frontier.final_here) == (1, 1)


async def test_leases_taken_for_pops_that_never_came_go_back_at_close(
    open_redis: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pop leases for the pops queued behind it; a crawl that stops meanwhile (its page
    limit) never takes them. Closing gives them back, so other workers do not wait for them
    to expire (a 3-worker round of the one-site benchmark took 282 s of a 300 s lease)."""
    frontier = await open_redis(exact=True, max_per_host=100, pop_gate=1.0)
    watcher = await open_redis(exact=True)
    await frontier.push([req(f"http://a.test/{i}") for i in range(4)])
    run, second_sent, release = frontier._run, asyncio.Event(), asyncio.Event()
    calls = 0

    async def held(name: str, args: list[str]) -> Any:
        nonlocal calls
        if name == "pop":
            calls += 1
            if calls == 2:  # the second pop, with two pops queued behind it
                second_sent.set()
                await release.wait()
        return await run(name, args)

    monkeypatch.setattr(frontier, "_run", held)
    pops = [asyncio.create_task(frontier.pop()) for _ in range(4)]
    await second_sent.wait()
    for task in pops[2:]:  # the crawl stops: the pops waiting behind are cancelled
        task.cancel()
    release.set()
    taken = [await pops[0], await pops[1]]
    assert all(task.cancelled() for task in pops[2:])
    assert await watcher.in_flight() == 4  # two leased for pops that are gone
    await frontier.close()
    assert (await watcher.in_flight(), await watcher.queued()) == (2, 2)
    again = [await watcher.pop(), await watcher.pop()]
    urls = {lease.request.url for lease in [*taken, *again] if lease}
    assert urls == {f"http://a.test/{i}" for i in range(4)}
