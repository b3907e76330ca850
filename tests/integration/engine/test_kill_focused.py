"""Issue #26: a focused crawl killed with SIGKILL mid-crawl and run again with the same command
ends with its page budget, every page stored once, nothing stored before the kill lost, and
the focus state (topic vectors, threshold, pages seen) continued from what was saved before
the kill, not started afresh. And a page fetched again after a kill (its ack was not yet
durable) counts once toward the page budget."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.engine.servers import serve, working_site
from tests.integration.resume_checks import durably_done, fetched_after
from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import TOPICS, DemoWeb, DemoWebServer
from topicrawl.engine import open_storage, run_crawl
from topicrawl.focus import LearnedState
from topicrawl.storage.learned import FocusRecords

BUDGET = 90
KILL_AT = 35  # pages stored (and two focus states saved) before the kill
TOPIC = TOPICS[0]

# The crawl as a command of its own: the CLI with its learned state saved at every
# checkpoint (the CLI saves it every 30 s, longer than this whole crawl takes).
CHILD = """
import asyncio, json, sys
from tests.integration.engine.servers import serve, working_site
from tests.integration.resume_checks import durably_done, fetched_after
from topicrawl.core.config import CrawlSettings
from topicrawl.engine.build import open_crawl

async def crawl() -> None:
    settings = CrawlSettings(**json.loads(sys.argv[1]))
    async with open_crawl(settings, learning_interval=0.0) as crawler:
        stats = await crawler.run()
        print(json.dumps({"pages": stats.pages, "left": await crawler.frontier.queued()}))

asyncio.run(crawl())
"""


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=4, pages_per_host=30)
    demo = DemoWebServer(web, slow_delay=0.2)
    with demo.run_in_thread():
        yield demo


def _options(server: DemoWebServer, db: Path) -> dict[str, object]:
    bases = server.web.bases()
    return {
        "seeds": list(bases.values()),
        "strategy": "focused",
        "topics": [TOPIC.keywords()],
        "strategy_options": {"evolve": True, "update_every": 5, "judge_every": 10},
        "max_pages": BUDGET,
        "concurrency": 2,
        "parse_workers": 0,
        # ~40 requests a second at most: the kill lands long before the budget is reached.
        "politeness": {"per_host": 1, "delay": 0.1},
        "frontier": {"kind": "sqlite"},
        "scope": {"allowed_domains": list(bases), "max_depth": 8},
        "fetch": {"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 1.0},
        "storage": {"url": str(db), "flush_interval": 0.2},
    }


def _query(db: Path, sql: str) -> list[tuple[object, ...]]:
    """Rows from the crawl database as another process sees them ([] before it exists)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute(sql).fetchall()
    except sqlite3.OperationalError:  # not created yet, or briefly locked
        return []


def _stored_and_saved(db: Path) -> tuple[int, int]:
    pages = _query(db, "SELECT count(*) FROM pages")
    states = _query(db, "SELECT count(*) FROM focus_states")
    return (int(pages[0][0]) if pages else 0, int(states[0][0]) if states else 0)


async def _states(db: Path) -> list[LearnedState]:
    async with FocusRecords(str(db)) as records:
        return [LearnedState.from_json(saved.state) for saved in await records.states()]


def _on_topic(web: DemoWeb, urls: set[str]) -> int:
    return sum(1 for url in urls if web.find(url) is not None and web.true_topic(url) == TOPIC.id)


@pytest.mark.slow
async def test_kill_9_of_a_focused_crawl_then_resume_keeps_pages_and_focus(
    server: DemoWebServer, tmp_path: Path
) -> None:
    web = server.web
    reference_db = tmp_path / "reference.db"
    await run_crawl(CrawlSettings(**_options(server, reference_db)))  # type: ignore[arg-type]
    async with open_storage(str(reference_db)) as storage:
        reference = {p.final_url async for p in storage.iter_pages()}
    assert len(reference) == BUDGET

    db = tmp_path / "killed.db"
    command = [sys.executable, "-c", CHILD, json.dumps(_options(server, db))]
    server.clear_log()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = asyncio.get_running_loop().time() + 120
        while asyncio.get_running_loop().time() < deadline:
            pages, states = _stored_and_saved(db)
            if (pages >= KILL_AT and states >= 2) or child.poll() is not None:
                break
            await asyncio.sleep(0.05)
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
        if child.stderr is not None:
            child.stderr.close()

    before = {str(url): at for url, at in _query(db, "SELECT url, fetched_at FROM pages")}
    assert KILL_AT <= len(before) < BUDGET
    done = durably_done(db)  # never to be fetched again
    assert done
    saved_before = (await _states(db))[-1]
    # Saved when its learning changed (not for every page): it learned before the kill.
    assert 0 < saved_before.pages <= len(before)
    assert len(saved_before.thresholds) > 1 or len(saved_before.topics[0].snapshots) > 1

    resumed = subprocess.run(command, check=False, capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr

    async with open_storage(str(db)) as storage:
        pages = [p async for p in storage.iter_pages()]
    urls = [p.url for p in pages]
    assert len(urls) == len(set(urls)) == BUDGET  # the budget, every page once
    after = {p.url: p.fetched_at for p in pages}
    assert set(before) <= set(after)  # nothing stored before the kill is lost
    # Stored again (its row replaced): only pages not durably done.
    assert all(after[url] == at for url, at in before.items() if url in done)
    # Fetched again: only pages not durably done at the kill (stored, but the frontier's
    # ack, or even its push, came after its last commit; or fetched but not yet stored).
    again = fetched_after(server, killed)
    assert again
    assert not again & done

    # The focus state went on from the one saved before the kill.
    final = (await _states(db))[-1]
    assert final.topic_names() == saved_before.topic_names()
    for topic_before, topic_after in zip(saved_before.topics, final.topics, strict=True):
        assert topic_after.snapshots[: len(topic_before.snapshots)] == topic_before.snapshots
    assert final.thresholds[: len(saved_before.thresholds)] == saved_before.thresholds
    # Every page of the resumed run counted once more (the ones fetched again too).
    resumed_pages = BUDGET - len(before)
    assert resumed_pages <= final.pages - saved_before.pages <= resumed_pages + len(before)
    assert 0.0 < final.threshold <= 1.0
    # And it stayed focused: about as many on-topic pages as the crawl that was never killed.
    found = {p.final_url for p in pages}
    assert _on_topic(web, found) >= 0.8 * _on_topic(web, reference) > 0


async def test_a_page_fetched_again_after_a_kill_counts_once_toward_the_budget(
    tmp_path: Path,
) -> None:
    db = tmp_path / "budget.db"

    def settings(max_pages: int) -> CrawlSettings:
        return CrawlSettings(
            seeds=(f"{base}/page/0",),
            strategy="bfs",
            max_pages=max_pages,
            concurrency=1,
            parse_workers=0,
            storage={"url": str(db), "flush_interval": 0.2},
        )

    async with serve(working_site()) as base:
        await run_crawl(settings(3))
        # As a kill leaves it: page 2 stored, its ack not yet durable in the frontier.
        with sqlite3.connect(db) as con:
            con.execute("UPDATE frontier_requests SET state = 0 WHERE url LIKE '%/page/2'")
        report = await run_crawl(settings(5))
    async with open_storage(str(db)) as storage:
        urls = [p.url async for p in storage.iter_pages()]
    assert sorted(urls) == [f"{base}/page/{n}" for n in range(5)]
    assert report.stats.pages == 5
