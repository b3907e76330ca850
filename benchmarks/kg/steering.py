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
from topicrawl.core.errors import DatabaseLocked
from topicrawl.demoweb import TOPICS, DemoWeb, DemoWebServer
from topicrawl.demoweb.kb import demo_kb_jsonl
from topicrawl.demoweb.model import Kind
from topicrawl.engine import run_crawl
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.recognise import has_cjk
from topicrawl.kg.store import KgStore

_SITE = frozenset({Kind.HOME, Kind.SECTION, Kind.ARTICLE, Kind.UTILITY, Kind.PRIVATE})
"""The site's own pages (the second gold set leaves out the lab's fixture pages, whose filler
text names entities but which no page about them links: /lab/slow.html, /lab/huge.html ...)."""


_ATTEMPTS = 4  # crawls of one entity at most, each on a fresh database, when SQLite is locked


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
    server: DemoWebServer,
    db: Path,
    strategy: str,
    workers: int,
    prefer: str | None,
    block_exponent: float = 0.0,
) -> list[str]:
    bases = server.web.bases()
    kg: dict[str, object] = {}
    if prefer:
        kg = {"prefer": (prefer,), "radius": 2, "block_exponent": block_exponent}
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
        kg=kg,
    )
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            await run_crawl(settings)
            break
        except DatabaseLocked:  # a loaded machine: a writer waited past SQLite's busy timeout
            if attempt == _ATTEMPTS:
                raise
            db = db.with_name(f"{db.stem}-again{attempt}.db")
            await with_kb(db)
            settings = settings.model_copy(
                update={"storage": settings.storage.model_copy(update={"url": str(db)})}
            )
    with sqlite3.connect(db) as connection:
        return [url for (url,) in connection.execute("SELECT final_url FROM pages ORDER BY id")]


def positions(order: list[str], gold: set[str]) -> list[int]:
    return [i for i, url in enumerate(order, start=1) if url in gold]


def fetches_to_90(order: list[str], gold: set[str]) -> int:
    found = positions(order, gold)
    return found[math.ceil(0.9 * len(found)) - 1]


def _ratios(plain: list[str], preferring: list[str], gold: set[str]) -> tuple[float, float]:
    """Fetches to 90 % and mean position of the gold pages: with / without."""
    to_90 = fetches_to_90(preferring, gold) / fetches_to_90(plain, gold)
    mean = statistics.mean(positions(preferring, gold)) / statistics.mean(positions(plain, gold))
    return to_90, mean


def leave_one_out(results: dict[float, dict[str, tuple[float, float]]]) -> list[float]:
    """Each entity's ratio to 90 % under the exponent the other entities chose (the lowest
    geometric mean of their ratios; ties to the smaller exponent)."""
    names = list(next(iter(results.values())))
    held_out = []
    for name in names:

        def others(exponent: float, name: str = name) -> float:
            return statistics.geometric_mean(
                [r[0] for n, r in results[exponent].items() if n != name]
            )

        best = min(sorted(results), key=others)
        ratio = results[best][name][0]
        held_out.append(ratio)
        print(f"  {name}: exponent {best} chosen without it, its ratio {ratio:.2f}")
    return held_out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="bfs")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--block-exponents",
        default="0",
        help="comma-separated candidates; with more than one, each entity's figure is taken"
        " with the exponent chosen on the other entities (leave one out)",
    )
    parser.add_argument("--orders", type=Path, help="write every crawl's fetch order here (JSON)")
    args = parser.parse_args()
    exponents = [float(x) for x in args.block_exponents.split(",")]
    web = DemoWeb.generate(seed=11, hosts=4, pages_per_host=25, crawl_delay=0.0)
    server = DemoWebServer(web, slow_delay=0.2)
    results: dict[float, dict[str, tuple[float, float]]] = {e: {} for e in exponents}
    site_results: dict[float, dict[str, tuple[float, float]]] = {e: {} for e in exponents}
    with server.run_in_thread(), tempfile.TemporaryDirectory() as scratch:
        bound = server.web
        plain = await crawl(
            server, await with_kb(Path(scratch) / "plain.db"), args.strategy, args.workers, None
        )
        orders: dict[str, object] = {"plain": plain, "port": bound.port}
        for exponent in exponents:
            print(f"block exponent {exponent}")
            print(f"{'entity':18s} pages  without  with  ratio  mean without  with  ratio")
            for name, count in chosen(web):
                gold = {bound.url_of(p) for p in bound.pages if p.is_document and name in p.text}
                gold &= set(plain)
                db = await with_kb(Path(scratch) / f"{exponent}-{len(orders)}.db")
                preferring = await crawl(
                    server, db, args.strategy, args.workers, name, block_exponent=exponent
                )
                orders[f"{exponent} {name}"] = preferring
                if args.orders is not None:  # after every crawl: a later one may fail
                    args.orders.write_text(json.dumps(orders, ensure_ascii=False), "utf-8")
                results[exponent][name] = _ratios(plain, preferring, gold)
                site = {u for u in gold if bound.page(u).kind in _SITE}
                site_results[exponent][name] = _ratios(plain, preferring, site)
                without, with_ = fetches_to_90(plain, gold), fetches_to_90(preferring, gold)
                mean_without = statistics.mean(positions(plain, gold))
                mean_with = statistics.mean(positions(preferring, gold))
                print(
                    f"{name:18s} {count:5d}  {without:7d}  {with_:4d}  {with_ / without:5.2f}"
                    f"  {mean_without:12.0f}  {mean_with:4.0f}  {mean_with / mean_without:5.2f}"
                )
            print(
                "geometric mean of the ratios: to 90 %"
                f" {statistics.geometric_mean([r[0] for r in results[exponent].values()]):.2f},"
                " mean position"
                f" {statistics.geometric_mean([r[1] for r in results[exponent].values()]):.2f}"
            )
            own = site_results[exponent].values()
            print(
                "the site's own pages only (no lab fixtures): to 90 %"
                f" {statistics.geometric_mean([r[0] for r in own]):.2f},"
                f" mean position {statistics.geometric_mean([r[1] for r in own]):.2f}"
            )
    if len(exponents) > 1:
        print("leave one entity out:")
        held_out = leave_one_out(results)
        mean = statistics.geometric_mean(held_out)
        print(f"geometric mean of the held-out ratios to 90 %: {mean:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
