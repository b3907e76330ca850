"""When a crawl uses its knowledge graph, and what it builds for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.kg.conftest import KB_TEXT
from topicrawl.core.config import KgSettings
from topicrawl.core.models import Page
from topicrawl.engine.kg import open_kg
from topicrawl.focus import make_strategy
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.store import KgStore


async def test_no_kb_and_nothing_preferred_means_no_kg(tmp_path: Path) -> None:
    async with open_kg(
        KgSettings(), str(tmp_path / "c.db"), make_strategy("bfs", topics=()), max_depth=5
    ) as kg:
        assert kg is None


async def test_a_loaded_kb_turns_recognition_on_and_off_by_setting(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    async with KgStore(db) as store:
        await store.load(parse_kb(KB_TEXT, fmt="jsonl"))
    async with open_kg(KgSettings(), db, make_strategy("bfs", topics=()), max_depth=5) as kg:
        assert kg is not None
        assert kg.analyzer is not None
        assert kg.strategy.boosted_links == 0
    off = KgSettings(recognise=False)
    async with open_kg(off, db, make_strategy("bfs", topics=()), max_depth=5) as kg:
        assert kg is None


@pytest.mark.parametrize(("strategy", "boost"), [("bfs", 6.0), ("best-first", 1.0)])
async def test_preferring_sets_the_boost_by_strategy_and_records_findings(
    tmp_path: Path, strategy: str, boost: float
) -> None:
    db = str(tmp_path / "c.db")
    settings = KgSettings(prefer=("Christopher Nolan",), recognise=None)
    inner = make_strategy(strategy, topics=("films",) if strategy != "bfs" else ())
    async with open_kg(settings, db, inner, max_depth=5) as kg:
        assert kg is not None
        assert kg.strategy._boost == boost
        assert kg.analyzer is not None  # the name is recognised though the KB lacks it
        found = kg.analyzer("", "Christopher Nolan films")
        assert found.mentions[0].entity == "found:unknown:christopher nolan"
        kg.strategy.on_page(
            Page(
                url="http://a.test/",
                final_url="http://a.test/",
                status=200,
                depth=0,
                fetched_at=0.0,
                content_type="text/html",
                entities=found,
            )
        )
        await kg.record()
    async with KgStore(db, read_only=True) as store:
        assert "found:unknown:christopher nolan" in await store.keys()
