"""MastodonClient against small hand-written aiohttp servers: parsing, paging, limits, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from topicrawl.core.errors import (
    BlockedError,
    ConfigError,
    PermanentFetchError,
    RetryableFetchError,
)
from topicrawl.sources.microblog import (
    MalformedResponse,
    MastodonClient,
    html_to_text,
    post_from_status,
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(n),
        "created_at": "2024-01-01T00:00:00.000Z",
        "content": f"<p>post {n}</p>",
        "account": {"acct": f"user{n}"},
        "reblogs_count": n,
        "favourites_count": 2 * n,
        "replies_count": 3 * n,
        "tags": [],
        "url": f"https://example.social/@u/{n}",
        **extra,
    }


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}/"

    yield start
    for runner in runners:
        await runner.cleanup()


class FakeTime:
    """An injected clock and sleep: sleeping moves the clock, and is recorded."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


# -- parsing ----------------------------------------------------------------------------------


def test_html_is_stripped_to_text_with_only_real_links() -> None:
    content = (
        '<p>Hello &amp; welcome<br>line two <a href="https://m.social/tags/space" '
        'class="mention hashtag" rel="tag">#<span>space</span></a> '
        '<span class="h-card"><a href="https://m.social/@bob" class="u-url mention">'
        '@<span>bob</span></a></span></p><p><a href="https://news.example/a?b=1" '
        'rel="nofollow noopener"><span class="invisible">https://</span>'
        "<span>news.example/a?b=1</span></a> &lt;script&gt;x&lt;/script&gt;</p>"
    )
    text, links = html_to_text(content)
    assert text.splitlines() == [
        "Hello & welcome",
        "line two #space @bob",
        "https://news.example/a?b=1 <script>x</script>",
    ]
    assert links == ("https://news.example/a?b=1",)


