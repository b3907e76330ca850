"""Crawl-throughput benchmark: a reference aiohttp crawler vs Scrapy vs topicrawl on a local site.

    python benchmarks/crawl/run.py [--only reference,scrapy,topicrawl] [--site java|java-slow|all]
                                   [--repeat 2]

Each crawler runs as a subprocess, one after the other (round-robin over the repeats, so a
change in machine load hits every crawler alike), against the Java 17 API docs served by
nginx on loopback (``/work/shared/bench/docsweb.sh``; started here if it is not up).  For each
run it measures wall seconds, CPU seconds (user + sys from ``os.wait4``, which includes every
waited-for descendant), peak RSS (the process tree's summed RSS sampled by psutil every 50 ms,
and ``ru_maxrss``), the crawler's own count of 200 HTML pages, the load average, and the web
server's own CPU seconds.  It writes ``out/results-<site>.json``, the fetched URL lists and
their diffs against the reference, and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV_BIN = REPO / ".venv" / "bin"
OUT = HERE / "out"

try:
    import psutil
except ImportError:  # plain `python` without the project's venv: re-run under the venv
    venv_python = VENV_BIN / "python"
    if venv_python.exists() and Path(sys.executable) != venv_python:
        os.execv(venv_python, [str(venv_python), __file__, *sys.argv[1:]])
    raise

# ---------------------------------------------------------------------------------------------
# THE TOPICRAWL COMMAND.  Adjust here when the CLI changes.  {bin} is the venv's bin directory,
# {seed} the site's root page, {db} a fresh SQLite file in a temporary directory; the page
# count is read back from that DB with TOPICRAWL_PAGES_SQL (and the URL list with _URLS_SQL).
TOPICRAWL_CMD = (
    "{bin}/topicrawl crawl --seed {seed} --strategy bfs --max-pages 0"
    " --concurrency 64 --per-host 64 --delay 0 --db {db} --quiet"
)
TOPICRAWL_PAGES_SQL = "SELECT count(*) FROM pages WHERE status = 200"
TOPICRAWL_URLS_SQL = "SELECT url FROM pages WHERE status = 200"
TOPICRAWL_STATUS_SQL = "SELECT status, count(*) FROM pages GROUP BY status"
TOPICRAWL_STATS_SQL = "SELECT stats FROM runs ORDER BY id DESC LIMIT 1"
NOT_ERRORS = frozenset({"robots", "content_type"})  # keys of topicrawl's run stats "errors"
# ---------------------------------------------------------------------------------------------

CONCURRENCY = 64


@dataclass(frozen=True)
class Site:
    """A benchmark site: its root page and the latency its proxy adds per request."""

    seed: str
    delay_s: float


SITES = {
    "java": Site(seed="http://127.0.0.11:8080/index.html", delay_s=0.0),
    "java-slow": Site(seed="http://127.0.0.15:8080/index.html", delay_s=0.1),
}
CRAWLERS = ("reference", "scrapy", "topicrawl")
DOCSWEB_SH = Path(os.environ.get("DOCSWEB_SH", REPO.parent / "shared" / "bench" / "docsweb.sh"))
DOCSWEB_STATE = Path(os.environ.get("DOCSWEB", "/tmp/docsweb"))
SAMPLE_EVERY_S = 0.05
MB = 1024 * 1024


@dataclass
class Run:
    """One crawler run and what was measured around it."""

    crawler: str
    site: str
    index: int
    argv: list[str]
    started: str = ""
    exit_code: int = 0
    wall_s: float = 0.0
    cpu_user_s: float = 0.0
    cpu_sys_s: float = 0.0
    ru_maxrss_mb: float = 0.0
    sampled_peak_rss_mb: float = 0.0
    server_cpu_s: float | None = None
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pages: int | None = None
    errors: int | None = None
    reported: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None
    urls_file: str | None = None

    @property
    def cpu_s(self) -> float:
        return self.cpu_user_s + self.cpu_sys_s

    @property
    def peak_rss_mb(self) -> float:
        return max(self.ru_maxrss_mb, self.sampled_peak_rss_mb)

    @property
    def pages_per_s(self) -> float | None:
        return self.pages / self.wall_s if self.pages and self.wall_s > 0 else None

    @property
    def cpu_ms_per_page(self) -> float | None:
        return 1000 * self.cpu_s / self.pages if self.pages else None


def ensure_site(seed: str) -> None:
    """Start the docs web if the seed does not answer; fail clearly if it cannot be started."""
    try:
        with urllib.request.urlopen(seed, timeout=3) as resp:
            if resp.status == 200:
                return
    except OSError:
        pass
    if not DOCSWEB_SH.exists():
        sys.exit(f"{seed} does not answer and {DOCSWEB_SH} is missing (set DOCSWEB_SH)")
    subprocess.run(["bash", str(DOCSWEB_SH), "start"], check=True)


def server_processes() -> list[psutil.Process]:
    """nginx (master + workers) and the delay proxy, as far as their pid files say."""
    procs: list[psutil.Process] = []
    for name in ("nginx.pid", "delayproxy.pid"):
        try:
            proc = psutil.Process(int((DOCSWEB_STATE / name).read_text().strip()))
            procs += [proc, *proc.children(recursive=True)]
        except (OSError, ValueError, psutil.Error):
            continue
    return procs


def cpu_of(procs: list[psutil.Process]) -> dict[int, float]:
    out: dict[int, float] = {}
    for proc in procs:
        try:
            t = proc.cpu_times()
            out[proc.pid] = t.user + t.system
        except psutil.Error:
            continue
    return out


class RssSampler(threading.Thread):
    """Samples the summed RSS of a process and all its descendants until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self._pid = pid
        self._done = threading.Event()
        self.peak_bytes = 0

    def run(self) -> None:
        try:
            root = psutil.Process(self._pid)
        except psutil.Error:
            return
        while not self._done.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for proc in tree:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            self._done.wait(SAMPLE_EVERY_S)

    def stop(self) -> None:
        self._done.set()
        self.join()


