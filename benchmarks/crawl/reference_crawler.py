"""Minimal aiohttp + selectolax BFS crawler: the Python throughput ceiling for the crawl benchmark.

It exists only for the benchmark and stores nothing.  What it does, and nothing more:
BFS from one seed, same host only, robots.txt obeyed (protego), URL dedupe in a set
(fragments dropped, nothing else normalised), N workers pulling from one asyncio.Queue
over one aiohttp session with N connections, redirects not followed automatically but
their Location queued through the same dedupe (as Scrapy's RedirectMiddleware does), only
``text/html`` bodies parsed (``<a href>`` and ``<area href>``, as Scrapy's LinkExtractor).

Prints one JSON line: pages (200 HTML responses), errors, seconds, and a few counters.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import aiohttp
from protego import Protego
from selectolax.lexbor import LexborHTMLParser

USER_AGENT = "topicrawl-bench-reference/1.0"
HTTP_SCHEMES = frozenset({"http", "https"})
LINK_SELECTOR = "a[href], area[href]"


@dataclass
class Counters:
    """What the crawl saw; ``pages`` is the benchmark's unit of work."""

    pages: int = 0
    errors: int = 0
    requests: int = 0
    redirects: int = 0
    non_html: int = 0
    robots_blocked: int = 0
    offsite: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)

    def error(self, kind: str) -> None:
        """Count one failed request under its HTTP status or exception name."""
        self.errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1


class ReferenceCrawler:
    """BFS over one host with a fixed number of workers and a set of seen URLs."""

    def __init__(self, *, seed: str, concurrency: int, timeout_s: float) -> None:
        parts = urlsplit(seed)
        self._seed = seed
        self._scheme_host = (parts.scheme, parts.netloc)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._concurrency = concurrency
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._seen: set[str] = set()
        # A relative href resolves the same way from every page of one directory, so each
        # (directory, href) pair is resolved and looked up once: this halves urljoin's cost,
        # the biggest Python-level cost of the crawl after parsing.
        self._resolved: set[tuple[str, str]] = set()
        self._robots = Protego.parse("")
        self.counters = Counters()
        self.fetched_urls: list[str] = []

    def _enqueue(self, url: str) -> None:
        """Queue ``url`` (already absolute, fragment-free) once, if on-host and allowed."""
        if url in self._seen:
            return
        self._seen.add(url)
        parts = urlsplit(url)
        if parts.scheme not in HTTP_SCHEMES:
            return
        if (parts.scheme, parts.netloc) != self._scheme_host:
            self.counters.offsite += 1
            return
        if not self._robots.can_fetch(url, USER_AGENT):
            self.counters.robots_blocked += 1
            return
        self._queue.put_nowait(url)

    def _links(self, body: bytes, base: str) -> None:
        """Queue every distinct link of one HTML page."""
        tree = LexborHTMLParser(body)
        hrefs: set[str] = set()
        for node in tree.css(LINK_SELECTOR):
            href = node.attributes.get("href")
            if href is None:
                continue
            href = href.strip().partition("#")[0]
            if href:
                hrefs.add(href)
        directory = base.partition("?")[0].rpartition("/")[0]
        resolved = self._resolved
        for href in hrefs:
            # A query-only href ("?x=1") depends on the page's own path, not just its directory.
            key = (base if href[0] == "?" else directory, href)
            if key not in resolved:
                resolved.add(key)
                self._enqueue(urljoin(base, href))

    async def _load_robots(self, session: aiohttp.ClientSession) -> None:
        try:
            async with session.get(f"{self._origin}/robots.txt") as resp:
                text = await resp.text(errors="replace") if resp.status == 200 else ""
        except (aiohttp.ClientError, TimeoutError) as exc:
            print(f"robots.txt unavailable ({exc!r}); crawling unrestricted", file=sys.stderr)
            text = ""
        self._robots = Protego.parse(text)

    async def _fetch(self, session: aiohttp.ClientSession, url: str) -> None:
        c = self.counters
        c.requests += 1
        async with session.get(url, allow_redirects=False) as resp:
            # Read every body so the keep-alive connection goes back to the pool.
            body = await resp.read()
            if resp.status in (301, 302, 303, 307, 308):
                c.redirects += 1
                location = resp.headers.get("Location")
                if location:
                    self._enqueue(urljoin(url, location).partition("#")[0])
                return
            if resp.status != 200:
                c.error(f"HTTP {resp.status}")
                print(f"HTTP {resp.status} {url}", file=sys.stderr)
                return
            if not resp.headers.get("Content-Type", "").lower().startswith("text/html"):
                c.non_html += 1
                return
        c.pages += 1
        self.fetched_urls.append(url)
        self._links(body, url)

    async def _worker(self, session: aiohttp.ClientSession) -> None:
        while True:
            url = await self._queue.get()
            try:
                await self._fetch(session, url)
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.counters.error(type(exc).__name__)
                print(f"error {url}: {exc!r}", file=sys.stderr)
            finally:
                self._queue.task_done()

    async def run(self) -> None:
        """Crawl until the queue is empty and every worker is idle."""
        connector = aiohttp.TCPConnector(
            limit=self._concurrency, limit_per_host=self._concurrency, ttl_dns_cache=None
        )
        async with aiohttp.ClientSession(
            connector=connector, timeout=self._timeout, headers={"User-Agent": USER_AGENT}
        ) as session:
            await self._load_robots(session)
            self._enqueue(self._seed.partition("#")[0])
            workers = [asyncio.create_task(self._worker(session)) for _ in range(self._concurrency)]
            await self._queue.join()
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", default="http://127.0.0.11:8080/index.html")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=30.0, help="per-request timeout, seconds")
    ap.add_argument("--dump-urls", type=Path, help="write the fetched 200 HTML URLs here, sorted")
    args = ap.parse_args()
    crawler = ReferenceCrawler(seed=args.seed, concurrency=args.concurrency, timeout_s=args.timeout)
    start = time.perf_counter()
    asyncio.run(crawler.run())
    seconds = time.perf_counter() - start
    if args.dump_urls is not None:
        args.dump_urls.write_text("".join(f"{u}\n" for u in sorted(crawler.fetched_urls)))
    result = {"crawler": "reference", **asdict(crawler.counters), "seconds": round(seconds, 3)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
