"""The composition root and the crawl loop."""

from __future__ import annotations

from topicrawl.engine.build import CrawlReport, open_crawl, open_storage, run_crawl, sqlite_path
from topicrawl.engine.crawl import CrawlDelays, Crawler, CrawlLimits, HostPolicy

__all__ = [
    "CrawlDelays",
    "CrawlLimits",
    "CrawlReport",
    "Crawler",
    "HostPolicy",
    "open_crawl",
    "open_storage",
    "run_crawl",
    "sqlite_path",
]
