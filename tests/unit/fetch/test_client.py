"""HttpFetcher against real aiohttp servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import random
import socket
import time
import tracemalloc
import zlib
from functools import cache

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from tests.unit.fetch.servers import (
    Servers,
    Sleeps,
    closed_port,
    fetcher_for,
    html,
    raw_http,
    settings,
)
from topicrawl.core.errors import (
    BlockedError,
    BodyTooLarge,
    ContentTypeRejected,
    OutOfScope,
    PermanentFetchError,
    RedirectLoop,
    RetryableFetchError,
    RobotsDisallowed,
    TooManyRedirects,
    UrlTooLong,
)
from topicrawl.core.models import ErrorKind, Request
from topicrawl.core.protocols import Fetcher
from topicrawl.fetch import HttpFetcher, RobotsCache, RobotsFile, parse_retry_after
from topicrawl.parse.urls import Scope

PAGE = "<html><head><title>t</title></head><body>café</body></html>"


async def page(_: web.Request) -> web.Response:
    return html(PAGE)


def redirect(to: str, status: int = 302) -> web.Response:
    return web.Response(status=status, headers={"Location": to})


def test_http_fetcher_is_a_fetcher() -> None:
    assert isinstance(HttpFetcher(settings=settings()), Fetcher)


async def test_fetches_a_page_with_crawler_headers(servers: Servers) -> None:
    seen: dict[str, str] = {}

    async def handler(request: web.Request) -> web.Response:
        seen.update(request.headers)
        return html(PAGE)

    base = await servers.serve({"/p": handler})
    async with fetcher_for(settings=settings(user_agent="testbot/9")) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/p"))
    assert response.status == 200
    assert response.text == PAGE
    assert response.encoding == "utf-8"
    assert response.content_type == "text/html"
    assert response.final_url == f"{base}/p"
    assert response.redirects == ()
    assert response.body == PAGE.encode()
    assert seen["User-Agent"] == "testbot/9"
    assert {"gzip", "deflate", "br"} <= {e.strip() for e in seen["Accept-Encoding"].split(",")}


async def test_reuses_one_connection_for_sequential_fetches(servers: Servers) -> None:
    peers: set[object] = set()

    async def handler(request: web.Request) -> web.Response:
        assert request.transport is not None
        peers.add(request.transport.get_extra_info("peername"))
        return html(PAGE)

    base = await servers.serve({"/p": handler})
    async with fetcher_for(settings=settings()) as fetcher:
        for _ in range(20):
            await fetcher.fetch(Request(url=f"{base}/p"))
    assert len(peers) == 1


async def test_redirects_and_errors_keep_the_connection(servers: Servers) -> None:
    peers: set[object] = set()

    async def track(request: web.Request) -> None:
        assert request.transport is not None
        peers.add(request.transport.get_extra_info("peername"))

    async def late_body(request: web.Request, status: int, **headers: str) -> web.StreamResponse:
        # Headers first, the body a moment later: the client must wait for it to reuse the
        # connection, as with a real server whose body comes in a later packet.
        await track(request)
        body = b"<p>not the page</p>" * 100
        response = web.StreamResponse(status=status, headers=headers)
        response.content_length = len(body)
        response.content_type = "text/html"
        await response.prepare(request)
        await asyncio.sleep(0.01)
        await response.write(body)
        return response

    async def hop(request: web.Request) -> web.StreamResponse:
        return await late_body(request, 301, Location="/p")

    async def target(request: web.Request) -> web.Response:
        await track(request)
        return html(PAGE)

    async def missing(request: web.Request) -> web.StreamResponse:
        return await late_body(request, 404)

    base = await servers.serve({"/hop": hop, "/p": target, "/missing": missing})
    async with fetcher_for(settings=settings()) as fetcher:
        for _ in range(5):
            await fetcher.fetch(Request(url=f"{base}/hop"))
            with pytest.raises(PermanentFetchError):
                await fetcher.fetch(Request(url=f"{base}/missing"))
    assert len(peers) == 1


async def test_decompresses_gzip_bodies(servers: Servers) -> None:
    async def handler(_: web.Request) -> web.Response:
        response = html(PAGE * 50)
        response.enable_compression()
        return response

    base = await servers.serve({"/z": handler})
    async with fetcher_for(settings=settings()) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/z"))
    assert response.text == PAGE * 50


# -- redirects ----------------------------------------------------------------------------


async def test_follows_a_redirect_chain_and_lists_the_hops(servers: Servers) -> None:
    async def a(_: web.Request) -> web.Response:
        return redirect("/b?utm_source=x", 301)

    async def b(_: web.Request) -> web.Response:
        return redirect("c", 307)

    base = await servers.serve({"/a": a, "/b": b, "/c": page})
    async with fetcher_for(settings=settings()) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/a"))
    assert response.url == f"{base}/a"
    assert response.final_url == f"{base}/c"
    # The intermediate hop is canonical: the tracking parameter is gone.
    assert response.redirects == (f"{base}/b",)
    assert response.text == PAGE


async def test_redirect_loop_is_refused(servers: Servers) -> None:
    async def a(_: web.Request) -> web.Response:
        return redirect("/b")

    async def b(_: web.Request) -> web.Response:
        return redirect("/a")

    base = await servers.serve({"/a": a, "/b": b})
    async with fetcher_for(settings=settings()) as fetcher:
        with pytest.raises(RedirectLoop) as caught:
            await fetcher.fetch(Request(url=f"{base}/a"))
    assert caught.value.kind is ErrorKind.REDIRECT_LOOP
    assert caught.value.url == f"{base}/a"
    assert servers.hits["/a"] == 1


async def test_too_many_redirects(servers: Servers) -> None:
    async def step(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        return redirect(f"/r/{n + 1}")

    base = await servers.serve({"/r/{n}": step})
    async with fetcher_for(settings=settings(max_redirects=3)) as fetcher:
        with pytest.raises(TooManyRedirects):
            await fetcher.fetch(Request(url=f"{base}/r/0"))
    # The start and three followed hops were requested; the fourth hop was not followed.
    assert servers.hits["/r/3"] == 1
    assert servers.hits["/r/4"] == 0


async def test_exactly_max_redirects_is_fine(servers: Servers) -> None:
    async def step(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        return redirect(f"/r/{n + 1}") if n < 3 else html(PAGE)

    base = await servers.serve({"/r/{n}": step})
    async with fetcher_for(settings=settings(max_redirects=3)) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/r/0"))
    assert response.final_url == f"{base}/r/3"
    assert response.redirects == (f"{base}/r/1", f"{base}/r/2")


async def test_redirect_out_of_scope_is_refused(servers: Servers) -> None:
    async def away(_: web.Request) -> web.Response:
        return redirect("http://elsewhere.example/page")

    base = await servers.serve({"/away": away})
    scope = Scope.build(allowed_domains=["127.0.0.1"])
    async with fetcher_for(settings=settings(), scope=scope) as fetcher:
        with pytest.raises(OutOfScope):
            await fetcher.fetch(Request(url=f"{base}/away"))


async def test_redirect_to_a_non_http_url_is_refused(servers: Servers) -> None:
    async def mail(_: web.Request) -> web.Response:
        return redirect("mailto:someone@example.org")

    base = await servers.serve({"/mail": mail})
    async with fetcher_for(settings=settings()) as fetcher:
        with pytest.raises(OutOfScope):
            await fetcher.fetch(Request(url=f"{base}/mail"))


async def test_redirect_target_disallowed_by_robots(servers: Servers) -> None:
    async def hop(_: web.Request) -> web.Response:
        return redirect("/private/x")

    base = await servers.serve({"/hop": hop, "/private/x": page})

    async def robots_txt(_: str) -> RobotsFile:
        return RobotsFile(200, "User-agent: *\nDisallow: /private/\n")

    robots = RobotsCache(
        fetch_text=robots_txt, user_agent="topicrawl", error_ttl=60, max_crawl_delay=5
    )
    async with fetcher_for(settings=settings(), robots=robots) as fetcher:
        with pytest.raises(RobotsDisallowed):
            await fetcher.fetch(Request(url=f"{base}/hop"))
        with pytest.raises(RobotsDisallowed):
            await fetcher.fetch(Request(url=f"{base}/private/x"))
    assert servers.hits["/private/x"] == 0


async def test_unreachable_robots_blocks_for_later_not_forever(servers: Servers) -> None:
    base = await servers.serve({"/p": page})

    async def robots_txt(_: str) -> RobotsFile:
        return RobotsFile(503, "")

    robots = RobotsCache(
        fetch_text=robots_txt, user_agent="topicrawl", error_ttl=60, max_crawl_delay=5
    )
    async with fetcher_for(settings=settings(), robots=robots) as fetcher:
        with pytest.raises(BlockedError) as caught:
            await fetcher.fetch(Request(url=f"{base}/p"))
    assert caught.value.kind is ErrorKind.ROBOTS
    assert caught.value.retry_after is not None
    assert 0 < caught.value.retry_after <= 60
    assert servers.hits["/p"] == 0


async def test_url_too_long_is_refused_before_any_request(servers: Servers) -> None:
    base = await servers.serve({"/p": page})
    async with fetcher_for(settings=settings(max_url_length=60)) as fetcher:
        with pytest.raises(UrlTooLong):
            await fetcher.fetch(Request(url=f"{base}/p?" + "x" * 100))
    assert servers.hits["/p"] == 0


async def test_unusable_url_is_a_permanent_error(sleeps: Sleeps) -> None:
    async with fetcher_for(settings=settings(), sleep=sleeps) as fetcher:
        with pytest.raises(PermanentFetchError) as caught:
            await fetcher.fetch(Request(url="http://127.0.0.1:99999/x"))
    assert caught.value.kind is ErrorKind.OTHER
    assert sleeps.waits == []


# -- status codes and retries ---------------------------------------------------------------


async def test_404_and_other_4xx_are_permanent(servers: Servers, sleeps: Sleeps) -> None:
    async def gone(_: web.Request) -> web.Response:
        return html("gone", status=410)

    base = await servers.serve({"/gone": gone})
    async with fetcher_for(settings=settings(), sleep=sleeps) as fetcher:
        with pytest.raises(PermanentFetchError) as missing:
            await fetcher.fetch(Request(url=f"{base}/missing"))
        with pytest.raises(PermanentFetchError) as gone_error:
            await fetcher.fetch(Request(url=f"{base}/gone"))
    assert missing.value.kind is ErrorKind.HTTP_NOT_FOUND
    assert missing.value.status == 404
    assert gone_error.value.kind is ErrorKind.HTTP_CLIENT
    assert gone_error.value.status == 410
    assert sleeps.waits == []
    assert servers.hits["/gone"] == 1


async def test_503_then_200_is_retried_with_backoff(servers: Servers, sleeps: Sleeps) -> None:
    async def flaky(_: web.Request) -> web.Response:
        if servers.hits["/flaky"] <= 2:
            return html("busy", status=503)
        return html(PAGE)

    base = await servers.serve({"/flaky": flaky})
    fetch_settings = settings(retries=2, backoff_base=0.5, backoff_max=30)
    async with fetcher_for(settings=fetch_settings, sleep=sleeps, rng=random.Random(7)) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/flaky"))
    assert response.status == 200
    assert servers.hits["/flaky"] == 3
    assert len(sleeps.waits) == 2
    # Full jitter: each wait is drawn from [0, base * 2**attempt].
    assert 0 <= sleeps.waits[0] <= 0.5
    assert 0 <= sleeps.waits[1] <= 1.0


async def test_5xx_after_retries_is_retryable_http_5xx(servers: Servers, sleeps: Sleeps) -> None:
    async def broken(_: web.Request) -> web.Response:
        return html("boom", status=500)

    base = await servers.serve({"/broken": broken})
    async with fetcher_for(settings=settings(retries=2), sleep=sleeps) as fetcher:
        with pytest.raises(RetryableFetchError) as caught:
            await fetcher.fetch(Request(url=f"{base}/broken"))
    assert caught.value.kind is ErrorKind.HTTP_SERVER
    assert caught.value.status == 500
    assert not isinstance(caught.value, BlockedError)
    assert servers.hits["/broken"] == 3


async def test_429_with_small_retry_after_is_honoured(servers: Servers, sleeps: Sleeps) -> None:
    async def limited(_: web.Request) -> web.Response:
        if servers.hits["/limited"] == 1:
            return web.Response(status=429, headers={"Retry-After": "2"})
        return html(PAGE)

    base = await servers.serve({"/limited": limited})
    async with fetcher_for(settings=settings(backoff_max=30), sleep=sleeps) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/limited"))
    assert response.status == 200
    assert sleeps.waits == [2.0]


async def test_429_with_huge_retry_after_is_handed_back_at_once(
    servers: Servers, sleeps: Sleeps
) -> None:
    async def limited(_: web.Request) -> web.Response:
        return web.Response(status=429, headers={"Retry-After": "3600"})

    base = await servers.serve({"/limited": limited})
    async with fetcher_for(settings=settings(backoff_max=30), sleep=sleeps) as fetcher:
        with pytest.raises(BlockedError) as caught:
            await fetcher.fetch(Request(url=f"{base}/limited"))
    assert caught.value.retry_after == 3600.0
    assert caught.value.kind is ErrorKind.BLOCKED
    assert caught.value.status == 429
    assert sleeps.waits == []
    assert servers.hits["/limited"] == 1


async def test_503_with_http_date_retry_after(servers: Servers, sleeps: Sleeps) -> None:
    async def later(_: web.Request) -> web.Response:
        when = email.utils.formatdate(time.time() + 7200, usegmt=True)
        return web.Response(status=503, headers={"Retry-After": when})

    base = await servers.serve({"/later": later})
    async with fetcher_for(settings=settings(backoff_max=30), sleep=sleeps) as fetcher:
        with pytest.raises(BlockedError) as caught:
            await fetcher.fetch(Request(url=f"{base}/later"))
    assert caught.value.retry_after is not None
    assert 7000 < caught.value.retry_after <= 7200
    assert caught.value.status == 503


def test_parse_retry_after() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0 - 60) == 60.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=2e9) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
    assert parse_retry_after(None) is None


async def test_timeout_is_retried_then_reported(servers: Servers, sleeps: Sleeps) -> None:
    async def slow(_: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return html(PAGE)

    base = await servers.serve({"/slow": slow})
    async with fetcher_for(settings=settings(timeout=0.2, retries=1), sleep=sleeps) as fetcher:
        with pytest.raises(RetryableFetchError) as caught:
            await fetcher.fetch(Request(url=f"{base}/slow"))
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert servers.hits["/slow"] == 2
    assert len(sleeps.waits) == 1


async def test_connection_refused_is_retryable(sleeps: Sleeps) -> None:
    url = f"http://127.0.0.1:{closed_port()}/p"
    async with fetcher_for(settings=settings(retries=1), sleep=sleeps) as fetcher:
        with pytest.raises(RetryableFetchError) as caught:
            await fetcher.fetch(Request(url=url))
    assert caught.value.kind is ErrorKind.CONNECTION
    assert len(sleeps.waits) == 1


class _NoSuchHost(AbstractResolver):
    async def resolve(self, host: str, port: int = 0, family: int = 0) -> list[ResolveResult]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def close(self) -> None:
        return None


async def test_unknown_host_is_a_permanent_dns_failure(sleeps: Sleeps) -> None:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=_NoSuchHost()))
    try:
        fetcher = HttpFetcher(settings=settings(), session=session, sleep=sleeps)
        with pytest.raises(PermanentFetchError) as caught:
            await fetcher.fetch(Request(url="http://no-such-host.invalid/"))
        await fetcher.close()
        assert not session.closed  # an injected session belongs to the caller
    finally:
        await session.close()
    assert caught.value.kind is ErrorKind.DNS
    assert sleeps.waits == []


# -- size caps and content types ------------------------------------------------------------


async def test_declared_length_over_the_cap_is_refused(servers: Servers) -> None:
    async def big(_: web.Request) -> web.Response:
        return web.Response(body=b"x" * 300_000, content_type="text/html")

    base = await servers.serve({"/big": big})
    async with fetcher_for(settings=settings(max_body_bytes=100_000)) as fetcher:
        with pytest.raises(BodyTooLarge) as caught:
            await fetcher.fetch(Request(url=f"{base}/big"))
    assert caught.value.kind is ErrorKind.TOO_LARGE


async def test_endless_body_is_cut_at_the_cap(servers: Servers) -> None:
    written = 0

    async def endless(request: web.Request) -> web.StreamResponse:
        nonlocal written
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)  # chunked: no Content-Length to check up front
        chunk = b"<p>" + b"a" * 65_533
        try:
            for _ in range(3_000):  # 200 MB unless the client stops reading
                await response.write(chunk)
                written += len(chunk)
        except (ConnectionError, RuntimeError):
            pass
        return response

    base = await servers.serve({"/endless": endless})
    async with fetcher_for(settings=settings(max_body_bytes=1_000_000)) as fetcher:
        with pytest.raises(BodyTooLarge):
            await fetcher.fetch(Request(url=f"{base}/endless"))
    assert written < 100_000_000


@cache
def _gzip_bomb() -> bytes:
    """50 MB of zeros, gzip-compressed (about 50 KB), built without holding the 50 MB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1_000_000)
    parts = [compressor.compress(zeros) for _ in range(50)]
    parts.append(compressor.flush())
    return b"".join(parts)


