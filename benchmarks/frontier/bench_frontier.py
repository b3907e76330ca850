"""Frontier throughput and memory: push with many duplicates, pop + ack, RSS per queued URL.

Each implementation runs in its own child process so RSS figures do not mix. Run:

    python benchmarks/frontier/bench_frontier.py                 # the README's numbers
    python benchmarks/frontier/bench_frontier.py --pushes 100000 # a quick look

The push stream: ``--pushes`` URLs over ``--hosts`` hosts in batches of ``--batch``; in each
batch a ``--dup`` share are duplicates (half from the host's "menu", the first 40 pages of
each host, as nav links are; half drawn uniformly from every URL pushed so far), the rest new.
Only ``push`` (and the final ``flush``) is timed; building the Request objects is not. The
pop + ack loop flushes every 5,000 acks, as the engine's checkpoints do.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from topicrawl.core.models import Request
from topicrawl.frontier import MemoryFrontier, SqliteFrontier
from topicrawl.frontier._schedule import FrontierCore

MENU = 40


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def make_stream(args: argparse.Namespace) -> tuple[list[str], list[list[int]]]:
    """The unique URLs, and the batches as indexes into them."""
    rng = random.Random(42)
    per_batch_new = max(1, round(args.batch * (1 - args.dup)))
    batches: list[list[int]] = []
    urls: list[str] = []
    by_host: list[list[int]] = [[] for _ in range(args.hosts)]
    pushed = 0
    while pushed < args.pushes:
        batch = []
        for _ in range(per_batch_new):
            index = len(urls)
            host = rng.randrange(args.hosts)
            urls.append(f"http://www.host{host:03d}.example/section{index % 17}/page{index}.html")
            by_host[host].append(index)
            batch.append(index)
        while len(batch) < args.batch:
            if rng.random() < 0.5:
                menu = by_host[rng.randrange(args.hosts)][:MENU]
                if menu:
                    batch.append(rng.choice(menu))
                    continue
            batch.append(rng.randrange(len(urls)))
        rng.shuffle(batch)
        batches.append(batch)
        pushed += len(batch)
    return urls, batches


async def open_frontier(
    kind: str, directory: Path, capacity: int, spill: int = 512, spill_total: int = 0
) -> FrontierCore:
    options: dict[str, Any] = {"max_per_host": 1_000_000, "bloom_capacity": capacity}
    if kind == "memory":
        return MemoryFrontier(**options)
    if kind == "sqlite-spill":  # at most `spill` keys of a host in memory
        options["spill_limit"] = spill
        options["spill_total"] = spill_total  # and at most this many of all hosts (0: no bound)
    return await SqliteFrontier(directory / "bench.db", **options).open()


async def run_child(args: argparse.Namespace) -> dict[str, Any]:
    urls, batches = make_stream(args)
    rng = random.Random(7)
    scores = [rng.random() for _ in range(len(urls))]
    with tempfile.TemporaryDirectory(dir=args.tmp) as directory:
        frontier = await open_frontier(
            args.child, Path(directory), max(len(urls), 1000), args.spill, args.spill_total
        )
        base = rss()
        half_at = len(batches) // 2
        half_rss = half_queued = 0
        push_time = first_half_time = 0.0
        pushed = added = 0
        for number, batch in enumerate(batches):
            requests = [Request(urls[i], score=scores[i], depth=1) for i in batch]
            start = time.perf_counter()
            added += await frontier.push(requests)
            push_time += time.perf_counter() - start
            pushed += len(requests)
            await asyncio.sleep(0)  # a crawl's event loop runs other tasks between pages
            if number == half_at:
                first_half_time = push_time
                await frontier.flush()
                half_rss, half_queued = rss(), await frontier.queued()
        start = time.perf_counter()
        await frontier.flush()
        push_time += time.perf_counter() - start
        queued = await frontier.queued()
        end_rss = rss()
        queues = getattr(frontier, "_queues", None)
        keys_at_end = queues.keys_in_memory() if queues is not None else None

        popped = 0
        start = time.perf_counter()
        while (lease := await frontier.pop()) is not None:
            await frontier.ack(lease)
            popped += 1
            if popped % 5000 == 0:  # the engine's checkpoint makes acks durable
                await frontier.flush()
        await frontier.flush()
        pop_time = time.perf_counter() - start

        reopen_time = None
        if args.child.startswith("sqlite"):
            await frontier.close()
            start = time.perf_counter()
            frontier = await open_frontier(
                args.child, Path(directory), len(urls), args.spill, args.spill_total
            )
            reopen_time = time.perf_counter() - start
        await frontier.close()
    return {
        "impl": args.child,
        "pushes": pushed,
        "unique": added,
        "push_per_s": pushed / push_time,
        "push_us_per_url": 1e6 * push_time / pushed,
        # the cost of a push as the frontier fills: first half of the stream, then second
        "push_us_halves": [
            round(1e6 * first_half_time / max(1, pushed // 2), 2),
            round(1e6 * (push_time - first_half_time) / max(1, pushed - pushed // 2), 2),
        ],
        "queued": queued,
        "rss_per_queued_url": (end_rss - base) / queued,
        "rss_marginal_per_url": (end_rss - half_rss) / max(1, queued - half_queued),
        "pop_ack_per_s": popped / pop_time,
        "popped": popped,
        "reopen_s_all_done": reopen_time,
        "keys_in_memory_at_end_of_pushes": keys_at_end,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pushes", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--dup", type=float, default=0.9, help="share of duplicates in a batch")
    parser.add_argument("--impl", nargs="+", default=["memory", "sqlite"])
    parser.add_argument("--spill", type=int, default=512, help="sqlite-spill: keys per host")
    parser.add_argument(
        "--spill-total", type=int, default=0, help="sqlite-spill: keys of all hosts (0: no bound)"
    )
    parser.add_argument("--tmp", default=None, help="directory for the SQLite file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(run_child(args))))
        return
    results = []
    for impl in args.impl:
        command = [sys.executable, __file__, "--child", impl, *sys.argv[1:]]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    print(
        f"{args.pushes:,} pushes over {args.hosts} hosts, batches of {args.batch}, "
        f"{args.dup:.0%} duplicates"
    )
    print(
        "| impl | push URLs/s | µs/URL (1st half, 2nd half) | queued | RSS B/queued URL"
        " (marginal) | pop+ack /s |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        halves = ", ".join(f"{x:.1f}" for x in r["push_us_halves"])
        print(
            f"| {r['impl']} | {r['push_per_s']:,.0f} | {r['push_us_per_url']:.2f} ({halves}) | "
            f"{r['queued']:,} | {r['rss_per_queued_url']:.0f} ({r['rss_marginal_per_url']:.0f}) "
            f"| {r['pop_ack_per_s']:,.0f} |"
        )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
