"""Steering on a docs site: preferring a Java package reaches its class pages sooner?

The local Java 17 API docs (``/work/shared/bench/docsweb.sh start``) crawled from the
overview page with a page budget, once without a preference and once per package with
``--prefer-entity PACKAGE --entity-radius 1`` (the package and, through the KB's ``part_of``
relations, its types). Both runs load the same KB (:mod:`java_kb`, built from the docs' class
index), so both recognise alike. The gold pages of a package come from the site's structure:
the class pages in the package's own directory (not its sub-packages, not ``package-*``
pages). The packages were fixed before any run (a spread of sizes, four areas of the API).
Reported: fetches until 90 % of the gold pages were fetched (a crawl that never gets there
counts as the budget, marked ``>``) and their mean fetch position, with / without. Usage::

    python benchmarks/kg/steering_docs.py [--max-pages 3000] [--strategy bfs] [--radius 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from java_kb import build

from topicrawl.core.config import CrawlSettings
from topicrawl.engine import run_crawl
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.store import KgStore

JAVA = "http://127.0.0.11:8080/"
PACKAGES = ("java.util.concurrent", "java.nio.file", "java.time.format", "javax.crypto")


async def _with_kb(db: Path, kb_text: str) -> None:
    async with KgStore(str(db)) as store:
        await store.load(parse_kb(kb_text, fmt="jsonl"))


async def crawl(
    db: Path, kb_text: str, strategy: str, budget: int, prefer: str | None, radius: int = 1
) -> list[str]:
    await _with_kb(db, kb_text)
    settings = CrawlSettings(
        seeds=(JAVA + "index.html",),
        strategy=strategy,
        topics=("java collections",) if strategy != "bfs" else (),
        max_pages=budget,
        concurrency=4,
        parse_workers=1,
        politeness={"per_host": 4},
        scope={"allowed_domains": ("127.0.0.11",), "max_depth": 8},
        storage={"url": str(db), "flush_interval": 0.5},
        kg={"prefer": (prefer,), "radius": radius} if prefer else {"recognise": True},
    )
    await run_crawl(settings)
    with sqlite3.connect(db) as connection:
        return [url for (url,) in connection.execute("SELECT final_url FROM pages ORDER BY id")]


def gold_of(package: str, urls: list[str]) -> set[str]:
    """The class pages in the package's directory (any module)."""
    directory = re.escape("/" + package.replace(".", "/") + "/")
    pattern = re.compile(rf"{directory}(?!package-)[A-Z][\w.]*\.html$")
    return {url for url in urls if pattern.search(url)}


def fetches_to_90(order: list[str], gold: set[str], total: int, budget: int) -> tuple[int, bool]:
    """Fetches until 90 % of ``total`` gold pages came; (budget, False) if never."""
    needed = max(1, -(-9 * total // 10))
    seen = 0
    for index, url in enumerate(order, start=1):
        if url in gold:
            seen += 1
            if seen >= needed:
                return index, True
    return budget, False


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-pages", type=int, default=3000)
    parser.add_argument("--strategy", default="bfs")
    parser.add_argument(
        "--radius", type=int, default=1, help="0: the package's name alone, no neighbours"
    )
    args = parser.parse_args()
    kb_text = "\n".join(json.dumps(line) for line in build(JAVA))
    ratios = []
    with tempfile.TemporaryDirectory() as scratch:
        plain_db = Path(scratch) / "plain.db"
        plain = await crawl(plain_db, kb_text, args.strategy, args.max_pages, None)
        print(f"{'package':22s} gold  without  with  ratio  mean without  with")
        for index, package in enumerate(PACKAGES):
            preferring = await crawl(
                Path(scratch) / f"{index}.db",
                kb_text,
                args.strategy,
                args.max_pages,
                package,
                args.radius,
            )
            gold = gold_of(package, plain + preferring)
            without, plain_done = fetches_to_90(plain, gold, len(gold), args.max_pages)
            with_, done = fetches_to_90(preferring, gold, len(gold), args.max_pages)
            ratio = with_ / without
            ratios.append(ratio)
            mean_without = statistics.mean(
                [i for i, url in enumerate(plain, 1) if url in gold] or [args.max_pages]
            )
            mean_with = statistics.mean(
                [i for i, url in enumerate(preferring, 1) if url in gold] or [args.max_pages]
            )
            print(
                f"{package:22s} {len(gold):4d}  {'' if plain_done else '>'}{without:6d}"
                f"  {'' if done else '>'}{with_:4d}  {ratio:5.2f}  {mean_without:12.0f}"
                f"  {mean_with:4.0f}"
            )
    print(f"geometric mean of the ratios to 90 %: {statistics.geometric_mean(ratios):.2f}")


if __name__ == "__main__":
    asyncio.run(main())
