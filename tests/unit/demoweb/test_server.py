"""The demo web over real HTTP on loopback: every special feature answers as specified."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import urllib.request
import xml.etree.ElementTree as ET
import zipfile
import zlib
from collections.abc import Iterator
from urllib.parse import urljoin

import aiohttp
import pytest
from protego import Protego
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from topicrawl.demoweb import DemoWeb, DemoWebServer, Kind
from topicrawl.demoweb.__main__ import main
from topicrawl.demoweb.render import GARBAGE

A, B = "127.0.0.2", "127.0.0.3"


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    with DemoWebServer(DemoWeb.generate(), slow_delay=0.3).run_in_thread() as running:
        yield running


@pytest.fixture
def base(server: DemoWebServer) -> str:
    return server.web.base_url(A)


async def _get(url: str, **kwargs: object) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, allow_redirects=False, **kwargs) as response,  # type: ignore[arg-type]
    ):
        return response.status, dict(response.headers), await response.read()


def test_all_hosts_share_one_port_and_route_by_address(server: DemoWebServer) -> None:
    bases = server.bases
    assert list(bases) == [f"127.0.0.{i}" for i in range(2, 8)]
    assert len({b.rsplit(":", 1)[1] for b in bases.values()}) == 1
    homes = {}
    for address, url in bases.items():
        with urllib.request.urlopen(url, timeout=10) as response:  # a plain thread-free client
            homes[address] = response.read().decode("utf-8")
    assert f"<title>{server.web.host(A).name} | " in homes[A]
    assert f"<title>{server.web.host(B).name} | " in homes[B]


async def test_robots_and_sitemap(server: DemoWebServer) -> None:
    web = server.web
    for host in web.hosts:
        base = web.base_url(host.address)
        status, headers, body = await _get(base + "robots.txt")
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain")
        robots = Protego.parse(body.decode())
        assert not robots.can_fetch(base + "private/index.html", "topicrawl")
        assert robots.can_fetch(base + "private/press-kit.html", "topicrawl")
        assert list(robots.sitemaps) == [base + "sitemap.xml"]
        delay = robots.crawl_delay("topicrawl")
        assert delay == (0.05 if host.address == B else None)
        status, _, body = await _get(base + "sitemap.xml")
        locs = [
            e.text
            for e in ET.fromstring(body).iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")
        ]
        assert status == 200
        assert base in locs
        assert len(locs) == 1 + 7 + 60
        assert all(web.page(u).is_document for u in locs)


async def test_every_document_answers_200_html(server: DemoWebServer) -> None:
    web = server.web
    skip = {Kind.FLAKY, Kind.SLOW, Kind.HUGE, Kind.BOMB}
    urls = [web.url_of(p) for p in web.pages if p.is_document and p.kind not in skip]
    connector = aiohttp.TCPConnector(limit=16)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def fetch(url: str) -> tuple[str, int, str]:
            async with session.get(url, allow_redirects=False) as response:
                await response.read()
                return url, response.status, response.headers["Content-Type"]

        results = await asyncio.gather(*(fetch(u) for u in urls))
    assert len(results) > 450
    for url, status, ctype in results:
        assert status == 200, url
        assert ctype.startswith("text/html"), url


async def test_redirects_chain_loop_and_cross_host(base: str, server: DemoWebServer) -> None:
    status, headers, _ = await _get(base + "lab/redirect-301")
    assert status == 301
    assert headers["Location"].startswith(base)
    status, headers, _ = await _get(base + "lab/redirect-302")
    assert status == 302
    assert headers["Location"].startswith("/")
    async with (
        aiohttp.ClientSession() as session,
        session.get(base + "lab/redirect-chain") as response,
    ):
        assert response.status == 200
        assert len(response.history) == 2
        assert [r.status for r in response.history] == [301, 302]
        assert server.web.page(str(response.url)).kind is Kind.ARTICLE
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.TooManyRedirects):
            async with session.get(base + "lab/loop-a", max_redirects=5):
                pass
        async with session.get(base + "lab/redirect-away") as response:
            assert str(response.url) == server.web.base_url(B)
        async with session.get(base + "astronomy") as response:
            assert str(response.url) == base + "astronomy/"
            assert response.history[0].status == 301


async def test_errors_404_500_and_a_dead_host(base: str, server: DemoWebServer) -> None:
    dead = [u for u in server.web.links_of(base + "lab/") if server.web.find(u) is None]
    gone = next(u for u in dead if u.startswith(base))
    assert (await _get(gone))[0] == 404
    assert (await _get(base + "lab/error-500"))[0] == 500
    offline = next(u for u in dead if "127.0.0.254" in u)
    with pytest.raises(aiohttp.ClientConnectionError):
        await _get(offline)


async def test_flaky_page_answers_503_then_200_per_server_lifetime() -> None:
    web = DemoWeb.generate(hosts=1, pages_per_host=3, flaky_failures=2)
    server = DemoWebServer(web)
    for _ in range(2):  # counters start again on each start
        async with server:
            url = server.web.base_url(A) + "lab/flaky.html"
            assert [(await _get(url))[0] for _ in range(4)] == [503, 503, 200, 200]


async def test_slow_page_waits_before_answering(base: str) -> None:
    with pytest.raises(TimeoutError):
        await _get(base + "lab/slow.html", timeout=aiohttp.ClientTimeout(total=0.05))
    status, _, body = await _get(base + "lab/slow.html")
    assert status == 200
    assert b"<h1>" in body


async def test_huge_page_is_streamed_and_a_client_may_stop_early(base: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(base + "lab/huge.html") as response:
            assert "Content-Length" not in response.headers
            assert response.headers["Content-Type"].startswith("text/html")
            first = await response.content.read(100_000)
            assert first.startswith(b"<!DOCTYPE html>")
            response.close()  # a size cap hit: hang up mid-body
        async with session.get(base + "lab/huge.html") as response:
            total = 0
            async for chunk in response.content.iter_any():
                total += len(chunk)
        assert total == 6_000_000
        async with session.get(base) as response:  # the server is fine afterwards
            assert response.status == 200


async def test_gzip_bomb_is_small_on_the_wire_and_huge_inflated(base: str) -> None:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(base + "lab/bomb.html") as response,
    ):
        assert response.headers["Content-Encoding"] == "gzip"
        assert response.headers["Content-Type"].startswith("text/html")
        wire = await response.read()
    assert len(wire) < 1_000_000
    inflater = zlib.decompressobj(31)
    size = 0
    for start in range(0, len(wire), 65_536):
        size += len(inflater.decompress(wire[start : start + 65_536]))
    size += len(inflater.flush())
    assert inflater.eof  # a valid gzip stream, CRC and length checked
    assert size > 100_000_000


async def test_non_html_files(base: str) -> None:
    status, headers, pdf = await _get(base + "files/report.pdf")
    assert status == 200
    assert headers["Content-Type"] == "application/pdf"
    assert pdf.startswith(b"%PDF-")
    _, headers, png = await _get(base + "files/chart.png")
    assert headers["Content-Type"] == "image/png"
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    _, headers, archive = await _get(base + "files/archive.zip")
    assert headers["Content-Type"] == "application/zip"
    assert zipfile.ZipFile(io.BytesIO(archive)).read("readme.txt") == b"Demo archive.\n"
    _, headers, data = await _get(base + "api/stats.json")
    assert headers["Content-Type"] == "application/json"
    assert json.loads(data)["lang"] == "en"
    _, headers, _ = await _get(base + "files/download?id=7")
    assert headers["Content-Type"] == "application/octet-stream"


async def test_wrong_charsets_and_broken_markup(base: str) -> None:
    _, headers, body = await _get(base + "lab/gbk-utf8-header.html")
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    with pytest.raises(UnicodeDecodeError):
        body.decode("utf-8")
    assert "的" in body.decode("gbk")
    _, headers, body = await _get(base + "lab/gbk-no-charset.html")
    assert headers["Content-Type"] == "text/html"
    assert b"charset" not in body
    _, headers, body = await _get(base + "lab/utf8-as-latin1.html")
    assert headers["Content-Type"] == "text/html"
    assert b'charset="iso-8859-1"' in body
    assert "的" in body.decode("utf-8")
    _, _, body = await _get(base + "lab/broken.html")
    assert GARBAGE in body


async def test_noindex_duplicate_long_query_iri_and_variants(
    base: str, server: DemoWebServer
) -> None:
    web = server.web
    _, _, body = await _get(base + "lab/noindex.html")
    assert b'<meta name="robots" content="noindex,nofollow">' in body
    duplicate = next(p for p in web.pages if p.duplicate_of)
    first = (await _get(base + duplicate.path.lstrip("/")))[2]
    second = (await _get(base + (duplicate.duplicate_of or "").lstrip("/")))[2]
    texts = [HTMLParser(body.decode()).css_first("article").text() for body in (first, second)]
    assert texts[0] == texts[1]
    long = next(u for u in web.links_of(base + "lab/") if len(u) > 2048)
    assert (await _get(long))[0] == 200
    assert (await _get(base + "lab/%E5%A4%A9%E6%96%87.html"))[0] == 200
    article = web.url_of(next(p for p in web.pages if p.kind is Kind.ARTICLE))
    plain = (await _get(article))[2]
    for variant in (
        article + "?utm_source=newsletter",
        article + "#comments",
        article.replace("http://", "HTTP://"),
    ):
        assert (await _get(variant))[2] == plain


async def test_calendar_trap_goes_on(base: str) -> None:
    url = base + "calendar/2024/01"
    for _ in range(30):
        status, _, body = await _get(url)
        assert status == 200
        nxt = body.split(b">Next month<")[0].rsplit(b'href="', 1)[1].split(b'"')[0].decode()
        url = urljoin(url, nxt)
    assert url.endswith("calendar/2026/07")
    assert (await _get(base + "calendar/2024/13"))[0] == 404


async def test_access_log_records_host_path_time_status() -> None:
    web = DemoWeb.generate(hosts=2, pages_per_host=3)
    async with DemoWebServer(web, log_size=3) as server:
        bases = list(server.bases.values())
        for url in (bases[0], bases[1] + "robots.txt", bases[0] + "nope", bases[1] + "lab/"):
            await _get(url)
        log = server.access_log()
        assert [(r.host, r.path, r.status) for r in log] == [
            (B, "/robots.txt", 200),
            (A, "/nope", 404),
            (B, "/lab/", 404),  # the lab lives on the first host only
        ]
        assert log[0].at <= log[1].at <= log[2].at
        assert [r.path for r in server.access_log(B)] == ["/robots.txt", "/lab/"]
        server.clear_log()
        assert server.access_log() == []


async def test_server_errors_are_clear() -> None:
    server = DemoWebServer(DemoWeb.generate(hosts=1, pages_per_host=2))
    with pytest.raises(RuntimeError, match="not been started"):
        _ = server.web
    async with server:
        with pytest.raises(RuntimeError, match="already started"):
            await server.start()
        taken = int(server.bases[A].rsplit(":", 1)[1].rstrip("/"))
        with pytest.raises(OSError):
            await DemoWebServer(DemoWeb.generate(hosts=1, pages_per_host=2), port=taken).start()
    with pytest.raises(ValueError):
        DemoWebServer(DemoWeb.generate(hosts=1, pages_per_host=2), port=-1)


def test_command_line_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--hosts", "0"]) == 2
    assert "hosts" in capsys.readouterr().err


def test_command_line_serves_until_ctrl_c() -> None:
    command = [
        sys.executable,
        "-m",
        "topicrawl.demoweb",
        "--port",
        "0",
        "--hosts",
        "2",
        "--pages-per-host",
        "5",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            url = first.rsplit(" ", 1)[1].strip()
            with urllib.request.urlopen(url + "robots.txt", timeout=10) as response:
                assert b"User-agent: *" in response.read()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=20) == 0
        finally:
            if process.poll() is None:  # a failed check must not leave Popen's exit waiting
                process.kill()
