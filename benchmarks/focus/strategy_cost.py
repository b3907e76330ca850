"""What the focused strategy costs a crawl: wall time, the time spent in the strategy's
``on_page``, and in its topic updates and re-scorings of the waiting links (and, with
``--set learner=true``, in the online link learner: its examples and updates, its blending of
a page's links, its re-scoring after an update).

    bash ../shared/bench/docsweb.sh start
    .venv/bin/python benchmarks/focus/strategy_cost.py            # 3,000 Java pages, 2 rounds
    .venv/bin/python benchmarks/focus/strategy_cost.py --src /tmp/old/src   # older code
    .venv/bin/python benchmarks/focus/strategy_cost.py --set learner=true
    # the issue's cost target: the whole Java docs, 64 in flight, bfs against focused
    .venv/bin/python benchmarks/focus/strategy_cost.py --pages 0 --concurrency 64 \
        --strategies bfs,focused,focused+learner --repeat 1

Each crawl runs in a fresh process over the Java 17 docs on loopback (4 requests in flight,
memory frontier, java-concurrency's keywords); the strategy's methods are timed by wrapping
them, which adds well under a microsecond a call. ``--src`` runs the code of another checkout
(a git worktree of an older commit), for a before/after comparison on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SEED = "http://127.0.0.11:8080/index.html"
TOPIC = "concurrency, thread, lock, atomic, executor, synchronization"


def _timed(cls: type, name: str, spent: dict[str, list[float]]) -> None:
    original: Callable[..., Any] = getattr(cls, name)
    spent[name] = []

    def wrapper(self: object, *args: object, **kwargs: object) -> object:
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[name].append(time.perf_counter() - started)

    setattr(cls, name, wrapper)


# ``_blended`` does the learner's work in ``_rescore_learned`` too, so that is not timed apart.
_LEARNER_METHODS = ("_observe_outcome", "_blended")


async def one_crawl(
    pages: int,
    *,
    concurrency: int = 4,
    workers: int = -1,
    topic: str = TOPIC,
    strategy_name: str = "focused",
    options: dict[str, object] | None = None,
) -> dict[str, float]:
    from topicrawl.core.config import CrawlSettings  # noqa: PLC0415 - after --src is on the path
    from topicrawl.engine import open_crawl  # noqa: PLC0415
    from topicrawl.focus.strategies import FocusedStrategy  # noqa: PLC0415

    spent: dict[str, list[float]] = {}
    for name in ("on_page", "_update_topic", "_rescore_waiting"):
        _timed(FocusedStrategy, name, spent)
    for name in _LEARNER_METHODS:
        if hasattr(FocusedStrategy, name):  # older code has no learner
            _timed(FocusedStrategy, name, spent)
    waiting: list[int] = []
    with tempfile.TemporaryDirectory() as workdir:
        settings = CrawlSettings(
            seeds=(SEED,),
            topics=(topic,),
            strategy=strategy_name,
            strategy_options=options or {},
            max_pages=pages,
            concurrency=concurrency,
            pages_in_hand=concurrency,
            parse_workers=workers,
            politeness={"per_host": concurrency, "delay": 0.0},
            frontier={"kind": "memory"},
            storage={"url": str(Path(workdir) / "crawl.db")},
        )
        started = time.perf_counter()
        cpu_started = time.process_time()
        async with open_crawl(settings) as crawler:
            stats = await crawler.run()
            strategy = crawler.strategy
            waiting.append(len(getattr(strategy, "waiting", ())))
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    rescores = spent["_rescore_waiting"]
    learner = sum(sum(spent.get(name, ())) for name in _LEARNER_METHODS)
    return {
        "pages_per_second": stats.pages / seconds,
        "learner": learner,
        "learner_ms_per_page": 1000 * learner / max(stats.pages, 1),
        "pages": stats.pages,
        "seconds": seconds,
        "cpu": cpu,
        "workers_cpu": children.ru_utime + children.ru_stime,
        "on_page": sum(spent["on_page"]),
        "updates": len(spent["_update_topic"]),
        "update": sum(spent["_update_topic"]),
        "rescore": sum(rescores),
        "rescore_mean_ms": 1000 * statistics.fmean(rescores) if rescores else 0.0,
        "waiting_at_end": waiting[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="requests (and pages) in hand")
    parser.add_argument(
        "--parse-workers", type=int, default=-1, help="parse worker processes (-1: the default)"
    )
    parser.add_argument("--topic", default=TOPIC, help="the topic's keywords")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the code to run")
    parser.add_argument(
        "--strategies",
        default="focused",
        help="comma-separated: bfs, focused, focused+learner (each crawl in turn, each round)",
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="OPTION=JSON", help="a strategy option"
    )
    parser.add_argument("--strategy", default="focused", help=argparse.SUPPRESS)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        sys.path.insert(0, str(args.src))
        options = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
        crawl = one_crawl(
            args.pages,
            concurrency=args.concurrency,
            workers=args.parse_workers,
            topic=args.topic,
            strategy_name=args.strategy,
            options=options if args.strategy == "focused" else {},
        )
        print(json.dumps(asyncio.run(crawl)))
        return
    env = {**os.environ, "PYTHONPATH": str(args.src)}
    runs: dict[str, list[dict[str, float]]] = {}
    for round_, kind in ((r, k) for r in range(args.repeat) for k in args.strategies.split(",")):
        name, _, extra = kind.partition("+")
        sets = [*args.set, "learner=true"] if extra == "learner" else list(args.set)
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                f"--pages={args.pages}",
                f"--src={args.src}",
                f"--concurrency={args.concurrency}",
                f"--parse-workers={args.parse_workers}",
                f"--topic={args.topic}",
                f"--strategy={name}",
                *(f"--set={item}" for item in sets),
            ],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout
        run = json.loads(out.strip().splitlines()[-1])
        runs.setdefault(kind, []).append(run)
        print(
            f"round {round_ + 1} {kind}: {run['pages']:.0f} pages in {run['seconds']:.1f} s "
            f"({run['pages_per_second']:.1f} pages/s; learner {run['learner']:.2f} s, "
            f"{run['learner_ms_per_page']:.3f} ms a page) "
            f"(CPU: crawl {run['cpu']:.1f} s, parse workers {run['workers_cpu']:.1f} s), "
            f"on_page {run['on_page']:.1f} s ({1000 * run['on_page'] / run['pages']:.2f} ms a "
            f"page), {run['updates']:.0f} topic updates {run['update']:.2f} s, re-scoring "
            f"{run['rescore']:.2f} s ({run['rescore_mean_ms']:.0f} ms each, "
            f"{run['waiting_at_end']:.0f} links waiting at the end)",
            flush=True,
        )
    keys = ("pages_per_second", "seconds", "cpu", "workers_cpu", "on_page", "rescore")
    for kind, kind_runs in runs.items():
        print(f"\n{kind}, median of {len(kind_runs)}: ", end="")
        print(
            ", ".join(
                f"{key} {statistics.median(r[key] for r in kind_runs):.2f}"
                for key in (*keys, "rescore_mean_ms", "learner", "learner_ms_per_page")
            )
        )
    if "bfs" in runs:
        bfs = statistics.median(r["pages_per_second"] for r in runs["bfs"])
        for kind, kind_runs in runs.items():
            rate = statistics.median(r["pages_per_second"] for r in kind_runs)
            print(f"{kind}: {rate / bfs:.0%} of bfs's pages/s")


if __name__ == "__main__":
    main()
