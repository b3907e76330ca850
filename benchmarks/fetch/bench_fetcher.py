"""Throughput of HttpFetcher against the nginx docs web, beside raw aiohttp as a baseline.

Not a test (pytest does not collect it). Run from the repo root with the docs web up
(``bash ../shared/bench/docsweb.sh start``)::

    .venv/bin/python -m tests.integration.fetch.bench_fetcher --pages 6000 --concurrency 16

It fetches the Java API pages (outside /java.desktop/, which robots.txt disallows) once each
and prints requests/s and CPU microseconds per request for: raw aiohttp on the same session
settings, HttpFetcher without robots.txt, and HttpFetcher with robots.txt checks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from topicrawl.core.config import FetchSettings
from topicrawl.core.errors import FetchError
from topicrawl.core.models import Request
from topicrawl.fetch import HttpFetcher, RobotsCache, create_session

ROOT = Path("/usr/share/doc/openjdk-17-jre-headless/api")
BASE = "http://127.0.0.11:8080/"


def page_urls(limit: int) -> list[str]:
    urls: list[str] = []
    for folder, _, names in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT)
        if rel.startswith("java.desktop"):
            continue
        prefix = "" if rel == "." else rel + "/"
        urls.extend(BASE + prefix + name for name in names if name.endswith(".html"))
        if len(urls) >= limit:
            break
    return urls[:limit]


async def run(
    label: str, urls: list[str], concurrency: int, fetch: Callable[[str], Awaitable[int]]
) -> None:
    queue = list(urls)
    errors: Counter[str] = Counter()
    done = size = 0

    async def worker() -> None:
        nonlocal done, size
        while queue:
            url = queue.pop()
            try:
                got = await fetch(url)  # not "size += await ...": that loses updates
                size += got
                done += 1
            except FetchError as exc:
                errors[exc.kind] += 1

    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{label:<22} {done / wall:7.0f} req/s  {cpu / max(done, 1) * 1e6:5.0f} us CPU/req  "
        f"{size / wall / 1e6:5.1f} MB/s  errors {dict(errors)}"
    )


async def main(pages: int, concurrency: int) -> None:
    urls = page_urls(pages)
    settings = FetchSettings(connections=max(concurrency, 10))
    print(f"{len(urls)} pages from {BASE}, concurrency {concurrency}")

    session = create_session(settings)

    async def raw(url: str) -> int:
        async with session.get(url, allow_redirects=False) as response:
            return len(await response.read())

    await run("raw aiohttp", urls, concurrency, raw)
    await session.close()

    for with_robots in (False, True):
        fetcher = HttpFetcher(settings=settings)
        if with_robots:
            fetcher.robots = RobotsCache(
                session=fetcher.session,
                user_agent=settings.user_agent,
                error_ttl=60,
                max_crawl_delay=10,
            )

        async def fetch(url: str, fetcher: HttpFetcher = fetcher) -> int:
            return len((await fetcher.fetch(Request(url=url))).body)

        await run(f"HttpFetcher robots={with_robots}", urls, concurrency, fetch)
        await fetcher.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    asyncio.run(main(args.pages, args.concurrency))
