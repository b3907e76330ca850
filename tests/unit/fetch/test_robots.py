"""RobotsCache: Google's status rules, caching, crawl-delay, sitemaps, sharing one fetch."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.fetch.servers import Servers
from topicrawl.fetch import RobotsCache, RobotsFile, robots_agent

RULES = """\
User-agent: *
Disallow: /private/
Allow: /private/open
Crawl-delay: 2
Sitemap: http://example.org/sitemap.xml
Sitemap: http://example.org/news.xml

User-agent: topicrawl
Disallow: /no-bots/
Crawl-delay: 7
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeRobots:
    """A robots.txt source whose answers a test scripts; counts the fetches per URL."""

    def __init__(self, *answers: RobotsFile | BaseException) -> None:
        self.answers = list(answers)
        self.fetched: list[str] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, url: str) -> RobotsFile:
        self.fetched.append(url)
        if self.gate is not None:
            await self.gate.wait()
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def cache(
    source: FakeRobots, clock: Clock | None = None, *, agent: str = "topicrawl/0.1", **kw: float
) -> RobotsCache:
    return RobotsCache(
        fetch_text=source,
        user_agent=agent,
        error_ttl=kw.get("error_ttl", 600.0),
        max_crawl_delay=kw.get("max_crawl_delay", 30.0),
        clock=clock or Clock(),
        max_hosts=int(kw.get("max_hosts", 100)),
    )


async def test_rules_of_200_are_obeyed_for_our_agent() -> None:
    source = FakeRobots(RobotsFile(200, RULES))
    robots = cache(source)
    assert await robots.allowed("http://a.test/page")
    # Our own group applies, not the "*" group.
    assert not await robots.allowed("http://a.test/no-bots/x")
    assert await robots.allowed("http://a.test/private/x")
    assert source.fetched == ["http://a.test/robots.txt"]


async def test_other_agents_get_the_star_group() -> None:
    robots = cache(FakeRobots(RobotsFile(200, RULES)), agent="otherbot/2.0")
    assert not await robots.allowed("http://a.test/private/x")
    assert await robots.allowed("http://a.test/private/open")
    assert await robots.allowed("http://a.test/no-bots/x")


async def test_crawl_delay_is_capped_and_sitemaps_listed() -> None:
    robots = cache(FakeRobots(RobotsFile(200, RULES)), max_crawl_delay=5.0)
    assert await robots.crawl_delay("a.test") == 5.0
    assert await robots.sitemaps("a.test") == [
        "http://example.org/sitemap.xml",
        "http://example.org/news.xml",
    ]
    uncapped = cache(FakeRobots(RobotsFile(200, RULES)), agent="otherbot")
    assert await uncapped.crawl_delay("http://a.test/") == 2.0


async def test_request_rate_counts_as_a_delay() -> None:
    robots = cache(FakeRobots(RobotsFile(200, "User-agent: *\nRequest-rate: 1/5\n")))
    assert await robots.crawl_delay("a.test") == 5.0


async def test_404_allows_everything() -> None:
    robots = cache(FakeRobots(RobotsFile(404, "")))
    assert await robots.allowed("http://a.test/private/x")
    assert await robots.crawl_delay("a.test") is None
    assert await robots.sitemaps("a.test") == []


async def test_403_allows_everything_too() -> None:
    robots = cache(FakeRobots(RobotsFile(403, "")))
    assert await robots.allowed("http://a.test/anything")


@pytest.mark.parametrize(
    "failure", [RobotsFile(500, ""), RobotsFile(503, ""), RobotsFile(429, ""), OSError()]
)
async def test_server_errors_disallow_until_the_ttl_then_refetch(
    failure: RobotsFile | BaseException,
) -> None:
    clock = Clock()
    source = FakeRobots(failure, RobotsFile(200, "User-agent: *\nDisallow: /x\n"))
    robots = cache(source, clock, error_ttl=600.0)
    decision = await robots.decide("http://a.test/page")
    assert not decision.allowed
    assert decision.retry_after == 600.0
    clock.now += 599
    assert not await robots.allowed("http://a.test/page")
    assert len(source.fetched) == 1
    clock.now += 2
    assert await robots.allowed("http://a.test/page")
    assert not await robots.allowed("http://a.test/x")
    assert len(source.fetched) == 2