def test_status_fields_map_to_a_post_and_a_reblog_gives_the_original() -> None:
    post = post_from_status(
        {"id": "9", "reblog": status(5, tags=[{"name": "Space"}], language="en")}, source="s"
    )
    assert (post.id, post.author, post.reposts, post.likes, post.comments) == (
        "5",
        "user5",
        5,
        10,
        15,
    )
    assert post.tags == ("Space",)
    assert post.created_at == 1_704_067_200.0
    assert post.source == "s"
    assert post.engagement.comments == 15


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"content": "<p>x</p>", "created_at": "2024-01-01T00:00:00Z"},  # no id
        status(1, created_at="yesterday"),
        status(1, reblogs_count="many"),
        status(1, content=7),
    ],
)
def test_malformed_statuses_are_rejected(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        post_from_status(bad)


def test_a_non_http_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        MastodonClient("ftp://example.org")


# -- pagination -------------------------------------------------------------------------------


async def test_search_follows_max_id_when_there_is_no_link_header(serve: Any) -> None:
    calls: list[dict[str, str]] = []
    all_ids = list(range(100, 0, -1))  # newest first

    async def handler(request: web.Request) -> web.Response:
        assert request.path == "/api/v2/search"
        calls.append(dict(request.query))
        limit = int(request.query["limit"])
        max_id = int(request.query.get("max_id", 10**9))
        since = int(request.query.get("since_id", 0))
        ids = [i for i in all_ids if since < i < max_id][:limit]
        return web.json_response({"accounts": [], "statuses": [status(i) for i in ids]})

    base = await serve(handler)
    async with MastodonClient(base) as client:
        posts = await client.search("space", max_posts=90, since_id="5")
    assert [p.id for p in posts] == [str(i) for i in range(100, 10, -1)]
    assert [c.get("max_id") for c in calls] == [None, "61", "21"]
    assert [c["limit"] for c in calls] == ["40", "40", "10"]
    assert all(c["q"] == "space" and c["type"] == "statuses" for c in calls)


async def test_timeline_follows_link_next_and_stops_at_since_id(serve: Any) -> None:
    pages = {None: [9, 8, 7], "7": [6, 5, 4], "4": [3, 2, 1]}
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        assert (
            request.path == "/api/v1/timelines/tag/%E5%9B%AD%E8%89%BA"
            or request.raw_path.startswith("/api/v1/timelines/tag/")
        )
        key = request.query.get("max_id")
        seen.append(key)
        ids = pages[key]
        headers = {}
        if key != "4":
            headers["Link"] = (
                f'<http://{request.host}/api/v1/timelines/tag/x?max_id={ids[-1]}>; rel="next", '
                f'<http://{request.host}/api/v1/timelines/tag/x?min_id={ids[0]}>; rel="prev"'
            )
        # This server ignores since_id: the client must stop by itself.
        return web.json_response([status(i) for i in ids], headers=headers)

    base = await serve(handler)
    async with MastodonClient(base) as client:
        posts = await client.hashtag("#园艺", since_id="5")
    assert [p.id for p in posts] == ["9", "8", "7", "6"]
    assert seen == [None, "7"]


async def test_a_link_header_to_another_host_is_not_followed(serve: Any) -> None:
    async def handler(request: web.Request) -> web.Response:
        if "max_id" in request.query:
            return web.json_response([])
        return web.json_response(
            [status(3), status(2)],
            headers={"Link": '<http://127.0.0.9:1/api/v1/timelines/tag/x?max_id=2>; rel="next"'},
        )

    base = await serve(handler)
    async with MastodonClient(base, retries=0) as client:
        posts = await client.hashtag("x")
    assert [p.id for p in posts] == ["3", "2"]


# -- rate limits and errors -------------------------------------------------------------------


async def test_spent_rate_limit_waits_until_the_reset(serve: Any) -> None:
    fake = FakeTime()
    remaining = iter(["1", "0", "299"])

    async def handler(request: web.Request) -> web.Response:
        headers = {
            "X-RateLimit-Limit": "300",
            "X-RateLimit-Remaining": next(remaining),
            # Mastodon sends an ISO 8601 time: 1_000_030 s after the epoch.
            "X-RateLimit-Reset": "1970-01-12T13:47:10.000Z",
        }
        return web.json_response([status(1)], headers=headers)

    base = await serve(handler)
    async with MastodonClient(base, sleep=fake.sleep, clock=fake.clock) as client:
        await client.hashtag("a")
        await client.hashtag("b")  # remaining was 1: no wait
        assert fake.sleeps == []
        await client.hashtag("c")  # remaining 0: waits 30 s for the reset first
        assert fake.sleeps == [pytest.approx(30.0)]
        assert client.rate_limit.remaining == 299


async def test_429_waits_retry_after_then_succeeds(serve: Any) -> None:
    fake = FakeTime()
    answers = iter([429, 429, 200])

    async def handler(request: web.Request) -> web.Response:
        code = next(answers)
        if code == 429:
            return web.json_response(
                {"error": "Too many requests"}, status=429, headers={"Retry-After": "7"}
            )
        return web.json_response([status(1)])

    base = await serve(handler)
    async with MastodonClient(base, sleep=fake.sleep, clock=fake.clock) as client:
        posts = await client.hashtag("a")
    assert [p.id for p in posts] == ["1"]
    assert fake.sleeps == [7.0, 7.0]


async def test_429_with_a_wait_over_max_wait_is_a_blocked_error(serve: Any) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({}, status=429, headers={"Retry-After": "3600"})

    base = await serve(handler)
    fake = FakeTime()
    async with MastodonClient(base, max_wait=60, sleep=fake.sleep, clock=fake.clock) as client:
        with pytest.raises(BlockedError) as caught:
            await client.hashtag("a")
    assert caught.value.retry_after == 3600.0
    assert fake.sleeps == []


async def test_server_errors_are_retried_then_reported(serve: Any) -> None:
    hits = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        return web.Response(status=502, text="bad gateway")

    base = await serve(handler)
    fake = FakeTime()
    async with MastodonClient(base, retries=2, sleep=fake.sleep, clock=fake.clock) as client:
        with pytest.raises(RetryableFetchError, match="server error 502"):
            await client.search("x")
    assert hits == 3
    assert fake.sleeps == [0.5, 1.0]


@pytest.mark.parametrize(
    ("body", "content_type", "error", "match"),
    [
        (b"<html>not json</html>", "text/html", MalformedResponse, "not JSON"),
        (
            json.dumps({"statuses": {"a": 1}}).encode(),
            "application/json",
            MalformedResponse,
            "list",
        ),
        (
            json.dumps({"statuses": [{"id": "1"}]}).encode(),
            "application/json",
            MalformedResponse,
            "bad status",
        ),
    ],
)
async def test_bad_bodies_are_malformed_responses(
    serve: Any, body: bytes, content_type: str, error: type[Exception], match: str
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=content_type)

    base = await serve(handler)
    async with MastodonClient(base) as client:
        with pytest.raises(error, match=match):
            await client.search("x")


async def test_unauthorised_is_permanent_and_says_a_token_may_help(serve: Any) -> None:
    async def handler(request: web.Request) -> web.Response:
        assert request.headers.get("Authorization") == "Bearer secret"
        return web.json_response({"error": "no"}, status=401)

    base = await serve(handler)
    async with MastodonClient(base, token="secret") as client:
        with pytest.raises(PermanentFetchError, match="token") as caught:
            await client.search("x")
    assert caught.value.status == 401


async def test_oversized_bodies_are_refused(serve: Any) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response([status(i) for i in range(200)])

    base = await serve(handler)
    async with MastodonClient(base, max_body=1000) as client:
        with pytest.raises(MalformedResponse, match="larger than"):
            await client.hashtag("x")
