"""The video system's pages (issues #19 and #22) over a real ``topicrawl video run --demo
--clock simulated``: videos, plans, accounts, revisits, node rounds, as HTML and JSON, sorted
and paged, hostile strings escaped and capped, the same answers on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert, select
from typer.testing import CliRunner

from tests.conftest import POSTGRES_URL, require_service
from tests.web.support import MARKER, in_thread
from topicrawl.cli.app import app as cli_app
from topicrawl.storage.schema import (
    account_runs,
    accounts,
    leader_leases,
    leader_terms,
    node_rounds,
    system_visits,
    video_tiers,
    videos,
)
from topicrawl.storage.target import create_engine, parse_target
from topicrawl.storage.videostore import VideoStore
from topicrawl.web.app import DashboardConfig, create_app
from topicrawl.web.security import CSP
from topicrawl.web.system_view import MAX_TEXT

HOSTILE_TITLE = f"<script>alert('{MARKER}')</script><img src=x onerror=alert(1)>"
HUGE = "長" * 10_000 + "<b>tail</b>"  # far over the cap; forty copies far over a page
SYSTEM_TABLES = (
    account_runs,
    accounts,
    videos,
    video_tiers,
    system_visits,
    node_rounds,
    leader_leases,
    leader_terms,
)


@pytest.fixture(scope="module")
def video_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real small run of seed 004's system, plus two hostile videos and a hostile account."""
    db = tmp_path_factory.mktemp("video") / "video.db"
    argv = ["video", "run", "--demo", "--clock", "simulated", "--db", str(db),
            "--titles", "6", "--days", "9", "--max-hops", "1", "--max-per-hop", "30"]  # fmt: skip
    result = in_thread(lambda: CliRunner().invoke(cli_app, argv, catch_exceptions=False))
    assert result.exit_code == 0, result.output
    connection = sqlite3.connect(db)
    try:
        source, planned = connection.execute(
            "SELECT source, max(planned_at) FROM videos"
        ).fetchone()
        for key, title in (("hostile", HOSTILE_TITLE), ("huge", HUGE)):
            connection.execute(
                "INSERT INTO videos VALUES (?, ?, ?, 'film', ?, ?, '[]', ?, 0, 0.5, 3, 7.0, "
                "'local', ?)",
                (source, f"http://evil.test/{key}", title, json.dumps([HOSTILE_TITLE]),
                 json.dumps([HUGE] * 40), json.dumps({"plays": 1.0}), planned),
            )  # fmt: skip
        # A lease as two nodes leave it: a took it, b took it over; b's name is hostile.
        connection.execute(
            "INSERT INTO leader_leases VALUES (?, ?, 2, ?, ?, ?)",
            (source, HOSTILE_TITLE, planned, planned + 5, planned + 60),
        )
        connection.executemany(
            "INSERT INTO leader_terms VALUES (?, ?, ?, ?, ?, ?)",
            [
                (source, 1, "a", planned - 100, None, None),
                (source, 2, HOSTILE_TITLE, planned, "a", planned - 1),
            ],
        )
        connection.execute(
            "UPDATE accounts SET display_name = ? WHERE account_id = "
            "(SELECT min(account_id) FROM accounts)",
            (HOSTILE_TITLE,),
        )
        connection.commit()
    finally:
        connection.close()
    return db


def _client(db_url: str) -> Iterator[TestClient]:
    with TestClient(
        create_app(DashboardConfig(db_url=db_url)), base_url="http://127.0.0.1:8000"
    ) as c:
        yield c


