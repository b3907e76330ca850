"""Migrations: applied once, in order, in one transaction, and refused when too new."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, Table, Text, inspect, text

from topicrawl.core.errors import StorageError
from topicrawl.core.models import Link, Page
from topicrawl.storage import LATEST_VERSION, MIGRATIONS, Migration, SqlStorage
from topicrawl.storage.migrations import create_tables, migrate
from topicrawl.storage.target import WRITE_OPTION, create_engine, parse_target

# The version a test's own extra migration gets.
NEXT = LATEST_VERSION + 1

extra = MetaData()
topics = Table("topics", extra, Column("id", Integer, primary_key=True), Column("name", Text))


def versions(path: Path) -> list[int]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT version FROM schema_version ORDER BY version")
        return [row[0] for row in rows]


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows}


async def run_migrations(path: Path, migrations: tuple[Migration, ...]) -> list[int]:
    engine = create_engine(parse_target(str(path)), busy_timeout=1.0, connect_timeout=1.0)
    try:
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            return await migrate(connection, migrations)
    finally:
        await engine.dispose()


async def test_opening_creates_the_schema_once(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    for _ in range(3):
        async with SqlStorage(str(path)):
            pass

    assert versions(path) == list(range(1, LATEST_VERSION + 1))
    assert {"runs", "pages", "failures", "schema_version"} <= tables(path)
    # Links live in pages.links since version 2.
    assert "links" not in tables(path)


async def test_migrating_an_up_to_date_database_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"

    assert await run_migrations(path, MIGRATIONS) == list(range(1, LATEST_VERSION + 1))
    assert await run_migrations(path, MIGRATIONS) == []


async def test_a_new_migration_is_applied_to_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path)) as storage:
        await storage.start_run(name="before", config="{}")
    later = (*MIGRATIONS, Migration(NEXT, "topics", _create_topics))

    assert await run_migrations(path, later) == [NEXT]
    assert "topics" in tables(path)
    assert versions(path) == list(range(1, NEXT + 1))
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT name FROM runs").fetchall() == [("before",)]


def _create_topics(connection: Connection) -> None:
    extra.create_all(connection, tables=[topics])


def _create_then_fail(connection: Connection) -> None:
    _create_topics(connection)
    connection.execute(text("INSERT INTO topics (name) VALUES ('half done')"))
    raise RuntimeError("the topics migration broke half-way")


async def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    await run_migrations(path, MIGRATIONS)
    broken = (*MIGRATIONS, Migration(NEXT, "topics, broken", _create_then_fail))

    with pytest.raises(RuntimeError, match="half-way"):
        await run_migrations(path, broken)

    assert "topics" not in tables(path)
    assert versions(path) == list(range(1, LATEST_VERSION + 1))


async def test_a_database_from_a_newer_topicrawl_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    await run_migrations(path, (*MIGRATIONS, Migration(NEXT, "topics", _create_topics)))

    with pytest.raises(StorageError, match=f"schema version {NEXT}") as caught:
        await SqlStorage(str(path)).open()

    assert "upgrade topicrawl" in str(caught.value)


async def test_migrations_must_be_numbered_in_order(tmp_path: Path) -> None:
    gap = (*MIGRATIONS, Migration(NEXT + 1, "skips one", create_tables(topics)))

    with pytest.raises(StorageError, match="numbered"):
        await run_migrations(tmp_path / "crawl.db", gap)


async def test_a_migration_under_way_holds_up_its_own_schema_only(postgres_url: str) -> None:
    """PostgreSQL: a migration still running in one schema (its transaction open) makes a
    second migration of that schema wait, and not one of another schema in the database."""
    admin = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg://", "postgresql://"))
    schemas = [f"mlock_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    engines = [
        create_engine(
            parse_target(f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={name}"),
            busy_timeout=30.0,
            connect_timeout=10.0,
        )
        for name in schemas
    ]
    try:
        for name in schemas:
            await admin.execute(f'CREATE SCHEMA "{name}"')
        held = engines[0].execution_options(**{WRITE_OPTION: True})
        async with held.begin() as connection:
            await migrate(connection, MIGRATIONS[:1])  # open: holds schema one's lock

            async def again(engine: Any) -> list[int]:
                async with engine.execution_options(**{WRITE_OPTION: True}).begin() as other:
                    return await migrate(other, MIGRATIONS[:1])

            same = asyncio.create_task(again(engines[0]))
            assert await asyncio.wait_for(again(engines[1]), 60) == [1]
            assert not same.done()  # still waiting for the first migration
        assert await asyncio.wait_for(same, 60) == []  # applied by the first meanwhile
    finally:
        for engine in engines:
            await engine.dispose()
        for name in schemas:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        await admin.close()


# -- version 2: links move from their own table into pages.links ------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "crawl.db")
        return
    base: str = request.getfixturevalue("postgres_url")
    schema = f"m_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        yield f"{base}{'&' if '?' in base else '?'}schema={schema}"
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await admin.close()


def old_links(n: int) -> list[Link]:
    """The links page ``n`` had in a version 1 database."""
    return [
        Link(f"https://example.org/{n}/{k}", f"anchor {k}", k // 2, f"block {k // 2} of {n}")
        for k in range(n % 4)
    ] + ([Link("https://elsewhere.example/", "away", 9, "", nofollow=True)] if n % 5 == 0 else [])


async def make_version_1(url: str, pages_count: int) -> None:
    """A database as topicrawl with schema version 1 left it: link rows, no pages.links."""
    engine = create_engine(parse_target(url), busy_timeout=1.0, connect_timeout=5.0)
    try:
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            await migrate(connection, MIGRATIONS[:1])
            await connection.execute(text("ALTER TABLE pages DROP COLUMN links"))
            for n in range(pages_count):
                await connection.execute(
                    text(
                        "INSERT INTO pages (url, final_url, status, depth, fetched_at, "
                        "content_type, title, text, score, reasons, elapsed, size, redirects, "
                        "noindex) VALUES (:url, :url, 200, 0, 1.0, 'text/html', '', '', 0, "
                        "'{}', 0, 0, '[]', false)"
                    ),
                    {"url": f"https://example.org/{n}"},
                )
            rows = [
                {
                    "page_id": n + 1,
                    "position": position,
                    "url": link.url,
                    "anchor": link.anchor,
                    "block": link.block,
                    "block_text": link.block_text,
                    "nofollow": link.nofollow,
                }
                for n in range(pages_count)
                for position, link in enumerate(old_links(n))
            ]
            # Rows written out of position order: the migration must restore document order.
            await connection.execute(
                text(
                    "INSERT INTO links (page_id, position, url, anchor, block, block_text, "
                    "nofollow) VALUES (:page_id, :position, :url, :anchor, :block, "
                    ":block_text, :nofollow)"
                ),
                rows[::-1],
            )
    finally:
        await engine.dispose()


async def test_links_of_a_version_1_database_move_into_their_pages(database_url: str) -> None:
    # More pages than one step of the migration packs.
    await make_version_1(database_url, 1203)

    async with SqlStorage(database_url) as storage:
        stored = [page async for page in storage.iter_pages(with_links=True)]
        await storage.save_page(
            Page("https://new/", "https://new/", 200, 0, 2.0, "text/html", links=old_links(3)),
            run_id=1,
        )
        await storage.flush()
        newest = [page async for page in storage.iter_pages(with_links=True)][-1]

    assert [page.url for page in stored] == [f"https://example.org/{n}" for n in range(1203)]
    assert [page.links for page in stored] == [tuple(old_links(n)) for n in range(1203)]
    assert newest.links == tuple(old_links(3))
    engine = create_engine(parse_target(database_url), busy_timeout=1.0, connect_timeout=5.0)
    try:
        async with engine.connect() as connection:
            versions_now = (
                await connection.execute(text("SELECT version FROM schema_version ORDER BY 1"))
            ).scalars()
            assert list(versions_now) == list(range(1, LATEST_VERSION + 1))
            assert not await connection.run_sync(lambda c: inspect(c).has_table("links"))
    finally:
        await engine.dispose()


# -- version 5: one failure per URL (issue 26) -------------------------------------------------


async def test_duplicate_failures_of_a_version_4_database_become_one_per_url(
    database_url: str,
) -> None:
    engine = create_engine(parse_target(database_url), busy_timeout=1.0, connect_timeout=5.0)
    try:
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            await migrate(connection, MIGRATIONS[:4])
            # Version 4's shape: a plain index on failures.url.
            await connection.execute(text("DROP INDEX ix_failures_url"))
            await connection.execute(text("CREATE INDEX ix_failures_url ON failures (url)"))
            for n, url in enumerate(["https://a/", "https://b/", "https://a/", "https://b/"]):
                await connection.execute(
                    text(
                        "INSERT INTO failures (url, kind, message, at, depth, attempts) "
                        "VALUES (:url, 'timeout', :message, :at, 0, 1)"
                    ),
                    {"url": url, "message": f"try {n}", "at": float(n)},
                )
    finally:
        await engine.dispose()

    async with SqlStorage(database_url) as storage:
        kept = [(f.url, f.message) async for f in storage.iter_failures()]

    assert kept == [("https://a/", "try 2"), ("https://b/", "try 3")]
    engine = create_engine(parse_target(database_url), busy_timeout=1.0, connect_timeout=5.0)
    try:
        async with engine.connect() as connection:
            indexes = await connection.run_sync(lambda c: inspect(c).get_indexes("failures"))
    finally:
        await engine.dispose()
    assert [(ix["column_names"], ix["unique"]) for ix in indexes] == [(["url"], True)]
