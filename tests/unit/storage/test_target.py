"""Storage URLs: which database they name, and the mistakes they are refused for."""

from __future__ import annotations

import asyncio
import socket
import uuid
from pathlib import Path

import asyncpg
import pytest

from topicrawl.core.errors import ConfigError, StorageError
from topicrawl.storage import SqlStorage, parse_target


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("crawl.db", "crawl.db"),
        ("data/crawl.db", "data/crawl.db"),
        ("/var/lib/topicrawl/crawl.db", "/var/lib/topicrawl/crawl.db"),
        ("sqlite:///crawl.db", "crawl.db"),
        ("sqlite:////abs/crawl.db", "/abs/crawl.db"),
        ("sqlite+aiosqlite:///x/crawl.db", "x/crawl.db"),
    ],
)
def test_sqlite_paths(url: str, path: str) -> None:
    target = parse_target(url)

    assert target.dialect == "sqlite"
    assert target.path == Path(path)
    assert target.url.drivername == "sqlite+aiosqlite"


def test_home_is_expanded() -> None:
    target = parse_target("~/crawl.db")
    assert target.path == Path.home() / "crawl.db"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://crawler:s3cret@db.example:6543/crawl",
        "postgres://crawler:s3cret@db.example:6543/crawl",
        "postgresql+asyncpg://crawler:s3cret@db.example:6543/crawl",
    ],
)
def test_postgres_urls_use_asyncpg_and_never_show_the_password(url: str) -> None:
    target = parse_target(url)

    assert target.dialect == "postgresql"
    assert target.url.drivername == "postgresql+asyncpg"
    assert target.url.password == "s3cret"
    assert target.display == "db.example:6543/crawl"
    assert target.host == "db.example"
    assert target.schema is None


def test_postgres_schema_and_application_name_come_from_the_query() -> None:
    target = parse_target(
        "postgresql://u@h/db?schema=crawl_2024&application_name=worker-3&sslmode=disable"
    )

    assert target.schema == "crawl_2024"
    assert target.application_name == "worker-3"
    # libpq's sslmode goes to asyncpg as its ssl argument (asyncpg takes no sslmode keyword).
    assert dict(target.url.query) == {}
    assert target.driver_options == (("ssl", "disable"),)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (":memory:", "file path"),
        ("sqlite://", "file path"),
        ("sqlite:///:memory:", "file path"),
        ("mysql://u@h/db", "not supported"),
        ("postgresql+psycopg2://u@h/db", "not supported"),
        ("postgresql://u@h/db?schema=drop table x", "schema name"),
        ("postgresql://u@h/db?schema=1abc", "schema name"),
        ("postgresql://u@h/db?schema=a&schema=b", "more than once"),
    ],
)
def test_bad_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_target(url)


def test_bad_numbers_are_refused() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        SqlStorage("crawl.db", batch_size=0)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_postgres_names_its_host() -> None:
    port = _closed_port()
    storage = SqlStorage(
        f"postgresql://crawler:s3cret-pw@127.0.0.1:{port}/crawl", connect_timeout=2
    )

    with pytest.raises(StorageError) as caught:
        await storage.open()

    message = str(caught.value)
    assert f"cannot connect to PostgreSQL at 127.0.0.1:{port}/crawl" in message
    assert "s3cret-pw" not in message


async def test_an_unknown_postgres_database_is_reported(postgres_url: str) -> None:
    url = postgres_url.rsplit("/", 1)[0] + "/no_such_database_here"

    with pytest.raises(StorageError, match="no_such_database_here") as caught:
        await SqlStorage(url).open()

    assert "cannot connect to PostgreSQL at 127.0.0.1:5432" in str(caught.value)


async def test_a_postgres_command_that_gets_no_answer_times_out_and_is_retried(
    postgres_url: str,
) -> None:
    # A write that waits on a lock stands for one whose session the server ended while the
    # network was cut: either way no answer comes. It fails as a lost connection would,
    # instead of waiting forever, and the retry on a fresh connection goes through.
    schema = f"ct_{uuid.uuid4().hex[:12]}"
    url = f"{postgres_url}?schema={schema}"
    plain = postgres_url.replace("postgresql+asyncpg", "postgresql")
    locker = await asyncpg.connect(plain)
    try:
        # The schema is made first without the short command timeout: under load one of the
        # migration's statements can take longer than 0.5 s by itself.
        async with SqlStorage(url):
            pass
        async with (
            SqlStorage(url, command_timeout=0.5, retries=0) as storage,
            locker.transaction(),
        ):
            await locker.execute(f'LOCK TABLE "{schema}".runs IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(StorageError, match="PostgreSQL"):
                await asyncio.wait_for(storage.start_run(name="x", config="{}"), 60)
        async with SqlStorage(url, command_timeout=0.5, retries=8) as storage:
            async with locker.transaction():
                await locker.execute(f'LOCK TABLE "{schema}".runs IN ACCESS EXCLUSIVE MODE')
                write = asyncio.create_task(storage.start_run(name="y", config="{}"))
                await asyncio.sleep(1.0)  # the write has timed out at least once meanwhile
                assert not write.done()
            assert await asyncio.wait_for(write, 60) > 0
    finally:
        await locker.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await locker.close()
