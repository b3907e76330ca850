"""Does a heavy judge hold up the crawl? `focused` with the embedding judge, judging in a worker
thread (the default) or on the event loop, and with the profile judge for reference.

    bash ../shared/bench/docsweb.sh start
    .venv/bin/python benchmarks/focus/judge_loop.py            # --repeat 2 --concurrency 4
    .venv/bin/python benchmarks/focus/judge_loop.py --site java   # 3,000 pages of the Java docs

Each crawl runs in a fresh process (as a user's crawl does: the model is loaded at the first
judgement) over the whole Python 3.11 docs on loopback (488 pages) or the first 3,000 pages of
the Java 17 docs, with the configurations in turn, so machine load falls on each alike.
Reported per crawl: pages per second, over the whole crawl and over its second half (long after
the model's load: what the judging itself costs), and the event loop's longest stall (a 10 ms
ticker's longest overshoot) and how many stalls passed 250 ms; while the loop stalls, no
response is read and no request starts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from topicrawl.core.config import CrawlSettings  # noqa: E402
from topicrawl.engine import open_crawl  # noqa: E402

SITES = {
    # The whole Python docs (488 pages): the model's load (~7 s) is much of the crawl.
    "python": (
        "http://127.0.0.12:8080/index.html",
        "asyncio, threading, concurrency, subprocess, queue",
    ),
    # 3,000 pages of the Java docs: a longer crawl, where the judging itself counts.
    "java": (
        "http://127.0.0.11:8080/index.html",
        "concurrency, thread, lock, atomic, executor, synchronization",
    ),
}
MAX_PAGES = {"python": 0, "java": 3000}
CONFIGS = {
    "embedding, in a thread": {"auto_judge": "embedding", "judge_thread": True},
    "embedding, on the loop": {"auto_judge": "embedding", "judge_thread": False},
    "profile (reference)": {"auto_judge": "profile"},
}


async def _ticker(
    stop: asyncio.Event,
    stalls: list[float],
    progress: list[tuple[float, int]],
    pages: Callable[[], int],
) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.01)
        stalls.append(time.perf_counter() - started - 0.01)
        progress.append((time.perf_counter(), pages()))


async def one_crawl(options: dict[str, object], concurrency: int, site: str) -> dict[str, float]:
    seed, topic = SITES[site]
    with tempfile.TemporaryDirectory() as workdir:
        settings = CrawlSettings(
            seeds=(seed,),
            topics=(topic,),
            max_pages=MAX_PAGES[site],
            strategy="focused",
            strategy_options=options,  # type: ignore[arg-type]
            concurrency=concurrency,
            pages_in_hand=concurrency,
            politeness={"per_host": concurrency, "delay": 0.0},
            frontier={"kind": "memory"},
            storage={"url": str(Path(workdir) / "crawl.db")},
        )
        stop = asyncio.Event()
        stalls: list[float] = []
        progress: list[tuple[float, int]] = []
        started = time.perf_counter()
        async with open_crawl(settings) as crawler:
            ticker = asyncio.create_task(
                _ticker(stop, stalls, progress, lambda: crawler.stats.pages)
            )
            stats = await crawler.run()
            stop.set()
            await ticker
        finished = time.perf_counter()
    # The second half of the crawl, long after the model's load: the judging's own cost.
    half_at = next(t for t, n in progress if n >= stats.pages / 2)
    return {
        "pages": stats.pages,
        "seconds": finished - started,
        "second_half_rate": (stats.pages - stats.pages / 2) / (finished - half_at),
        "longest_stall": max(stalls),
        "stalls_over_250ms": sum(1 for s in stalls if s > 0.25),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--site", choices=sorted(SITES), default="python")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one crawl
    args = parser.parse_args()
    if args.one:
        result = asyncio.run(one_crawl(CONFIGS[args.one], args.concurrency, args.site))
        print(json.dumps(result))
        return
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CONFIGS}
    for round_ in range(args.repeat):
        for name in CONFIGS:
            out = subprocess.run(
                [
                    *(sys.executable, __file__, "--one", name, "--site", args.site),
                    *("--concurrency", str(args.concurrency)),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            results[name].append(result)
            print(
                f"round {round_ + 1}  {name:24s} {result['pages']:.0f} pages "
                f"{result['seconds']:5.1f} s  {result['pages'] / result['seconds']:5.1f} pages/s  "
                f"(second half {result['second_half_rate']:5.1f})  "
                f"longest stall {result['longest_stall'] * 1000:6.0f} ms  "
                f"stalls > 250 ms: {result['stalls_over_250ms']:.0f}",
                flush=True,
            )
    print(
        f"\n| judge | pages/s (median of {args.repeat}) | second half | longest loop stall "
        "| stalls > 250 ms |"
    )
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        rate = statistics.median(r["pages"] / r["seconds"] for r in runs)
        half = statistics.median(r["second_half_rate"] for r in runs)
        longest = ", ".join(f"{r['longest_stall'] * 1000:.0f}" for r in runs)
        over = ", ".join(f"{r['stalls_over_250ms']:.0f}" for r in runs)
        print(f"| {name} | {rate:.1f} | {half:.1f} | {longest} ms | {over} |")


if __name__ == "__main__":
    main()
