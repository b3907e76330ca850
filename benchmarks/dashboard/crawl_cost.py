"""What the dashboard's data side costs a crawl: full-text triggers, live samples, metrics.

Crawls the Java 17 API docs (``../shared/bench/docsweb.sh``, 127.0.0.11:8080) with
``topicrawl crawl --strategy bfs --concurrency 64 --per-host 64 --delay 0`` as a subprocess,
in round-robin over these variants, and reports the crawl's own pages/s (pages / the run's
recorded seconds, so start-up is left out) with the median of the repeats:

- ``main``: the code before this work (``--main-src``, default /work/main/src): the reference;
- ``default``: this branch as it ships (full-text index and triggers, a sample every 2 s);
- ``no-fts``: the full-text index and its triggers dropped from the fresh database first;
- ``no-samples``: ``TOPICRAWL_STORAGE__SAMPLES_INTERVAL=0``;
- ``metrics``: ``--metrics-port`` with this script scraping it every second;
- ``focused`` / ``shark`` (topic :data:`docs_crawl.TOPIC`): each page's link priorities kept
  (``pages.link_scores``, the default), and ``focused-no-scores`` / ``shark-no-scores`` the
  same crawl with ``TOPICRAWL_STORAGE__LINK_SCORES=false``: what keeping them costs.

    python benchmarks/dashboard/crawl_cost.py --repeat 3 --max-pages 3000
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_crawl import free_port, make_schema, run_crawl

VARIANTS = ("main", "default", "no-fts", "no-samples", "metrics")
SCORING = ("focused", "focused-no-scores", "shark", "shark-no-scores")


def _prepare_without_fts(db: Path) -> None:
    """Create the database (migrations applied) and drop its full-text index."""
    make_schema(db)
    connection = sqlite3.connect(db)
    try:
        for trigger in ("insert", "delete", "update"):
            connection.execute(f"DROP TRIGGER pages_fts_{trigger}")
        connection.execute("DROP TABLE pages_fts")
        connection.commit()
    finally:
        connection.close()


def _scrape_every_second(port: int, stop: threading.Event, scrapes: list[int]) -> None:
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                r.read()
            scrapes[0] += 1
        except OSError:
            continue


def crawl(variant: str, *, max_pages: int, main_src: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="obs-crawl-") as tmp:
        db = Path(tmp) / "crawl.db"
        env = {"TOPICRAWL_STORAGE__SAMPLES_INTERVAL": "0"} if variant == "no-samples" else {}
        if variant.endswith("-no-scores"):
            env["TOPICRAWL_STORAGE__LINK_SCORES"] = "false"
        strategy = variant.split("-", maxsplit=1)[0] if variant in SCORING else "bfs"
        if variant == "no-fts":
            _prepare_without_fts(db)
        extra: list[str] = []
        stop = threading.Event()
        scrapes = [0]
        scraper = None
        if variant == "metrics":
            port = free_port()
            extra = ["--metrics-port", str(port)]
            scraper = threading.Thread(target=_scrape_every_second, args=(port, stop, scrapes))
            scraper.start()
        try:
            if variant == "main":
                run = run_crawl(db, max_pages, src=main_src, env=env, extra=extra)
            else:
                run = run_crawl(db, max_pages, env=env, extra=extra, strategy=strategy)
        finally:
            stop.set()
            if scraper is not None:
                scraper.join()
        samples = 0
        scores_bytes = 0
        if variant != "main":
            with sqlite3.connect(db) as connection:
                samples = connection.execute("SELECT count(*) FROM run_samples").fetchone()[0]
                scores_bytes = connection.execute(
                    "SELECT coalesce(sum(length(link_scores)), 0) FROM pages"
                ).fetchone()[0]
        return {
            "pages": run.pages,
            "seconds": run.seconds,
            "pages_per_s": run.rate,
            "wall": run.wall,
            "load": run.load[0],
            "samples": samples,
            "scrapes": scrapes[0],
            "scores_bytes": scores_bytes,
            "cpu_ms_per_page": 1000 * run.cpu / max(1, run.pages),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-pages", type=int, default=3000)
    parser.add_argument("--main-src", type=Path, default=Path("/work/main/src"))
    parser.add_argument("--only", default=",".join(VARIANTS), help=f"also: {', '.join(SCORING)}")
    parser.add_argument("--out", type=Path, default=None, help="JSON file of every run")
    args = parser.parse_args()
    variants = [v for v in args.only.split(",") if v]
    results: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for round_number in range(args.repeat):
        for variant in variants:
            result = crawl(variant, max_pages=args.max_pages, main_src=args.main_src)
            results[variant].append(result)
            print(
                f"round {round_number + 1} {variant:10s} {result['pages']:.0f} pages "
                f"{result['pages_per_s']:6.1f} pages/s  load {result['load']:.1f}  "
                f"samples {result['samples']:.0f} scrapes {result['scrapes']:.0f}  "
                f"link_scores {result['scores_bytes'] / max(1, result['pages']):.0f} B/page  "
                f"CPU {result['cpu_ms_per_page']:.2f} ms/page",
                flush=True,
            )
    print()
    print("| variant | pages/s (each run) | median | vs reference | CPU ms/page (median) |")
    print("|---|---|---|---|---|")
    medians = {
        variant: statistics.median(r["pages_per_s"] for r in runs)
        for variant, runs in results.items()
    }
    for variant, runs in results.items():
        # A scoring variant keeping link scores is compared with the same crawl without them.
        reference = medians.get(f"{variant}-no-scores" if variant in SCORING else "main")
        ratio = f"{medians[variant] / reference:.0%}" if reference else "-"
        listed = ", ".join(f"{r['pages_per_s']:.0f}" for r in runs)
        cpu = statistics.median(r["cpu_ms_per_page"] for r in runs)
        print(f"| {variant} | {listed} | {medians[variant]:.0f} | {ratio} | {cpu:.2f} |")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
