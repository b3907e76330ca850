"""The adaptive threshold's trace under each automatic judge, on the Python docs topics.

For each topic, one focused crawl of ``--pages`` pages per judge (``profile``, ``embedding``)
as ``run.py`` runs it; prints the precisions the judge measured and the threshold after each.

Usage: python benchmarks/focus/judge_trace.py [--pages 200] [--topics python-ipc,...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import PYTHON_ROOT, Site, ensure_docsweb, settings_for
from topics import PYTHON_TOPICS

from topicrawl.engine import open_crawl
from topicrawl.focus import FocusedStrategy


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--topics", default="")
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.topics.split(",")))
    ensure_docsweb()
    site = Site("python", (PYTHON_ROOT,), args.pages, {})
    with tempfile.TemporaryDirectory(prefix="judge-trace-") as tmp:
        for topic in PYTHON_TOPICS:
            if wanted and topic.id not in wanted:
                continue
            for judge in ("profile", "embedding"):
                db = Path(tmp) / f"{topic.id}-{judge}.db"
                settings = settings_for(
                    site, db, "focused", topic.keywords, {"auto_judge": judge}, args.pages
                )
                async with open_crawl(settings) as crawler:
                    await crawler.run()
                    strategy = crawler.strategy
                assert isinstance(strategy, FocusedStrategy)
                precisions = " ".join(f"{p:.1f}" for p in strategy.controller.precisions)
                print(
                    f"{topic.id:20} {judge:9} precisions [{precisions}] "
                    f"threshold {strategy.threshold:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    asyncio.run(main())
