"""The live panel's rates from a run's per-second counts."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from topicrawl.web.app import open_reader
from topicrawl.web.live import LiveTally, RunTally


def test_rates_keep_every_page_and_fit_the_chart() -> None:
    tally = RunTally(pages=5, page_seconds=Counter({100: 2, 101: 1, 700: 2}))
    tally.failure_seconds["http_404"] = Counter({101: 3})
    series = tally.series()
    # 601 seconds at 300 points at most: 3 s a point, rates per second.
    assert series.width == 3.0
    assert series.times[0] == 100.0
    assert series.pages_per_second[0] == pytest.approx(1.0)  # 3 pages in the first 3 s
    assert sum(series.pages_per_second) * series.width == pytest.approx(5)
    assert sum(series.errors_per_second["http_404"]) * series.width == pytest.approx(3)
    assert len(series.times) == len(series.pages_per_second) <= 300


def test_a_window_shows_only_the_last_seconds_up_to_now() -> None:
    tally = RunTally(pages=3, page_seconds=Counter({10: 1, 990: 2}))
    series = tally.series(window=60, now=1000.0)
    assert series.width == 1.0
    assert series.times[0] == 941.0
    assert series.times[-1] == 1000.0  # up to now, though nothing came in since 990
    assert sum(series.pages_per_second) == 2


def test_nothing_read_yet_is_an_empty_series() -> None:
    series = RunTally().series(window=60, now=1000.0)
    assert series.times == []
    assert series.pages_per_second == []


def test_a_large_history_is_caught_up_over_several_short_reads(crawled_db: Path) -> None:
    async def tally(max_rows: int) -> tuple[list[bool], RunTally]:
        engine, _, _ = await open_reader(str(crawled_db))
        try:
            live = LiveTally(max_rows=max_rows)
            steps = []
            for _ in range(100):
                await live.refresh(engine)
                steps.append(live.caught_up)
                if live.caught_up:
                    break
            return steps, live.run(1)
        finally:
            await engine.dispose()

    steps, small = asyncio.run(tally(7))
    _, whole = asyncio.run(tally(100_000))
    with sqlite3.connect(crawled_db) as connection:
        pages, size = connection.execute("SELECT count(*), sum(size) FROM pages").fetchone()
        (failed,) = connection.execute("SELECT count(*) FROM failures").fetchone()
    assert len(steps) >= pages // 7  # a read of at most 7 rows of each table at a time
    assert steps[-1] is True
    assert not any(steps[:-1])
    for counted in (small, whole):
        assert (counted.pages, counted.bytes, counted.failures) == (pages, size, failed)
    assert small.page_seconds == whole.page_seconds
    assert small.failures_by_kind == whole.failures_by_kind
