"""The dashboard's knowledge-graph data over real kg tables (filled as a crawl fills them)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.kg.test_views import _crawl_db
from topicrawl.kg.store import KgStore
from topicrawl.storage import SqlStorage
from topicrawl.web.graph import knowledge_graph


async def test_the_graph_page_shows_entities_relations_urls_and_the_preferred(
    tmp_path: Path,
) -> None:
    db = await _crawl_db(tmp_path)
    async with KgStore(db, read_only=True) as store:
        graph = await knowledge_graph(store.engine, limit=3)
    assert graph["built"] is True
    assert graph["message"] == "9 entities, 2 relations; the 3 most mentioned are drawn"
    assert [(n["id"], n["preferred"]) for n in graph["nodes"]] == [
        ("nolan", True),
        ("inception", False),
        ("found:unknown:kip thorne", False),
    ]
    assert graph["edges"] == [{"from": "inception", "to": "nolan", "label": "directed_by"}]
    nolan = graph["entities"][0]
    assert nolan["name"] == "Christopher Nolan"
    assert len(nolan["urls"]) == 4
    assert all(url.startswith("http://films.test/") for url in nolan["urls"])


async def test_an_empty_graph_says_how_to_fill_it(tmp_path: Path) -> None:
    db = str(tmp_path / "crawl.db")
    async with SqlStorage(db) as storage:
        await storage.start_run(name="bfs", config="{}")
    async with KgStore(db, read_only=True) as store:
        graph = await knowledge_graph(store.engine)
    assert graph["built"] is False
    assert "topicrawl kg load" in graph["message"]
