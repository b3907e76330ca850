"""The accounts client against the demo accounts server on loopback (and a hostile one)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from topicrawl.core.errors import PermanentFetchError
from topicrawl.demoweb.accounts import AccountWorld
from topicrawl.demoweb.accountserver import AccountServer
from topicrawl.sources.accountsapi import AccountsClient
from topicrawl.sources.microblog import MalformedResponse

NAMES = ["张艺谋", "巩俐", "流浪地球", "Christopher Nolan", "Gong Li", "Breaking Bad"]


@pytest.fixture(scope="module")
def world() -> AccountWorld:
    return AccountWorld.generate(NAMES, seed=3, fans=120, others=40)


@pytest.fixture
async def server(world: AccountWorld) -> AsyncIterator[AccountServer]:
    async with AccountServer(world, max_page=6) as srv:
        yield srv


async def test_search_pages_past_a_capped_page(server: AccountServer) -> None:
    async with AccountsClient(server.base_url) as client:
        found = await client.search_accounts("movie", limit=40)
        assert len(found) == 40
        assert len({a.id for a in found}) == 40
        assert client.requests >= 7  # pages of 6
        exact = await client.search_accounts("张艺谋", limit=5)
    names = [a.display_name for a in exact]
    assert any("张艺谋" in n for n in names)


async def test_following_lists_follow_the_link_header(
    server: AccountServer, world: AccountWorld
) -> None:
    busiest = max(world.following, key=lambda a: len(world.following[a]))
    expected = set(world.following[busiest])
    assert len(expected) > 6  # more than one page
    async with AccountsClient(server.base_url) as client:
        got = await client.following(busiest, max_accounts=500)
        capped = await client.following(busiest, max_accounts=4)
    assert {a.id for a in got} == expected
    assert len(capped) == 4
    first = got[0]
    assert first.followers == world.followers_count[first.id]


async def test_statuses_tell_reposts_from_posts(server: AccountServer, world: AccountWorld) -> None:
    account = max(world.statuses, key=lambda a: len(world.statuses[a]))
    truth = world.statuses[account]
    async with AccountsClient(server.base_url) as client:
        entries = await client.statuses(account, max_posts=1000)
        few = await client.statuses(account, max_posts=5)
    assert len(entries) == len(truth)
    assert len(few) == 5
    assert sum(e.repost for e in entries) == sum(s.reblog_of is not None for s in truth)
    for entry, status in zip(entries, truth, strict=True):
        if entry.repost:
            assert entry.post.id == str(status.reblog_of)  # the original, not the wrapper
        else:
            assert entry.post.id == str(status.id)
            assert entry.post.reposts == status.reposts


async def test_unknown_account_is_a_permanent_error(server: AccountServer) -> None:
    async with AccountsClient(server.base_url) as client:
        with pytest.raises(PermanentFetchError, match="404"):
            await client.following("999")


async def test_rate_limits_are_waited_for(world: AccountWorld) -> None:
    async with AccountServer(world, rate_limit=3, rate_window=1.0) as srv:
        account = next(iter(world.accounts))
        async with AccountsClient(srv.base_url) as first:
            for _ in range(4):
                await first.statuses(account, max_posts=1)
            assert first.waited > 0  # remaining hit 0: it waited for the reset, not a 429
        assert srv.rejected == 0
    async with AccountServer(world, rate_limit=3, rate_window=1.0) as srv:
        async with AccountsClient(srv.base_url) as spender, AccountsClient(srv.base_url) as other:
            for _ in range(3):
                await spender.statuses(account, max_posts=1)
            got = await other.statuses(account, max_posts=1)  # knows no headers: gets a 429
            assert got
            assert other.waited >= 1.0
        assert srv.rejected >= 1


async def test_a_server_that_repeats_its_page_forever_is_left(unused_tcp_port: int) -> None:
    async def looping(request: web.Request) -> web.Response:
        body = [{"id": "1", "username": "a", "display_name": "A"}]
        link = f'<http://127.0.0.1:{unused_tcp_port}/api/v1/accounts/1/following>; rel="next"'
        return web.json_response(body, headers={"Link": link})

    async def not_a_list(request: web.Request) -> web.Response:
        return web.json_response({"error": "nope"})

    app = web.Application()
    app.router.add_get("/api/v1/accounts/{id}/following", looping)
    app.router.add_get("/api/v1/accounts/{id}/statuses", not_a_list)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    try:
        async with AccountsClient(f"http://127.0.0.1:{unused_tcp_port}/") as client:
            got = await client.following("1", max_accounts=100)
            assert [a.id for a in got] == ["1"]
            assert client.requests == 2
            with pytest.raises(MalformedResponse, match="JSON list"):
                await client.statuses("1")
    finally:
        await runner.cleanup()
