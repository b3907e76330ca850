"""A worker's progress line, every few seconds of a distributed crawl (like ``crawl``'s)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from topicrawl.core.errors import FrontierError

__all__ = ["WorkerProgress", "progress_line", "report_progress"]


@dataclass(frozen=True, slots=True)
class WorkerProgress:
    """Where a worker and its crawl stand.

    ``pages``, ``errors``: this worker's; ``crawl_pages``: the pages the whole crawl stored
    (reserved against its limit ``max_pages``, 0: none); ``queued``, ``in_flight``: the
    crawl's; ``pages_per_second``: this worker's since the previous line.
    """

    node: str
    pages: int
    errors: int
    crawl_pages: int
    max_pages: int
    queued: int
    in_flight: int
    pages_per_second: float = 0.0


def progress_line(progress: WorkerProgress) -> str:
    """The line a worker prints, e.g. ``worker w1: 120 pages, 12.5 pages/s, 3 errors;
    crawl: 340 of 1,000 pages, 4,210 queued, 8 in flight``."""
    limit = f" of {progress.max_pages:,}" if progress.max_pages else ""
    return (
        f"worker {progress.node}: {progress.pages:,} pages, "
        f"{progress.pages_per_second:.1f} pages/s, {progress.errors:,} errors; "
        f"crawl: {progress.crawl_pages:,}{limit} pages, {progress.queued:,} queued, "
        f"{progress.in_flight:,} in flight"
    )


async def report_progress(
    *,
    stop: asyncio.Event,
    every: float,
    read: Callable[[], Awaitable[WorkerProgress]],
    show: Callable[[WorkerProgress], None],
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Show the worker's progress every ``every`` seconds until ``stop``.

    A reading that fails (Redis away) is skipped: the worker's own retries report it.
    """
    last_at, last_pages = clock(), 0
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        if stop.is_set():
            return
        try:
            now = await read()
        except FrontierError:
            continue
        at = clock()
        rate = (now.pages - last_pages) / max(at - last_at, 1e-9)
        last_at, last_pages = at, now.pages
        show(dataclasses.replace(now, pages_per_second=rate))
