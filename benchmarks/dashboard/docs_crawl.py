"""The crawl both dashboard benchmarks time: ``topicrawl crawl`` of the Java 17 API docs
(``../shared/bench/docsweb.sh``, 127.0.0.11:8080), BFS, 64 requests in flight, no delay, as a
subprocess into a new SQLite database; its pages/s are the run's own (pages / the seconds its
run stats record, so start-up is left out).

Used by ``beside_crawl.py`` (the dashboard polled beside it) and ``crawl_cost.py`` (variants of
the storage and metrics), which differ only in what runs around the crawl.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
SEED = "http://127.0.0.11:8080/index.html"
TOPIC = "concurrent thread lock executor"  # for the scoring strategies
DOCSWEB = Path(os.environ.get("DOCSWEB_SH", "/work/shared/bench/docsweb.sh"))


@dataclass(frozen=True)
class CrawlRun:
    """One crawl's numbers: pages, the run's own seconds, wall seconds, load before and after,
    and the CPU seconds (user + system) the crawl process used."""

    pages: int
    seconds: float
    wall: float
    load: tuple[float, float]
    cpu: float = 0.0

    @property
    def rate(self) -> float:
        return self.pages / self.seconds


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_docsweb() -> None:
    subprocess.run(["bash", str(DOCSWEB), "start"], check=True, stdout=subprocess.DEVNULL)


def make_schema(db: Path) -> None:
    """An empty crawl database (its tables, no run), as the crawl itself would make it, with
    this checkout's code."""
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from topicrawl.storage import SqlStorage  # noqa: PLC0415

    async def make() -> None:
        async with SqlStorage(str(db)):
            pass

    asyncio.run(make())


def crawl_argv(
    db: Path, max_pages: int, extra: Sequence[str] = (), *, strategy: str = "bfs"
) -> list[str]:
    topic = [] if strategy == "bfs" else ["--topic", TOPIC]
    return [
        sys.executable,
        "-m",
        "topicrawl.cli",
        "crawl",
        "--seed",
        SEED,
        "--strategy",
        strategy,
        *topic,
        "--max-pages",
        str(max_pages),
        "--concurrency",
        "64",
        "--per-host",
        "64",
        "--delay",
        "0",
        "--db",
        str(db),
        "--quiet",
        *extra,
    ]


def run_crawl(
    db: Path,
    max_pages: int,
    *,
    src: Path = SRC,
    env: Mapping[str, str] | None = None,
    extra: Sequence[str] = (),
    strategy: str = "bfs",
) -> CrawlRun:
    """Crawl into ``db`` with the code under ``src`` (a strategy other than bfs gets the topic
    :data:`TOPIC`); exits when the crawl fails."""
    environment = {**os.environ, **(env or {}), "PYTHONPATH": str(src)}
    before = os.getloadavg()[0]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.run(
        crawl_argv(db, max_pages, extra, strategy=strategy),
        env=environment,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=1800,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    if process.returncode != 0:
        sys.exit(f"crawl failed ({process.returncode}): {process.stderr.decode()[-2000:]}")
    with sqlite3.connect(db) as connection:
        (stats,) = connection.execute("SELECT stats FROM runs ORDER BY id DESC").fetchone()
    reported = json.loads(stats)
    return CrawlRun(
        int(reported["pages"]),
        float(reported["seconds"]),
        wall,
        (before, os.getloadavg()[0]),
        cpu,
    )
