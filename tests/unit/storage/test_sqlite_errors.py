"""SQLite failures a user meets: a file another process holds, a file that is not a database."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import event

from topicrawl.core.errors import ConfigError, DatabaseCorrupt, DatabaseLocked, StorageError
from topicrawl.core.models import Page
from topicrawl.storage import SqlStorage

# Another process that takes the write lock, says so, and holds it until its stdin closes.
_HOLDER = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
connection.execute("ROLLBACK")
"""


def page(n: int) -> Page:
    return Page(
        url=f"https://example.org/{n}",
        final_url=f"https://example.org/{n}",
        status=200,
        depth=0,
        fetched_at=1_700_000_000.0,
        content_type="text/html",
        title=f"page {n}",
    )


class LockHolder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> LockHolder:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "locked"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.communicate(timeout=10)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "crawl.db"


async def test_a_file_that_is_not_a_database_is_reported_as_corrupt(db_path: Path) -> None:
    db_path.write_bytes(b"this is not SQLite, just some text\n" * 200)

    with pytest.raises(DatabaseCorrupt, match="is not a usable SQLite database") as caught:
        await SqlStorage(str(db_path)).open()

    assert str(db_path) in str(caught.value)
    # Nothing was written over the user's file.
    assert db_path.read_bytes() == b"this is not SQLite, just some text\n" * 200


async def test_a_database_held_by_another_process_is_reported_as_locked(db_path: Path) -> None:
    first = SqlStorage(str(db_path))
    await first.open()
    await first.close()

    with LockHolder(db_path), pytest.raises(DatabaseLocked) as caught:
        await SqlStorage(str(db_path), busy_timeout=0.2).open()

    assert "another process holds it" in str(caught.value)
    assert str(db_path) in str(caught.value)


async def test_a_fresh_file_locked_by_another_process_is_reported_as_locked(
    db_path: Path,
) -> None:
    with LockHolder(db_path), pytest.raises(DatabaseLocked, match="another process"):
        await SqlStorage(str(db_path), busy_timeout=0.2).open()


async def test_a_write_blocked_by_another_process_keeps_its_batch(db_path: Path) -> None:
    storage = SqlStorage(str(db_path), busy_timeout=0.2, flush_interval=30.0)
    await storage.open()
    try:
        await storage.save_page(page(1), run_id=1)
        with LockHolder(db_path), pytest.raises(DatabaseLocked, match="another process"):
            await storage.flush()
        assert storage.stats.buffered_pages == 1

        await storage.flush()

        assert [p.url async for p in storage.iter_pages()] == [page(1).url]
    finally:
        await storage.close()


async def test_a_locked_background_write_is_reported_and_saves_wait_for_it(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = SqlStorage(str(db_path), busy_timeout=0.1, flush_interval=0.05, batch_size=1)
    await storage.open()

    def waiting() -> bool:
        return any("the buffer is full" in r.getMessage() for r in caplog.records)

    try:
        with LockHolder(db_path), caplog.at_level(logging.WARNING, logger="topicrawl.storage"):
            # The background writer meets the lock; saves are not refused (a lock is
            # transient) until the buffer is full (8 batches): then a save waits for the lock.
            saved, blocked = 0, None
            for n in range(1, 40):
                saving = asyncio.create_task(storage.save_page(page(n), run_id=1))
                while not saving.done() and not waiting():
                    await asyncio.sleep(0.01)
                if not saving.done():
                    blocked = saving
                    break
                saving.result()
                saved = n
            assert blocked is not None
            assert saved >= 7
            for _ in range(3000):  # the background writer's attempts fail and it says so
                if any("storage write put off" in r.getMessage() for r in caplog.records):
                    break
                await asyncio.sleep(0.01)
            assert any("storage write put off" in r.getMessage() for r in caplog.records)
            assert not blocked.done()
        await blocked

        await storage.flush()
        urls = [p.url async for p in storage.iter_pages()]
        assert urls == [page(n).url for n in range(1, saved + 2)]
    finally:
        await storage.close()


async def test_close_says_what_it_could_not_write(db_path: Path) -> None:
    storage = SqlStorage(str(db_path), busy_timeout=0.1, flush_interval=30.0, close_lock_wait=0.3)
    await storage.open()
    await storage.save_page(page(1), run_id=1)

    with LockHolder(db_path), pytest.raises(DatabaseLocked, match="1 pages and 0 failures"):
        await storage.close()


async def test_a_directory_is_not_a_database_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        await SqlStorage(str(tmp_path)).open()


async def test_a_database_under_a_file_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="cannot create the directory"):
        await SqlStorage(str(tmp_path / "file" / "crawl.db")).open()


async def test_the_database_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "crawl.db"
    async with SqlStorage(str(path)) as storage:
        await storage.save_page(page(1), run_id=1)
    assert path.is_file()


async def test_content_hash_look_ups_leave_the_pool_room_for_the_writer(db_path: Path) -> None:
    # A resumed crawl fetches pages again whose hashes the filter knows: every one asks the
    # database. Many at once must not hold every pooled connection (the writer needs one).
    storage = SqlStorage(str(db_path))
    await storage.open()
    try:
        for n in range(60):
            await storage.save_page(dataclasses.replace(page(n), content_hash=f"h{n}"), run_id=1)
        await storage.flush()
        engine = storage._engine
        assert engine is not None
        out, most = 0, 0

        def checkout(*_: object) -> None:
            nonlocal out, most
            out += 1
            most = max(most, out)

        def checkin(*_: object) -> None:
            nonlocal out
            out -= 1

        event.listen(engine.sync_engine, "checkout", checkout)
        event.listen(engine.sync_engine, "checkin", checkin)
        found = await asyncio.gather(*(storage.find_content_hash(f"h{n}") for n in range(60)))
    finally:
        await storage.close()
    assert found == [page(n).url for n in range(60)]
    assert most <= 4
