"""The API's topic filter, the priorities of links not fetched, and databases without a run
or at an older schema."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

import pytest

from tests.web.support import LiveDashboard, crawl_demo, live_dashboard
from tests.web.test_api_security import get
from topicrawl.demoweb import DemoWebServer
from topicrawl.storage import SqlStorage

TOPIC = "astronomy telescope galaxy planet"  # the demo crawl's one topic (tests/web/support.py)


def test_pages_are_filtered_by_the_topic_their_strategy_found(dashboard: LiveDashboard) -> None:
    (run,) = get(dashboard.base + "/api/runs").json()["runs"]
    assert run["topic_names"] == [TOPIC]
    everything = get(dashboard.base + "/api/pages?limit=200").json()["pages"]
    quoted = urllib.parse.quote(TOPIC)
    on_topic = get(dashboard.base + f"/api/pages?topic={quoted}&limit=200").json()["pages"]
    # Every page the focused strategy scored is filed under its (only) topic.
    assert on_topic
    assert {p["topic"] for p in on_topic} == {TOPIC}
    assert {p["id"] for p in on_topic} == {p["id"] for p in everything if p["topic"] == TOPIC}
    assert not get(dashboard.base + "/api/pages?topic=astronomy&limit=200").json()["pages"]
    searched = get(dashboard.base + f"/api/pages?topic={quoted}&q=telescope").json()["pages"]
    assert searched
    assert all(p["topic"] == TOPIC for p in searched)


def test_page_detail_gives_the_priority_of_links_fetched_or_not(
    dashboard: LiveDashboard,
) -> None:
    pages = get(dashboard.base + "/api/pages?limit=200").json()["pages"]
    details = [get(dashboard.base + f"/api/pages/{p['id']}").json() for p in pages[:40]]
    with_links = [d for d in details if d["outlinks"] and d["outlinks_scored"]]
    assert with_links
    outlinks = [link for d in with_links for link in d["outlinks"]]
    scored = [link for link in outlinks if link["scored"] is not None]
    # Links the page's strategy scored have their score and components, fetched or not.
    assert scored
    for link in scored:
        assert {"anchor", "block", "inherited"} <= set(link["scored"]["reasons"]), link
        assert isinstance(link["scored"]["score"], float)
    # Also links never fetched (their priority is known nowhere else), not only fetched ones.
    assert any(link["fetched"] is None for link in scored)


@pytest.mark.parametrize(
    ("strategy", "components"),
    [("shark", {"anchor", "context", "inherited", "page"}), ("best-first", {"page"})],
)
def test_shark_and_best_first_crawls_show_their_link_priorities(
    tmp_path: Path, demo_server: DemoWebServer, strategy: str, components: set[str]
) -> None:
    db = tmp_path / "crawl.db"
    crawl_demo(demo_server, db, strategy=strategy, max_pages=15)

    with live_dashboard(db) as live:
        pages = get(live.base + "/api/pages?limit=15").json()["pages"]
        details = [get(live.base + f"/api/pages/{p['id']}").json() for p in pages]

    scored = [link for d in details for link in d["outlinks"] if link["scored"] is not None]
    assert sum(d["outlinks_scored"] for d in details) >= len(scored) > 0
    for link in scored:
        assert set(link["scored"]["reasons"]) == components, link
    assert any(link["fetched"] is None for link in scored)


def test_live_answers_on_a_database_with_no_run_yet(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"

    async def make() -> None:
        async with SqlStorage(str(db)):
            pass

    asyncio.run(make())
    with live_dashboard(db) as live:
        answer = get(live.base + "/api/live")
        assert answer.status == 200, answer.body[:300]
        assert answer.json()["run"] is None
        assert answer.json()["totals"]["pages"] == 0
