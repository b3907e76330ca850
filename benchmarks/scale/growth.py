"""What grows in the crawl process with the pages it has seen: tracemalloc at two page counts.

    python benchmarks/scale/growth.py --first 10000 --second 100000 [--hosts 1000]

Serves the scale web itself (one process per core, port 8490), crawls it breadth first into a
fresh SQLite database in this process with ``tracemalloc`` on (the parse worker is another
process and is not traced), snapshots the heap when ``--first`` and ``--second`` pages are
stored, and prints the 25 source lines whose live memory grew most between them, with the
process RSS and traced totals at both points. Heap growth that scales with pages (a dict
keyed by URL, a list of every page) shows up as the lines at the top.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))

from topicrawl.core.config import CrawlSettings  # noqa: E402
from topicrawl.core.models import CrawlStats  # noqa: E402
from topicrawl.demoweb.scaleserver import ScaleServer  # noqa: E402
from topicrawl.demoweb.scaleweb import ScaleWeb  # noqa: E402
from topicrawl.engine import run_crawl  # noqa: E402

MB = 1024 * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=10_000)
    parser.add_argument("--second", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--port", type=int, default=8490)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args()
    web = ScaleWeb(seed=2, hosts=args.hosts, base_address="127.2.0.1", port=args.port)
    snaps: dict[int, tuple[tracemalloc.Snapshot, float, int, float]] = {}
    me = psutil.Process()

    def on_progress(stats: CrawlStats) -> None:
        for mark in (args.first, args.second):
            if stats.pages >= mark and mark not in snaps:
                traced, _ = tracemalloc.get_traced_memory()
                snaps[mark] = (
                    tracemalloc.take_snapshot(),
                    me.memory_info().rss / MB,
                    traced,
                    time.time(),
                )
                print(f"snapshot at {stats.pages} pages", flush=True)

    with tempfile.TemporaryDirectory() as tmp, ScaleServer(web, processes=2, nice=5):
        settings = CrawlSettings(
            seeds=tuple(web.seeds()),
            strategy="bfs",
            max_pages=args.second + 10,
            concurrency=args.concurrency,
            politeness={"per_host": 8},  # type: ignore[arg-type]
            storage={"url": str(Path(tmp) / "growth.db")},  # type: ignore[arg-type]
        )
        tracemalloc.start(1)
        asyncio.run(run_crawl(settings, on_progress=on_progress))
        tracemalloc.stop()
    (s1, rss1, t1, _), (s2, rss2, t2, _) = snaps[args.first], snaps[args.second]
    pages = args.second - args.first
    rows = []
    for stat in s2.compare_to(s1, "lineno")[:25]:
        frame = stat.traceback[0]
        rows.append(
            {
                "where": f"{os.path.relpath(frame.filename, REPO)}:{frame.lineno}",
                "grew_kb": round(stat.size_diff / 1024, 1),
                "bytes_per_page": round(stat.size_diff / pages, 1),
                "blocks": stat.count_diff,
            }
        )
    result = {
        "first": args.first,
        "second": args.second,
        "rss_mb": [round(rss1, 1), round(rss2, 1)],
        "traced_mb": [round(t1 / MB, 1), round(t2 / MB, 1)],
        "load": os.getloadavg(),
        "top": rows,
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