def measure(run: Run, *, workdir: Path, timeout_s: float) -> None:
    """Run ``run.argv`` to completion and fill in the process measurements."""
    servers = server_processes()
    server_before = cpu_of(servers)
    run.load_before = os.getloadavg()
    run.started = time.strftime("%Y-%m-%d %H:%M:%S")
    stdout_path, stderr_path = workdir / "stdout.txt", workdir / "stderr.txt"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(run.argv, stdout=out, stderr=err, cwd=REPO, start_new_session=True)
        sampler = RssSampler(proc.pid)
        sampler.start()
        killer = threading.Timer(timeout_s, os.killpg, args=(proc.pid, 9))
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        run.wall_s = time.perf_counter() - start
        killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    sampler.stop()
    run.load_after = os.getloadavg()
    server_after = cpu_of(servers)
    if servers:
        run.server_cpu_s = round(
            sum(server_after[p] - server_before.get(p, 0.0) for p in server_after), 3
        )
    run.exit_code = proc.returncode
    run.cpu_user_s, run.cpu_sys_s = usage.ru_utime, usage.ru_stime
    run.ru_maxrss_mb = usage.ru_maxrss / 1024  # Linux: KiB
    run.sampled_peak_rss_mb = sampler.peak_bytes / MB
    stdout = stdout_path.read_text(errors="replace")
    stderr = stderr_path.read_text(errors="replace")
    (OUT / f"log-{run.site}-{run.crawler}-{run.index}.txt").write_text(stderr)
    if run.exit_code != 0:
        run.failure = f"exit {run.exit_code}: " + " | ".join(stderr.strip().splitlines()[-5:])
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            run.reported = json.loads(line)
            break


