"""Item 2 of issue 26: a calendar trap ends at the depth limit whatever the strategy, the
focused one's held-back links included (they come back through the engine's revive path)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.engine.servers import calendar_trap, serve
from topicrawl.core.config import CrawlSettings
from topicrawl.engine import open_storage, run_crawl


def _settings(base: str, db: Path, strategy: str) -> CrawlSettings:
    return CrawlSettings(
        seeds=(f"{base}/cal?date=0",),
        topics=("java concurrency threads",),
        strategy=strategy,
        max_pages=80,  # bounds the run on code that ignores the depth limit
        concurrency=2,
        parse_workers=0,
        politeness={"delay": 0.0},
        scope={"max_depth": 3},
        frontier={"kind": "memory"},
        fetch={"timeout": 5.0, "backoff_base": 0.01, "backoff_max": 0.1},
        storage={"url": str(db), "flush_interval": 0.2},
    )


@pytest.mark.parametrize("strategy", ["focused", "bfs", "best-first", "shark"])
async def test_a_calendar_trap_stops_at_the_depth_limit(tmp_path: Path, strategy: str) -> None:
    db = tmp_path / "trap.db"
    async with serve(calendar_trap()) as base:
        async with asyncio.timeout(120):  # a hang guard, not a speed claim
            report = await run_crawl(_settings(base, db, strategy))
    async with open_storage(str(db)) as storage:
        depths = {page.url: page.depth async for page in storage.iter_pages()}
    assert max(depths.values()) == 3
    # Days -3 .. 3: every day within three links of day 0, and no other.
    assert len(depths) == 7
    assert report.queued_left == 0
