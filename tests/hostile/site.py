"""The hostile site: every way of misbehaving the suite crawls, one case a URL.

Listener 0 is the main host (robots.txt disallows ``/private/``), listener 1 serves a
robots.txt of 2 MB (its last line, past the 500 KiB read, would disallow ``/ok/``),
listener 2 a robots.txt of binary garbage. Each :class:`Case` names its URL and what the
crawl must record for it: ``kind`` is the failure kind, or None for a stored page.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import itertools
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import brotli

from tests.hostile.server import (
    SMUGGLED,
    Exchange,
    Handler,
    Route,
    page_body,
    response_head,
)
from topicrawl.core.models import ErrorKind

__all__ = ["CASES", "Case", "calendar_route", "site_route"]

MIB = 1 << 20
DRIP_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    path: str
    kind: ErrorKind | None  # None: stored as a page
    listener: int = 0
    slow: bool = False  # only in the full suite
    may_store: bool = False  # stored (with what was sent) is as good as the failure


async def _ok(ex: Exchange) -> None:
    await ex.page(page_body(ex.path))


async def _title_markup(ex: Exchange) -> None:
    title = "<script>alert(1)</script><b>bold</b> &lt;i&gt; page /title/markup"
    body = f"<html><head><title>{title}</title></head><body><p>marker</p></body></html>"
    await ex.page(body.encode())


async def _wrong_charset(ex: Exchange) -> None:
    text = "Потоки в Java: синхронизация и параллелизм. " * 40
    body = f"<html><head><title>charset</title></head><body><p>{text}</p></body></html>"
    await ex.page(body.encode("cp1251"), headers={"Content-Type": "text/html; charset=utf-8"})


async def _bogus_charset(ex: Exchange) -> None:
    await ex.page(page_body(ex.path), headers={"Content-Type": "text/html; charset=x-no-such"})


@functools.cache
def _bomb(encoding: str) -> bytes:
    if encoding == "br":
        return bytes(brotli.compress(b" " * (64 * MIB), quality=5))
    wbits = {"gzip": 31, "deflate": 15}[encoding]
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    head = compressor.compress(b"<html><body>") + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(b" " * MIB) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + block * 256 + compressor.flush()  # 256 MiB inflated (trailer not checked)


def _bomb_handler(encoding: str) -> Handler:
    async def bomb(ex: Exchange) -> None:
        body = _bomb(encoding)
        headers = {
            "Content-Type": "text/html",
            "Content-Encoding": encoding,
            "Content-Length": str(len(body)),
        }
        await ex.send(response_head(200, headers) + body)

    return bomb


async def _drip_body(ex: Exchange) -> None:
    await ex.send(response_head(200, {"Content-Type": "text/html", "Content-Length": "100000"}))
    for _ in range(3000):
        await ex.send(b"<")
        await asyncio.sleep(DRIP_SECONDS)


async def _drip_headers(ex: Exchange) -> None:
    await ex.send(b"HTTP/1.1 200 OK\r\n")
    for byte in itertools.islice(itertools.cycle(b"X-Drip: slow\r\n"), 3000):
        await ex.send(bytes([byte]))
        await asyncio.sleep(DRIP_SECONDS)


async def _many_headers(ex: Exchange) -> None:
    headers = [(f"X-H{n}", "v") for n in range(10_000)]
    body = page_body(ex.path)
    headers += [("Content-Type", "text/html"), ("Content-Length", str(len(body)))]
    await ex.send(response_head(200, headers) + body)


async def _redirect(ex: Exchange) -> None:
    parts = ex.path.strip("/").split("/")
    port = ex.port
    targets = {
        "loop-a": "/redirect/loop-b",
        "loop-b": "/redirect/loop-a",
        "ftp": "ftp://127.0.0.1/file.html",
        "file": "file:///etc/passwd",
        "javascript": "javascript:alert(1)",
        "host": f"http://127.0.0.2:{port}/ok/1",
        "long": "/ok/" + "x" * 10_000,
    }
    if parts[1] == "chain":
        await ex.redirect(f"/redirect/chain/{int(parts[2]) + 1}")
    else:
        await ex.redirect(targets[parts[1]])


async def _nested_divs(ex: Exchange) -> None:
    body = b"<html><head><title>deep</title></head><body>" + b"<div>" * 900_000 + b"deep"
    await ex.page(body)


def _chunks(total: int) -> Iterator[bytes]:
    piece = b"<p>" + b"filler text " * 5000 + b"</p>\n"
    sent = 0
    while sent < total:
        chunk = piece[: total - sent]
        sent += len(chunk)
        yield chunk


async def _big(ex: Exchange) -> None:
    size = 50 * MIB
    await ex.send(response_head(200, {"Content-Type": "text/html", "Content-Length": str(size)}))
    for chunk in _chunks(size):
        await ex.send(chunk)


async def _chunked(ex: Exchange, total: int) -> None:
    await ex.send(response_head(200, {"Content-Type": "text/html", "Transfer-Encoding": "chunked"}))
    for chunk in _chunks(total):
        await ex.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    await ex.send(b"0\r\n\r\n")


async def _big_chunked(ex: Exchange) -> None:
    await _chunked(ex, 50 * MIB)


async def _endless_chunked(ex: Exchange) -> None:
    await _chunked(ex, 1 << 40)


async def _many_links(ex: Exchange) -> None:
    links = "".join(f'<a href="http://127.0.0.2/{n}">{n}</a>' for n in range(200_000))
    body = f"<html><head><title>links</title></head><body>{links}</body></html>".encode()
    await ex.page(body)


async def _cl_short(ex: Exchange) -> None:
    """Content-Length covers only part of the page: the rest of the HTML follows at once
    (aiohttp's parser then fails the response, or the guard closes the idle connection)."""
    body = page_body(ex.path)
    ex.remember(body)
    head = response_head(200, {"Content-Type": "text/html", "Content-Length": str(len(body))})
    await ex.send(head + body + b"<p>past the announced length</p>" * 50)


async def _smuggle_later(ex: Exchange) -> None:
    """The page, then, while the connection idles in the crawler's pool, a whole response."""
    await ex.page(page_body(ex.path))
    await asyncio.sleep(0.05)
    smuggle = {"Content-Type": "text/html", "Content-Length": str(len(SMUGGLED))}
    await ex.send(response_head(200, smuggle) + SMUGGLED)


async def _surplus(ex: Exchange) -> None:
    """The page, and a second response nobody asked for in the same write."""
    body = page_body(ex.path)
    ex.remember(body)
    smuggle = {"Content-Type": "text/html", "Content-Length": str(len(SMUGGLED))}
    page = {"Content-Type": "text/html", "Content-Length": str(len(body))}
    await ex.send(response_head(200, page) + body + response_head(200, smuggle) + SMUGGLED)


async def _cl_long(ex: Exchange, stall: bool) -> None:
    body = page_body(ex.path)
    length = str(len(body) + 1000)
    await ex.send(response_head(200, {"Content-Type": "text/html", "Content-Length": length}))
    await ex.send(body)
    if stall:
        await asyncio.sleep(600)
    ex.keep_alive = False


async def _cl_long_close(ex: Exchange) -> None:
    await _cl_long(ex, stall=False)


async def _cl_long_stall(ex: Exchange) -> None:
    await _cl_long(ex, stall=True)


async def _gzip_page(ex: Exchange) -> None:
    body = page_body(ex.path)
    ex.remember(body)
    packed = gzip.compress(body)
    headers = {
        "Content-Type": "text/html",
        "Content-Encoding": "gzip",
        "Content-Length": str(len(packed)),
    }
    await ex.send(response_head(200, headers) + packed)


CASES: tuple[Case, ...] = (
    Case("plain page", "/ok/1", None),
    Case("gzip page", "/gzip/page", None),
    Case("gzip bomb", "/bomb/gzip", ErrorKind.TOO_LARGE),
    Case("deflate bomb", "/bomb/deflate", ErrorKind.TOO_LARGE),
    Case("brotli bomb", "/bomb/br", ErrorKind.TOO_LARGE),
    Case("dripping body", "/drip/body", ErrorKind.TIMEOUT),
    Case("dripping headers", "/drip/headers", ErrorKind.TIMEOUT),
    Case("10,000 headers", "/headers/many", ErrorKind.CONNECTION),
    Case("redirect chain", "/redirect/chain/0", ErrorKind.TOO_MANY_REDIRECTS),
    Case("redirect loop", "/redirect/loop-a", ErrorKind.REDIRECT_LOOP),
    Case("redirect to ftp", "/redirect/ftp", ErrorKind.OUT_OF_SCOPE),
    Case("redirect to file", "/redirect/file", ErrorKind.OUT_OF_SCOPE),
    Case("redirect to javascript", "/redirect/javascript", ErrorKind.OUT_OF_SCOPE),
    Case("redirect to another host", "/redirect/host", ErrorKind.OUT_OF_SCOPE),
    Case("redirect to a 10 KB URL", "/redirect/long", ErrorKind.URL_TOO_LONG),
    Case("wrong charset", "/charset/wrong", None),
    Case("unknown charset", "/charset/bogus", None),
    Case("markup in title", "/title/markup", None),
    Case("robots.txt disallows", "/private/1", ErrorKind.ROBOTS),
    Case("Content-Length short", "/cl/short", ErrorKind.CONNECTION, may_store=True),
    Case("a response smuggled onto the idle connection", "/smuggle", None),
    Case("a second response after the page", "/surplus", None),
    Case("Content-Length long, then close", "/cl/long-close", ErrorKind.CONNECTION),
    Case("Content-Length long, then stall", "/cl/long-stall", ErrorKind.TIMEOUT),
    Case("endless chunked body", "/chunked/endless", ErrorKind.TOO_LARGE),
    Case("huge robots.txt: page allowed", "/ok/2", None, listener=1),
    Case("huge robots.txt: page disallowed", "/private/2", ErrorKind.ROBOTS, listener=1),
    Case("garbage robots.txt", "/private/3", None, listener=2),
    Case("50 MB page with Content-Length", "/big/50mb", ErrorKind.TOO_LARGE, slow=True),
    Case("50 MB chunked page", "/big/50mb-chunked", ErrorKind.TOO_LARGE, slow=True),
    Case("900,000 nested divs", "/deep/divs", ErrorKind.PARSE, slow=True, may_store=True),
    Case("200,000 links", "/links/many", None, slow=True),
)

_ROUTES: dict[str, Handler] = {
    "/gzip/page": _gzip_page,
    "/bomb/gzip": _bomb_handler("gzip"),
    "/bomb/deflate": _bomb_handler("deflate"),
    "/bomb/br": _bomb_handler("br"),
    "/drip/body": _drip_body,
    "/drip/headers": _drip_headers,
    "/headers/many": _many_headers,
    "/charset/wrong": _wrong_charset,
    "/charset/bogus": _bogus_charset,
    "/title/markup": _title_markup,
    "/cl/short": _cl_short,
    "/smuggle": _smuggle_later,
    "/surplus": _surplus,
    "/cl/long-close": _cl_long_close,
    "/cl/long-stall": _cl_long_stall,
    "/chunked/endless": _endless_chunked,
    "/big/50mb": _big,
    "/big/50mb-chunked": _big_chunked,
    "/deep/divs": _nested_divs,
    "/links/many": _many_links,
}


def _robots(listener: int) -> bytes:
    if listener == 1:
        rules = b"User-agent: *\nDisallow: /private/\n"
        filler = b"".join(b"Disallow: /nothing/%d\n" % n for n in range(100_000))
        return rules + filler + b"Disallow: /ok/\n"
    if listener == 2:
        noise = random.Random(7).randbytes(200_000)
        return b"\x00\xff" + noise + b"\nDisallow /private\nUser-agent\n"
    return b"User-agent: *\nDisallow: /private/\n"


def _robots_handler(listener: int) -> Handler:
    async def robots(ex: Exchange) -> None:
        body = _robots(listener)
        headers = {"Content-Type": "text/plain", "Content-Length": str(len(body))}
        await ex.send(response_head(200, headers) + body)

    return robots


def site_route(cases: tuple[Case, ...]) -> Route:
    """The route of a site whose main page ``/`` links to ``cases`` (of listener 0)."""
    index_links = tuple(c.path for c in cases if c.listener == 0)

    async def index(ex: Exchange) -> None:
        await ex.page(page_body("/", index_links, extra='<a href="/ok/' + "y" * 10_000 + '">'))

    def route(path: str, listener: int) -> Handler | None:
        if path == "/robots.txt":
            return _robots_handler(listener)
        if path == "/":
            return index
        if path.startswith("/redirect/"):
            return _redirect
        if path.startswith(("/ok/", "/private/")):
            return _ok
        return _ROUTES.get(path)

    return route


async def _calendar(ex: Exchange) -> None:
    day = int(ex.path.rsplit("=", 1)[1])
    links = (f"/cal?day={day + 1}", f"/cal?day={day - 1}")
    # Off the crawl's topic, so a focused crawl holds its links back (and revives them).
    await ex.page(page_body(ex.path, links, about="weather and holidays of the day"))


def calendar_route(path: str, listener: int) -> Handler | None:
    """A calendar trap: every day links the next and the previous one, without end."""
    if path == "/robots.txt":
        return _robots_handler(0)
    if path.startswith("/cal?day="):
        return _calendar
    return None
