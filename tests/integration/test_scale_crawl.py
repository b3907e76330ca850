"""A breadth-first crawl of a few thousand pages of the scale web over real HTTP."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb.scaleserver import ScaleServer
from topicrawl.demoweb.scaleweb import ScaleWeb
from topicrawl.engine import run_crawl

HOSTS = 60
PAGES = 2_000


@pytest.fixture(scope="module")
def server() -> Iterator[ScaleServer]:
    web = ScaleWeb(seed=5, hosts=HOSTS, base_address="127.1.200.1", port=0)
    with ScaleServer(web, processes=1) as scale:
        yield scale


def test_the_server_answers_pages_robots_and_404s(server: ScaleServer) -> None:
    web = server.web
    with urllib.request.urlopen(web.url(3, 77)) as answer:
        assert answer.read() == web.page(3, 77).body
        assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    with urllib.request.urlopen(f"http://{web.address(3)}:{web.port}/robots.txt") as answer:
        assert answer.read() == web.robots_txt(3)
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://{web.address(3)}:{web.port}/nothing-here")
    assert missing.value.code == 404
    missing.value.close()


def _settings(web: ScaleWeb, db: Path, pages: int, **frontier: int) -> CrawlSettings:
    return CrawlSettings(
        seeds=tuple(web.seeds()),
        strategy="bfs",
        max_pages=pages,
        concurrency=32,
        parse_workers=1,
        politeness={"per_host": 4},  # type: ignore[arg-type]
        fetch={"timeout": 20.0},  # type: ignore[arg-type]
        frontier=frontier,  # type: ignore[arg-type]
        storage={"url": str(db), "flush_interval": 0.5},  # type: ignore[arg-type]
    )


async def test_a_bfs_crawl_of_2000_pages_spans_the_hosts_and_obeys_robots(
    server: ScaleServer, tmp_path: Path
) -> None:
    web = server.web
    before = server.stats()
    db = tmp_path / "scale.db"
    settings = _settings(web, db, PAGES)
    report = await run_crawl(settings)
    after = server.stats()

    assert report.stats.pages == PAGES
    assert report.queued_left > PAGES  # the web has no end: far more found than fetched
    assert after["disallowed"] == before["disallowed"]  # robots.txt obeyed
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT count(*), count(DISTINCT host) FROM pages").fetchone()
        langs = {lang for (lang,) in conn.execute("SELECT DISTINCT lang FROM pages")}
    assert stored == (PAGES, HOSTS)
    assert {"en", "zh"} <= langs
    # Every page the crawl stored was served once (plus a few in flight at the end).
    assert PAGES <= after["served"] - before["served"] <= PAGES + 32


async def test_a_crawl_with_the_frontier_keys_bounded_fetches_each_page_once(
    server: ScaleServer, tmp_path: Path
) -> None:
    before = server.stats()
    settings = _settings(server.web, tmp_path / "spill.db", 600, memory_keys_per_host=16)
    report = await run_crawl(settings)
    served = server.stats()["served"] - before["served"]
    assert report.stats.pages == 600
    assert 600 <= served <= 600 + 32
    with sqlite3.connect(tmp_path / "spill.db") as conn:
        urls = conn.execute("SELECT count(*), count(DISTINCT url) FROM pages").fetchone()
        # bfs: the seeds (depth 0) all came before any depth-2 page
        depths = [d for (d,) in conn.execute("SELECT depth FROM pages ORDER BY id")]
    assert urls == (600, 600)
    assert depths[: HOSTS // 2].count(0) > HOSTS // 4


class _LockWhenStored(threading.Thread):
    """Takes the database's write lock from another connection once ``after`` pages are
    stored, and holds it for ``seconds`` (many times the crawl's busy timeout)."""

    def __init__(self, db: Path, *, after: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.db, self.after, self.seconds = db, after, seconds
        self.held = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with contextlib.closing(sqlite3.connect(self.db, timeout=30)) as conn:
                    (count,) = conn.execute("SELECT count(*) FROM pages").fetchone()
                    if count >= self.after:
                        conn.isolation_level = None
                        conn.execute("BEGIN IMMEDIATE")
                        self.held.set()
                        self.stop.wait(self.seconds)
                        conn.execute("ROLLBACK")
                        return
            except sqlite3.OperationalError:
                pass  # the tables are not there yet
            self.stop.wait(0.05)


async def test_a_crawl_waits_out_a_lock_longer_than_its_busy_timeout(
    server: ScaleServer, tmp_path: Path
) -> None:
    db = tmp_path / "locked.db"
    settings = _settings(server.web, db, 500)
    settings = settings.model_copy(
        update={"storage": settings.storage.model_copy(update={"busy_timeout": 0.2})}
    )
    holder = _LockWhenStored(db, after=100, seconds=3.0)
    holder.start()
    try:
        report = await run_crawl(settings)
    finally:
        holder.stop.set()
        holder.join()

    assert holder.held.is_set()  # the lock was taken mid-crawl, 15 busy timeouts long
    assert report.stats.pages == 500
    with sqlite3.connect(db) as conn:
        urls = conn.execute("SELECT count(*), count(DISTINCT url) FROM pages").fetchone()
        done = conn.execute("SELECT count(*) FROM frontier_requests WHERE state = 1").fetchone()
    assert urls == (500, 500)
    assert done[0] >= 500  # the acks of every page stored are durable
