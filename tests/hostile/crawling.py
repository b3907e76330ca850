"""Runs a whole crawl of a hostile site through the real engine and keeps what it left.

The crawl runs in its own event loop (the site serves from a thread of its own) under a
hang guard; the process's resident memory is sampled meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import ErrorKind, FetchFailure
from topicrawl.engine import open_storage, run_crawl

HANG_GUARD = 240.0  # seconds: a hang guard, not a speed assertion
TOPIC = "java thread concurrency"


@dataclass
class CrawlOutcome:
    """What one crawl left: stored bodies' digests by final URL, failures, and how it ran."""

    strategy: str
    hung: bool
    stored: dict[str, str] = field(default_factory=dict)  # final URL -> SHA-256 of the body
    stored_urls: dict[str, str] = field(default_factory=dict)  # requested URL -> final URL
    depths: dict[str, int] = field(default_factory=dict)
    failures: list[FetchFailure] = field(default_factory=list)
    rss_growth: int = 0  # bytes, peak resident memory over the one before the crawl

    def failure_kinds(self, url: str) -> set[ErrorKind]:
        return {f.kind for f in self.failures if f.url == url}


def hostile_settings(seeds: list[str], db: Path, strategy: str, **extra: Any) -> CrawlSettings:
    options: dict[str, Any] = {
        "seeds": tuple(seeds),
        "topics": (TOPIC,),
        "strategy": strategy,
        "concurrency": 8,
        "parse_workers": 1,  # as crawls run by default: parsing apart, with a time limit
        # The delay lets bytes a server sends after a response arrive while its connection
        # idles: bytes that come after the next request went out on it are, by HTTP/1.1,
        # that request's answer, and no client can tell them apart.
        "politeness": {"per_host": 8, "robots_error_ttl": 5.0, "delay": 0.2},
        "scope": {"allowed_domains": ("127.0.0.1",), "max_depth": 3},
        "fetch": {
            # Far over what a plain page takes even at a load of 15 (2 s was not: a plain page
            # timed out with the suite in 3 processes); the stalls and drips last minutes.
            "timeout": 5.0,
            "connect_timeout": 2.0,
            "retries": 0,
            "backoff_base": 0.01,
            "max_body_bytes": 16_000_000,
        },
        "frontier": {"kind": "sqlite"},
        "storage": {"url": str(db), "flush_interval": 0.2, "keep_body": True},
    }
    options.update(extra)
    return CrawlSettings(**options)


class _PeakRss:
    """Samples the RSS of the process and its children (parse workers) every 50 ms in a
    thread; keeps the peak of their sum."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        self.start = self.peak = self._rss()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.05):
            self.peak = max(self.peak, self._rss())

    def _rss(self) -> int:
        total = self._process.memory_info().rss
        for child in self._process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return total

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


def crawl(settings: CrawlSettings, *, guard: float = HANG_GUARD) -> CrawlOutcome:
    """Run the crawl to its end (or the hang guard, in seconds) and read back its database."""
    hung = False
    with _PeakRss() as rss:
        try:
            asyncio.run(asyncio.wait_for(run_crawl(settings), guard))
        except TimeoutError:
            hung = True
    outcome = CrawlOutcome(strategy=settings.strategy, hung=hung, rss_growth=rss.peak - rss.start)
    asyncio.run(_read_back(settings.storage.url, outcome))
    return outcome


async def _read_back(url: str, outcome: CrawlOutcome) -> None:
    async with open_storage(url) as storage:
        async for archived in storage.iter_archived():
            page = archived.page
            body = archived.body if archived.body is not None else b""
            outcome.stored[page.final_url] = hashlib.sha256(body).hexdigest()
            outcome.stored_urls[page.url] = page.final_url
            outcome.depths[page.url] = page.depth
        outcome.failures = [f async for f in storage.iter_failures()]
