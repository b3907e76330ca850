"""How a crawl's cost grows with its size: topicrawl and Scrapy on the scale web (issue #24).

    python benchmarks/scale/run.py crawl --crawler topicrawl --pages 1000000   # resumable
    python benchmarks/scale/run.py crawl --crawler scrapy-memory --pages 200000
    python benchmarks/scale/run.py crawl --crawler scrapy-jobdir --pages 200000
    python benchmarks/scale/run.py report          # tables (markdown) + scale.png from the rows

``crawl`` starts the scale web (:mod:`topicrawl.demoweb.scaleserver`: 1,000 hosts on
127.1.0.1-127.1.3.232, two server processes) unless ``--external-web`` says one is running,
then runs one crawler as a subprocess under ``nice`` and, every ``--every`` pages (10,000),
appends a row to ``OUT/<crawler>.jsonl``: pages, seconds, pages/s over the last interval, CPU
ms per page over it (every process of the crawl, children included), the RSS of every process
of the crawl, the database and frontier sizes on disk, URLs queued, the scale web's own CPU per
page (how much faster than the crawler it could answer), and the load average.

topicrawl: ``topicrawl crawl --strategy bfs`` into ``OUT/topicrawl.db`` (SQLite storage and
frontier), ``--concurrency`` requests in flight (128), 8 per host, robots.txt obeyed. Killed or
stopped by ``--max-seconds`` (SIGINT: the crawl finishes what is in flight and stops), the same
command resumes it: the crawl continues in the same database and the rows continue in the same
file. Scrapy: the same politeness, breadth first; ``scrapy-jobdir`` keeps its queue and
dupefilter on disk (``JOBDIR``); it stops at ``--pages`` or when its rate over an interval falls
under half of its first interval's, and is not resumable here (each run starts afresh).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[2]
# This checkout's topicrawl, not the installed one; and table.py beside this file.
sys.path[:0] = [str(REPO / "src"), str(Path(__file__).parent)]

from table import markdown, plot  # noqa: E402

from topicrawl.demoweb.scaleserver import ScaleServer  # noqa: E402
from topicrawl.demoweb.scaleweb import ScaleWeb  # noqa: E402

OUT = REPO / "benchmarks" / "scale" / "out"
PYTHON = sys.executable
MB = 1024 * 1024
POLL_S = 2.0
CRAWLERS = ("topicrawl", "scrapy-memory", "scrapy-jobdir")


@dataclass
class Tree:
    """CPU and RSS of a process and its descendants; CPU of processes that ended is kept."""

    root: int
    cpu: dict[int, float] = field(default_factory=dict)

    def sample(self) -> tuple[float, dict[str, float]]:
        try:
            root = psutil.Process(self.root)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return sum(self.cpu.values()), {}
        rss: dict[str, float] = {}
        for proc in procs:
            with contextlib.suppress(psutil.Error), proc.oneshot():
                times = proc.cpu_times()
                self.cpu[proc.pid] = (
                    times.user + times.system + times.children_user + times.children_system
                )
                rss[f"{_role(proc)}-{proc.pid}"] = round(proc.memory_info().rss / MB, 1)
        return sum(self.cpu.values()), rss


def _role(proc: psutil.Process) -> str:
    cmd = " ".join(proc.cmdline())
    if "topicrawl.cli" in cmd:
        return "crawl"
    if "scrapy" in cmd:
        return "scrapy"
    if "multiprocessing" in cmd or "parse" in cmd:
        return "parse-worker"
    return proc.name()


def _server_cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            times = psutil.Process(pid).cpu_times()
            total += times.user + times.system
    return total


def _web_served(base: str, port: int) -> int | None:
    url = f"http://{base}:{port}/__stats"
    with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(url, timeout=5) as got:
        return int(json.load(got)["served"])
    return None


def _disk(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


class TopicrawlProgress:
    """Reads pages, URLs queued and the frontier table's size from the crawl's database."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def _connect(self) -> sqlite3.Connection | None:
        if not self.db.exists():
            return None
        with contextlib.suppress(sqlite3.Error):
            return sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        return None

    def pages(self) -> int:
        conn = self._connect()
        if conn is None:
            return 0
        try:
            # max(id) is a look-up, count(*) a scan of a table that grows to millions of rows.
            row = conn.execute("SELECT max(id) FROM pages").fetchone()
            return int(row[0] or 0)
        except sqlite3.Error:
            return 0
        finally:
            conn.close()

    def details(self) -> dict[str, Any]:
        conn = self._connect()
        wal = self.db.with_name(self.db.name + "-wal")
        out: dict[str, Any] = {
            "db_mb": round(_disk(self.db) / MB, 1),
            "wal_mb": round(wal.stat().st_size / MB, 1) if wal.exists() else 0.0,
        }
        if conn is None:
            return out
        try:
            row = conn.execute("SELECT queued FROM run_samples ORDER BY id DESC LIMIT 1").fetchone()
            out["queued"] = int(row[0]) if row else None
            for name, size in conn.execute(
                "SELECT name, sum(pgsize) FROM dbstat WHERE aggregate = TRUE AND name IN"
                " ('frontier_requests', 'pages', 'pages_fts_data', 'pages_fts_cjk_data')"
                " GROUP BY name"
            ):
                out[f"{name}_mb"] = round(size / MB, 1)
        except sqlite3.Error as exc:
            out["db_error"] = str(exc)
        finally:
            conn.close()
        if "frontier_requests_mb" in out:
            out["frontier_mb"] = out.pop("frontier_requests_mb")
        return out


