"""Models, protocols, settings and errors shared by every part of topicrawl."""

from __future__ import annotations

from topicrawl.core.config import CrawlSettings, load_settings
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
