"""Write throughput of SqlStorage: N pages of ~20 KB text with 50 links each (in blocks of 5).

Measures pages/s from the first save to the end of close() (everything durable), the batch
transaction latency, and how long the event loop was blocked (a probe task that wakes every
millisecond records its largest and 99th-percentile lateness).

Usage:
    python benchmarks/storage/bench_storage.py [--pages 10000] [--links 50] [--text-kb 20]
        [--block-size 5] [--batch-size 200] [--keep-body] [--busy-loop] [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import tempfile
import time
from pathlib import Path

from topicrawl.core.models import Link, Page
from topicrawl.storage import SqlStorage

TICK = 0.001

WORDS = [
    "crawler", "topic", "heat", "frontier", "relevance", "vector", "anchor", "block", "page",
    "storage", "forecast", "entity", "graph", "weight", "cluster", "sitemap", "feed", "robots",
    "politeness", "lease", "domain", "host", "focus", "harvest", "threshold", "rocchio",
]  # fmt: skip


def make_links(rng: random.Random, count: int, block_size: int) -> tuple[Link, ...]:
    """``count`` links in blocks of ``block_size``, each block's links sharing one block text
    (their anchors joined), as the HTML parser makes them."""
    links: list[Link] = []
    for block, start in enumerate(range(0, count, block_size)):
        size = min(block_size, count - start)
        urls = [
            f"https://site{rng.randrange(500)}.example/{rng.choice(WORDS)}/{rng.randrange(10**6)}"
            for _ in range(size)
        ]
        anchors = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(size)]
        block_text = " ".join(anchors)
        links += (
            Link(url, anchor, block, block_text, nofollow=(start + i) % 17 == 0)
            for i, (url, anchor) in enumerate(zip(urls, anchors, strict=True))
        )
    return tuple(links)


def make_pages(
    count: int, links: int, text_kb: int, *, block_size: int = 5, seed: int = 7
) -> list[Page]:
    rng = random.Random(seed)
    texts = []
    for _ in range(64):
        words: list[str] = []
        length = 0
        while length < text_kb * 1024:
            words.append(rng.choice(WORDS))
            length += len(words[-1]) + 1
        texts.append(" ".join(words))
    pages = []
    for n in range(count):
        host = f"site{n % 97}.example"
        page_links = make_links(rng, links, block_size)
        pages.append(
            Page(
                url=f"https://{host}/article/{n}",
                final_url=f"https://{host}/article/{n}",
                status=200,
                depth=n % 6,
                fetched_at=1_700_000_000.0 + n / 1000,
                content_type="text/html",
                title=f"Article {n} about {rng.choice(WORDS)}",
                text=texts[n % len(texts)],
                links=page_links,
                lang="en",
                parent_url=f"https://{host}/",
                content_hash=f"{n:016x}",
                relevance=rng.random(),
                score=rng.random(),
                reasons={"anchor": 0.3, "inherited": 0.1},
                elapsed=0.05,
                size=text_kb * 1024 * 2,
                encoding="utf-8",
            )
        )
    return pages


async def probe(lateness: list[float], stop: asyncio.Event) -> None:
    tick = TICK
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(tick)
        lateness.append(time.perf_counter() - before - tick)


async def burn_cpu(stop: asyncio.Event) -> None:
    """Stand-in for the crawl's own work on the event loop (parsing, scoring): CPU in ~2 ms
    slices, yielding between them."""
    while not stop.is_set():
        deadline = time.perf_counter() + 0.002
        while time.perf_counter() < deadline:
            pass
        await asyncio.sleep(0)


async def run(args: argparse.Namespace, url: str) -> None:
    pages = make_pages(args.pages, args.links, args.text_kb, block_size=args.block_size)
    # The pre-built pages are the benchmark's, not the crawl's: keep the cyclic GC from
    # walking them (a full collection over 10,000 pages of links stalls the loop 30-80 ms).
    gc.collect()
    gc.freeze()
    body = b"<html>" + pages[0].text.encode() + b"</html>"
    storage = SqlStorage(url, batch_size=args.batch_size, keep_body=args.keep_body)
    await storage.open()
    lateness: list[float] = []
    stop = asyncio.Event()
    prober = asyncio.create_task(probe(lateness, stop))
    burner = asyncio.create_task(burn_cpu(stop)) if args.busy_loop else None
    started = time.perf_counter()
    for page in pages:
        # What the crawl loop does per page: a duplicate check, then the save.
        if not args.no_lookup:
            await storage.find_content_hash(page.content_hash or "")
        if args.keep_body:
            await storage.save_page(page, run_id=1, body=body, headers={"Server": "bench"})
        else:
            await storage.save_page(page, run_id=1)
    saved = time.perf_counter()
    stats = storage.stats
    await storage.close()
    finished = time.perf_counter()
    stop.set()
    await prober
    if burner is not None:
        await burner
    total = finished - started
    late_ms = sorted(x * 1000 for x in lateness)
    print(f"database          {url}")
    print(
        f"pages             {args.pages} x ~{args.text_kb} KB text x {args.links} links"
        f" (blocks of {args.block_size})"
        f"{' + body' if args.keep_body else ''}"
        f"{', event loop kept busy' if args.busy_loop else ''}"
    )
    print(f"batch size        {args.batch_size}")
    print(f"pages/s           {args.pages / total:,.0f}  (all durable, close() included)")
    print(f"save loop         {saved - started:.2f} s, close() {finished - saved:.2f} s")
    print(
        f"batch latency     mean {stats.total_flush_seconds / max(stats.batches, 1) * 1000:.0f} ms"
        f", max {stats.max_flush_seconds * 1000:.0f} ms over {stats.batches} batches"
        " (before close)"
    )
    print(
        f"event-loop stall  p50 {statistics.median(late_ms):.1f} ms, "
        f"p99 {late_ms[int(len(late_ms) * 0.99)]:.1f} ms, max {late_ms[-1]:.1f} ms"
    )
    if url.endswith(".db"):
        size = sum(p.stat().st_size for p in Path(url).parent.glob(Path(url).name + "*"))
        print(f"file size         {size / 2**20:,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=50)
    parser.add_argument("--text-kb", type=int, default=20)
    parser.add_argument("--block-size", type=int, default=5, help="links per link block")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--keep-body", action="store_true")
    parser.add_argument("--no-lookup", action="store_true", help="skip find_content_hash")
    parser.add_argument(
        "--busy-loop", action="store_true", help="keep the event loop busy with CPU work"
    )
    parser.add_argument("--url", help="storage URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    if args.url:
        asyncio.run(run(args, args.url))
        return
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(args, str(Path(directory) / "bench.db")))


if __name__ == "__main__":
    main()
