"""What storing a page costs: the pages of a crawl database written again into a fresh one.

    python benchmarks/scale/replay.py --source OUT/topicrawl.db --pages 2000 [--out DIR]

Creates a database with the schema of the topicrawl on ``PYTHONPATH`` (triggers and full-text
indexes included), inserts the source's first ``--pages`` pages in batches of 200 as the
storage writer does (one ``BEGIN IMMEDIATE`` transaction a batch), and prints the CPU a page
spent in the process (SQLite runs in it) and the database's bytes a page by table, after a WAL
checkpoint. Run it with two checkouts' ``src`` on ``PYTHONPATH`` to compare their schemas on
the same pages; ``pages.cjk`` (schema 15) is computed here when the source lacks it.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from topicrawl.storage import SqlStorage

BATCH = 200


def _columns(conn: sqlite3.Connection, schema: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA {schema}.table_info(pages)")]


def replay(source: Path, target: Path, limit: int) -> dict[str, Any]:
    async def create() -> None:
        async with SqlStorage(str(target)):
            pass

    asyncio.run(create())
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("ATTACH ? AS source", (f"file:{source}?mode=ro",))
        theirs = set(_columns(conn, "source"))
        mine = _columns(conn, "main")
        columns = [name for name in mine if name in theirs and name != "id"]
        flag = "cjk" in mine and "cjk" not in theirs
        rows = conn.execute(
            f"SELECT {', '.join(columns)} FROM source.pages ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        conn.execute("DETACH source")
        if flag:
            from topicrawl.storage.search_index import has_cjk_text  # noqa: PLC0415

            title, text = columns.index("title"), columns.index("text")
            columns.append("cjk")
        names = ", ".join(columns)
        insert = f"INSERT INTO pages ({names}) VALUES ({', '.join('?' * len(columns))})"
        started = time.process_time()
        for at in range(0, len(rows), BATCH):
            batch = rows[at : at + BATCH]
            if flag:
                batch = [(*row, has_cjk_text(row[title], row[text])) for row in batch]
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(insert, batch)
            conn.execute("COMMIT")
        cpu = time.process_time() - started
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
    finally:
        conn.close()
    pages = max(len(rows), 1)
    return {
        "pages": len(rows),
        "cpu_ms_per_page": round(1000 * cpu / pages, 2),
        "file_kib_per_page": round(target.stat().st_size / pages / 1024, 1),
        "kib_per_page": {
            name: round(size / pages / 1024, 2)
            for name, size in sorted(tables.items(), key=lambda item: -item[1])
            if size / pages >= 10
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="directory for the new database (a temp one)")
    args = parser.parse_args()
    if not args.source.is_file():
        parser.error(f"{args.source} is not a file")
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        print(replay(args.source.resolve(), Path(tmp) / "replay.db", args.pages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
