"""Keeping a SQLite database's write-ahead log bounded over a long crawl.

SQLite checkpoints the WAL into the database by itself (``wal_autocheckpoint``), but those
checkpoints are PASSIVE: they copy what no reader still needs and never wait. The log starts
over from its beginning only when a checkpoint has copied all of it and no reader is on it,
and a crawl's frontier and storage read the file all the time, so that moment rarely comes:
the log kept growing, 590 MB beside a 1.2 GB database at 35,000 pages (session 17). And a log
that did start over keeps its size on disk unless ``journal_size_limit`` says otherwise.

So the writer, after a batch, looks at the log's size (a ``stat``, at most every
``check_every`` seconds) and, when it is over ``limit_bytes``, runs a TRUNCATE checkpoint:
it waits up to ``wait`` seconds for the readers to move to the newest snapshot (they are
short: a look-up, a frontier read), copies the log into the database and truncates it to
zero. A checkpoint that cannot finish in that wait is tried again at the next check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["WAL_LIMIT_BYTES", "WalBound"]

_log = logging.getLogger(__name__)

WAL_LIMIT_BYTES = 128 * 2**20
"""The write-ahead log's size past which the writer truncates it (twice the autocheckpoint
interval: a log that reaches it is one SQLite's own checkpoints could not reset)."""


class WalBound:
    """Truncates a SQLite database's WAL when it grows past a limit.

    Args:
        database: the SQLite database file (its log is the ``-wal`` file beside it).
        limit_bytes: the log's size past which it is checkpointed and truncated.
        wait: seconds a checkpoint waits for readers (the connection's busy timeout while it
            runs; ``busy_timeout`` is restored after).
        busy_timeout: the connection's usual busy timeout, in seconds.
        check_every: seconds between two looks at the log's size.
        clock: monotonic seconds, injectable for tests.
    """

    def __init__(
        self,
        database: Path,
        *,
        limit_bytes: int = WAL_LIMIT_BYTES,
        wait: float = 2.0,
        busy_timeout: float,
        check_every: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wal = database.with_name(database.name + "-wal")
        self._limit = limit_bytes
        self._wait_ms = int(wait * 1000)
        self._busy_ms = int(busy_timeout * 1000)
        self._every = check_every
        self._clock = clock
        self._next_check = 0.0
        self.truncated = 0
        """Checkpoints that truncated the log."""
        self.put_off = 0
        """Checkpoints that could not finish (readers or a writer in the way)."""
        self.largest = 0
        """The largest log size seen, in bytes."""

    def size(self) -> int:
        """The log's size in bytes now (0 when there is none)."""
        try:
            return self._wal.stat().st_size
        except OSError:
            return 0

    async def check(self, engine: AsyncEngine) -> None:
        """Truncate the log through ``engine`` if it is due for a look and over the limit.

        Never raises for a checkpoint that cannot run now: the next check tries again.
        """
        now = self._clock()
        if now < self._next_check:
            return
        self._next_check = now + self._every
        before = self.size()
        self.largest = max(self.largest, before)
        if before <= self._limit:
            return
        try:
            async with engine.connect() as connection:
                await connection.exec_driver_sql(f"PRAGMA busy_timeout={self._wait_ms}")
                try:
                    result = await connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                    row = result.first()
                finally:
                    await connection.exec_driver_sql(f"PRAGMA busy_timeout={self._busy_ms}")
        except DBAPIError as exc:
            self.put_off += 1
            _log.info("WAL checkpoint put off (log %d MiB): %s", before >> 20, exc)
            return
        if row is None or row[0]:
            self.put_off += 1
            _log.info("WAL checkpoint put off (log %d MiB): readers in the way", before >> 20)
            return
        self.truncated += 1
        _log.info("WAL checkpointed and truncated: %d -> %d MiB", before >> 20, self.size() >> 20)
