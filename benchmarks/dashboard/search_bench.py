"""How fast the dashboard's pages list and search answer on a 1,000,000-row pages table.

Builds (once; ``--keep`` reuses it) a database of ``--rows`` synthetic pages whose titles and
texts are cut from real pages of the local documentation sites (``--source``: a topicrawl
database from crawls of ``../shared/bench/docsweb.sh``; ``--make-source`` crawls one), each
row a window of 300-1,500 characters of a random page, over 40 hosts of unequal size, 95 %
status 200, relevance skewed low, fetched two seconds apart per 100 rows. Then times
:func:`topicrawl.storage.search.search_pages` (what the dashboard calls) for each query
below, ``--repeat`` times, and prints the first (cold) time and the median of the rest.

    python benchmarks/dashboard/search_bench.py --make-source /tmp/docs.db
    python benchmarks/dashboard/search_bench.py --source /tmp/docs.db --db /tmp/pages-1m.db
    python benchmarks/dashboard/search_bench.py --source /tmp/docs.db \\
        --db 'postgresql://postgres@127.0.0.1/test?schema=obs_bench'
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.storage import SqlStorage
from topicrawl.storage.schema import pages
from topicrawl.storage.search import (
    PageQuery,
    _encode_cursor,
    search_pages,
)
from topicrawl.storage.search_index import (
    add_search_vector,
    create_search_index,
    drop_search_index,
)
from topicrawl.storage.target import create_engine, parse_target

SITES = {
    "java": "http://127.0.0.11:8080/index.html",
    "python": "http://127.0.0.12:8080/index.html",
    "django": "http://127.0.0.16:8080/index.html",
    "httpd-zh": "http://127.0.0.19:8080/zh-cn/",
    "debian-zh": "http://127.0.0.20:8080/zh-CN/",
}
HOSTS = [f"site{n:02d}.docs.test" for n in range(40)]
HOST_WEIGHTS = [1.0 / (n + 1) for n in range(40)]  # a few big hosts, many small ones
T0 = 1_790_000_000.0
CHUNK = 20_000


def make_source(path: Path, per_site: int) -> None:
    """Crawl ``per_site`` pages of each documentation site (each into a database of its own:
    a crawl's page limit counts every page of its database) and gather their titles and
    texts into ``path``."""
    merged = sqlite3.connect(path)
    try:
        merged.execute("CREATE TABLE IF NOT EXISTS pages (site TEXT, title TEXT, text TEXT)")
        for name, seed in SITES.items():
            print(f"crawling {name} ({seed})", flush=True)
            site_db = path.with_name(f"{path.stem}.{name}.db")
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "topicrawl.cli",
                    "crawl",
                    "--seed",
                    seed,
                    "--max-pages",
                    str(per_site),
                    "--concurrency",
                    "32",
                    "--per-host",
                    "32",
                    "--delay",
                    "0",
                    "--db",
                    str(site_db),
                    "--quiet",
                ],
                check=False,
                capture_output=True,
            )
            merged.execute("ATTACH ? AS site", (str(site_db),))
            merged.execute("INSERT INTO pages SELECT ?, title, text FROM site.pages", (name,))
            merged.commit()
            merged.execute("DETACH site")
    finally:
        merged.close()


def load_pool(source: Path) -> list[tuple[str, str]]:
    connection = sqlite3.connect(source)
    try:
        rows = connection.execute(
            "SELECT title, text FROM pages WHERE length(text) > 400"
        ).fetchall()
    finally:
        connection.close()
    if not rows:
        raise SystemExit(f"{source} has no pages with text: crawl some first (--make-source)")
    return [(str(title), str(body)) for title, body in rows]


def synthetic_rows(pool: list[tuple[str, str]], count: int, seed: int) -> Iterator[tuple[Any, ...]]:
    rng = random.Random(seed)
    for n in range(count):
        title, body = pool[rng.randrange(len(pool))]
        size = rng.randint(300, 1500)
        start = rng.randrange(max(1, len(body) - size))
        host = rng.choices(HOSTS, HOST_WEIGHTS)[0]
        roll = rng.random()
        status = 200 if roll < 0.95 else 404 if roll < 0.98 else 500
        url = f"http://{host}/doc/{n}.html"
        yield (
            url,
            url,
            status,
            rng.randint(0, 6),
            T0 + (n // 100) * 2.0 + rng.random(),
            "text/html",
            title,
            body[start : start + size],
            rng.random() ** 3,
            rng.random(),
            "{}",
            0.05,
            size,
            "[]",
            False,
            1 + n // 200_000,
            host,
            TOPICS[n % len(TOPICS)],  # not drawn: the other fields stay as earlier versions made
        )


COLUMNS = (
    "url, final_url, status, depth, fetched_at, content_type, title, text, relevance, score, "
    "reasons, elapsed, size, redirects, noindex, run_id, host, topic"
)
TOPICS = ("java concurrency", "python asyncio", "django models", None, None)


async def build(url: str, pool: list[tuple[str, str]], count: int) -> None:
    async with SqlStorage(url):  # creates the schema (the latest version)
        pass
    engine = create_engine(parse_target(url), busy_timeout=30.0, connect_timeout=10.0)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(drop_search_index)
        started = time.perf_counter()
        if engine.dialect.name == "sqlite":
            _insert_sqlite(url, pool, count)
        else:
            await _insert_postgres(engine, pool, count)
        inserted = time.perf_counter() - started
        started = time.perf_counter()
        async with engine.begin() as connection:
            if engine.dialect.name == "sqlite":
                await connection.run_sync(create_search_index)
            else:  # the stored column is filled on insert; its GIN index is built here
                await connection.exec_driver_sql("SET LOCAL maintenance_work_mem = '512MB'")
                await connection.run_sync(add_search_vector)
            if engine.dialect.name == "postgresql":
                await connection.execute(text("ANALYZE pages"))
        indexed = time.perf_counter() - started
    finally:
        await engine.dispose()
    print(f"built {count:,} rows: insert {inserted:.0f} s, full-text index {indexed:.0f} s")


def _insert_sqlite(path: str, pool: list[tuple[str, str]], count: int) -> None:
    connection = sqlite3.connect(path)
    try:
        marks = ", ".join("?" * len(COLUMNS.split(",")))
        rows = synthetic_rows(pool, count, seed=1)
        while True:
            chunk = [row for _, row in zip(range(CHUNK), rows, strict=False)]
            if not chunk:
                break
            connection.executemany(f"INSERT INTO pages ({COLUMNS}) VALUES ({marks})", chunk)
            connection.commit()
    finally:
        connection.close()


async def _insert_postgres(engine: AsyncEngine, pool: list[tuple[str, str]], count: int) -> None:
    async with engine.connect() as connection:
        raw = await connection.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        names = [name.strip() for name in COLUMNS.split(",")]
        rows = synthetic_rows(pool, count, seed=1)
        while True:
            chunk = [row for _, row in zip(range(CHUNK), rows, strict=False)]
            if not chunk:
                break
            await driver.copy_records_to_table("pages", records=chunk, columns=names)


async def deep_cursor(engine: AsyncEngine, offset: int) -> str:
    async with engine.connect() as connection:
        row = (
            await connection.execute(
                select(pages.c.fetched_at, pages.c.id)
                .order_by(pages.c.fetched_at.desc(), pages.c.id.desc())
                .offset(offset)
                .limit(1)
            )
        ).one()
    return _encode_cursor("n", [float(row.fetched_at), int(row.id)])


async def timed(
    engine: AsyncEngine, query: PageQuery, after: str | None, repeat: int
) -> tuple[float, float, int]:
    times = []
    found = 0
    for _ in range(repeat):
        started = time.perf_counter()
        results, _ = await search_pages(engine, query, after=after, limit=50)
        times.append(time.perf_counter() - started)
        found = len(results)
    return times[0], statistics.median(times[1:] or times), found


async def measure(url: str, repeat: int, only: str = "") -> None:
    engine = create_engine(parse_target(url), busy_timeout=30.0, connect_timeout=10.0)
    try:
        async with engine.connect() as connection:
            total = (await connection.execute(text("SELECT count(*) FROM pages"))).scalar_one()
        deep = await deep_cursor(engine, int(total * 0.9))
        _, text_cursor = await search_pages(engine, PageQuery(text="deprecated"), limit=50)
        queries: list[tuple[str, PageQuery, str | None]] = [
            ("list, first page (newest 50)", PageQuery(), None),
            ("list, deep page (after row 900,000)", PageQuery(), deep),
            ("list, host filter", PageQuery(host=HOSTS[25]), None),
            ("list, status 404", PageQuery(status=404), None),
            ("list, relevance >= 0.9", PageQuery(min_relevance=0.9), None),
            ("list, a one-hour window", PageQuery(since=T0 + 10_000.0, until=T0 + 13_600.0), None),
            ("search 'ConcurrentHashMap' (rare)", PageQuery(text="ConcurrentHashMap"), None),
            ("search 'deprecated' (common)", PageQuery(text="deprecated"), None),
            ("search 'deprecated', 2nd page", PageQuery(text="deprecated"), text_cursor),
            ("search 'thread safe' (two words)", PageQuery(text="thread safe"), None),
            ("search 'the' (in most rows)", PageQuery(text="the"), None),
            ("search '服务器' (Chinese, 3 chars)", PageQuery(text="服务器"), None),
            ("search '模块' (Chinese, 2 chars: scan)", PageQuery(text="模块"), None),
            (
                "search 'deprecated' + host + status",
                PageQuery(text="deprecated", host=HOSTS[3], status=200),
                None,
            ),
            (
                "search 'deprecated' + small host + status",
                PageQuery(text="deprecated", host=HOSTS[30], status=200),
                None,
            ),
            (
                "search 'thread' + status 404",
                PageQuery(text="thread", status=404),
                None,
            ),
            ("list, topic filter", PageQuery(topic=TOPICS[1]), None),
            ("search 'deprecated' + topic", PageQuery(text="deprecated", topic=TOPICS[0]), None),
        ]
        print(f"\n{total:,} rows in {url}\n")
        print("| query | results | first (cold) ms | median of the rest ms |")
        print("|---|---|---|---|")
        for name, query, after in queries:
            if only not in name:
                continue
            first, median, found = await timed(engine, query, after, repeat)
            print(f"| {name} | {found} | {first * 1000:.0f} | {median * 1000:.0f} |", flush=True)
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-source", type=Path, help="crawl the docs sites into this file")
    parser.add_argument("--per-site", type=int, default=1500)
    parser.add_argument("--source", type=Path)
    parser.add_argument("--db", default="/tmp/topicrawl-search-bench.db")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="reuse an existing --db")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="run the queries whose name has this text")
    args = parser.parse_args()
    if args.make_source is not None:
        make_source(args.make_source, args.per_site)
        return
    if not args.keep:
        if args.source is None:
            raise SystemExit("give --source DB (see --make-source) or --keep")
        if not args.db.startswith("postgres"):
            for suffix in ("", "-wal", "-shm"):
                Path(args.db + suffix).unlink(missing_ok=True)
        asyncio.run(build(args.db, load_pool(args.source), args.rows))
    print(f"load average {os.getloadavg()[0]:.1f}")
    asyncio.run(measure(args.db, args.repeat, args.only))


if __name__ == "__main__":
    main()
