"""Render cost: pages/s and memory of the browser pool over many renders of demo-web pages.

The demo web (seed 7, 3 hosts, 120 articles each) is served with its third host as a
single-page app; every render is one of that host's documents (the script shell as the
crawl fetched it), rendered by the pool: its script (from the pool's cache after the first
time) and its page data fetched from the demo web. Every ``--every`` renders the script
records pages/s of that window, the CPU seconds a render cost (this process and every
process under it: Playwright's driver, the browser and its renderers, ended ones included),
and the memory of the current browser's processes (RSS summed over the browser and its
children, and PSS, which counts shared pages once), then writes ``results/cost.json``. The
pool's settings are its defaults unless given (``--gc-every 0`` turns its garbage
collections off; ``--recycle-mb`` recycles by memory).

The same script measures an older pool when run with that code's ``src`` on ``PYTHONPATH``
(give it only the options that code knows), side by side in the same run:

    nice -n 10 .venv/bin/python benchmarks/render/cost.py --renders 5000
    PYTHONPATH=/path/to/old/src nice -n 10 .venv/bin/python benchmarks/render/cost.py \
        --renders 5000 --out cost-reference.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import statistics
import threading
import time
from pathlib import Path

import aiohttp
import psutil

from topicrawl.core.config import BrowserSettings
from topicrawl.core.errors import PermanentFetchError, RenderFailed
from topicrawl.demoweb import DemoWeb, DemoWebServer, Kind
from topicrawl.render import BrowserPool, Fetched

OUT = Path(__file__).parent / "results"


def _pss(pid: int | None) -> int:
    if pid is None:
        return 0
    total = 0
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        for member in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += member.memory_full_info().pss
    return total


class _CpuClock:
    """CPU time of this process and every process under it, ended ones included.

    A process that ended and was waited for is in its parent's children times, but a
    replaced browser is killed with its renderers, whose parent dies with them: their time
    would be lost. So every descendant's own times are sampled each ``every`` seconds (in a
    thread) and the last sample of each kept; at most one interval of a killed process is
    missed.
    """

    def __init__(self, every: float = 0.5) -> None:
        self._every = every
        self._last: dict[tuple[int, float], float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _CpuClock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.sample()

    def sample(self) -> None:
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                key = (child.pid, child.create_time())
                times = child.cpu_times()
                with self._lock:
                    self._last[key] = times.user + times.system

    def seconds(self) -> float:
        """CPU seconds so far (samples first)."""
        self.sample()
        me = psutil.Process().cpu_times()
        with self._lock:
            return me.user + me.system + sum(self._last.values())


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--renders", type=int, default=5000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--pages", type=int, default=4, help="pages rendered at once")
    parser.add_argument("--recycle-after", type=int, default=None)
    parser.add_argument("--recycle-mb", type=int, default=None, help="recycle by memory (PSS)")
    parser.add_argument("--gc-every", type=int, default=None, help="0: the old pool (no GC)")
    parser.add_argument("--settle", type=float, default=None)
    parser.add_argument("--out", default="cost.json")
    args = parser.parse_args()
    web = DemoWeb.generate(seed=7, hosts=3, pages_per_host=120)
    spa = web.hosts[2].address
    server = DemoWebServer(web, spa_hosts=[spa])
    options: dict[str, object] = {"pages": args.pages}
    for name in ("recycle_after", "recycle_mb", "gc_every", "settle"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    settings = BrowserSettings(**options)  # type: ignore[arg-type]
    with server.run_in_thread():
        bound = server.web
        pages = [
            p
            for p in bound.pages
            if p.host == spa and p.kind in (Kind.ARTICLE, Kind.SECTION, Kind.HOME)
        ]
        urls = [bound.url_of(p) for p in pages]
        async with aiohttp.ClientSession() as session:
            shells = {}
            for url in urls:
                async with session.get(url) as response:
                    shells[url] = await response.read()

            async def fetch(url: str, _page: str, max_bytes: int) -> Fetched:
                async with session.get(url) as response:
                    body = await response.read()
                if len(body) > max_bytes:
                    raise PermanentFetchError(url, "too large")
                return Fetched(response.status, response.content_type, body)

            pool = BrowserPool(settings=settings, fetch=fetch, user_agent="topicrawl-bench")
            windows = []
            failed = 0
            links_seen = 0
            with _CpuClock() as clock:
                async with pool:
                    queue = asyncio.Queue[str]()
                    for i in range(args.renders):
                        queue.put_nowait(urls[i % len(urls)])
                    done = 0
                    window_start = time.perf_counter()
                    started = window_start
                    cpu_start = cpu_window = clock.seconds()
                    lock = asyncio.Lock()

                    async def worker() -> None:
                        nonlocal done, failed, links_seen, window_start, cpu_window
                        while not queue.empty():
                            url = queue.get_nowait()
                            try:
                                rendered = await pool.render(url, shells[url])
                                links_seen += rendered.html.count("<a ")
                            except RenderFailed:
                                failed += 1
                            async with lock:
                                done += 1
                                if done % args.every == 0:
                                    now, cpu = time.perf_counter(), clock.seconds()
                                    window = {
                                        "renders": done,
                                        "pages_per_s": args.every / (now - window_start),
                                        "cpu_s_per_render": (cpu - cpu_window) / args.every,
                                        "rss_mb": pool.rss() / 1e6,
                                        "pss_mb": _pss(pool.browser_pid()) / 1e6,
                                        "python_rss_mb": psutil.Process().memory_info().rss / 1e6,
                                        "launches": pool.launches,
                                        "load": os.getloadavg()[0],
                                        "seconds": now - started,
                                    }
                                    windows.append(window)
                                    print(json.dumps(window), flush=True)
                                    # Kept as it goes: a run cut short still has its windows.
                                    OUT.mkdir(exist_ok=True)
                                    partial = {
                                        "partial": True,
                                        "pages": args.pages,
                                        "windows": windows,
                                    }
                                    (OUT / args.out).write_text(json.dumps(partial, indent=1))
                                    window_start, cpu_window = time.perf_counter(), cpu

                    await asyncio.gather(*(worker() for _ in range(args.pages)))
                    total = time.perf_counter() - started
                    cpu_total = clock.seconds() - cpu_start
            warm = [w for w in windows if w["renders"] > max(500, args.renders // 10)]
            summary = {
                "renders": args.renders,
                "failed": failed,
                "links_per_render": links_seen / max(args.renders - failed, 1),
                "seconds": total,
                "pages_per_s": args.renders / total,
                "cpu_s_per_render": cpu_total / args.renders,
                "pages": args.pages,
                "recycle_after": settings.recycle_after,
                "recycle_mb": getattr(settings, "recycle_mb", None),  # None: the old pool
                "gc_every": getattr(settings, "gc_every", None),
                "settle": settings.settle,
                "pool_source": inspect.getfile(BrowserPool),
                "counts": dict(pool.counts),
                "windows": windows,
            }
            if warm:
                # A window that ends while the next browser starts reads 0: left out.
                pss = [w["pss_mb"] for w in warm if w["pss_mb"]] or [0.0]
                summary["pss_after_warmup_mb"] = {
                    "mean": statistics.mean(pss),
                    "min": min(pss),
                    "max": max(pss),
                    "first_half_mean": statistics.mean(pss[: len(pss) // 2 or 1]),
                    "second_half_mean": statistics.mean(pss[len(pss) // 2 :]),
                }
            OUT.mkdir(exist_ok=True)
            (OUT / args.out).write_text(json.dumps(summary, indent=1))
            print(json.dumps({k: v for k, v in summary.items() if k != "windows"}, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
