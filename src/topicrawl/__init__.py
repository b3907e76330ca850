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

from topicrawl.core import (
    ConfigError,
    CrawlSettings,
    CrawlStats,
    FetchError,
    Page,
    Request,
    StorageError,
    TopicrawlError,
    load_settings,
)

_ENGINE_NAMES = frozenset({"CrawlReport", "open_crawl", "open_storage", "run_crawl"})


def __getattr__(name: str) -> object:
    # The engine pulls in every part of the crawler; import it only when asked for, so that
    # `import topicrawl.core` (and every part's own tests) stays light.
    if name in _ENGINE_NAMES:
        from topicrawl import engine  # noqa: PLC0415

        return getattr(engine, name)
    raise AttributeError(f"module 'topicrawl' has no attribute {name!r}")


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
