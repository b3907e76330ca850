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
