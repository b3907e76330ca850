"""Crawl storage: one SQLAlchemy schema on SQLite or PostgreSQL, migrations, and exports."""

from __future__ import annotations

from topicrawl.storage.export import (
    EXPORT_FIELDS,
    FAILURE_FIELDS,
    ArchiveSource,
    export_csv,
    export_failures_csv,
    export_failures_jsonl,
    export_jsonl,
    export_warc,
)
from topicrawl.storage.migrations import LATEST_VERSION, MIGRATIONS, Migration
from topicrawl.storage.rows import ArchivedPage, StoredRun
from topicrawl.storage.sql import SqlStorage, StorageStats
from topicrawl.storage.target import DatabaseTarget, parse_target

__all__ = [
    "EXPORT_FIELDS",
    "FAILURE_FIELDS",
    "LATEST_VERSION",
    "MIGRATIONS",
    "ArchiveSource",
    "ArchivedPage",
    "DatabaseTarget",
    "Migration",
    "SqlStorage",
    "StorageStats",
    "StoredRun",
    "export_csv",
    "export_failures_csv",
    "export_failures_jsonl",
    "export_jsonl",
    "export_warc",
    "parse_target",
]