@pytest.mark.parametrize("silence", [TimeoutError(), aiohttp.ServerTimeoutError()])
async def test_a_timeout_is_asked_again_soon_then_less_and_less_often(
    silence: BaseException,
) -> None:
    # A crawl starting on 1,000 hosts at once timed out on hundreds of robots.txt under its
    # own load; each host was then held for the whole error_ttl (10 minutes).
    clock = Clock()
    source = FakeRobots(silence, silence, silence, silence, silence, silence, RobotsFile(404, ""))
    robots = cache(source, clock, error_ttl=100.0)
    waits = []
    for _ in range(6):
        decision = await robots.decide("http://a.test/page")
        assert not decision.allowed
        assert decision.retry_after is not None
        waits.append(decision.retry_after)
        clock.now += decision.retry_after + 1
    assert [round(w) for w in waits] == [15, 30, 60, 100, 100, 100]  # doubled, capped at error_ttl
    assert await robots.allowed("http://a.test/page")
    assert len(source.fetched) == 7


async def test_an_answer_after_silence_starts_the_backoff_over() -> None:
    clock = Clock()
    source = FakeRobots(TimeoutError(), RobotsFile(503, ""), TimeoutError())
    robots = cache(source, clock, error_ttl=600.0)
    assert (await robots.decide("http://a.test/")).retry_after == 15.0
    clock.now += 16
    assert (await robots.decide("http://a.test/")).retry_after == 600.0  # it answered: 5xx
    clock.now += 601
    assert (await robots.decide("http://a.test/")).retry_after == 15.0


