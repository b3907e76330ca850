"""What the dashboard's data side costs a crawl: full-text triggers, live samples, metrics.

Crawls the Java 17 API docs (``../shared/bench/docsweb.sh``, 127.0.0.11:8080) with
``topicrawl crawl --strategy bfs --concurrency 64 --per-host 64 --delay 0`` as a subprocess,
in round-robin over these variants, and reports the crawl's own pages/s (pages / the run's
recorded seconds, so start-up is left out) with the median of the repeats:

- ``main``: the code before this work (``--main-src``, default /work/main/src): the reference;
- ``default``: this branch as it ships (full-text index and triggers, a sample every 2 s);
- ``no-fts``: the full-text index and its triggers dropped from the fresh database first;
- ``no-samples``: ``TOPICRAWL_STORAGE__SAMPLES_INTERVAL=0``;
- ``metrics``: ``--metrics-port`` with this script scraping it every second.

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
                run = run_crawl(db, max_pages, env=env, extra=extra)
        finally:
            stop.set()
            if scraper is not None:
                scraper.join()
        samples = 0
        if variant != "main":
            with sqlite3.connect(db) as connection:
                samples = connection.execute("SELECT count(*) FROM run_samples").fetchone()[0]
        return {
            "pages": run.pages,
            "seconds": run.seconds,
            "pages_per_s": run.rate,
            "wall": run.wall,
            "load": run.load[0],
            "samples": samples,
            "scrapes": scrapes[0],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-pages", type=int, default=3000)
    parser.add_argument("--main-src", type=Path, default=Path("/work/main/src"))
    parser.add_argument("--only", default=",".join(VARIANTS))
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
                f"samples {result['samples']:.0f} scrapes {result['scrapes']:.0f}",
                flush=True,
            )
    print()
    print("| variant | pages/s (each run) | median | vs main |")
    print("|---|---|---|---|")
    reference = (
        statistics.median(r["pages_per_s"] for r in results.get("main", []))
        if ("main" in results)
        else None
    )
    for variant, runs in results.items():
        rates = [r["pages_per_s"] for r in runs]
        median = statistics.median(rates)
        ratio = f"{median / reference:.0%}" if reference else "-"
        listed = ", ".join(f"{rate:.0f}" for rate in rates)
        print(f"| {variant} | {listed} | {median:.0f} | {ratio} |")
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
