"""Does the dashboard slow a running crawl? A 64-in-flight crawl of the Java docs, alone and with
``topicrawl serve`` on its SQLite database polled every second, in alternating rounds.

    PYTHONPATH=src python benchmarks/dashboard/beside_crawl.py [--rounds 3] [--max-pages 3000]

Each round runs the crawl twice, once alone and once with the dashboard (order alternating
between rounds). With the dashboard, a poller does what an open Overview page does (``/api/runs``
once, ``/api/live`` every second) and what a Prometheus scraping the dashboard every 15 s does
(``/metrics``), from the moment the crawl's run exists until it ends; ``--search`` adds a
full-text search (``/api/pages?q=thread``) every second as well. pages/s is the crawl's own
(pages / seconds from its run stats). The machine's 1-minute load is printed before and after
each crawl.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

SEED = "http://127.0.0.11:8080/index.html"
DOCSWEB = Path(os.environ.get("DOCSWEB_SH", "/work/shared/bench/docsweb.sh"))
EVERY_SECOND = ["/api/live"]
SEARCH = "/api/pages?q=thread&limit=50"
SCRAPE = "/metrics"
SCRAPE_EVERY = 15


@dataclass
class Outcome:
    with_dashboard: bool
    pages: int
    seconds: float
    polls: int
    poll_ms_median: float | None
    load: tuple[float, float]

    @property
    def rate(self) -> float:
        return self.pages / self.seconds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_exists(db: Path) -> bool:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
            return bool(connection.execute("SELECT count(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return False


class Poller:
    """``topicrawl serve`` on the crawl's database, asked every second while the crawl runs."""

    def __init__(self, db: Path, paths: list[str]) -> None:
        self.db = db
        self.paths = paths
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        if self._server is not None:
            self._server.terminate()
            self._server.wait(30)

    def _run(self) -> None:
        while not _run_exists(self.db):
            if self._stop.wait(0.05):
                return
        port = _free_port()
        self._server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "topicrawl.cli",
                "serve",
                "--db",
                str(self.db),
                "--port",
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        ticks = 0
        while not self._stop.is_set():
            started = time.monotonic()
            paths = list(self.paths)
            if ticks == 0:
                paths.append("/api/runs")
            if ticks % SCRAPE_EVERY == 0:
                paths.append(SCRAPE)
            try:
                for path in paths:
                    with urllib.request.urlopen(base + path, timeout=10) as response:
                        response.read()
                self.times.append(time.monotonic() - started)
                ticks += 1
            except OSError:
                pass  # still starting
            self._stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def crawl(max_pages: int, *, with_dashboard: bool, paths: list[str]) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="dash-bench-") as tmp:
        db = Path(tmp) / "crawl.db"
        argv = [
            sys.executable,
            "-m",
            "topicrawl.cli",
            "crawl",
            "--seed",
            SEED,
            "--strategy",
            "bfs",
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
        ]
        poller = Poller(db, paths) if with_dashboard else None
        before = os.getloadavg()[0]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if poller is not None:
            poller.start()
        _, err = process.communicate(timeout=1800)
        if poller is not None:
            poller.stop()
        after = os.getloadavg()[0]
        if process.returncode != 0:
            sys.exit(f"crawl failed ({process.returncode}): {err.decode()[-2000:]}")
        with sqlite3.connect(db) as connection:
            (stats,) = connection.execute("SELECT stats FROM runs ORDER BY id DESC").fetchone()
        reported = json.loads(stats)
        times = poller.times if poller else []
        return Outcome(
            with_dashboard,
            int(reported["pages"]),
            float(reported["seconds"]),
            len(times),
            statistics.median(times) * 1000 if times else None,
            (before, after),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-pages", type=int, default=3000)
    parser.add_argument("--search", action="store_true", help="also search every second")
    args = parser.parse_args()
    paths = EVERY_SECOND + ([SEARCH] if args.search else [])
    print(f"polled every second: {', '.join(paths)}; {SCRAPE} every {SCRAPE_EVERY} s")
    subprocess.run(["bash", str(DOCSWEB), "start"], check=True, stdout=subprocess.DEVNULL)
    outcomes: list[Outcome] = []
    for index in range(args.rounds):
        order = (False, True) if index % 2 == 0 else (True, False)
        for with_dashboard in order:
            outcome = crawl(args.max_pages, with_dashboard=with_dashboard, paths=paths)
            outcomes.append(outcome)
            poll = (
                f", {outcome.polls} polls, median {outcome.poll_ms_median:.0f} ms"
                if outcome.poll_ms_median is not None
                else ""
            )
            print(
                f"round {index + 1} {'dashboard' if with_dashboard else 'alone    '}: "
                f"{outcome.pages} pages in {outcome.seconds:.1f} s = {outcome.rate:.1f} pages/s"
                f"{poll} (load {outcome.load[0]:.1f} -> {outcome.load[1]:.1f})",
                flush=True,
            )
    alone = statistics.median(o.rate for o in outcomes if not o.with_dashboard)
    beside = statistics.median(o.rate for o in outcomes if o.with_dashboard)
    print(
        f"median pages/s: alone {alone:.1f}, with the dashboard polled {beside:.1f} "
        f"= {beside / alone:.1%} of alone"
    )


if __name__ == "__main__":
    main()
