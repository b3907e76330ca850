"""What keeping the full-text index costs page writes on PostgreSQL: ``--pages`` real pages
(titles and texts of ``--source``, see search_bench.py ``--make-source``) stored through
:class:`topicrawl.storage.SqlStorage` into a new schema, timed from the first save to the
close (every batch written).

Run it with the code to compare first on the path (each run prints its pages/s and load):

    PYTHONPATH=/path/to/main/src python benchmarks/dashboard/pg_write_cost.py --source docs.db
    PYTHONPATH=src python benchmarks/dashboard/pg_write_cost.py --source docs.db
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import time
import uuid
from pathlib import Path

import asyncpg

import topicrawl
from topicrawl.core.models import Page
from topicrawl.storage import SqlStorage

BASE = "postgresql://postgres@127.0.0.1/test"


def load_pages(source: Path, count: int) -> list[Page]:
    connection = sqlite3.connect(source)
    try:
        rows = connection.execute(
            "SELECT title, text FROM pages WHERE length(text) > 400 LIMIT ?", (count,)
        ).fetchall()
    finally:
        connection.close()
    return [
        Page(
            url=f"http://site{n % 40:02d}.docs.test/doc/{n}.html",
            final_url=f"http://site{n % 40:02d}.docs.test/doc/{n}.html",
            status=200,
            depth=1,
            fetched_at=1_790_000_000.0 + n,
            content_type="text/html",
            title=str(title),
            text=str(body),
            relevance=0.5,
            score=0.5,
        )
        for n, (title, body) in enumerate(rows)
    ]


async def run(pages: list[Page]) -> float:
    schema = f"search_wc_{uuid.uuid4().hex[:8]}"
    url = f"{BASE}?schema={schema}"
    try:
        async with SqlStorage(url):  # the schema first, outside the timing
            pass
        async with SqlStorage(url) as storage:
            started = time.perf_counter()
            for page in pages:
                await storage.save_page(page, run_id=1)
        return len(pages) / (time.perf_counter() - started)
    finally:
        connection = await asyncpg.connect(BASE)
        try:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=2000)
    args = parser.parse_args()
    pages = load_pages(args.source, args.pages)
    load = os.getloadavg()[0]
    rate = asyncio.run(run(pages))
    code = Path(topicrawl.__file__).resolve().parents[2]
    print(
        f"{code}: {len(pages)} pages, {rate:.0f} pages/s, load {load:.1f}->{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