class ScrapyProgress:
    def __init__(self, progress: Path, jobdir: Path | None) -> None:
        self.progress = progress
        self.jobdir = jobdir

    def pages(self) -> int:
        with contextlib.suppress(OSError, ValueError, IndexError):
            lines = self.progress.read_text().splitlines()
            return int(lines[-1].split()[1]) if lines else 0
        return 0

    def details(self) -> dict[str, Any]:
        if self.jobdir is None or not self.jobdir.exists():
            return {}
        return {"frontier_mb": round(_disk(self.jobdir) / MB, 1)}


def _argv(args: argparse.Namespace, seeds: Path) -> tuple[list[str], dict[str, str], Any]:
    env = dict(os.environ)
    nice = ["nice", "-n", str(args.nice)]
    if args.crawler == "topicrawl":
        db = args.out / "topicrawl.db"
        env["PYTHONPATH"] = str(args.src)
        env["TOPICRAWL_FETCH__CONNECTIONS"] = str(max(100, args.concurrency))
        if args.frontier_keys is not None:
            env["TOPICRAWL_FRONTIER__MEMORY_KEYS_PER_HOST"] = str(args.frontier_keys)
        argv = [
            *nice,
            PYTHON,
            "-m",
            "topicrawl.cli",
            "crawl",
            "--seeds-file",
            str(seeds),
            "--strategy",
            "bfs",
            "--max-pages",
            str(args.pages),
            "--concurrency",
            str(args.concurrency),
            "--per-host",
            "8",
            "--db",
            str(db),
            "--quiet",
            "--log-level",
            args.log_level,
        ]
        return argv, env, TopicrawlProgress(db)
    progress = args.out / f"{args.crawler}-progress.txt"
    progress.unlink(missing_ok=True)
    jobdir = args.out / "scrapy-jobdir" if args.crawler == "scrapy-jobdir" else None
    argv = [
        *nice,
        PYTHON,
        "-m",
        "scrapy.cmdline",
        "runspider",
        str(Path(__file__).with_name("scrapy_spider.py")),
        "-a",
        f"seeds_file={seeds}",
        "-a",
        f"progress={progress}",
        "-s",
        f"CONCURRENT_REQUESTS={args.concurrency}",
        "-s",
        f"CLOSESPIDER_PAGECOUNT={args.pages}",
    ]
    if jobdir is not None:
        shutil.rmtree(jobdir, ignore_errors=True)
        argv += ["-s", f"JOBDIR={jobdir}"]
    return argv, env, ScrapyProgress(progress, jobdir)