def run_one(crawler: str, site: str, index: int, timeout_s: float) -> Run:
    seed = SITES[site].seed
    urls_file = OUT / f"urls-{site}-{crawler}-{index}.txt"
    workdir = Path(tempfile.mkdtemp(prefix=f"crawlbench-{crawler}-"))
    try:
        if crawler == "reference":
            argv = [str(VENV_BIN / "python"), str(HERE / "reference_crawler.py"), "--seed", seed]
            argv += ["--concurrency", str(CONCURRENCY), "--dump-urls", str(urls_file)]
        elif crawler == "scrapy":
            argv = [str(VENV_BIN / "scrapy"), "runspider", str(HERE / "scrapy_spider.py")]
            argv += ["-a", f"seed={seed}", "-a", f"dump_urls={urls_file}"]
        else:
            db = workdir / "bench.db"
            argv = TOPICRAWL_CMD.format(bin=VENV_BIN, seed=seed, db=db).split()
        run = Run(crawler=crawler, site=site, index=index, argv=argv)
        print(f"[{site}] {crawler} #{index}: load {os.getloadavg()[0]:.2f} ...", flush=True)
        measure(run, workdir=workdir, timeout_s=timeout_s)
        if crawler == "topicrawl":
            read_topicrawl_db(run, workdir / "bench.db", urls_file)
        else:
            run.pages = run.reported.get("pages")
            run.errors = run.reported.get("errors")
        if urls_file.exists():
            run.urls_file = str(urls_file.relative_to(HERE))
        if run.pages is None and run.failure is None:
            run.failure = "the crawler reported no page count"
        pps = f"{run.pages_per_s:.0f} pages/s" if run.pages_per_s else run.failure
        print(f"    {run.pages} pages, {run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU: {pps}")
        return run
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def read_topicrawl_db(run: Run, db: Path, urls_file: Path) -> None:
    if not db.exists():
        run.failure = run.failure or f"no database was written at {db}"
        return
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            run.pages = int(conn.execute(TOPICRAWL_PAGES_SQL).fetchone()[0])
            urls = sorted(row[0] for row in conn.execute(TOPICRAWL_URLS_SQL))
            statuses = conn.execute(TOPICRAWL_STATUS_SQL).fetchall()
    except sqlite3.Error as exc:
        run.failure = (run.failure or "") + f" reading {db}: {exc}"
        return
    urls_file.write_text("".join(f"{u}\n" for u in urls))
    run.reported["status_counts"] = {str(status): n for status, n in statuses}
    run.errors = sum(n for status, n in statuses if status != 200)
    try:  # the run's own counters, where this version of the schema records them
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(TOPICRAWL_STATS_SQL).fetchone()
        if row and row[0]:
            run.reported["run_stats"] = json.loads(row[0])
    except (sqlite3.Error, json.JSONDecodeError) as exc:
        run.reported["run_stats_error"] = str(exc)
    run.errors = topicrawl_errors(run.reported, default=run.errors)


def topicrawl_errors(reported: dict[str, Any], *, default: int | None) -> int | None:
    """Failed URLs from topicrawl's run stats, counted as the reference counts them."""
    kinds = reported.get("run_stats", {}).get("errors")
    if not isinstance(kinds, dict):
        return default
    # robots-blocked and non-HTML URLs are not errors for the reference either.
    return sum(int(n) for k, n in kinds.items() if k not in NOT_ERRORS)