async def test_robots_fetches_in_flight_are_bounded() -> None:
    running = peak = 0
    release = asyncio.Event()

    async def slow(url: str) -> RobotsFile:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return RobotsFile(404, "")

    robots = RobotsCache(
        fetch_text=slow, user_agent="t", error_ttl=600, max_crawl_delay=5, max_in_flight=4
    )
    asks = [asyncio.create_task(robots.allowed(f"http://h{i}.test/")) for i in range(40)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert running == 4
    release.set()
    assert all(await asyncio.gather(*asks))
    assert peak == 4


async def test_good_rules_are_refreshed_after_a_day() -> None:
    clock = Clock()
    source = FakeRobots(RobotsFile(200, "User-agent: *\nDisallow: /x\n"), RobotsFile(404, ""))
    robots = cache(source, clock)
    assert not await robots.allowed("http://a.test/x")
    clock.now += 86_401
    assert await robots.allowed("http://a.test/x")
    assert len(source.fetched) == 2


async def test_one_fetch_serves_many_concurrent_callers() -> None:
    source = FakeRobots(RobotsFile(200, RULES))
    source.gate = asyncio.Event()
    robots = cache(source)
    waiting = [asyncio.create_task(robots.allowed(f"http://a.test/private/{i}")) for i in range(50)]
    await asyncio.sleep(0)
    source.gate.set()
    results = await asyncio.gather(*waiting)
    assert results == [True] * 50  # our group does not disallow /private/
    assert source.fetched == ["http://a.test/robots.txt"]


async def test_a_cancelled_caller_does_not_cancel_the_shared_fetch() -> None:
    source = FakeRobots(RobotsFile(200, "User-agent: *\nDisallow: /x\n"))
    source.gate = asyncio.Event()
    robots = cache(source)
    first = asyncio.create_task(robots.allowed("http://a.test/x"))
    second = asyncio.create_task(robots.allowed("http://a.test/y"))
    await asyncio.sleep(0)
    first.cancel()
    source.gate.set()
    assert await second is True
    assert not await robots.allowed("http://a.test/x")
    assert len(source.fetched) == 1


async def test_hosts_and_ports_are_separate_and_the_cache_is_bounded() -> None:
    source = FakeRobots(RobotsFile(404, ""))
    robots = cache(source, max_hosts=2)
    for url in ("http://a.test/", "http://a.test:8080/", "https://b.test/", "http://a.test/z"):
        await robots.allowed(url)
    # a.test was evicted by the third host, so it is fetched again.
    assert source.fetched == [
        "http://a.test/robots.txt",
        "http://a.test:8080/robots.txt",
        "https://b.test/robots.txt",
        "http://a.test/robots.txt",
    ]


async def test_oversized_robots_is_truncated() -> None:
    filler = "# " + "x" * 97 + "\n"
    text = "User-agent: *\nDisallow: /early\n" + filler * 6000 + "Disallow: /late\n"
    robots = cache(FakeRobots(RobotsFile(200, text)))
    assert not await robots.allowed("http://a.test/early")
    assert await robots.allowed("http://a.test/late")  # past 500 KiB: ignored


_LINES = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.builds(
            "{}:{}".format,
            st.sampled_from(
                [
                    "User-agent",
                    "Disallow",
                    "Allow",
                    "Crawl-delay",
                    "Sitemap",
                    "Request-rate",
                    "Visit-time",
                    "Host",
                ]
            ),
            st.text(max_size=30),
        ),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(lines=_LINES, path=st.text(max_size=30))
async def test_hostile_robots_files_never_raise(lines: list[str], path: str) -> None:
    robots = cache(FakeRobots(RobotsFile(200, "\n".join(lines))))
    assert isinstance(await robots.allowed(f"http://a.test/{path}"), bool)
    delay = await robots.crawl_delay("a.test")
    assert delay is None or 0.0 <= delay <= 30.0
    assert isinstance(await robots.sitemaps("a.test"), list)


def test_robots_agent_picks_the_product_token() -> None:
    assert robots_agent("topicrawl/0.1 (+https://example.invalid/x)") == "topicrawl"
    assert robots_agent("Mozilla/5.0 (compatible; Foobot/1.0; +http://x)") == "Foobot"
    assert robots_agent("plainbot") == "plainbot"


def test_exactly_one_source_is_required() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RobotsCache(user_agent="a", error_ttl=1, max_crawl_delay=1)


# -- over HTTP, through an aiohttp session ---------------------------------------------------


async def test_session_mode_follows_redirects_and_reads_rules(servers: Servers) -> None:
    async def moved(_: web.Request) -> web.Response:
        return web.Response(status=301, headers={"Location": "/real-robots.txt"})

    async def real(request: web.Request) -> web.Response:
        assert request.headers["User-Agent"] == "topicrawl/0.1"
        return web.Response(text="User-agent: *\nDisallow: /secret\n")

    base = await servers.serve({"/robots.txt": moved, "/real-robots.txt": real})
    async with aiohttp.ClientSession() as session:
        robots = RobotsCache(
            session=session, user_agent="topicrawl/0.1", error_ttl=60, max_crawl_delay=5
        )
        assert not await robots.allowed(f"{base}/secret/a")
        assert await robots.allowed(f"{base}/public")
    assert servers.hits["/robots.txt"] == 1
    assert servers.hits["/real-robots.txt"] == 1


async def test_session_mode_endless_redirects_count_as_missing(servers: Servers) -> None:
    async def hop(request: web.Request) -> web.Response:
        n = int(request.query.get("n", "0"))
        return web.Response(status=302, headers={"Location": f"/robots.txt?n={n + 1}"})

    base = await servers.serve({"/robots.txt": hop})
    async with aiohttp.ClientSession() as session:
        robots = RobotsCache(session=session, user_agent="t", error_ttl=60, max_crawl_delay=5)
        assert await robots.allowed(f"{base}/anything")
    assert servers.hits["/robots.txt"] == 6  # the first request and five redirect hops


async def test_session_mode_server_error_and_unreachable_host(servers: Servers) -> None:
    async def broken(_: web.Request) -> web.Response:
        return web.Response(status=502)

    base = await servers.serve({"/robots.txt": broken})
    async with aiohttp.ClientSession() as session:
        robots = RobotsCache(session=session, user_agent="t", error_ttl=60, max_crawl_delay=5)
        assert not await robots.allowed(f"{base}/a")
        assert not await robots.allowed("http://127.0.0.1:9/a")  # nothing listens on port 9


async def test_session_mode_caps_the_download(servers: Servers) -> None:
    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(b"User-agent: *\nDisallow: /early\n")
        try:
            for _ in range(200):  # 20 MB of comments, then a rule nobody should read
                await response.write(b"#" * 99_999 + b"\n")
            await response.write(b"Disallow: /late\n")
        except (ConnectionError, RuntimeError):
            pass
        return response

    base = await servers.serve({"/robots.txt": huge})
    async with aiohttp.ClientSession() as session:
        robots = RobotsCache(session=session, user_agent="t", error_ttl=60, max_crawl_delay=5)
        assert not await robots.allowed(f"{base}/early")
        assert await robots.allowed(f"{base}/late")


async def test_the_problem_with_an_unreadable_robots_txt_is_told_while_it_lasts() -> None:
    clock = Clock()
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    robots = cache(FakeRobots(RobotsFile(500, ""), refused, RobotsFile(404, "")), clock)
    assert robots.problem("a.test") is None  # not asked for yet
    await robots.decide("http://a.test/page")
    assert robots.problem("http://a.test/page") == "robots.txt answered 500"
    clock.now += 601
    await robots.decide("http://a.test/page")
    problem = robots.problem("a.test")
    assert problem is not None
    assert problem.startswith("robots.txt could not be fetched: ConnectionRefusedError")
    clock.now += 601
    await robots.decide("http://a.test/page")
    assert robots.problem("a.test") is None  # read at last (404: all allowed)