# What the crawl's log says happened (``--log-level info``), counted over a session's log.
LOG_EVENTS = {
    "robots_no_answer": "robots.txt could not be fetched",
    "robots_5xx": "robots.txt of ",
    "expired_lease_sweeps": "expired leases went back",
    "parse_worker_exits": "a parse worker exited",
    "parse_timeouts": "parsing ",
    "wal_truncated": "WAL checkpointed and truncated",
    "wal_put_off": "WAL checkpoint put off",
}


def _log_counts(log: Path, start: int) -> dict[str, int]:
    """How many lines of each event in ``LOG_EVENTS`` the log has from byte ``start`` on."""
    counts = dict.fromkeys(LOG_EVENTS, 0)
    expired = 0
    with contextlib.suppress(OSError), log.open("rb") as f:
        f.seek(start)
        for raw in f:
            line = raw.decode("utf-8", "replace")
            for name, needle in LOG_EVENTS.items():
                if needle in line and (name != "parse_timeouts" or "took" in line):
                    counts[name] += 1
            if "expired leases went back" in line:
                with contextlib.suppress(ValueError, IndexError):
                    expired += int(line.split(" expired leases")[0].split()[-1])
    counts["expired_leases"] = expired
    return counts


def _previous(rows_path: Path) -> list[dict[str, Any]]:
    if not rows_path.exists():
        return []
    return [json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]


