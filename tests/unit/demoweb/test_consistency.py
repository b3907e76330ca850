"""A small real BFS crawler over HTTP reaches exactly the pages the ground truth predicts."""

from __future__ import annotations

from collections import deque
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest
from protego import Protego
from selectolax.lexbor import LexborHTMLParser
from w3lib.url import canonicalize_url

from topicrawl.demoweb import CrawlRules, DemoWeb, DemoWebServer, expected_crawl

AGENT = "topicrawl"


class _TinyCrawler:
    """Just enough of a polite BFS crawler to check the ground truth against real responses."""

    def __init__(self, session: aiohttp.ClientSession, rules: CrawlRules, hosts: set[str]) -> None:
        self.session = session
        self.rules = rules
        self.hosts = hosts
        self.robots: dict[str, Protego] = {}

    async def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.hostname not in self.hosts or len(url) > self.rules.max_url_length:
            return False
        if not self.rules.obey_robots:
            return True
        origin = f"http://{parts.hostname}:{parts.port}"
        if origin not in self.robots:
            async with self.session.get(origin + "/robots.txt") as response:
                self.robots[origin] = Protego.parse(await response.text())
        return bool(self.robots[origin].can_fetch(url, AGENT))

    async def fetch(self, url: str) -> tuple[str, bytes] | None:
        chain: set[str] = set()
        current = url
        while True:
            if not await self.allowed(current):
                return None
            for attempt in range(self.rules.retries + 1):
                async with self.session.get(current, allow_redirects=False) as response:
                    status, headers = response.status, response.headers
                    if status >= 500 and attempt < self.rules.retries:
                        continue
                    body = b""
                    async for chunk in response.content.iter_chunked(65_536):
                        body += chunk
                        if len(body) > self.rules.max_body_bytes:
                            return None
                    break
            if status in {301, 302, 303, 307, 308}:
                key = canonicalize_url(current)
                if key in chain or len(chain) >= self.rules.max_redirects:
                    return None
                chain.add(key)
                current = urljoin(current, headers["Location"]).split("#")[0]
                continue
            if status != 200 or not headers.get("Content-Type", "").startswith("text/html"):
                return None
            return current, body

    async def crawl(self, seeds: list[str]) -> dict[str, int]:
        queue = deque((seed, 0) for seed in seeds)
        seen: set[str] = set()
        pages: dict[str, int] = {}
        while queue:
            url, depth = queue.popleft()
            url = url.split("#")[0]
            if canonicalize_url(url) in seen:
                continue
            seen.add(canonicalize_url(url))
            fetched = await self.fetch(url)
            if fetched is None:
                continue
            final, body = fetched
            if canonicalize_url(final) in pages:
                continue
            pages[canonicalize_url(final)] = depth
            tree = LexborHTMLParser(body.decode("utf-8", errors="replace"))
            meta = tree.css_first('meta[name="robots"]')
            meta_nofollow = meta is not None and "nofollow" in (
                meta.attributes.get("content") or ""
            )
            if depth >= self.rules.max_depth or (meta_nofollow and not self.rules.follow_nofollow):
                continue
            for anchor in tree.css("a[href]"):
                nofollow = "nofollow" in (anchor.attributes.get("rel") or "").lower().split()
                if nofollow and not self.rules.follow_nofollow:
                    continue
                queue.append((urljoin(final, anchor.attributes.get("href") or ""), depth + 1))
        return pages


@pytest.mark.parametrize(
    "rules",
    [
        CrawlRules(max_depth=4),
        CrawlRules(max_depth=3, obey_robots=False, follow_nofollow=True),
        CrawlRules(max_depth=5, hosts=frozenset({"127.0.0.2"}), max_redirects=1, retries=1),
    ],
    ids=["default", "loose", "one-host-strict"],
)
async def test_real_crawl_matches_ground_truth(rules: CrawlRules) -> None:
    web = DemoWeb.generate(hosts=2, pages_per_host=12, huge_bytes=5_100_000, bomb_bytes=50_000_000)
    async with DemoWebServer(web, slow_delay=0.05) as server, aiohttp.ClientSession() as session:
        bound = server.web
        seeds = list(server.bases.values())
        hosts = set(rules.hosts) if rules.hosts is not None else set(server.bases)
        crawled = await _TinyCrawler(session, rules, hosts).crawl(seeds)
    resolved: dict[str, int] = {}
    for url, depth in crawled.items():
        page_url = bound.resolve(url)
        assert page_url is not None, url
        resolved[page_url] = min(depth, resolved.get(page_url, depth))
    expected = expected_crawl(bound, seeds, rules)
    assert resolved == expected
    assert len(expected) > 40
