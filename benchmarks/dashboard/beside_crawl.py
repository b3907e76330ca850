"""Does the dashboard slow a running crawl? A 64-in-flight crawl of the Java docs, alone and with
``topicrawl serve`` on its SQLite database polled every second, in alternating rounds.

    PYTHONPATH=src python benchmarks/dashboard/beside_crawl.py [--rounds 3] [--max-pages 3000]

Each round runs the crawl twice, once alone and once with the dashboard (order alternating
between rounds), each into a new database whose schema is made first (so that the dashboard,
like one a user keeps open, is already running when the crawl starts; its start-up is not
counted). With the dashboard, a poller does what an open Overview page does (``/api/runs``
once, ``/api/live`` every second) and what a Prometheus scraping the dashboard every 15 s does
(``/metrics``), from the crawl's start to its end; ``--search`` adds a
full-text search (``/api/pages?q=thread``) every second as well. pages/s is the crawl's own
(pages / seconds from its run stats). The machine's 1-minute load is printed before and after
each crawl.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_crawl import SRC, CrawlRun, free_port, make_schema, run_crawl, start_docsweb

EVERY_SECOND = ["/api/live"]
SEARCH = "/api/pages?q=thread&limit=50"
SCRAPE = "/metrics"
SCRAPE_EVERY = 15


@dataclass
class Outcome:
    with_dashboard: bool
    run: CrawlRun
    polls: int
    poll_ms_median: float | None
    dashboard_cpu_s: float | None = None


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Poller:
    """``topicrawl serve`` on the crawl's database, asked every second while the crawl runs."""

    def __init__(self, db: Path, paths: list[str], src: Path) -> None:
        self.db = db
        self.paths = paths
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: subprocess.Popen[bytes] | None = None
        self._port = free_port()
        self._src = src
        self._base = f"http://127.0.0.1:{self._port}"

    def start(self) -> None:
        """Start the dashboard, wait until it answers, then poll it from a thread."""
        self._server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "topicrawl.cli",
                "serve",
                "--db",
                str(self.db),
                "--port",
                str(self._port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(self._src)},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self._base + "/api/runs", timeout=5) as response:
                    response.read()
                break
            except OSError:
                if time.monotonic() > deadline or self._server.poll() is not None:
                    sys.exit("the dashboard did not start")
                time.sleep(0.1)
        self.cpu_at_start = _cpu_seconds(self._server.pid)
        self._thread.start()

    def stop(self) -> float:
        """Stop polling and the dashboard; returns the CPU seconds it used while polled."""
        self._stop.set()
        self._thread.join(30)
        used = 0.0
        if self._server is not None:
            used = _cpu_seconds(self._server.pid) - self.cpu_at_start
            self._server.terminate()
            self._server.wait(30)
        return used

    def _run(self) -> None:
        base = self._base
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
            except OSError as exc:
                print(f"poll failed: {exc}", flush=True)
            self._stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def crawl(max_pages: int, *, with_dashboard: bool, paths: list[str], src: Path) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="dash-bench-") as tmp:
        db = Path(tmp) / "crawl.db"
        make_schema(db)
        poller = Poller(db, paths, src) if with_dashboard else None
        if poller is not None:
            poller.start()
        try:
            run = run_crawl(db, max_pages, src=src)
        finally:
            dashboard_cpu = poller.stop() if poller is not None else None
        times = poller.times if poller else []
        return Outcome(
            with_dashboard,
            run,
            len(times),
            statistics.median(times) * 1000 if times else None,
            dashboard_cpu,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-pages", type=int, default=3000)
    parser.add_argument("--search", action="store_true", help="also search every second")
    parser.add_argument("--src", type=Path, default=SRC, help="the code crawled and served")
    args = parser.parse_args()
    paths = EVERY_SECOND + ([SEARCH] if args.search else [])
    print(f"polled every second: {', '.join(paths)}; {SCRAPE} every {SCRAPE_EVERY} s")
    start_docsweb()
    outcomes: list[Outcome] = []
    for index in range(args.rounds):
        order = (False, True) if index % 2 == 0 else (True, False)
        for with_dashboard in order:
            outcome = crawl(
                args.max_pages, with_dashboard=with_dashboard, paths=paths, src=args.src
            )
            outcomes.append(outcome)
            poll = (
                f", {outcome.polls} polls, median {outcome.poll_ms_median:.0f} ms, dashboard"
                f" CPU {outcome.dashboard_cpu_s:.2f} s"
                f" ({outcome.dashboard_cpu_s / outcome.run.seconds:.1%} of a core)"
                if outcome.poll_ms_median is not None and outcome.dashboard_cpu_s is not None
                else ""
            )
            print(
                f"round {index + 1} {'dashboard' if with_dashboard else 'alone    '}: "
                f"{outcome.run.pages} pages in {outcome.run.seconds:.1f} s = "
                f"{outcome.run.rate:.1f} pages/s, crawl CPU "
                f"{1000 * outcome.run.cpu / max(1, outcome.run.pages):.2f} ms/page{poll} "
                f"(load {outcome.run.load[0]:.1f} -> {outcome.run.load[1]:.1f})",
                flush=True,
            )
    alone = statistics.median(o.run.rate for o in outcomes if not o.with_dashboard)
    beside = statistics.median(o.run.rate for o in outcomes if o.with_dashboard)
    print(
        f"median pages/s: alone {alone:.1f}, with the dashboard polled {beside:.1f} "
        f"= {beside / alone:.1%} of alone"
    )
    # Each round's two crawls ran back to back, so their ratio is less moved by the load
    # drifting over the whole run than the medians above.
    ratios = [
        outcomes[2 * i + (1 if i % 2 == 0 else 0)].run.rate
        / outcomes[2 * i + (0 if i % 2 == 0 else 1)].run.rate
        for i in range(args.rounds)
    ]
    geometric = statistics.geometric_mean(ratios)
    listed = ", ".join(f"{r:.0%}" for r in ratios)
    print(f"per round, with / alone: {listed}; geometric mean {geometric:.1%}")
    cpu = {
        flag: statistics.median(
            o.run.cpu / max(1, o.run.pages) * 1000 for o in outcomes if o.with_dashboard is flag
        )
        for flag in (False, True)
    }
    print(f"crawl CPU ms/page (median): alone {cpu[False]:.2f}, with the dashboard {cpu[True]:.2f}")


if __name__ == "__main__":
    main()
