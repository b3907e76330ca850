"""Wall time of seed 004's first crawl and account ranking on 1, 2 and 3 nodes (issue #22).

The demo video site and microblog are served by this process on the system clock; each node
is a process of its own (``VideoSystem`` with ``node`` set, one database shared by all), as
``topicrawl video run --node`` runs it. With one node the leader crawls and reads every
account alone (the system before the split, the reference); with two or three every node
does part of the first crawl and of the account reads (``split`` on), and a row with the split
off on three nodes shows what the leader alone takes with followers beside it.

The run revisits for a moment only (``days`` of a second), so a node's wall time is the first
crawl, plan and account ranking. The number is the wall time from the first node's start to
the last node's end (each process reports its own; Python's start-up is outside it), and
what each node did of the split.

    PYTHONPATH=src .venv/bin/python benchmarks/revisit/split.py --titles 40 --repeat 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from topicrawl.demoweb.seed004 import Seed004Demo
from topicrawl.engine.accounts import AccountPipelineSettings
from topicrawl.engine.videosystem import VideoSystem, VideoSystemSettings
from topicrawl.revisit.clock import SystemClock
from topicrawl.revisit.tiers import TierPolicy

DAY = 60.0  # a "day" of the clock: the tiers' periods, far beyond the run


def _node(settings: VideoSystemSettings, out: Any) -> None:
    async def go() -> dict[str, Any]:
        began = time.time()
        report = await VideoSystem(settings, clock=SystemClock()).run()
        return {
            "node": settings.node,
            "began": began,
            "ended": time.time(),
            "pages": report.pages_crawled,
            "videos": report.videos,
            "kept": report.accounts.get("kept", 0),
            "split": report.split,
        }

    out.put(asyncio.run(go()))


def run_once(titles: int, nodes: int, split: bool, folder: Path) -> dict[str, Any]:
    names = tuple("abc"[:nodes])
    db = str(folder / f"n{nodes}-{split}-{time.monotonic_ns()}.db")
    with Seed004Demo(SystemClock(), titles=titles, day_seconds=DAY) as demo:
        base = VideoSystemSettings(
            site=demo.site_url,
            db=db,
            parsers=str(demo.write_schemas(folder / "schemas.toml")),
            api=demo.api_url,
            days=0.1 / DAY,
            tiers=TierPolicy.in_days(day_seconds=DAY),
            accounts=AccountPipelineSettings(max_hops=2, max_per_hop=100),
            nodes=names,
            day_seconds=DAY,
            follow_poll=0.2,
            follow_timeout=900.0,
            lease_ttl=30.0,
            split=split,
        )
        queue: Any = multiprocessing.get_context("spawn").Queue()
        procs = [
            multiprocessing.get_context("spawn").Process(
                target=_node, args=(VideoSystemSettings(**{**vars(base), "node": n}), queue)
            )
            for n in names
        ]
        load = os.getloadavg()[0]
        for p in procs:
            p.start()
        rows = [queue.get(timeout=1800) for _ in procs]
        for p in procs:
            p.join()
        load = max(load, os.getloadavg()[0])
    wall = max(r["ended"] for r in rows) - min(r["began"] for r in rows)
    lead = next(r for r in rows if r["node"] == "a")
    return {
        "nodes": nodes,
        "split": split,
        "wall": wall,
        "load": load,
        "pages": lead["pages"],
        "videos": lead["videos"],
        "kept": lead["kept"],
        "by_node": {r["node"]: r["split"] for r in sorted(rows, key=lambda r: r["node"])},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--titles", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("split.json"))
    args = parser.parse_args()
    cases = [(1, False), (2, True), (3, True), (3, False)]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="split-bench-") as folder:
        for _ in range(args.repeat):  # the cases interleaved: a load change hits all of them
            for nodes, split in cases:
                row = run_once(args.titles, nodes, split, Path(folder))
                runs.append(row)
                print(json.dumps(row), flush=True)
    summary = []
    for nodes, split in cases:
        walls = [r["wall"] for r in runs if r["nodes"] == nodes and r["split"] == split]
        loads = [r["load"] for r in runs if r["nodes"] == nodes and r["split"] == split]
        summary.append({
            "nodes": nodes, "split": split, "median_wall": statistics.median(walls),
            "walls": walls, "loads": loads,
        })  # fmt: skip
        ws = ", ".join(f"{w:.1f}" for w in walls)
        ls = ", ".join(f"{x:.1f}" for x in loads)
        med = summary[-1]["median_wall"]
        print(f"{nodes} node(s), split {'on' if split else 'off'}: median {med:.1f} s "
              f"(runs {ws}; load {ls})")  # fmt: skip
    args.out.write_text(json.dumps({"titles": args.titles, "runs": runs, "summary": summary},
                                   indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
