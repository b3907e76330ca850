"""Pages/s second by second through a long crawl, with where the event loop was each second.

    python benchmarks/crawl/scale_trace.py OUT.json crawl --seeds-file SEEDS --max-pages 100000 \
        --db /tmp/scale.db --quiet          # any `topicrawl crawl` arguments after OUT.json
    python benchmarks/crawl/scale_trace.py --dips OUT.json   # summarise a trace

Runs ``topicrawl crawl`` in this process. A thread samples the main thread's stack every
10 ms and writes, for each second: the pages stored so far (from the progress callback), URLs
queued, seconds spent in the garbage collector, the longest gap between two samples (a gap
means the thread could not get the GIL or the CPU), and the commonest innermost frames. GC
passes over 50 ms are listed too. ``--dips`` prints the median 10-second rate and every
10-second window under a quarter of it (issue #26 item 7: a stall of ~3 pages/s for 40 s).

The web used for issue #26: ``python -m topicrawl.demoweb --hosts 200 --pages-per-host 500
--base-address 127.0.3.1 --port 8471`` (seeds: the 200 hosts' home pages) or the lighter
``benchmarks/distributed/latency_web.py --hosts 200 --pages 500 --low 0 --high 0.01``.
"""

from __future__ import annotations

import collections
import gc
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

SAMPLE_EVERY_S = 0.01


class Trace:
    """The per-second record a sampler thread writes while the crawl runs."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.pages = 0
        self.queued = 0
        self.seconds: list[dict[str, Any]] = []
        self.slow_gc: list[tuple[float, int, float]] = []
        self._gc_total = 0.0
        self._gc_start = 0.0
        self._done = threading.Event()
        self._main = threading.get_ident()

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
            return
        took = time.perf_counter() - self._gc_start
        self._gc_total += took
        if took > 0.05:
            self.slow_gc.append((time.time(), info["generation"], round(took, 3)))

    def sample(self) -> None:
        start = last = time.time()
        next_second = start + 1
        frames: collections.Counter[str] = collections.Counter()
        longest = 0.0
        while not self._done.is_set():
            time.sleep(SAMPLE_EVERY_S)
            now = time.time()
            longest, last = max(longest, now - last), now
            frame = sys._current_frames().get(self._main)
            if frame is not None:
                code = frame.f_code
                frames[f"{Path(code.co_filename).name}:{code.co_name}:{frame.f_lineno}"] += 1
            if now >= next_second:
                self.seconds.append(
                    {
                        "t": round(now - start, 1),
                        "pages": self.pages,
                        "queued": self.queued,
                        "gc_s": round(self._gc_total, 3),
                        "longest_gap_s": round(longest, 3),
                        "top": frames.most_common(4),
                    }
                )
                frames, longest = collections.Counter(), 0.0
                next_second += 1
                self.write()

    def write(self) -> None:
        self.out.write_text(json.dumps({"seconds": self.seconds, "slow_gc": self.slow_gc}))

    def stop(self) -> None:
        self._done.set()


def run(out: Path, argv: list[str]) -> None:
    from topicrawl.cli import progress  # noqa: PLC0415 - after the sampler is set up
    from topicrawl.cli.app import main  # noqa: PLC0415

    trace = Trace(out)
    update = progress.CrawlProgress.update

    def counted(self: progress.CrawlProgress, stats: Any) -> None:
        trace.pages, trace.queued = stats.pages, stats.queued
        update(self, stats)

    progress.CrawlProgress.update = counted  # type: ignore[method-assign]
    gc.callbacks.append(trace.on_gc)
    sampler = threading.Thread(target=trace.sample, daemon=True)
    sampler.start()
    sys.argv = ["topicrawl", *argv]
    try:
        main()
    finally:
        trace.stop()
        sampler.join()
        trace.write()


def dips(out: Path) -> None:
    seconds = json.loads(out.read_text())["seconds"]
    windows = [
        (b["t"], b["pages"], (b["pages"] - a["pages"]) / (b["t"] - a["t"]))
        for a, b in zip(seconds, seconds[10:], strict=False)
    ]
    median = statistics.median(rate for _, _, rate in windows)
    low = [w for w in windows if w[2] < median / 4]
    print(
        f"{len(windows)} windows of 10 s; median {median:.1f} pages/s; lowest "
        f"{min(w[2] for w in windows):.1f}; under a quarter of the median: {len(low)}"
    )
    for t, pages, rate in low:
        print(f"  t={t:.0f}s pages={pages} {rate:.1f} pages/s")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--dips":
        dips(Path(sys.argv[2]))
    elif len(sys.argv) >= 3:
        run(Path(sys.argv[1]), sys.argv[2:])
    else:
        sys.exit(__doc__)