async def test_gzip_bomb_is_stopped_without_inflating_it(servers: Servers) -> None:
    bomb = _gzip_bomb()
    assert len(bomb) < 200_000

    async def handler(_: web.Request) -> web.Response:
        return web.Response(
            body=bomb, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )

    base = await servers.serve({"/bomb": handler})
    async with fetcher_for(settings=settings(max_body_bytes=1_000_000)) as fetcher:
        gc.collect()
        tracemalloc.start()
        try:
            with pytest.raises(BodyTooLarge):
                await fetcher.fetch(Request(url=f"{base}/bomb"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # The cap is 1 MB; the inflated body would be 50 MB.
    assert peak < 8_000_000


async def test_unwanted_content_type_is_refused_without_reading_the_body(
    servers: Servers,
) -> None:
    written = 0
    finished = asyncio.Event()

    async def pdf(request: web.Request) -> web.StreamResponse:
        nonlocal written
        response = web.StreamResponse(headers={"Content-Type": "application/pdf"})
        await response.prepare(request)
        chunk = b"%" * 65_536
        try:
            for _ in range(1_600):  # 100 MB unless the client hangs up
                await response.write(chunk)
                written += len(chunk)
        except (ConnectionError, RuntimeError):
            pass
        finally:
            finished.set()
        return response

    base = await servers.serve({"/doc.pdf": pdf})
    async with fetcher_for(settings=settings()) as fetcher:
        with pytest.raises(ContentTypeRejected) as caught:
            await fetcher.fetch(Request(url=f"{base}/doc.pdf"))
        await asyncio.wait_for(finished.wait(), timeout=10)
    assert caught.value.kind is ErrorKind.CONTENT_TYPE
    assert written < 50_000_000


async def test_wildcard_content_types_and_non_text_bodies(servers: Servers) -> None:
    async def png(_: web.Request) -> web.Response:
        return web.Response(body=b"\x89PNG\r\n", content_type="image/png")

    async def plain(_: web.Request) -> web.Response:
        return web.Response(text="hello", content_type="text/plain")

    base = await servers.serve({"/i.png": png, "/t.txt": plain})
    fetch_settings = settings(content_types=("text/*", "image/png"))
    async with fetcher_for(settings=fetch_settings) as fetcher:
        image = await fetcher.fetch(Request(url=f"{base}/i.png"))
        text = await fetcher.fetch(Request(url=f"{base}/t.txt"))
    assert image.body == b"\x89PNG\r\n"
    assert image.text is None
    assert image.encoding is None
    assert text.text == "hello"


def _bare(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


async def test_missing_content_type_is_sniffed() -> None:
    page_bytes = b"<!DOCTYPE html><html><body>hi</body></html>"
    async with fetcher_for(settings=settings()) as fetcher:
        async with raw_http(_bare(page_bytes)) as base:
            response = await fetcher.fetch(Request(url=f"{base}/h"))
        async with raw_http(_bare(b"\x00\x01\x02binary")) as base:
            with pytest.raises(ContentTypeRejected):
                await fetcher.fetch(Request(url=f"{base}/b"))
    assert response.content_type == "text/html"
    assert response.text == page_bytes.decode()


# -- charsets over HTTP -----------------------------------------------------------------------

CHINESE = (
    "北京时间今天上午，国家统计局发布了最新的经济数据。数据显示，今年前三个季度，"
    "全国居民人均可支配收入继续增长，消费市场稳步恢复，就业形势总体稳定。"
)


async def test_gbk_bytes_labelled_utf8_are_decoded_right(servers: Servers) -> None:
    body = f"<html><head><title>新闻</title></head><body><p>{CHINESE}</p></body></html>"

    async def wrong_label(_: web.Request) -> web.Response:
        return web.Response(
            body=body.encode("gbk"), headers={"Content-Type": "text/html; charset=utf-8"}
        )

    base = await servers.serve({"/gbk": wrong_label})
    async with fetcher_for(settings=settings()) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/gbk"))
    assert response.text == body
    assert response.encoding == "gb18030"


async def test_utf8_declared_latin1_in_meta_is_decoded_as_utf8(servers: Servers) -> None:
    body = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        "</head><body>Café naïve — 東京</body></html>"
    )

    async def mislabelled(_: web.Request) -> web.Response:
        return web.Response(body=body.encode("utf-8"), headers={"Content-Type": "text/html"})

    base = await servers.serve({"/m": mislabelled})
    async with fetcher_for(settings=settings()) as fetcher:
        response = await fetcher.fetch(Request(url=f"{base}/m"))
    assert response.text == body
    assert response.encoding == "utf-8"


async def test_undeclared_and_bom_bodies(servers: Servers) -> None:
    french = "<html><body>Le café est très apprécié à Montréal, déjà célèbre.</body></html>"
    bom_text = "<html><body>Grüße aus Köln</body></html>"

    async def undeclared(_: web.Request) -> web.Response:
        return web.Response(body=french.encode("cp1252"), headers={"Content-Type": "text/html"})

    async def bom(_: web.Request) -> web.Response:
        return web.Response(
            body=b"\xff\xfe" + bom_text.encode("utf-16-le"),
            headers={"Content-Type": "text/html; charset=iso-8859-1"},
        )

    base = await servers.serve({"/u": undeclared, "/bom": bom})
    async with fetcher_for(settings=settings()) as fetcher:
        plain = await fetcher.fetch(Request(url=f"{base}/u"))
        marked = await fetcher.fetch(Request(url=f"{base}/bom"))
    assert plain.text == french
    assert marked.text == bom_text
    assert marked.encoding == "utf-16-le"
