"""The demo microblog over HTTP: Mastodon JSON, paging, periods, rate limit headers and 429."""

from __future__ import annotations

import re

import aiohttp

from topicrawl.demoweb.microblog import MicroblogServer, MicroblogWorld
from topicrawl.sources.microblog import MastodonClient, post_from_status

WORLD = MicroblogWorld.generate(seed=5, periods=4)


async def test_search_pages_with_link_headers_and_serves_only_past_periods() -> None:
    async with MicroblogServer(WORLD) as server, aiohttp.ClientSession() as session:
        url = f"{server.base_url}api/v2/search"
        async with session.get(
            url, params={"q": "astronomy", "type": "statuses", "limit": "5"}
        ) as r:
            assert r.status == 200
            body = await r.json()
            link = r.headers["Link"]
            assert r.headers["X-RateLimit-Limit"] == "300"
            assert r.headers["X-RateLimit-Remaining"] == "299"
            assert re.fullmatch(
                r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r.headers["X-RateLimit-Reset"]
            )
        ids = [int(s["id"]) for s in body["statuses"]]
        expected = sorted((p.id for p in WORLD.posts_of(0) if p.matches("astronomy")), reverse=True)
        assert ids == expected[:5]
        status = body["statuses"][0]
        assert {
            "content",
            "account",
            "reblogs_count",
            "favourites_count",
            "replies_count",
            "tags",
            "url",
        } <= set(status)
        post = post_from_status(status)
        truth = WORLD.get(ids[0])
        assert truth is not None
        assert (post.reposts, post.likes, post.comments) == (
            truth.reposts,
            truth.likes,
            truth.comments,
        )
        assert post.text == truth.text
        assert f"max_id={ids[-1]}" in link
        assert 'rel="next"' in link
        server.advance()
        async with MastodonClient(server.base_url) as client:
            both = await client.search("astronomy", max_posts=1000)
        truth_ids = {p.id for p in WORLD.posts if p.period <= 1 and p.matches("astronomy")}
        assert {int(p.id) for p in both} == truth_ids


async def test_hashtag_timeline_in_chinese() -> None:
    async with MicroblogServer(WORLD) as server:
        server.period = 3
        async with MastodonClient(server.base_url) as client:
            posts = await client.hashtag("美食", max_posts=1000)
    truth = [p for p in WORLD.posts if "美食" in p.tags]
    assert {int(p.id) for p in posts} == {p.id for p in truth}
    assert all(p.lang == "zh" for p in posts)


async def test_over_the_limit_answers_429_and_the_client_waits_for_the_reset() -> None:
    async with MicroblogServer(WORLD, rate_limit=3, rate_window=1.0) as server:
        async with aiohttp.ClientSession() as session:
            statuses = []
            for _ in range(4):
                async with session.get(f"{server.base_url}api/v1/timelines/tag/football") as r:
                    statuses.append(r.status)
                    last = r
            assert statuses == [200, 200, 200, 429]
            assert last.headers["X-RateLimit-Remaining"] == "0"
            assert int(last.headers["Retry-After"]) >= 1
        async with MastodonClient(server.base_url) as client:
            results = [await client.hashtag("football", max_posts=5) for _ in range(5)]
            # 5 calls against 3 requests a second: the client waited (on a 429's Retry-After
            # or on Remaining 0) instead of failing, and every call got its posts.
            assert client.waited > 0
        assert all(len(posts) == 5 for posts in results)