def compare_urls(runs: list[Run], site: str) -> dict[str, Any]:
    """Diff each crawler's first URL list against the reference's; write the diffs to out/."""
    lists = {
        r.crawler: (HERE / r.urls_file).read_text().splitlines()
        for r in runs
        if r.urls_file and r.index == 1
    }
    if "reference" not in lists:
        return {}
    ref = set(lists["reference"])
    report: dict[str, Any] = {}
    for crawler, urls in lists.items():
        got = set(urls)
        only_ref, only_got = sorted(ref - got), sorted(got - ref)
        report[crawler] = {
            "fetched": len(urls),
            "unique": len(got),
            "duplicate_fetches": len(urls) - len(got),
            "only_in_reference": len(only_ref),
            "only_in_this": len(only_got),
        }
        if crawler != "reference":
            dups = sorted(u for u, n in Counter(urls).items() if n > 1)
            lines = [f"- {u}" for u in only_ref] + [f"+ {u}" for u in only_got]
            lines += [f"twice {u}" for u in dups]
            (OUT / f"urls-diff-{site}-{crawler}.txt").write_text("".join(f"{x}\n" for x in lines))
            report[crawler]["examples"] = lines[:10]
    return report


def fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def best(runs: list[Run], crawler: str) -> Run | None:
    ok = [r for r in runs if r.crawler == crawler and r.pages_per_s]
    return max(ok, key=lambda r: r.pages_per_s or 0.0) if ok else None


def least_cpu(runs: list[Run], crawler: str) -> float | None:
    values = [r.cpu_ms_per_page for r in runs if r.crawler == crawler and r.cpu_ms_per_page]
    return min(values) if values else None


def table(runs: list[Run], site: str) -> str:
    delay = SITES[site].delay_s
    ideal = CONCURRENCY / delay if delay else None
    head = "| crawler | run | pages | errors | wall s | pages/s | CPU s | CPU ms/page"
    head += " | peak RSS MB | load 1m |"
    sep = "|---|---|---|---|---|---|---|---|---|---|"
    if ideal:
        head += " % of ideal |"
        sep += "---|"
    lines = [head, sep]
    for r in runs:
        load = f"{r.load_before[0]:.1f}-{r.load_after[0]:.1f}"
        row = (
            f"| {r.crawler} | {r.index} | {fmt(r.pages)} | {fmt(r.errors)} | {r.wall_s:.1f}"
            f" | {fmt(r.pages_per_s)}"
            f" | {r.cpu_s:.1f} | {fmt(r.cpu_ms_per_page, 2)} | {r.peak_rss_mb:.0f} | {load} |"
        )
        if ideal:
            pct = 100 * r.pages_per_s / ideal if r.pages_per_s else None
            row += f" {fmt(pct)} |"
        if r.failure:
            row += f" FAILED: {r.failure[:200]}"
        lines.append(row)
    top = best(runs, "topicrawl")
    scrapy, ref = best(runs, "scrapy"), best(runs, "reference")
    if top and top.pages_per_s:
        lines.append("")
        parts = [f"topicrawl (best run) {top.pages_per_s:,.0f} pages/s"]
        if scrapy and scrapy.pages_per_s:
            parts.append(f"{top.pages_per_s / scrapy.pages_per_s:.2f}x Scrapy pages/s")
            parts.append(f"RSS {top.peak_rss_mb / scrapy.peak_rss_mb:.2f}x Scrapy's")
        if ref and ref.pages_per_s:
            parts.append(f"{100 * top.pages_per_s / ref.pages_per_s:.0f}% of the reference")
        if ideal:
            parts.append(f"{100 * top.pages_per_s / ideal:.0f}% of the ideal {ideal:.0f} pages/s")
        lines.append("; ".join(parts) + ".")
        # CPU per page barely moves with machine load, unlike wall-clock rates.
        cpu = {c: least_cpu(runs, c) for c in CRAWLERS}
        mine = cpu["topicrawl"]
        if mine is not None:
            listed = ", ".join(f"{c} {v:.2f} ms" for c, v in cpu.items() if v is not None)
            others = {c: v for c, v in cpu.items() if v and c != "topicrawl"}
            ratios = [f"{mine / v:.2f}x the {c}'s" for c, v in others.items()]
            lines.append(
                f"CPU per page (least of the runs): {listed}; topicrawl uses"
                f" {' and '.join(ratios)} CPU per page."
            )
    return "\n".join(lines)


