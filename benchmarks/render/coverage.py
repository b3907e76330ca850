"""Coverage with --render auto against never, and renders that were not needed.

1. The demo web (seed 7, 3 hosts x 40 articles) with its third host served as a single-page
   app: a breadth-first crawl from every host's home page, no page limit, once with
   ``render`` never and once auto. Reported: pages stored per host, pages of the app host
   reached and those stored with their content (text and links: a shell has neither),
   pages rendered, and renders on the two ordinary hosts (none needed).
2. The Java 17 API docs (127.0.0.11:8080, which need no rendering): a crawl of ``--java``
   pages with ``render`` auto; every render there is a false render (issue: at most 5 %).

    nice -n 10 .venv/bin/python benchmarks/render/coverage.py --java 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.engine import open_storage, run_crawl

OUT = Path(__file__).parent / "results"


async def _hosts_of(db: Path) -> tuple[Counter[str], Counter[str]]:
    """Pages stored per host, and those with their content (text and links: a shell has
    neither)."""
    stored: Counter[str] = Counter()
    content: Counter[str] = Counter()
    async with open_storage(str(db)) as storage:
        async for page in storage.iter_pages(with_links=True):
            host = page.url.split("/")[2].split(":")[0]
            stored[host] += 1
            if page.text.strip() and page.links:
                content[host] += 1
    return stored, content


async def demo(workdir: Path) -> dict[str, object]:
    web = DemoWeb.generate(seed=7, hosts=3, pages_per_host=40)
    spa = web.hosts[2].address
    out: dict[str, object] = {"app_host": spa}
    with DemoWebServer(web, spa_hosts=[spa]).run_in_thread() as server:
        bases = server.web.bases()
        truth = sum(1 for p in server.web.pages if p.host == spa and p.is_document)
        out["app_host_documents"] = truth
        for mode in ("never", "auto"):
            db = workdir / f"demo-{mode}.db"
            settings = CrawlSettings(
                seeds=tuple(bases.values()),
                strategy="bfs",
                max_pages=0,
                concurrency=8,
                render=mode,  # type: ignore[arg-type]
                politeness={"per_host": 4},  # type: ignore[arg-type]
                scope={"allowed_domains": tuple(bases), "max_depth": 8},  # type: ignore[arg-type]
                storage={"url": str(db)},  # type: ignore[arg-type]
            )
            started = time.perf_counter()
            report = await run_crawl(settings)
            hosts, content = await _hosts_of(db)
            out[mode] = {
                "pages": report.stats.pages,
                "per_host": dict(hosts),
                "app_host_pages": hosts[spa],
                "app_host_pages_with_content": content[spa],
                "with_content_per_host": dict(content),
                "rendered": report.render.get("pages/rendered", 0),
                "not_rendered": report.render.get("pages/not_rendered", 0),
                "render_failed": report.render.get("pages/render_failed", 0),
                "seconds": time.perf_counter() - started,
                "render_counts": dict(report.render),
                "load": os.getloadavg()[0],
            }
            print(mode, json.dumps(out[mode]), flush=True)
    return out


async def java(workdir: Path, pages: int) -> dict[str, object]:
    db = workdir / "java.db"
    settings = CrawlSettings(
        seeds=("http://127.0.0.11:8080/index.html",),
        strategy="bfs",
        max_pages=pages,
        concurrency=16,
        render="auto",
        storage={"url": str(db)},  # type: ignore[arg-type]
    )
    started = time.perf_counter()
    report = await run_crawl(settings)
    counts = dict(report.render)
    rendered = counts.get("pages/rendered", 0) + counts.get("pages/render_failed", 0)
    judged = rendered + counts.get("pages/not_rendered", 0)
    result = {
        "pages": report.stats.pages,
        "judged": judged,
        "rendered": rendered,
        "false_render_rate": rendered / judged if judged else None,
        "render_counts": counts,
        "seconds": time.perf_counter() - started,
        "load": os.getloadavg()[0],
    }
    print("java", json.dumps(result), flush=True)
    return result


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--java", type=int, default=2000, help="Java docs pages (0: skip)")
    parser.add_argument("--skip-demo", action="store_true")
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_demo:
            results["demo"] = await demo(Path(tmp))
        if args.java:
            results["java"] = await java(Path(tmp), args.java)
    OUT.mkdir(exist_ok=True)
    name = "coverage.json" if not args.skip_demo and args.java else "coverage-part.json"
    (OUT / name).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
