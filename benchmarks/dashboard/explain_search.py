"""The plan PostgreSQL runs for one text search of the dashboard: EXPLAIN (ANALYZE, BUFFERS) of
the key statement :func:`topicrawl.storage.search.search_pages` sends (the newest matches that
pass the filters, ranked), with the ``work_mem`` it sets.

    python benchmarks/dashboard/explain_search.py \\
        --db 'postgresql://postgres@127.0.0.1/test?schema=search_s19' --text deprecated \\
        --topic 'java concurrency'
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from sqlalchemy.dialects import postgresql

from topicrawl.storage.search import _WORK_MEM, PageQuery, _postgres_text, fts_words
from topicrawl.storage.target import create_engine, parse_target


async def explain(url: str, query: PageQuery) -> None:
    statement = _postgres_text(query, fts_words(query.text or ""), None, 51)
    sql = str(
        statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    )
    engine = create_engine(parse_target(url), busy_timeout=30.0, connect_timeout=10.0)
    try:
        async with engine.begin() as connection:
            await connection.exec_driver_sql(f"SET LOCAL work_mem = '{_WORK_MEM}'")
            plan = await connection.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
            print("\n".join(row[0] for row in plan))
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--topic")
    parser.add_argument("--status", type=int)
    parser.add_argument("--host")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    query = PageQuery(text=args.text, topic=args.topic, status=args.status, host=args.host)
    asyncio.run(explain(args.db, query))


if __name__ == "__main__":
    main()
