"""Live counts of each run, kept up to date by reading only the rows written since last time.

Pages and failures get ids in write order, so each refresh reads the rows past the last id it
saw (a primary-key range: a short read that never scans the table again, however large it
grows) and adds them to per-run tallies in one-second buckets. A refresh reads at most
``max_rows`` rows, in short separate reads, so a first look at a large database catches up
over a few polls instead of holding one long read; the writer is never waited on.

A page fetched again keeps its row and id, so it is not counted twice; a URL that fails again
likewise keeps its failure row.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from topicrawl.storage.schema import failures, pages

__all__ = ["LiveTally", "RunTally", "Series"]

_CHUNK = 5000
_MAX_POINTS = 300


@dataclass(frozen=True, slots=True)
class Series:
    """Pages per second and failures per second by kind, at ``width`` seconds a point."""

    width: float
    times: list[float]
    pages_per_second: list[float]
    errors_per_second: dict[str, list[float]]


@dataclass
class RunTally:
    """One run's counts so far (only what this tally has read)."""

    pages: int = 0
    bytes: int = 0
    failures: int = 0
    failures_by_kind: Counter[str] = field(default_factory=Counter)
    page_seconds: Counter[int] = field(default_factory=Counter)
    failure_seconds: dict[str, Counter[int]] = field(default_factory=dict)
    last_at: float = 0.0

    def series(self, *, window: float | None = None, now: float | None = None) -> Series:
        """The run's rates, over the last ``window`` seconds (all of it when None)."""
        seconds = list(self.page_seconds) + [s for c in self.failure_seconds.values() for s in c]
        if not seconds:
            return Series(1.0, [], [], {})
        end = int(max(*seconds, now or 0.0)) + 1
        start = min(seconds)
        if window is not None:
            start = max(start, end - int(window))
        span = max(1, end - start)
        width = max(1, math.ceil(span / _MAX_POINTS))
        points = math.ceil(span / width)
        times = [float(start + i * width) for i in range(points)]

        def rates(counts: Counter[int]) -> list[float]:
            values = [0.0] * points
            for second, count in counts.items():
                if start <= second < end:
                    values[(second - start) // width] += count / width
            return values

        return Series(
            float(width),
            times,
            rates(self.page_seconds),
            {kind: rates(counts) for kind, counts in sorted(self.failure_seconds.items())},
        )


class LiveTally:
    """Per-run tallies of a crawl database, refreshed incrementally.

    Args:
        max_rows: the most rows of each table one refresh reads.
    """

    def __init__(self, *, max_rows: int = 100_000) -> None:
        self._runs: dict[int | None, RunTally] = {}
        self._page_id = 0
        self._failure_id = 0
        self._max_rows = max_rows
        self._lock = asyncio.Lock()
        self.caught_up = False

    def run(self, run_id: int | None) -> RunTally:
        """The tally of one run (empty if nothing of it was read yet)."""
        return self._runs.get(run_id) or RunTally()

    async def refresh(self, engine: AsyncEngine) -> None:
        """Read the pages and failures written since the last refresh."""
        async with self._lock:
            page_columns = (pages.c.id, pages.c.run_id, pages.c.fetched_at, pages.c.size)
            self._page_id, pages_done = await self._read_after(
                engine, page_columns, self._page_id, self._add_page
            )
            failure_columns = (failures.c.id, failures.c.run_id, failures.c.at, failures.c.kind)
            self._failure_id, failures_done = await self._read_after(
                engine, failure_columns, self._failure_id, self._add_failure
            )
            self.caught_up = pages_done and failures_done

    def _add_page(self, row: Row[Any]) -> None:
        tally = self._runs.setdefault(row.run_id, RunTally())
        tally.pages += 1
        tally.bytes += int(row.size)
        tally.page_seconds[int(row.fetched_at)] += 1
        tally.last_at = max(tally.last_at, float(row.fetched_at))

    def _add_failure(self, row: Row[Any]) -> None:
        tally = self._runs.setdefault(row.run_id, RunTally())
        tally.failures += 1
        tally.failures_by_kind[row.kind] += 1
        tally.failure_seconds.setdefault(row.kind, Counter())[int(row.at)] += 1
        tally.last_at = max(tally.last_at, float(row.at))

    async def _read_after(
        self,
        engine: AsyncEngine,
        columns: tuple[ColumnElement[Any], ...],
        after: int,
        add: Callable[[Row[Any]], None],
    ) -> tuple[int, bool]:
        """Add the rows whose id (the first column) is past ``after``, in short reads of
        ``_CHUNK`` rows; returns the last id read and whether every row was read."""
        key = columns[0]
        read = 0
        while read < self._max_rows:
            chunk = min(_CHUNK, self._max_rows - read)
            statement = select(*columns).where(key > after).order_by(key).limit(chunk)
            async with engine.connect() as connection:
                rows = (await connection.execute(statement)).all()
            for row in rows:
                add(row)
            if rows:
                after = int(rows[-1][0])
            read += len(rows)
            if len(rows) < chunk:
                return after, True
        return after, False
