"""The background writer never fails silently, even on a bug; unstorable pages are refused."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from topicrawl.core.errors import StorageError
from topicrawl.core.models import Page
from topicrawl.storage import SqlStorage
from topicrawl.storage import sql as sql_module
from topicrawl.storage.rows import PreparedBatch


def page(url: str, status: object = 200) -> Page:
    return Page(
        url=url,
        final_url=url,
        status=status,  # type: ignore[arg-type]
        depth=0,
        fetched_at=1.0,
        content_type="text/html",
    )


async def test_a_page_that_cannot_be_stored_is_refused_when_saved(tmp_path: Path) -> None:
    async with SqlStorage(str(tmp_path / "crawl.db")) as storage:
        with pytest.raises(StorageError, match=r"https://a/.*not a status code"):
            await storage.save_page(page("https://a/", status="not a status code"), run_id=1)
        await storage.save_page(page("https://b/"), run_id=1)

        assert [p.url async for p in storage.iter_pages()] == ["https://b/"]


async def test_a_crashed_writer_is_reported_on_the_next_save(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> PreparedBatch:
        raise RuntimeError("a bug in batch preparation")

    monkeypatch.setattr(sql_module, "prepare_batch", broken)
    storage = SqlStorage(str(tmp_path / "crawl.db"), batch_size=1, flush_interval=0.02)
    await storage.open()
    with caplog.at_level(logging.ERROR, logger="topicrawl.storage"):
        await storage.save_page(page("https://a/"), run_id=1)
        for _ in range(200):
            if any("background writer stopped" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.02)

    with pytest.raises(StorageError, match="background writer stopped: RuntimeError"):
        await storage.save_page(page("https://b/"), run_id=1)
    # The page is still buffered, and the error still surfaces where it is written.
    with pytest.raises(RuntimeError, match="a bug"):
        await storage.flush()
    monkeypatch.undo()
    await storage.close()

    async with SqlStorage(str(tmp_path / "crawl.db")) as reopened:
        assert [p.url async for p in reopened.iter_pages()] == ["https://a/"]


async def test_a_saver_that_found_the_buffer_full_goes_before_later_savers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Savers wait for room in a full buffer in the order they came. A saver used to flush the
    whole buffer itself, queued behind the writer's flush, while savers after it went through
    as soon as the writer had taken a batch: on a loaded machine a page waited so for
    minutes (its lease expired and its URL was fetched again)."""
    storage = SqlStorage(str(tmp_path / "crawl.db"), batch_size=2, flush_interval=0.02)
    await storage.open()
    write = storage._write_taken
    database_free = asyncio.Event()

    async def slow_write(taken: object) -> None:
        await database_free.wait()  # a loaded database: each batch takes its time
        await asyncio.sleep(0.05)
        await write(taken)  # type: ignore[arg-type]

    monkeypatch.setattr(storage, "_write_taken", slow_write)
    done: list[str] = []

    async def save(url: str) -> None:
        await storage.save_page(page(url), run_id=1)
        done.append(url)

    try:
        n = 0
        while storage._buffer.page_count < 16:  # the buffer's bound (8 batches)
            await save(f"https://fill/{n}")
            n += 1
            await asyncio.sleep(0.001)
        first = asyncio.create_task(save("https://first/"))
        await asyncio.sleep(0.05)
        assert not first.done()  # the buffer is full
        database_free.set()
        later = []
        for n in range(6):
            later.append(asyncio.create_task(save(f"https://later/{n}")))
            await asyncio.sleep(0.03)
        await asyncio.wait_for(asyncio.gather(first, *later), 60)
    finally:
        await storage.close()
    waited = [url for url in done if not url.startswith("https://fill/")]
    assert waited == ["https://first/", *(f"https://later/{n}" for n in range(6))]
