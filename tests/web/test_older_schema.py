"""`topicrawl serve` on a database of an older schema: shown read-only as it is, never migrated;
what needs newer tables or columns says so."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import urllib.parse
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from tests.web.support import live_dashboard
from tests.web.test_api_security import get
from topicrawl.cli.app import app as cli_app
from topicrawl.storage import MIGRATIONS
from topicrawl.storage.migrations import migrate
from topicrawl.storage.target import WRITE_OPTION, create_engine, parse_target

# The pages columns (and the indexes on them) each later migration added.
_LATER_COLUMNS = {"host": 6, "topic": 8, "link_scores": 8, "cjk": 15}
_LATER_INDEXES = {
    "ix_pages_host_fetched_at": 6,
    "ix_pages_topic_fetched_at": 8,
    "ix_pages_filters": 8,
}
_PAGES = (
    ("https://a.example/one", "Galaxies", "A spiral galaxy seen edge on."),
    ("https://a.example/two", "Telescopes", "Mirrors <script>alert(1)</script> and lenses."),
    ("https://b.example/three", "星系", "银河系是一个棒旋星系。"),
)


def make_older_database(path: Path, version: int) -> None:
    """A SQLite database as a topicrawl of schema ``version`` left it: the migrations up to it,
    without the pages columns later ones added, holding a run, three pages and a failure."""

    async def migrated() -> None:
        engine = create_engine(parse_target(str(path)), busy_timeout=5.0, connect_timeout=5.0)
        try:
            async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
                await migrate(connection, MIGRATIONS[:version])
        finally:
            await engine.dispose()

    asyncio.run(migrated())
    connection = sqlite3.connect(path)
    try:
        for index, added in _LATER_INDEXES.items():
            if added > version:
                connection.execute(f"DROP INDEX IF EXISTS {index}")
        for column, added in _LATER_COLUMNS.items():
            if added > version:
                connection.execute(f"ALTER TABLE pages DROP COLUMN {column}")
        connection.execute(
            "INSERT INTO runs (name, started_at, finished_at, config, stats) "
            "VALUES ('old', 1.0, 2.0, '{}', '{}')"
        )
        for n, (url, title, body) in enumerate(_PAGES):
            connection.execute(
                "INSERT INTO pages (url, final_url, status, depth, fetched_at, content_type, "
                "title, text, relevance, score, reasons, elapsed, size, redirects, noindex, "
                "run_id) VALUES (?, ?, 200, 0, ?, 'text/html', ?, ?, 0.5, 0.5, '{}', 0.1, 100, "
                "'[]', 0, 1)",
                (url, url, 10.0 + n, title, body),
            )
        connection.execute(
            "INSERT INTO failures (url, kind, message, at, depth, attempts, run_id) "
            "VALUES ('https://a.example/gone', 'http', 'HTTP 404', 3.0, 1, 1, 1)"
        )
        connection.commit()
    finally:
        connection.close()


def _versions(path: Path) -> list[int]:
    connection = sqlite3.connect(path)
    try:
        return [row[0] for row in connection.execute("SELECT version FROM schema_version")]
    finally:
        connection.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_serve_accepts_an_older_database_without_migrating_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "v5.db"
    make_older_database(db, 5)
    before = _digest(db)
    # The CLI's own check before it starts the server passes (it refused such a database).
    started: list[object] = []
    monkeypatch.setattr("uvicorn.run", lambda app, **_: started.append(app))
    result = CliRunner().invoke(cli_app, ["serve", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert len(started) == 1
    with live_dashboard(db) as live:
        overview = get(live.base + "/")
        assert overview.status == 200
        html = overview.body.decode()
        assert "schema version 5" in html
        for part in ("live samples", "knowledge graph", "topic filter", "video system"):
            assert part in html
        assert "Topics (heat" not in html  # topic tracking came with schema 3: it is there

        listed = get(live.base + "/api/pages").json()
        assert [p["url"] for p in listed["pages"]] == [url for url, _, _ in reversed(_PAGES)]
        assert {p["host"] for p in listed["pages"]} == {""}
        assert {p["topic"] for p in listed["pages"]} == {None}

        # Words are matched by a scan (no full-text index before schema 6), and it says so.
        found = get(live.base + "/api/pages?q=lenses").json()
        assert [p["url"] for p in found["pages"]] == ["https://a.example/two"]
        assert "schema version 5" in found["unavailable"]["ranked_search"]
        assert [
            p["title"]
            for p in get(live.base + "/api/pages?q=" + urllib.parse.quote("星系")).json()["pages"]
        ] == ["星系"]

        # A filter on a column the schema lacks is a clear 400, not a server error.
        for query in ("host=a.example", "topic=space"):
            refused = get(live.base + f"/api/pages?{query}")
            assert refused.status == 400
            assert "schema version 5" in refused.json()["detail"]

        page_id = listed["pages"][-1]["id"]
        detail = get(live.base + f"/api/pages/{page_id}").json()
        assert detail["page"]["url"] == "https://a.example/one"
        assert detail["page"]["topic"] is None
        assert detail["outlinks_scored"] == 0
        assert get(live.base + f"/pages/{page_id}").status == 200

        live_answer = get(live.base + "/api/live").json()
        assert live_answer["totals"]["pages"] == 3
        assert live_answer["samples"] == []
        assert "schema version 5" in live_answer["unavailable"]["samples"]

        metrics = get(live.base + "/metrics")
        assert metrics.status == 200
        names = {f.name for f in text_string_to_metric_families(metrics.body.decode())}
        assert "topicrawl_storage_pages" in names

        assert get(live.base + "/api/topics").json()["topics"] == []
        assert "schema version 7" in get(live.base + "/api/graph").json()["message"]
        videos = get(live.base + "/api/videos")
        assert videos.status == 200
        for path in ("/topics", "/pages", "/graph", "/nodes", "/videos"):
            assert get(live.base + path).status == 200, path
    # Read only: not migrated, not a byte changed.
    assert max(_versions(db)) == 5
    assert _digest(db) == before


@pytest.mark.parametrize("version", [2, 6, 8, 14])
def test_every_page_of_an_older_database_answers(tmp_path: Path, version: int) -> None:
    db = tmp_path / f"v{version}.db"
    make_older_database(db, version)
    with live_dashboard(db) as live:
        for path in (
            "/",
            "/api/runs",
            "/api/live",
            "/api/pages",
            "/api/pages?q=galaxy",
            "/api/topics",
            "/api/graph",
            "/metrics",
            "/topics",
            "/pages",
            "/graph",
            "/videos",
        ):
            answer = get(live.base + path)
            assert answer.status == 200, (path, answer.body[:300])
        listed = get(live.base + "/api/pages").json()["pages"]
        for page in listed:
            assert get(live.base + f"/api/pages/{page['id']}").status == 200
        found = get(live.base + "/api/pages?q=galaxy").json()["pages"]
        assert [p["url"] for p in found] == ["https://a.example/one"]
        if version < 3:
            topics = get(live.base + "/api/topics").json()
            assert "schema version 2" in topics["unavailable"]["topics"]
    assert max(_versions(db)) == version
