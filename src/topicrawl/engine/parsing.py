"""Parsing fetched HTML off the event loop, in worker processes when the machine has cores.

HTML parsing is the largest CPU cost of a fast crawl (about 2 ms a page of real documentation
against well under 1 ms for everything else), so with a spare core it runs in a process pool
and the event loop keeps fetching. A worker that dies (for example on a page that exhausts
memory) breaks the pool; the pool is then rebuilt and only that page fails.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from topicrawl.core.models import ParsedPage, Response
from topicrawl.parse.content import content_hash
from topicrawl.parse.html import parse_html

__all__ = ["PageParser", "default_parse_workers", "parse_document"]

log = logging.getLogger(__name__)

ParsedDocument = tuple[ParsedPage, str | None]


def parse_document(html: str, url: str) -> ParsedDocument:
    """Parse one HTML document and hash its text (runs in a worker process)."""
    parsed = parse_html(html, url=url)
    return parsed, content_hash(parsed.text) if parsed.text else None


def default_parse_workers() -> int:
    """One worker per core beyond the first (the event loop's), at most 4; 0 on one core."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(0, min((cores or 1) - 1, 4))


class PageParser:
    """Parses responses inline (``workers=0``) or in a pool of worker processes.

    Args:
        workers: worker processes; 0 parses on the event loop's thread.
    """

    def __init__(self, *, workers: int) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None

    async def __call__(self, response: Response) -> ParsedDocument:
        html = response.text or ""
        if self._workers == 0:
            return parse_document(html, response.final_url)
        if self._pool is None:
            # "spawn": a forked worker would inherit the crawl's open files and locks (the
            # frontier's lock file) and keep them after the crawl itself was killed.
            self._pool = ProcessPoolExecutor(
                max_workers=self._workers, mp_context=multiprocessing.get_context("spawn")
            )
        pool = self._pool
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(pool, parse_document, html, response.final_url)
        except BrokenProcessPool as exc:
            # Every page in flight in the broken pool fails; the first to notice rebuilds it.
            if self._pool is pool:
                log.warning("a parse worker died (at %s); restarting the pool", response.final_url)
                pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            raise ValueError(f"parse worker died while this page was parsed: {exc}") from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
