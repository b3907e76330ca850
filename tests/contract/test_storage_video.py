"""Video pages' media rows (page_media) on SQLite and PostgreSQL: stored with their page, read
back, replaced by a newer fetch, absent for other pages, exported."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator

import pytest

from tests.contract.test_storage import make_page, pages_of
from topicrawl.core.models import MediaUrl, PageVideo
from topicrawl.storage import SqlStorage
from topicrawl.storage.export import export_csv, export_jsonl

HLS = MediaUrl("https://example.org/hls/1/master.m3u8", "hls", source="video")
VARIANT = MediaUrl("https://example.org/hls/1/720p/i.m3u8", "hls", 1280, 720, 2_800_000, "hls")


@pytest.fixture
async def storage(store_url: str) -> AsyncIterator[SqlStorage]:
    opened = SqlStorage(store_url, flush_interval=30.0)
    await opened.open()
    yield opened
    await opened.close()


async def test_media_rows_ride_with_their_pages(storage: SqlStorage) -> None:
    run = await storage.start_run(name="t", config="{}")
    video = PageVideo("play", (HLS, VARIANT), "generic", ("https://example.org/x.mpd: 404",))
    await storage.save_page(make_page(1, video=video), run_id=run)
    await storage.save_page(make_page(2), run_id=run)
    await storage.save_page(make_page(3, video=PageVideo("video")), run_id=run)
    stored = {p.url: p for p in await pages_of(storage)}
    assert stored[make_page(1).url].video == video
    assert stored[make_page(2).url].video is None
    assert stored[make_page(3).url].video == PageVideo("video", (), "", ())

    # a newer fetch replaces the media row; an older one (a late write) does not
    newer = PageVideo("play", (HLS,), "generic")
    await storage.save_page(make_page(1, video=newer, fetched_at=1_800_000_000.0), run_id=run)
    await storage.flush()
    await storage.save_page(make_page(1, video=video), run_id=run)
    stored = {p.url: p for p in await pages_of(storage)}
    assert stored[make_page(1).url].video == newer

    out = io.StringIO()
    await export_jsonl(storage, out)
    records = {r["url"]: r for r in map(json.loads, out.getvalue().splitlines())}
    assert records[make_page(1).url]["video_class"] == "play"
    assert records[make_page(1).url]["media"] == [HLS.as_dict()]
    assert records[make_page(2).url]["media"] == []
    table = io.StringIO()
    await export_csv(storage, table)
    assert HLS.url in table.getvalue()


async def test_a_page_no_longer_a_video_page_loses_its_media_row(storage: SqlStorage) -> None:
    run = await storage.start_run(name="t", config="{}")
    await storage.save_page(make_page(1, video=PageVideo("play", (HLS,), "generic")), run_id=run)
    await storage.flush()
    await storage.save_page(make_page(1, fetched_at=1_800_000_000.0), run_id=run)
    (page,) = await pages_of(storage)
    assert page.video is None
    # a late write of an older video fetch does not bring it back over the newer row... and
    # an older non-video write does not delete a newer media row
    await storage.save_page(make_page(2, video=PageVideo("video"), fetched_at=50.0), run_id=run)
    await storage.flush()
    await storage.save_page(make_page(2, fetched_at=10.0), run_id=run)
    stored = {p.url: p for p in await pages_of(storage)}
    assert stored[make_page(2).url].video is not None