@pytest.fixture(scope="module")
def client(video_db: Path) -> Iterator[TestClient]:
    yield from _client(str(video_db))


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(db)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def _get(client: TestClient, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def test_videos_json_has_every_video_with_counts_tier_and_next_due(
    client: TestClient, video_db: Path
) -> None:
    stored = {r[0]: r for r in _rows(video_db, "SELECT video, tier, popularity FROM videos")}
    data = _get(client, "/api/videos?per=200")
    assert data["paging"]["total"] == len(stored) >= 8
    assert {v["video"] for v in data["videos"]} == set(stored)
    popularity = [v["popularity"] for v in data["videos"]]
    assert popularity == sorted(popularity, reverse=True)
    crawled = [v for v in data["videos"] if not v["video"].startswith("http://evil.test/")]
    assert all(set(v["counts"]) == {"plays", "comments", "favourites"} for v in crawled)
    for v in data["videos"]:
        assert v["tier"] == stored[v["video"]][1]
        assert v["next_due"] >= v["planned_at"]
        if v["last_visit"] is not None:  # revisited: due one period after its last visit
            assert v["next_due"] == pytest.approx(
                max(v["planned_at"], v["last_visit"] + v["revisit_days"] * 86_400)
            )
    assert sum(data["tiers"].values()) == len(stored)


def test_videos_sort_and_pages(client: TestClient) -> None:
    whole = _get(client, "/api/videos?sort=title&order=asc&per=200")["videos"]
    titles = [v["title"] for v in whole]
    assert titles == sorted(titles)
    first = _get(client, "/api/videos?sort=title&order=asc&per=3")
    second = _get(client, "/api/videos?sort=title&order=asc&per=3&page=2")
    assert first["paging"]["pages"] == -(-len(whole) // 3)
    assert [v["title"] for v in first["videos"] + second["videos"]] == titles[:6]
    due = [v["next_due"] for v in _get(client, "/api/videos?sort=next_due&order=asc")["videos"]]
    assert due == sorted(due)
    plays = [v["counts"].get("plays", -1) for v in _get(client, "/api/videos?sort=plays")["videos"]]
    assert plays == sorted(plays, reverse=True)
    tier3 = _get(client, "/api/videos?tier=3")["videos"]
    assert tier3
    assert all(v["tier"] == 3 for v in tier3)


@pytest.mark.parametrize(
    "path",
    [
        "/api/videos?sort=popularity;drop",
        "/api/accounts?sort=text",
        "/api/revisits?outcome=x",
        "/api/revisits?kind=robot",
    ],
)
def test_unknown_sort_or_filter_is_a_clear_400(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 400
    assert "must be one of" in response.json()["detail"] or "kind must be" in response.text


def test_plans_show_tiers_moves_and_rounds(client: TestClient, video_db: Path) -> None:
    stored = _rows(video_db, "SELECT planned_at, count(*) FROM video_tiers GROUP BY planned_at")
    data = _get(client, "/api/videos/plans")
    assert [p["planned_at"] for p in data["plans"]] == sorted((t for t, _ in stored), reverse=True)
    assert [p["videos"] for p in data["plans"]] == [n for _, n in sorted(stored, reverse=True)]
    newest, oldest = data["plans"][0], data["plans"][-1]
    assert oldest["moves"] is None
    assert oldest["rounds"] == []
    assert sum(newest["moves"].values()) == newest["videos"]
    rounds = _rows(video_db, "SELECT node, items FROM node_rounds")
    assert [(r["node"], r["items"]) for r in newest["rounds"]] == rounds


def test_accounts_kept_and_dropped_and_why(client: TestClient, video_db: Path) -> None:
    kept, dropped = (
        _rows(video_db, f"SELECT count(*) FROM accounts WHERE kept = {k}")[0][0] for k in (1, 0)
    )
    data = _get(client, "/api/accounts?per=200")
    assert (data["kept"], data["dropped"]) == (kept, dropped)
    assert kept > 0
    assert dropped > 0
    influence = [a["influence"] for a in data["accounts"]]
    assert influence == sorted(influence, reverse=True)
    for account in data["accounts"]:
        assert account["why"].startswith("kept" if account["kept"] else "dropped")
        assert "threshold 0.3" in account["why"]
    gone = _get(client, "/api/accounts?kept=no&per=200")["accounts"]
    assert len(gone) == dropped
    for account in gone:
        assert account["tier"] is None
        assert account["domain_score"] < 0.3
    ranked = [a["tier"] for a in _get(client, "/api/accounts?sort=tier&order=asc")["accounts"]]
    assert ranked == sorted(ranked)


def test_revisits_due_against_done(client: TestClient, video_db: Path) -> None:
    total, not_modified = _rows(video_db, "SELECT count(*), sum(status = 304) FROM system_visits")[
        0
    ]
    data = _get(client, "/api/revisits?per=5")
    assert sum(s["done"] for s in data["summary"]) == total > 0
    assert sum(s["not_modified"] for s in data["summary"]) == not_modified
    assert sum(d["due"] for d in data["days"]) == sum(d["done"] for d in data["days"]) == total
    assert data["paging"]["total"] == total
    assert len(data["visits"]) == 5
    assert data["pending"] == {"videos": 0, "accounts": 0}  # the run ended with nothing due
    done = [v["visited_at"] for v in data["visits"]]
    assert done == sorted(done, reverse=True)
    shown = _get(client, "/api/revisits?kind=page&outcome=not_modified&per=200")
    assert shown["paging"]["total"] == not_modified
    assert all(v["status"] == 304 and v["kind"] == "page" for v in shown["visits"])


def test_node_rounds(client: TestClient, video_db: Path) -> None:
    data = _get(client, "/api/node-rounds")
    (items,) = _rows(video_db, "SELECT sum(items) FROM node_rounds")[0]
    assert [n["node"] for n in data["nodes"]] == ["local"]
    assert data["nodes"][0]["items"] == items
    assert data["nodes"][0]["visits"] == _rows(video_db, "SELECT count(*) FROM system_visits")[0][0]


def test_node_rounds_show_the_leader_and_its_terms(client: TestClient, video_db: Path) -> None:
    ((source, planned),) = _rows(video_db, "SELECT source, max(planned_at) FROM videos")
    (leader,) = _get(client, "/api/node-rounds")["leaders"]
    assert (leader["source"], leader["holder"], leader["term"]) == (source, HOSTILE_TITLE, 2)
    assert leader["expires"] == planned + 60
    assert [(t["term"], t["holder"], t["previous"]) for t in leader["terms"]] == [
        (2, HOSTILE_TITLE, "a"),
        (1, "a", None),
    ]
    page = client.get("/node-rounds").text
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert" in page  # shown, escaped


def test_node_rounds_of_a_database_before_leader_tables(video_db: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copy(video_db, old)
    connection = sqlite3.connect(old)
    connection.execute("DELETE FROM schema_version WHERE version >= 16")
    connection.execute("DROP TABLE leader_terms")
    connection.execute("DROP TABLE leader_leases")
    connection.commit()
    connection.close()
    for c in _client(str(old)):
        data = _get(c, "/api/node-rounds")
        assert data["leaders"] == []
        assert [n["node"] for n in data["nodes"]] == ["local"]
        assert c.get("/node-rounds").status_code == 200


@pytest.mark.parametrize(
    "path", ["/videos", "/videos/plans", "/accounts", "/revisits", "/node-rounds"]
)
def test_pages_render_escaped_with_csp(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-security-policy"] == CSP
    body = response.text
    assert "<script>alert" not in body
    assert "<img src=x" not in body
    assert "<b>tail</b>" not in body
    assert f'href="{path}"' in body
    assert 'aria-current="page"' in body


def test_hostile_title_escaped_and_huge_strings_capped(client: TestClient) -> None:
    page = client.get("/videos?sort=plays&order=asc").text
    assert "&lt;script&gt;alert(&#39;PWNED&#39;)&lt;/script&gt;" in page
    assert len(page) < 100_000  # a 10,000-character title and forty copies as actors
    found = {v["video"]: v for v in _get(client, "/api/videos?per=200")["videos"]}
    huge = found["http://evil.test/huge"]
    assert len(huge["title"]) == MAX_TEXT + 1
    assert huge["title"].endswith("…")
    assert huge["actors"]["more"] == 28
    assert len(huge["actors"]["shown"]) == 12
    assert found["http://evil.test/hostile"]["title"] == HOSTILE_TITLE  # JSON: as stored
    accounts = client.get("/accounts?sort=username&order=asc&per=200").text
    assert "&lt;script&gt;alert(&#39;PWNED&#39;)" in accounts


def test_sort_links_keep_filters_and_flip_order(client: TestClient) -> None:
    page = client.get("/videos?tier=3&sort=title&order=desc").text
    assert 'href="/videos?tier=3&amp;sort=title&amp;order=asc"' in page  # flip the current
    assert 'href="/videos?tier=3&amp;sort=popularity&amp;order=desc"' in page
    paged = client.get("/accounts?per=5").text
    assert 'href="/accounts?per=5&amp;page=2"' in paged


def test_nav_links_the_video_pages(client: TestClient) -> None:
    assert 'href="/videos"' in client.get("/").text


def test_a_database_before_the_video_system_says_so(video_db: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copy(video_db, old)
    connection = sqlite3.connect(old)
    connection.execute("DELETE FROM schema_version WHERE version >= 13")
    connection.commit()
    connection.close()
    for c in _client(str(old)):
        data = _get(c, "/api/videos")
        assert data["available"] is False
        assert "version 12" in data["message"]
        page = c.get("/accounts")
        assert page.status_code == 200
        assert "came with version 13" in page.text


async def _copy_to_postgres(db: Path, url: str) -> None:
    async with VideoStore(url):  # creates the schema, every migration
        pass
    source = create_engine(parse_target(str(db)), busy_timeout=5.0, connect_timeout=5.0)
    target = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    try:
        for table in SYSTEM_TABLES:
            async with source.connect() as reading:
                rows = [dict(r._mapping) for r in await reading.execute(select(table))]
            async with target.begin() as writing:
                await writing.execute(insert(table), rows)
    finally:
        await source.dispose()
        await target.dispose()


@pytest.fixture(scope="module")
def postgres_copy(video_db: Path) -> Iterator[str]:
    """The same rows in a PostgreSQL schema of their own (dropped afterwards)."""
    require_service("PostgreSQL", "127.0.0.1", 5432)
    schema = f"t_dash_{uuid.uuid4().hex[:12]}"
    url = f"{POSTGRES_URL}?schema={schema}"
    asyncio.run(_copy_to_postgres(video_db, url))
    yield url

    async def drop() -> None:
        connection = await asyncpg.connect(
            POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://")
        )
        try:
            await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await connection.close()

    asyncio.run(drop())


@pytest.mark.parametrize(
    "path",
    [
        "/api/videos?per=200",
        "/api/videos?sort=next_due&order=asc&per=4&page=2",
        "/api/videos?sort=plays",
        "/api/videos/plans",
        "/api/accounts?per=200",
        "/api/accounts?kept=no&sort=domain_score&order=asc",
        "/api/revisits?per=200&sort=late",
        "/api/revisits?kind=account&outcome=changed",
        "/api/node-rounds",
    ],
)
def test_postgres_answers_as_sqlite(client: TestClient, postgres_copy: str, path: str) -> None:
    for pg in _client(postgres_copy):
        on_sqlite, on_postgres = _get(client, path), _get(pg, path)
        on_sqlite.pop("as_of", None), on_postgres.pop("as_of", None)
        assert _rounded(on_postgres) == _rounded(on_sqlite)


def _rounded(value: Any) -> Any:
    """Floats to 6 significant digits (the databases sum and average in their own order)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value
