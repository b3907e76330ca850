"""Reading the graph back: the snapshot, `kg show` (table and JSON) and `kg export`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import networkx as nx
from typer.testing import CliRunner

from tests.unit.kg.conftest import KB_TEXT
from topicrawl.cli.app import app
from topicrawl.core.models import EntityMention, PageEntities, RelationMention
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.store import KgStore, PageFinding
from topicrawl.kg.views import graph_snapshot
from topicrawl.storage import SqlStorage

FOUND = PageEntities(
    (
        EntityMention("nolan", "Nolan", "person", 0, 5, 0.9),
        EntityMention("inception", "Inception", "work", 10, 19, 0.8),
        EntityMention("found:unknown:kip thorne", "Kip Thorne", "", 30, 40, 0.1),
    ),
    (RelationMention("inception", "directed_by", "nolan", 0.9, "Inception was directed by"),),
)


async def _crawl_db(path: Path) -> str:
    db = str(path / "crawl.db")
    async with SqlStorage(db) as storage:
        await storage.start_run(name="bfs", config='{"kg": {"prefer": ["Christopher Nolan"]}}')
    kb = parse_kb(KB_TEXT, fmt="jsonl")
    async with KgStore(db) as store:
        await store.load(kb)
        await store.record(
            [PageFinding(f"http://films.test/{n}", FOUND, float(n)) for n in range(3)], kb
        )
        await store.record(
            [PageFinding("http://films.test/9", PageEntities(FOUND.mentions[:1], ()), 9.0)], kb
        )
    return db


async def test_snapshot_ranks_by_pages_and_marks_the_preferred(tmp_path: Path) -> None:
    db = await _crawl_db(tmp_path)
    async with KgStore(db, read_only=True) as store:
        snapshot = await graph_snapshot(store.engine, limit=3, urls_per_entity=2)
    assert [(n.key, n.pages) for n in snapshot.nodes] == [
        ("nolan", 4),
        ("inception", 3),
        ("found:unknown:kip thorne", 3),
    ]
    assert snapshot.preferred == ("nolan",)
    assert [n.preferred for n in snapshot.nodes] == [True, False, False]
    assert [(e.subject, e.type, e.object, e.pages) for e in snapshot.edges] == [
        ("inception", "directed_by", "nolan", 3)
    ]
    assert len(snapshot.entity_urls["nolan"]) == 2
    assert snapshot.total_entities == 9  # 8 loaded + 1 found


def test_cli_show_and_export(tmp_path: Path) -> None:
    db = asyncio.run(_crawl_db(tmp_path))
    runner = CliRunner()
    table = runner.invoke(app, ["kg", "show", "--db", db, "--limit", "4"])
    assert table.exit_code == 0, table.output
    assert "nolan *" in table.output  # preferred
    assert "Kip Thorne" in table.output
    shown = runner.invoke(app, ["kg", "show", "--db", db, "--json"])
    data = json.loads(shown.stdout)
    assert data["preferred"] == ["nolan"]
    assert {n["key"] for n in data["nodes"]} >= {"nolan", "found:unknown:kip thorne"}

    out = tmp_path / "graph.graphml"
    exported = runner.invoke(
        app, ["kg", "export", "--db", db, "--format", "graphml", "--output", str(out)]
    )
    assert exported.exit_code == 0, exported.output
    graph = nx.read_graphml(out)
    assert graph.nodes["nolan"]["name"] == "Christopher Nolan"
    assert graph.has_edge("inception", "nolan")
    assert graph.number_of_nodes() == 9

    lines = runner.invoke(app, ["kg", "export", "--db", db]).stdout.splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert sum(r["kind"] == "node" for r in records) == 9
    assert [r["type"] for r in records if r["kind"] == "edge"] == ["directed_by", "implements"]


def test_cli_refuses_a_missing_database_and_a_bad_format(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["kg", "show", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 2
    assert not (tmp_path / "none.db").exists()
    bad = runner.invoke(app, ["kg", "export", "--db", "x.db", "--format", "csv"])
    assert bad.exit_code == 2
