"""Models, protocols, settings and errors shared by every part of topicrawl."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topicrawl.core.errors import ConfigError, FetchError, StorageError, TopicrawlError
from topicrawl.core.models import (
    CrawlStats,
    ErrorKind,
    FetchFailure,
    Lease,
    Link,
    Page,
    ParsedPage,
    Request,
    Response,
    StrategyResult,
)
from topicrawl.core.protocols import Fetcher, Frontier, Source, Storage, Strategy

if TYPE_CHECKING:
    from topicrawl.core.config import CrawlSettings, load_settings


def __getattr__(name: str) -> object:
    # The settings tree needs pydantic (~25 MB); processes that never read settings (parse
    # workers) skip it.
    if name in {"CrawlSettings", "load_settings"}:
        from topicrawl.core import config  # noqa: PLC0415

        return getattr(config, name)
    raise AttributeError(f"module 'topicrawl.core' has no attribute {name!r}")


__all__ = [
    "ConfigError",
    "CrawlSettings",
    "CrawlStats",
    "ErrorKind",
    "FetchError",
    "FetchFailure",
    "Fetcher",
    "Frontier",
    "Lease",
    "Link",
    "Page",
    "ParsedPage",
    "Request",
    "Response",
    "Source",
    "Storage",
    "StorageError",
    "Strategy",
    "StrategyResult",
    "TopicrawlError",
    "load_settings",
]
