"""A crawl of the demo video site over HTTP, across a template change: video pages, their
media URLs stored and exported, manifests fetched politely, media files only when asked."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import Page
from topicrawl.demoweb.video import VersionSchedule, VideoServer, build_video_site
from topicrawl.engine import open_storage, run_crawl
from topicrawl.storage.export import export_csv, export_jsonl


@pytest.fixture
def server() -> Iterator[VideoServer]:
    site = build_video_site(seed=3, titles=16)
    schedule = VersionSchedule.after_requests(40, "structural")
    with site.server(version_schedule=schedule).run_in_thread() as running:
        yield running


def _settings(server: VideoServer, db: Path, **extra: object) -> CrawlSettings:
    site = server.site
    # Lists link every title and play page; the hard cases, the negatives and the embed pages
    # (named only by JSON-LD embedUrl and twitter:player) are seeded.
    seeds = [
        site.url(p)
        for p in site.paths()
        if site.truth(p).kind in ("list", "negative") or site.truth(p).subkind == "embed"
    ]
    options: dict[str, object] = {
        "seeds": tuple(seeds),
        "strategy": "bfs",
        "max_pages": 0,
        "concurrency": 8,
        "parse_workers": 1,
        "politeness": {"per_host": 4},
        "scope": {"max_depth": 4},
        "fetch": {"timeout": 5.0},
        "storage": {"url": str(db), "flush_interval": 0.2},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]


async def _pages(db: Path) -> list[Page]:
    async with open_storage(str(db)) as storage:
        return [page async for page in storage.iter_pages()]


async def test_crawl_stores_video_pages_and_media_across_a_template_change(
    server: VideoServer, tmp_path: Path
) -> None:
    site = server.site
    db = tmp_path / "video.db"
    report = await run_crawl(_settings(server, db))
    pages = {urlsplit(p.final_url).path: p for p in await _pages(db)}
    plays = [p for p in site.paths() if site.truth(p).video_class == "play"]
    assert report.video["pages/play"] == len(plays)
    assert report.video["manifests/fetched"] > 0
    labelled = [p for p in site.paths() if p in pages]
    assert len(labelled) == len(site.paths())  # every labelled page reached
    assert {s.version for s in server.served()} == {"v1", "structural"}
    for path in labelled:
        truth, page = site.truth(path), pages[path]
        stored = page.video.video_class if page.video is not None else "none"
        assert stored == truth.video_class, path
        got = {m.url for m in page.video.media} if page.video is not None else set()
        assert got == {m.url for m in truth.media}, path
    # manifests were fetched (to list renditions); listed media files were not
    requested = server.requested()
    assert any(p.endswith(".m3u8") for p in requested)
    assert any(p.endswith(".mpd") for p in requested)
    listed = {
        urlsplit(m.url).path
        for p in site.paths()
        for m in site.truth(p).media
        if m.type not in ("hls", "dash")
    }
    assert not listed & set(requested)
    assert not [p for p in requested if p.endswith(".ts")]

    async with open_storage(str(db)) as storage:
        out = io.StringIO()
        await export_jsonl(storage, out)
        records = [json.loads(line) for line in out.getvalue().splitlines()]
        table = io.StringIO()
        await export_csv(storage, table)
    hls = next(r for r in records if any(m["type"] == "hls" and m["height"] for m in r["media"]))
    assert hls["video_class"] == "play"
    variant = next(m for m in hls["media"] if m["type"] == "hls" and m["height"])
    assert variant["bitrate"]
    assert variant["source"] == "hls"
    assert variant["url"] in table.getvalue()


async def test_fetch_media_fetches_listed_files_only(server: VideoServer, tmp_path: Path) -> None:
    site = server.site
    plays = [p for p in site.paths() if site.truth(p).kind == "play"][:6]
    settings = _settings(
        server,
        tmp_path / "media.db",
        seeds=tuple(site.url(p) for p in plays),
        scope={"max_depth": 0},
        video={"fetch_media": True, "max_media_bytes": 100_000},
    )
    await run_crawl(settings)
    requested = set(server.requested())
    files = {
        urlsplit(m.url).path
        for p in plays
        for m in site.truth(p).media
        if m.type in ("mp4", "webm")
    }
    assert files
    assert files <= requested
    # segments are not media URLs: never fetched
    assert not [p for p in requested if p.endswith(".ts")]


async def test_video_off_stores_no_video(server: VideoServer, tmp_path: Path) -> None:
    site = server.site
    play = next(p for p in site.paths() if site.truth(p).media)
    settings = _settings(
        server,
        tmp_path / "off.db",
        seeds=(site.url(play),),
        scope={"max_depth": 0},
        video={"detect": False},
    )
    await run_crawl(settings)
    (page,) = await _pages(tmp_path / "off.db")
    assert page.video is None


async def test_follow_embeds_reaches_player_pages(server: VideoServer, tmp_path: Path) -> None:
    site = server.site
    embeds = [p for p in site.paths() if site.truth(p).subkind == "embed"]
    assert embeds
    # the main templates' embed pages are named by their play page's JSON-LD / twitter:player;
    # the iframe cases' player pages by an <iframe> on a page whose truth names them
    parents = [site.url(p.replace("/embed/", "/play/")) for p in embeds if p.startswith("/embed/")]
    parents += [site.url(p) for p in site.paths() if site.truth(p).embeds]
    assert len(parents) == len(embeds)
    settings = _settings(
        server,
        tmp_path / "embeds.db",
        seeds=tuple(parents),
        scope={"max_depth": 1},
        video={"follow_embeds": True},
        max_pages=0,
    )
    await run_crawl(settings)
    stored = {urlsplit(p.final_url).path: p for p in await _pages(tmp_path / "embeds.db")}
    for path in embeds:
        assert path in stored, path
        video = stored[path].video
        assert video is not None
        assert {m.url for m in video.media} == {m.url for m in site.truth(path).media}
