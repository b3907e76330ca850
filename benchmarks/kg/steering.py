"""Steering: fetches to reach an entity's pages with ``--prefer-entity`` against without.

On the demo web (seed 11, 4 hosts of 25 articles, served on loopback without its second
host's robots.txt Crawl-delay, which makes the fetch order depend on timings), the entities
are chosen before any run by a fixed rule: the five English and the five Chinese entity names
of the demo web's vocabularies that the most pages mention (ground truth: the generator's own
page text). Each is crawled breadth-first to the end twice, without and with the preference,
with the demo web's own small KB (``topicrawl.demoweb.kb``: each name part of its topic)
loaded in both runs and a radius of 2 (the topic and its other names count). The measure is
the fetches until 90 % of the entity's pages (those the crawl reaches) were fetched, and the
ratio with/without (and the same for the mean fetch position of those pages); the summary
is the geometric mean of the ratios. Usage::

    python benchmarks/kg/steering.py [--strategy bfs] [--workers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sqlite3
import statistics
import tempfile
from pathlib import Path

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import TOPICS, DemoWeb, DemoWebServer
from topicrawl.demoweb.kb import demo_kb_jsonl
from topicrawl.engine import run_crawl
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.recognise import has_cjk
from topicrawl.kg.store import KgStore


def chosen(web: DemoWeb) -> list[tuple[str, int]]:
    """The five English and five Chinese names most pages mention, with their page counts."""
    names = sorted({name for t in TOPICS for name in (*t.en.entities, *t.zh.entities)})
    pages = [p for p in web.pages if p.is_document]
    counts = {name: sum(1 for p in pages if name in p.text) for name in names}
    english = sorted((n for n in names if not has_cjk(n)), key=lambda n: (-counts[n], n))[:5]
    chinese = sorted((n for n in names if has_cjk(n)), key=lambda n: (-counts[n], n))[:5]
    return [(name, counts[name]) for name in english + chinese]


async def with_kb(db: Path) -> Path:
    """A database with the demo web's knowledge base loaded (both runs recognise alike)."""
    async with KgStore(str(db)) as store:
        await store.load(parse_kb(demo_kb_jsonl(), fmt="jsonl"))
    return db


async def crawl(
    server: DemoWebServer, db: Path, strategy: str, workers: int, prefer: str | None
) -> list[str]:
    bases = server.web.bases()
    settings = CrawlSettings(
        seeds=tuple(bases.values()),
        strategy=strategy,
        topics=("news",) if strategy != "bfs" else (),
        max_pages=0,
        concurrency=2,
        parse_workers=workers,
        politeness={"per_host": 1},
        scope={"allowed_domains": tuple(bases), "max_depth": 6},
        fetch={"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 1.0},
        storage={"url": str(db), "flush_interval": 0.2},
        kg={"prefer": (prefer,), "radius": 2} if prefer else {},
    )
    await run_crawl(settings)
    with sqlite3.connect(db) as connection:
        return [url for (url,) in connection.execute("SELECT final_url FROM pages ORDER BY id")]


def positions(order: list[str], gold: set[str]) -> list[int]:
    return [i for i, url in enumerate(order, start=1) if url in gold]


def fetches_to_90(order: list[str], gold: set[str]) -> int:
    found = positions(order, gold)
    return found[math.ceil(0.9 * len(found)) - 1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="bfs")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--orders", type=Path, help="write every crawl's fetch order here (JSON)")
    args = parser.parse_args()
    web = DemoWeb.generate(seed=11, hosts=4, pages_per_host=25, crawl_delay=0.0)
    server = DemoWebServer(web, slow_delay=0.2)
    ratios, mean_ratios = [], []
    with server.run_in_thread(), tempfile.TemporaryDirectory() as scratch:
        bound = server.web
        plain_db = await with_kb(Path(scratch) / "plain.db")
        plain = await crawl(server, plain_db, args.strategy, args.workers, None)
        orders: dict[str, object] = {"plain": plain, "port": bound.port}
        print(f"{'entity':18s} pages  without  with  ratio  mean without  with  ratio")
        for name, count in chosen(web):
            gold = {bound.url_of(p) for p in bound.pages if p.is_document and name in p.text}
            gold &= set(plain)
            db = await with_kb(Path(scratch) / f"{len(ratios)}.db")
            preferring = await crawl(server, db, args.strategy, args.workers, name)
            orders[name] = preferring
            without, with_ = fetches_to_90(plain, gold), fetches_to_90(preferring, gold)
            ratios.append(with_ / without)
            mean_without = statistics.mean(positions(plain, gold))
            mean_with = statistics.mean(positions(preferring, gold))
            mean_ratios.append(mean_with / mean_without)
            print(
                f"{name:18s} {count:5d}  {without:7d}  {with_:4d}  {with_ / without:5.2f}"
                f"  {mean_without:12.0f}  {mean_with:4.0f}  {mean_with / mean_without:5.2f}"
            )
    if args.orders is not None:
        args.orders.write_text(json.dumps(orders, ensure_ascii=False), encoding="utf-8")
    print(
        "geometric mean of the ratios: to 90 %"
        f" {statistics.geometric_mean(ratios):.2f}, mean position"
        f" {statistics.geometric_mean(mean_ratios):.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
