"""How many blocks PostgreSQL reads for the dashboard's slow text searches: EXPLAIN (ANALYZE,
BUFFERS) of every statement :func:`topicrawl.storage.search.search_pages` sends to find and
rank the ids, summed per search (shared buffers hit + read, heap blocks of bitmap scans).

Blocks read do not depend on the machine's load the way milliseconds do, so two versions of
the code can be compared on a loaded machine. Works with the code before session 19 (one
statement) and after (a statement per window): run it with each on the path.

    PYTHONPATH=src python benchmarks/dashboard/search_reads.py \\
        --db 'postgresql://postgres@127.0.0.1/test?schema=search_s19'
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import re
from typing import Any

from sqlalchemy.dialects import postgresql

import topicrawl.storage.search as search
from topicrawl.storage.target import create_engine, parse_target

QUERIES = (
    ("'ConcurrentHashMap'", search.PageQuery(text="ConcurrentHashMap")),
    ("'the'", search.PageQuery(text="the")),
    ("'deprecated'", search.PageQuery(text="deprecated")),
    ("'服务器'", search.PageQuery(text="服务器")),
    ("'thread' + status 404", search.PageQuery(text="thread", status=404)),
    ("'deprecated' + topic", search.PageQuery(text="deprecated", topic="java concurrency")),
    (
        "'deprecated' + host + status",
        search.PageQuery(text="deprecated", host="site03.docs.test", status=200),
    ),
)
_BUFFERS = re.compile(r"Buffers: shared(?: hit=(\d+))?(?: read=(\d+))?")
_HEAP = re.compile(r"Heap Blocks: exact=(\d+)(?: lossy=(\d+))?")


class _Reads:
    def __init__(self) -> None:
        self.buffers = 0
        self.heap = 0
        self.statements = 0
        self.ms = 0.0

    def add(self, plan: list[str]) -> None:
        self.statements += 1
        top = next(line for line in plan if "Buffers:" in line)  # the plan's root node
        hit, read = _BUFFERS.search(top).groups()  # type: ignore[union-attr]
        self.buffers += int(hit or 0) + int(read or 0)
        for line in plan:
            if found := _HEAP.search(line):
                self.heap += int(found.group(1)) + int(found.group(2) or 0)
            if line.startswith("Execution Time:"):
                self.ms += float(line.split()[2])


async def measure(url: str, name: str, query: search.PageQuery) -> None:
    engine = create_engine(parse_target(url), busy_timeout=30.0, connect_timeout=10.0)
    reads = _Reads()
    try:
        async with engine.connect() as connection:
            await connection.exec_driver_sql(f"SET LOCAL work_mem = '{search._WORK_MEM}'")

            async def explained(
                statement: Any, *args: Any, whole: bool = False, **kwargs: Any
            ) -> Any:
                sql = str(
                    statement.compile(
                        dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
                    )
                )
                if whole or "search_vector" in sql:
                    plan = await connection.exec_driver_sql(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
                    reads.add([str(row[0]).strip() for row in plan])
                return await connection.execute(statement, *args, **kwargs)

            class Traced:
                execute = staticmethod(explained)
                exec_driver_sql = staticmethod(connection.exec_driver_sql)

            words = search.fts_words(query.text or "")
            if inspect.iscoroutinefunction(search._postgres_text):  # finds ids, then ranks
                ranked = await search._postgres_text(Traced(), query, words, None, 51)  # type: ignore[arg-type]
            else:
                ranked = search._postgres_text(query, words, None, 51)
            await explained(ranked, whole=True)
    finally:
        await engine.dispose()
    print(
        f"| {name} | {reads.statements} | {reads.buffers:,} | {reads.heap:,} | {reads.ms:.0f} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    print(f"{search.__file__}, load average {os.getloadavg()[0]:.1f}")
    print("| search | statements | buffers | heap blocks | ms (EXPLAIN) |\n|---|---|---|---|---|")
    for name, query in QUERIES:
        asyncio.run(measure(args.db, name, query))
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
