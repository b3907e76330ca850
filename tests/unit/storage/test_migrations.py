"""Migrations: applied once, in order, in one transaction, and refused when too new."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, Table, Text, text

from topicrawl.core.errors import StorageError
from topicrawl.storage import LATEST_VERSION, MIGRATIONS, Migration, SqlStorage
from topicrawl.storage.migrations import create_tables, migrate
from topicrawl.storage.target import WRITE_OPTION, create_engine, parse_target

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
    assert {"runs", "pages", "links", "failures", "schema_version"} <= tables(path)


async def test_migrating_an_up_to_date_database_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"

    assert await run_migrations(path, MIGRATIONS) == [1]
    assert await run_migrations(path, MIGRATIONS) == []


async def test_a_new_migration_is_applied_to_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path)) as storage:
        await storage.start_run(name="before", config="{}")
    later = (*MIGRATIONS, Migration(2, "topics", _create_topics))

    assert await run_migrations(path, later) == [2]
    assert "topics" in tables(path)
    assert versions(path) == [1, 2]
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT name FROM runs").fetchall() == [("before",)]


def _create_topics(connection: Connection) -> None:
    extra.create_all(connection, tables=[topics])


def _create_then_fail(connection: Connection) -> None:
    _create_topics(connection)
    connection.execute(text("INSERT INTO topics (name) VALUES ('half done')"))
    raise RuntimeError("migration 2 broke half-way")


async def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    await run_migrations(path, MIGRATIONS)
    broken = (*MIGRATIONS, Migration(2, "topics, broken", _create_then_fail))

    with pytest.raises(RuntimeError, match="half-way"):
        await run_migrations(path, broken)

    assert "topics" not in tables(path)
    assert versions(path) == [1]


async def test_a_database_from_a_newer_topicrawl_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    await run_migrations(path, (*MIGRATIONS, Migration(2, "topics", _create_topics)))

    with pytest.raises(StorageError, match="schema version 2") as caught:
        await SqlStorage(str(path)).open()

    assert "upgrade topicrawl" in str(caught.value)


async def test_migrations_must_be_numbered_in_order(tmp_path: Path) -> None:
    gap = (*MIGRATIONS, Migration(3, "skips 2", create_tables(topics)))

    with pytest.raises(StorageError, match="numbered"):
        await run_migrations(tmp_path / "crawl.db", gap)