def run_site(site: str, crawlers: list[str], repeat: int, timeout_s: float) -> str:
    ensure_site(SITES[site].seed)
    runs: list[Run] = []
    skip: set[str] = set()
    for index in range(1, repeat + 1):
        for crawler in crawlers:
            if crawler in skip:
                continue
            run = run_one(crawler, site, index, timeout_s)
            runs.append(run)
            if crawler == "topicrawl" and run.pages is None:
                skip.add(crawler)  # a missing or broken CLI fails the same way every time
    if set(crawlers) != set(CRAWLERS) and (OUT / f"results-{site}.json").exists():
        # A partial rerun (--only) keeps the earlier runs of the crawlers it left out.
        kept = [r for r in load_results(site)[0] if r.crawler not in crawlers]
        runs = kept + runs
    urls = compare_urls(runs, site)
    result = {
        "site": site,
        "seed": SITES[site].seed,
        "concurrency": CONCURRENCY,
        "cpus": os.cpu_count(),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        "topicrawl_cmd": TOPICRAWL_CMD,
        "runs": [
            {
                **asdict(r),
                "cpu_s": r.cpu_s,
                "peak_rss_mb": r.peak_rss_mb,
                "pages_per_s": r.pages_per_s,
                "cpu_ms_per_page": r.cpu_ms_per_page,
            }
            for r in runs
        ],
        "url_comparison": urls,
    }
    (OUT / f"results-{site}.json").write_text(json.dumps(result, indent=2) + "\n")
    return report(site, runs, urls)


def as_load(values: Any) -> tuple[float, float, float]:
    one, five, fifteen = values
    return (float(one), float(five), float(fifteen))


def load_results(site: str) -> tuple[list[Run], dict[str, Any]]:
    """Rebuild the runs of an earlier ``out/results-<site>.json`` (for --report-only)."""
    data = json.loads((OUT / f"results-{site}.json").read_text())
    names = {f.name for f in fields(Run)}
    runs = []
    for raw in data["runs"]:
        run = Run(**{k: v for k, v in raw.items() if k in names})
        run.load_before, run.load_after = as_load(run.load_before), as_load(run.load_after)
        if run.crawler == "topicrawl":
            run.errors = topicrawl_errors(run.reported, default=run.errors)
        runs.append(run)
    return runs, data["url_comparison"]


def report(site: str, runs: list[Run], urls: dict[str, Any]) -> str:
    runs = sorted(runs, key=lambda r: (r.index, CRAWLERS.index(r.crawler)))
    md = table(runs, site)
    summary = [f"### {site} ({SITES[site].seed}, concurrency {CONCURRENCY})", "", md, ""]
    for crawler, diff in urls.items():
        if crawler != "reference":
            summary.append(
                f"URLs vs reference, {crawler}: {diff['unique']} unique of {diff['fetched']}"
                f" fetched, {diff['only_in_reference']} only in reference,"
                f" {diff['only_in_this']} only in {crawler}"
                f" (out/urls-diff-{site}-{crawler}.txt)"
            )
    return "\n".join(summary)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(CRAWLERS), help="comma-separated crawlers")
    ap.add_argument("--site", choices=[*SITES, "all"], default="java")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800.0, help="per run, seconds")
    ap.add_argument(
        "--report-only", action="store_true", help="reprint the tables of out/results-*.json"
    )
    args = ap.parse_args()
    crawlers = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = set(crawlers) - set(CRAWLERS)
    if unknown:
        ap.error(f"unknown crawler(s) {sorted(unknown)}; choose from {CRAWLERS}")
    OUT.mkdir(exist_ok=True)
    sites = list(SITES) if args.site == "all" else [args.site]
    if args.report_only:
        reports = [report(site, *load_results(site)) for site in sites]
    else:
        reports = [run_site(site, crawlers, args.repeat, args.timeout) for site in sites]
    print()
    print("\n\n".join(reports))


if __name__ == "__main__":
    main()
