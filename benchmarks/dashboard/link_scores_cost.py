"""What keeping each page's link priorities (``pages.link_scores``) costs, in CPU and bytes.

Reads the pages of a crawl database (``--source``, e.g. a crawl of the Java docs made by
``search_bench.py --make-source``: pages with their links), runs a scoring strategy over them
in fetch order (``make_strategy(name, topics=[TOPIC])``, what ``topicrawl crawl`` does), and
then, in ``--rounds`` interleaved rounds, stores the scored pages into a fresh SQLite database
through :class:`topicrawl.storage.SqlStorage` with ``keep_link_scores`` on and off (the same
write path as a crawl: rows built by ``save_page``, written in batches with the page). It
reports, per page: the process CPU of storing with and without, their difference, the
strategy's own CPU for the same pages (what a crawl spends anyway), and the stored bytes.

CPU time, not wall time: the machine is shared, so a process's CPU for the same work is far
steadier than its pages/s.

    python benchmarks/dashboard/link_scores_cost.py --source /tmp/docs.java.db --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_crawl import TOPIC

from topicrawl.core.models import Page
from topicrawl.focus import make_strategy
from topicrawl.storage import SqlStorage
from topicrawl.storage.link_scores import encode_link_scores


async def read_pages(source: Path, limit: int) -> list[Page]:
    async with SqlStorage(str(source), read_only=True) as storage:
        found = []
        async for page in storage.iter_pages(with_links=True):
            found.append(page)
            if len(found) >= limit:
                break
    return found


def scored(name: str, source_pages: list[Page]) -> tuple[list[Page], float]:
    """The pages as a crawl with strategy ``name`` stores them, and the strategy's CPU s."""
    strategy = make_strategy(name, topics=[TOPIC])
    out = []
    started = time.process_time()
    for page in source_pages:
        result = strategy.on_page(page)
        out.append(
            dataclasses.replace(
                page, relevance=result.relevance, topic=result.topic, link_scores=result.link_scores
            )
        )
    return out, time.process_time() - started


async def store(pages_: list[Page], *, keep: bool) -> float:
    """CPU seconds of this process to store ``pages_`` (open and close included)."""
    with tempfile.TemporaryDirectory(prefix="dash-scores-") as tmp:
        started = time.process_time()
        async with SqlStorage(str(Path(tmp) / "crawl.db"), keep_link_scores=keep) as storage:
            run = await storage.start_run(name="bench", config="{}")
            for page in pages_:
                await storage.save_page(page, run_id=run)
        return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--strategies", default="focused,shark,best-first")
    args = parser.parse_args()
    source_pages = asyncio.run(read_pages(args.source, args.pages))
    count = len(source_pages)
    links = statistics.mean(len(p.links) for p in source_pages)
    print(f"{count} pages from {args.source}, {links:.0f} links a page on average")
    print(f"load average {os.getloadavg()[0]:.1f}\n")
    print(
        "| strategy | strategy CPU µs/page | store CPU µs/page without / with (median) | "
        "difference µs/page | difference / strategy | encode µs/page | bytes/page |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in [s for s in args.strategies.split(",") if s]:
        pages_, strategy_cpu = scored(name, source_pages)
        started = time.process_time()
        encoded = [encode_link_scores(p.link_scores, p.links) for p in pages_]
        encode_cpu = time.process_time() - started
        size = sum(len(e.encode()) for e in encoded if e is not None)
        without: list[float] = []
        with_: list[float] = []
        for _ in range(args.rounds):
            without.append(asyncio.run(store(pages_, keep=False)))
            with_.append(asyncio.run(store(pages_, keep=True)))
        off, on = statistics.median(without), statistics.median(with_)
        per = 1e6 / count
        print(
            f"| {name} | {strategy_cpu * per:.0f} | {off * per:.0f} / {on * per:.0f} | "
            f"{(on - off) * per:.0f} | {(on - off) / strategy_cpu:.1%} | "
            f"{encode_cpu * per:.0f} | {size / count:.0f} |",
            flush=True,
        )
    print(f"\nload average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
