"""Whole crawls of the demo web over real HTTP, checked against its ground truth."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.demoweb_crawl import MAX_DEPTH, crawl_settings, demo_server
from tests.integration.resume_checks import durably_done, fetched_after
from topicrawl.core.models import FetchFailure, Page
from topicrawl.demoweb import TOPICS, DemoWebServer
from topicrawl.demoweb.truth import CrawlRules, expected_crawl
from topicrawl.engine import open_storage, run_crawl


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    with demo_server(slow_delay=0.5) as demo:
        yield demo


_settings = crawl_settings


async def _stored(db: Path) -> tuple[list[Page], list[FetchFailure]]:
    async with open_storage(str(db)) as storage:
        pages = [page async for page in storage.iter_pages()]
        failures = [failure async for failure in storage.iter_failures()]
    return pages, failures


async def test_bfs_crawl_reaches_exactly_the_expected_pages(
    server: DemoWebServer, tmp_path: Path
) -> None:
    web = server.web
    settings = _settings(server, tmp_path / "crawl.db", parse_workers=1)
    server.clear_log()
    report = await run_crawl(settings)
    pages, failures = await _stored(tmp_path / "crawl.db")

    rules = CrawlRules.from_settings(settings, hosts=web.bases())
    expected = expected_crawl(web, settings.seeds, rules)
    reached = {web.resolve(page.final_url) for page in pages}
    assert reached == set(expected)
    assert report.stats.pages == len(pages)
    assert report.queued_left == 0

    # robots.txt obeyed: nothing disallowed was ever requested.
    requested = [f"http://{r.host}:{web.port}{r.path}" for r in server.access_log()]
    assert not [url for url in requested if web.robots_disallowed(url)]
    # The calendar trap is bounded by depth: only its months within reach are fetched.
    calendar = [p for p in pages if "/calendar/" in p.final_url]
    assert 0 < len(calendar) == sum(1 for url in expected if "/calendar/" in url)
    assert all(p.depth <= MAX_DEPTH for p in pages)
    # The archive copy repeats an article's text: it is stored, and marked as a duplicate.
    archive = [p for p in pages if "/archive/" in p.final_url]
    assert archive
    assert all(p.duplicate_of is not None for p in archive)
    # Every URL stored once, and no page fetched twice except through a redirect (a redirect
    # followed inline may land on a page already fetched under its own URL).
    assert len({p.url for p in pages}) == len(pages)
    assert _refetched(server) <= _redirects(server)

    kinds = Counter(f.kind.value for f in failures)
    assert kinds["http_404"] > 0
    assert kinds["redirect_loop"] == 1
    assert kinds["too_large"] == 2  # the huge page and the gzip bomb
    assert kinds["content_type"] > 0
    assert kinds["http_5xx"] == 1
    assert report.stats.errors == dict(kinds)


async def test_focused_crawl_beats_bfs_on_harvest_rate(
    server: DemoWebServer, tmp_path: Path
) -> None:
    """Over three topics, 30 pages each: focused finds at least twice as many on-topic pages."""
    web = server.web
    found = Counter[str]()
    for topic in (TOPICS[0], TOPICS[2], TOPICS[3]):
        for strategy in ("bfs", "focused"):
            db = tmp_path / f"{topic.id}-{strategy}.db"
            settings = _settings(
                server, db, strategy=strategy, topics=(topic.keywords(),), max_pages=30
            )
            await run_crawl(settings)
            pages, _ = await _stored(db)
            assert len(pages) == 30
            found[strategy] += sum(
                1
                for p in pages
                if web.find(p.final_url) and web.true_topic(p.final_url) == topic.id
            )
    assert found["focused"] >= 2 * found["bfs"], found


async def test_resume_after_stop_fetches_nothing_twice(
    server: DemoWebServer, tmp_path: Path
) -> None:
    web = server.web
    db = tmp_path / "resume.db"
    server.clear_log()
    first = await run_crawl(_settings(server, db, max_pages=40))
    assert first.stats.pages == 40
    assert first.queued_left > 0
    second = await run_crawl(_settings(server, db))
    assert second.queued_left == 0
    pages, _ = await _stored(db)
    settings = _settings(server, db)
    expected = expected_crawl(
        web, settings.seeds, CrawlRules.from_settings(settings, hosts=web.bases())
    )
    assert {web.resolve(p.final_url) for p in pages} == set(expected)
    assert _refetched(server) <= _redirects(server)


async def test_kill_9_then_resume_loses_nothing(server: DemoWebServer, tmp_path: Path) -> None:
    web = server.web
    db = tmp_path / "killed.db"
    settings = _settings(server, db, concurrency=4)
    argv = [
        sys.executable,
        "-m",
        "topicrawl.cli",
        "crawl",
        "--quiet",
        "--strategy",
        "bfs",
        "--max-pages",
        "0",
        "--concurrency",
        "4",
        "--per-host",
        "1",
        "--delay",
        "0.1",
        "--max-depth",
        str(MAX_DEPTH),
        "--db",
        str(db),
    ]
    for seed in settings.seeds:
        argv += ["--seed", seed]
    for host in web.bases():
        argv += ["--allow-domain", host]
    env = {
        **os.environ,
        "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "0.2",
        "TOPICRAWL_FETCH__TIMEOUT": "5",
        "TOPICRAWL_FETCH__BACKOFF_BASE": "0.05",
    }
    server.clear_log()
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _count_pages(db) < 80:
            await asyncio.sleep(0.1)
        assert child.poll() is None, errors.read_text()
        child.send_signal(signal.SIGKILL)
        killed = time.monotonic()  # the server's access log clock
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    killed_at = _count_pages(db)
    assert killed_at >= 80
    # Stored and durably done in the frontier at the kill: never fetched again. (Acks become
    # durable at checkpoints, every 0.2 s here: the pages stored since the last one, and
    # those fetched but not yet stored, are fetched again.)
    done = durably_done(db)
    assert len(done) >= killed_at // 2
    resumed = subprocess.run(
        argv, check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr

    pages, _ = await _stored(db)
    rules = CrawlRules.from_settings(settings, hosts=web.bases())
    expected = expected_crawl(web, settings.seeds, rules)
    assert {web.resolve(p.final_url) for p in pages} == set(expected)
    assert len({p.url for p in pages}) == len(pages)
    again = fetched_after(server, killed)
    assert again  # the resumed crawl had work left
    assert not again & done, sorted(again & done)


def _count_pages(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return int(con.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.Error:
        return 0


def _refetched(server: DemoWebServer) -> int:
    fetches = Counter((r.host, r.path) for r in server.access_log() if r.status == 200)
    return sum(n - 1 for (_, path), n in fetches.items() if "robots" not in path)


def _redirects(server: DemoWebServer) -> int:
    return sum(1 for r in server.access_log() if 300 <= r.status < 400)
