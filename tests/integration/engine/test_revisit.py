"""``crawl --revisit`` against a loopback site whose pages change on their own clocks.

Page ``/p/0`` changes every 0.5 s, ``/p/1`` every 3 s, the others never; each answers with
an ETag and honours ``If-None-Match`` (304). A "day" lasts 1 s, so tiers are 1, 3 and 7 s.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from topicrawl.core.config import CrawlSettings
from topicrawl.engine.build import run_crawl

PERIODS = {0: 0.5, 1: 3.0}  # seconds between changes; other pages never change
PAGES = 5


class ChangingSite:
    """The site, its clock, and what it answered."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.answers: list[tuple[str, int, bool]] = []  # (path, status, conditional)

    def version(self, n: int) -> int:
        period = PERIODS.get(n)
        return 0 if period is None else int((time.monotonic() - self.started) / period)

    async def page(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        etag = f'"p{n}-v{self.version(n)}"'
        conditional = "If-None-Match" in request.headers
        if request.headers.get("If-None-Match") == etag:
            self.answers.append((request.path, 304, conditional))
            return web.Response(status=304, headers={"ETag": etag})
        links = "".join(f'<a href="/p/{m}">page {m}</a> ' for m in range(PAGES) if m != n)
        html = (
            f"<html><head><title>Page {n}</title></head><body>"
            f"<p>Page {n}, version {self.version(n)}.</p>{links}</body></html>"
        )
        self.answers.append((request.path, 200, conditional))
        return web.Response(text=html, content_type="text/html", headers={"ETag": etag})

    async def page_moved(self, request: web.Request) -> web.Response:
        self.answers.append((request.path, 200, False))
        return web.Response(
            text="<html><body><p>Moved here.</p></body></html>", content_type="text/html"
        )


async def moved(request: web.Request) -> web.Response:
    return web.Response(status=301, headers={"Location": "/moved"})


@pytest.fixture
async def site() -> AsyncIterator[tuple[ChangingSite, str]]:
    changing = ChangingSite()
    app = web.Application()
    app.router.add_get("/p/{n}", changing.page)
    app.router.add_get("/old", moved)
    app.router.add_get("/moved", changing.page_moved)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield changing, f"http://127.0.0.1:{server.port}"
    finally:
        await server.close()


def _options(base: str, db: Path, seconds: float) -> dict[str, object]:
    return {
        "seeds": [f"{base}/p/0"],
        "max_pages": 0,
        "concurrency": 2,
        "parse_workers": 0,
        "politeness": {"delay": 0.0, "obey_robots": False},
        "frontier": {"kind": "sqlite"},
        "storage": {"url": str(db), "flush_interval": 0.2},
        "revisit": {"enabled": True, "day_seconds": 1.0, "max_seconds": seconds},
    }


def _query(db: Path, sql: str) -> list[tuple[object, ...]]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute(sql).fetchall()
    except sqlite3.OperationalError:  # the tables do not exist yet
        return []


async def test_a_revisit_crawl_refetches_due_pages_and_keeps_every_fetch(
    site: tuple[ChangingSite, str], tmp_path: Path
) -> None:
    changing, base = site
    db = tmp_path / "revisit.db"
    report = await run_crawl(CrawlSettings(**_options(base, db, 9.0)))  # type: ignore[arg-type]
    assert report.stats.pages >= PAGES
    rows = _query(db, "SELECT url, status, changed FROM page_history ORDER BY id")
    per_page: dict[str, list[tuple[int, bool]]] = {}
    for url, status, changed in rows:
        per_page.setdefault(str(url).rsplit("/", 1)[1], []).append((int(status), bool(changed)))  # type: ignore[arg-type]
    assert set(per_page) == {str(n) for n in range(PAGES)}
    # Every page is fetched again (tier 1 = 1 s while its rate is learned), not only once.
    assert all(len(fetches) >= 3 for fetches in per_page.values()), per_page
    # The fast page changed at nearly every revisit; a static page never did, and came
    # back as 304 (its ETag went back as If-None-Match).
    fast = per_page["0"][1:]
    assert sum(changed for _, changed in fast) >= len(fast) - 1
    static = per_page["3"][1:]
    assert not any(changed for _, changed in static)
    assert {status for status, _ in static} == {304}
    assert all(conditional for path, status, conditional in changing.answers if status == 304)
    rates = dict(_query(db, "SELECT url, rate FROM page_history ORDER BY id"))
    assert rates[f"{base}/p/0"] > rates[f"{base}/p/3"] == 0.0  # type: ignore[operator]
    due = _query(db, "SELECT count(*) FROM frontier_due")
    assert due[0][0] == PAGES


async def test_a_redirected_page_is_revisited_too(
    site: tuple[ChangingSite, str], tmp_path: Path
) -> None:
    changing, base = site
    db = tmp_path / "redirect.db"
    options = _options(base, db, 4.0)
    options["seeds"] = [f"{base}/old"]
    await run_crawl(CrawlSettings(**options))  # type: ignore[arg-type]
    fetched = _query(db, f"SELECT count(*) FROM page_history WHERE url = '{base}/old'")
    assert fetched[0][0] >= 2
    assert sum(1 for path, _, _ in changing.answers if path == "/moved") == fetched[0][0]


CHILD = """
import asyncio, json, sys
from topicrawl.core.config import CrawlSettings
from topicrawl.engine.build import run_crawl

asyncio.run(run_crawl(CrawlSettings(**json.loads(sys.argv[1]))))
"""


@pytest.mark.slow
async def test_kill_9_during_a_revisit_crawl_then_resume_loses_no_due_page(
    site: tuple[ChangingSite, str], tmp_path: Path
) -> None:
    _, base = site
    db = tmp_path / "killed.db"
    command = [sys.executable, "-c", CHILD, json.dumps(_options(base, db, 120.0))]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while asyncio.get_running_loop().time() < deadline:
            revisited = _query(db, "SELECT count(*) FROM frontier_due")
            history = _query(db, "SELECT count(*) FROM page_history")
            if (revisited and revisited[0][0] >= PAGES and history[0][0] >= 2 * PAGES) or (
                child.poll() is not None
            ):
                break
            await asyncio.sleep(0.05)
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    stored = {str(url) for (url,) in _query(db, "SELECT url FROM pages")}
    assert len(stored) == PAGES
    # Nothing fetched is durably done: every stored page is still queued for its revisit.
    done = _query(db, "SELECT url FROM frontier_requests WHERE state = 1")
    assert done == []
    killed_at = time.time()

    await run_crawl(CrawlSettings(**_options(base, db, 8.0)))  # type: ignore[arg-type]
    after = {
        str(url)
        for (url,) in _query(db, f"SELECT url FROM page_history WHERE fetched_at > {killed_at}")
    }
    assert after == stored  # every page came due and was fetched again after the restart
