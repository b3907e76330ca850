"""topicrawl: a topic-focused web crawler.

From code::

    import asyncio
    from topicrawl import CrawlSettings, run_crawl, open_storage

    settings = CrawlSettings(seeds=["https://example.org/"], max_pages=100,
                             storage={"url": "example.db"})
    report = asyncio.run(run_crawl(settings))
    print(report.stats.pages, "pages")

    async def titles() -> list[str]:
        async with open_storage("example.db") as storage:
            return [page.title async for page in storage.iter_pages()]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topicrawl.core.config import CrawlSettings, load_settings
    from topicrawl.core.errors import ConfigError, FetchError, StorageError, TopicrawlError
    from topicrawl.core.models import CrawlStats, Page, Request
    from topicrawl.engine.build import CrawlReport, open_crawl, open_storage, run_crawl

# Names resolve on first use: a parse worker process or a part's own tests import
# `topicrawl.<part>` without paying for the settings (pydantic) or the engine (everything).
_LAZY = {
    "CrawlSettings": "topicrawl.core.config",
    "load_settings": "topicrawl.core.config",
    "ConfigError": "topicrawl.core.errors",
    "FetchError": "topicrawl.core.errors",
    "StorageError": "topicrawl.core.errors",
    "TopicrawlError": "topicrawl.core.errors",
    "CrawlStats": "topicrawl.core.models",
    "Page": "topicrawl.core.models",
    "Request": "topicrawl.core.models",
    "CrawlReport": "topicrawl.engine.build",
    "open_crawl": "topicrawl.engine.build",
    "open_storage": "topicrawl.engine.build",
    "run_crawl": "topicrawl.engine.build",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'topicrawl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "ConfigError",
    "CrawlReport",
    "CrawlSettings",
    "CrawlStats",
    "FetchError",
    "Page",
    "Request",
    "StorageError",
    "TopicrawlError",
    "load_settings",
    "open_crawl",
    "open_storage",
    "run_crawl",
]
__version__ = "0.1.0"