def crawl(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    web = ScaleWeb(seed=args.seed, hosts=args.hosts, base_address=args.base, port=args.port)
    seeds = args.out / "seeds.txt"
    seeds.write_text("\n".join(web.seeds()) + "\n")
    server: ScaleServer | None = None
    server_pids: list[int] = []
    if not args.external_web:
        server = ScaleServer(web, processes=args.server_processes, nice=args.nice)
        server.start()
        server_pids = server.pids
    else:
        server_pids = [int(p) for p in args.external_web.split(",") if p]
    rows_path = args.out / f"{args.crawler}.jsonl"
    if args.crawler != "topicrawl":
        rows_path.unlink(missing_ok=True)
    rows = _previous(rows_path)
    try:
        return _run(args, seeds, rows_path, rows, server_pids)
    finally:
        if server is not None:
            server.stop()


def _run(
    args: argparse.Namespace,
    seeds: Path,
    rows_path: Path,
    rows: list[dict[str, Any]],
    server_pids: list[int],
) -> int:
    argv, env, progress = _argv(args, seeds)
    session = 1 + max((r.get("session", 0) for r in rows), default=0)
    offset_s = rows[-1]["seconds"] if rows else 0.0
    log_path = args.out / f"{args.crawler}-stderr.txt"
    log_start = log_path.stat().st_size if log_path.exists() else 0
    log = log_path.open("ab")
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=log, stderr=log)
    tree = Tree(proc.pid)
    last_pages = progress.pages()
    next_mark = (last_pages // args.every + 1) * args.every
    last_t, last_cpu = 0.0, 0.0
    last_server = _server_cpu(server_pids)
    last_served = _web_served(args.base, args.port) or 0
    first_rate: float | None = None
    peak_rss = 0.0
    stop_reason = ""
    print(f"{args.crawler}: session {session}, {last_pages} pages so far", flush=True)
    while proc.poll() is None:
        time.sleep(POLL_S)
        cpu, rss = tree.sample()
        peak_rss = max(peak_rss, sum(rss.values()))
        now = time.monotonic() - start
        if args.max_seconds and now > args.max_seconds and not stop_reason:
            stop_reason = f"--max-seconds {args.max_seconds}"
            proc.send_signal(signal.SIGINT)
        pages = progress.pages()
        if pages < next_mark:
            continue
        server = _server_cpu(server_pids)
        served = _web_served(args.base, args.port)
        interval_pages = pages - last_pages
        rate = interval_pages / max(now - last_t, 1e-9)
        row = {
            "crawler": args.crawler,
            "session": session,
            "pages": pages,
            "seconds": round(offset_s + now, 1),
            "pages_per_s": round(rate, 1),
            "cpu_ms_per_page": round(1000 * (cpu - last_cpu) / max(interval_pages, 1), 2),
            "rss_mb": rss,
            "rss_total_mb": round(sum(rss.values()), 1),
            "peak_rss_total_mb": round(peak_rss, 1),
            # The web's CPU per page it served (to every crawler using it): its cost per answer
            # against the crawler's cpu_ms_per_page says how far it is from being the limit.
            "web_cpu_ms_per_served": round(
                1000 * (server - last_server) / max((served or 0) - last_served, 1), 3
            ),
            "web_served": served,
            "load": [round(x, 2) for x in os.getloadavg()],
            "at": time.strftime("%Y-%m-%d %H:%M:%S"),
            **progress.details(),
            **(_log_counts(log_path, log_start) if args.crawler == "topicrawl" else {}),
        }
        rows.append(row)
        with rows_path.open("a") as out:
            out.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
        if first_rate is None:
            first_rate = rate
        elif args.crawler != "topicrawl" and rate < first_rate / 2 and not stop_reason:
            stop_reason = f"rate {rate:.1f} under half of the first interval's {first_rate:.1f}"
            proc.send_signal(signal.SIGINT)
        last_pages, last_t, last_cpu, last_server = pages, now, cpu, server
        last_served = served or last_served
        next_mark = (pages // args.every + 1) * args.every
    code = proc.wait()
    print(f"{args.crawler}: exit {code}; {stop_reason or 'ended'}", flush=True)
    with (args.out / "sessions.jsonl").open("a") as out:
        out.write(
            json.dumps(
                {
                    "crawler": args.crawler,
                    "session": session,
                    "exit": code,
                    "stop": stop_reason or "ended",
                    "pages": progress.pages(),
                    "seconds": round(time.monotonic() - start, 1),
                    "at": time.strftime("%Y-%m-%d %H:%M:%S"),
                }
            )
            + "\n"
        )
    return 0 if code in (0, 130, -2) else code


def report(args: argparse.Namespace) -> int:
    series = {c: _previous(args.out / f"{c}.jsonl") for c in CRAWLERS}
    series = {c: rows for c, rows in series.items() if rows}
    print(markdown(series, every=args.table_every))
    plot(series, Path(__file__).with_name("scale.png"))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("crawl")
    run.add_argument("--crawler", choices=CRAWLERS, default="topicrawl")
    run.add_argument("--pages", type=int, default=1_000_000)
    run.add_argument("--concurrency", type=int, default=128)
    run.add_argument("--every", type=int, default=10_000)
    run.add_argument("--max-seconds", type=float, default=0.0)
    run.add_argument("--nice", type=int, default=10)
    run.add_argument(
        "--frontier-keys",
        type=int,
        default=None,
        help="frontier.memory_keys_per_host (0: all; default: the crawler's own)",
    )
    run.add_argument(
        "--log-level", default="info", help="the crawl's log level (info: events are counted)"
    )
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--hosts", type=int, default=1000)
    run.add_argument("--base", default="127.1.0.1")
    run.add_argument("--port", type=int, default=8480)
    run.add_argument("--server-processes", type=int, default=2)
    run.add_argument(
        "--external-web", default="", help="PIDs of a scale web already serving (comma list)"
    )
    run.add_argument("--out", type=Path, default=OUT)
    run.add_argument(
        "--src",
        type=Path,
        default=REPO / "src",
        help="the topicrawl source tree to crawl with (another checkout's, for before/after)",
    )
    rep = sub.add_parser("report")
    rep.add_argument("--out", type=Path, default=OUT)
    rep.add_argument("--table-every", type=int, default=100_000)
    args = parser.parse_args()
    return crawl(args) if args.command == "crawl" else report(args)


if __name__ == "__main__":
    raise SystemExit(main())
