"""The topic crawlers' persistent work queue: one SQLite table of URLs per topic, with leases.

A URL is ``queued`` until a crawler process takes it (``leased``, its attempt count raised),
then ``done`` once the process answered (a fetch error is an answer too) or ``failed`` when
processes died on it ``max_attempts`` times. Leases live only as long as the supervisor that
handed them out, so opening the queue puts every ``leased`` URL back in the queue: a crash of
the whole crawl loses nothing.

The supervisor is the only writer and each statement touches a few rows of an indexed table,
so the queue is used synchronously from the event loop (well under a millisecond a call).
"""

from __future__ import annotations

import enum
import sqlite3
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from topicrawl.core.errors import DatabaseCorrupt, DatabaseLocked, StorageError
from topicrawl.parse.urls import InvalidUrl, canonicalize

__all__ = ["LeasedUrl", "TopicWorkQueue", "UrlState"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS topic_urls (
    topic INTEGER NOT NULL,
    url TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    error TEXT,
    PRIMARY KEY (topic, url)
);
CREATE INDEX IF NOT EXISTS topic_urls_by_state ON topic_urls (topic, state);
"""


class UrlState(enum.StrEnum):
    """Where a URL of a topic is in its life."""

    QUEUED = "queued"
    LEASED = "leased"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LeasedUrl:
    """A URL handed to a crawler process; ``attempts`` counts this hand-out."""

    topic: int
    url: str
    attempts: int


class TopicWorkQueue:
    """Per-topic URL queue with dedupe and leases in one SQLite file.

    Args:
        path: the database file (created if missing).
        max_url_length: longer URLs are refused by :meth:`add`.

    Raises:
        DatabaseLocked: another process holds the file.
        DatabaseCorrupt: the file is not a usable SQLite database.
    """

    def __init__(self, path: str | Path, *, max_url_length: int = 2048) -> None:
        self._max_url = max_url_length
        try:
            self._db = sqlite3.connect(str(path), timeout=5.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            # Leases belong to the supervisor that handed them out, which is gone.
            self._db.execute(
                "UPDATE topic_urls SET state = ?, updated = ? WHERE state = ?",
                (UrlState.QUEUED, time.time(), UrlState.LEASED),
            )
        except sqlite3.DatabaseError as exc:
            raise _storage_error(path, exc) from exc

    def add(self, topic: int, urls: Iterable[str]) -> int:
        """Queue URLs for a topic (canonicalised; invalid, over-long and known ones skipped).

        Returns:
            how many were new to the topic.
        """
        rows: list[tuple[int, str, str, float]] = []
        now = time.time()
        for raw in urls:
            try:
                url = canonicalize(raw)
            except InvalidUrl:
                continue
            if len(url) <= self._max_url:
                rows.append((topic, url, UrlState.QUEUED, now))
        if not rows:
            return 0
        before = self._db.total_changes
        with self._transaction():
            self._db.executemany(
                "INSERT OR IGNORE INTO topic_urls (topic, url, state, updated) VALUES (?,?,?,?)",
                rows,
            )
        return self._db.total_changes - before

    def lease(
        self, topic: int, limit: int = 1, *, exclude: Collection[str] = ()
    ) -> list[LeasedUrl]:
        """Take up to ``limit`` queued URLs of a topic, oldest first, none of ``exclude``."""
        if limit <= 0:
            return []
        skip = list(exclude)
        marks = ",".join("?" * len(skip))
        unless = f"AND url NOT IN ({marks}) " if skip else ""
        with self._transaction():
            rows = self._db.execute(
                "UPDATE topic_urls SET state = ?, attempts = attempts + 1, updated = ? "
                "WHERE rowid IN (SELECT rowid FROM topic_urls WHERE topic = ? AND state = ? "
                f"{unless}ORDER BY rowid LIMIT ?) RETURNING url, attempts, rowid",
                (UrlState.LEASED, time.time(), topic, UrlState.QUEUED, *skip, limit),
            ).fetchall()
        rows.sort(key=lambda row: int(row[2]))
        return [LeasedUrl(topic=topic, url=str(url), attempts=int(n)) for url, n, _ in rows]

    def lease_url(self, topic: int, url: str) -> LeasedUrl | None:
        """Take one particular URL if it is queued."""
        with self._transaction():
            row = self._db.execute(
                "UPDATE topic_urls SET state = ?, attempts = attempts + 1, updated = ? "
                "WHERE topic = ? AND url = ? AND state = ? RETURNING attempts",
                (UrlState.LEASED, time.time(), topic, url, UrlState.QUEUED),
            ).fetchone()
        return None if row is None else LeasedUrl(topic=topic, url=url, attempts=int(row[0]))

    def finish(self, topic: int, url: str, *, error: str | None = None) -> None:
        """A process answered for the URL: it is done (``error`` records a failed fetch)."""
        self._set(topic, url, UrlState.DONE, error)

    def give_back(
        self, topic: int, url: str, *, count_attempt: bool, max_attempts: int, reason: str
    ) -> UrlState:
        """Return a leased URL whose process is gone: queued again, or failed for good when
        processes have died on it ``max_attempts`` times.

        Args:
            count_attempt: whether this hand-out counts against the URL (False when the
                supervisor itself stopped the process, e.g. to shrink a topic).
        """
        with self._transaction():
            row = self._db.execute(
                "SELECT attempts FROM topic_urls WHERE topic = ? AND url = ?", (topic, url)
            ).fetchone()
            if row is None:
                return UrlState.DONE
            attempts = int(row[0]) if count_attempt else max(0, int(row[0]) - 1)
            state = UrlState.FAILED if attempts >= max_attempts else UrlState.QUEUED
            self._db.execute(
                "UPDATE topic_urls SET state = ?, attempts = ?, updated = ?, error = ? "
                "WHERE topic = ? AND url = ?",
                (
                    state,
                    attempts,
                    time.time(),
                    reason if state is UrlState.FAILED else None,
                    topic,
                    url,
                ),
            )
        return state

    def counts(self) -> dict[int, dict[UrlState, int]]:
        """Topic -> state -> number of URLs."""
        result: dict[int, dict[UrlState, int]] = {}
        for topic, state, n in self._db.execute(
            "SELECT topic, state, COUNT(*) FROM topic_urls GROUP BY topic, state"
        ):
            result.setdefault(int(topic), {})[UrlState(state)] = int(n)
        return result

    def state_of(self, topic: int, url: str) -> tuple[UrlState, int] | None:
        """A URL's state and attempt count (the URL as stored, i.e. canonical)."""
        row = self._db.execute(
            "SELECT state, attempts FROM topic_urls WHERE topic = ? AND url = ?", (topic, url)
        ).fetchone()
        return None if row is None else (UrlState(row[0]), int(row[1]))

    def close(self) -> None:
        """Close the database (leases still open are given back the next time it opens)."""
        self._db.close()

    def _set(self, topic: int, url: str, state: UrlState, error: str | None) -> None:
        with self._transaction():
            self._db.execute(
                "UPDATE topic_urls SET state = ?, updated = ?, error = ? "
                "WHERE topic = ? AND url = ?",
                (state, time.time(), error, topic, url),
            )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise _storage_error("topic work queue", exc) from exc

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def _storage_error(path: str | Path, exc: sqlite3.DatabaseError) -> StorageError:
    message = str(exc)
    if "locked" in message or "busy" in message:
        return DatabaseLocked(f"{path} is locked by another process: {message}")
    if "not a database" in message or "malformed" in message:
        return DatabaseCorrupt(f"{path} is not a usable database: {message}")
    return StorageError(f"{path}: {message}")
