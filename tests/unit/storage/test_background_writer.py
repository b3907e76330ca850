"""The background writer never fails silently, even on a bug."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from topicrawl.core.errors import StorageError
from topicrawl.core.models import Page
from topicrawl.storage import SqlStorage


def page(url: str, status: object = 200) -> Page:
    return Page(
        url=url,
        final_url=url,
        status=status,  # type: ignore[arg-type]
        depth=0,
        fetched_at=1.0,
        content_type="text/html",
    )


async def test_a_crashed_writer_is_reported_on_the_next_save(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = SqlStorage(str(tmp_path / "crawl.db"), batch_size=1, flush_interval=0.02)
    await storage.open()
    with caplog.at_level(logging.ERROR, logger="topicrawl.storage"):
        await storage.save_page(page("https://a/", status="not a status code"), run_id=1)
        for _ in range(200):
            if any("background writer stopped" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.02)

    with pytest.raises(StorageError, match="background writer stopped: ValueError"):
        await storage.save_page(page("https://b/"), run_id=1)
    # The bad page is still buffered, and the error still surfaces where it is written.
    with pytest.raises(ValueError, match="not a status code"):
        await storage.flush()
    with pytest.raises(ValueError, match="not a status code"):
        await storage.close()
