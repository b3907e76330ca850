"""The dashboard in a real browser (the system Chromium through Playwright): every page renders
from the API, search finds what it should, the live panel moves while a crawl runs, and no
script from crawled content ever runs."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REDIS_URL, require_service
from tests.web.browser import Browser, launch
from tests.web.conftest import TOKEN
from tests.web.support import (
    MARKER,
    SEARCH_WORD,
    HostileSite,
    LiveDashboard,
    crawl_demo,
    live_dashboard,
    run_async,
)
from tests.web.test_api_security import get
from topicrawl.demoweb import DemoWeb, DemoWebServer

HOSTILE_PAGES = (
    "script.html",
    "handlers.html",
    "jslink.html",
    "refresh.html",
    "svg.html",
    "title.html",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    yield from launch(tmp_path_factory.mktemp("screenshots"))


def _expect() -> Any:
    from playwright.sync_api import expect  # noqa: PLC0415

    return expect


def test_every_page_renders_and_nothing_crawled_runs(
    browser: Browser, dashboard: LiveDashboard, hostile: HostileSite
) -> None:
    expect = _expect()
    page, watch = browser.open(dashboard.base)

    page.goto(dashboard.base + "/")
    expect(page.locator("#stat-pages")).to_have_text(re.compile(r"^\d[\d,]*$"))
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#chart-rate .main-svg").first).to_be_attached()
    expect(page.locator("#findings li")).not_to_have_text("reading…")
    browser.screenshot(page, "overview")

    page.goto(dashboard.base + "/pages")
    expect(page.locator("#results tbody tr").first).to_be_visible()
    assert page.locator("#results tbody tr").count() == 50
    expect(page.locator("#next")).to_be_visible()
    browser.screenshot(page, "pages")

    page.goto(dashboard.base + "/graph")
    expect(page.locator("#graph-status")).to_contain_text("knowledge graph is empty")
    browser.screenshot(page, "graph")

    page.goto(dashboard.base + "/nodes")
    expect(page.locator("#nodes-summary")).to_contain_text("not a distributed crawl")

    # Every hostile page's detail, with its raw HTML in the sandboxed frame.
    found = get(dashboard.base + f"/api/pages?q={SEARCH_WORD}&limit=50").json()["pages"]
    by_name = {p["url"].rsplit("/", 1)[1]: p for p in found}
    for name in HOSTILE_PAGES:
        hostile_page = by_name[name]
        page.goto(dashboard.base + f"/pages/{hostile_page['id']}")
        expect(page.locator("#page-title")).to_have_text(hostile_page["title"])
        raw = page.frame_locator("#raw")
        expect(raw.locator("body")).to_contain_text(SEARCH_WORD)
        if name == "jslink.html":
            raw.get_by_text("click me").click()
        if name == "handlers.html":
            raw.get_by_text("hover").hover()
        page.wait_for_timeout(700)  # the refresh is due at once; scripts would have run
        assert page.url == dashboard.base + f"/pages/{hostile_page['id']}"
    # The title's markup is text on the page, not an element.
    assert page.locator("#page-title img").count() == 0
    expect(page.locator("#page-title")).to_contain_text("<img src=x onerror=")
    browser.screenshot(page, "page", full_page=True)

    # Opened on its own (not framed), the raw route still runs nothing.
    page.goto(dashboard.base + f"/raw/{by_name['script.html']['id']}")
    page.wait_for_timeout(500)
    page.goto(dashboard.base + f"/raw/{by_name['refresh.html']['id']}")
    page.wait_for_timeout(1000)

    watch.assert_nothing_ran(MARKER)
    assert hostile.browser_requests == []
    # Scripts were there to be refused: Chromium said so.
    assert any("sandboxed" in text or "Blocked" in text for _, text in watch.console)


def test_search_finds_what_it_should(browser: Browser, dashboard: LiveDashboard) -> None:
    expect = _expect()
    page, watch = browser.open(dashboard.base)
    page.goto(dashboard.base + "/pages")
    page.fill("input[name=q]", SEARCH_WORD)
    page.click("button[type=submit]")
    expect(page.locator("#results tbody tr")).to_have_count(len(HOSTILE_PAGES) + 1)
    titles = page.locator("#results a.title").all_text_contents()
    assert "script tag" in titles
    assert "meta refresh" in titles
    assert page.locator("#results img, #results script, #results svg").count() == 0
    browser.screenshot(page, "search")

    page.fill("input[name=q]", "telescope galaxy")
    page.fill("input[name=host]", "127.0.0.1")
    page.click("button[type=submit]")
    expect(page.locator("#results tbody")).to_contain_text("no page matches")

    # By the topic the focused strategy filed each page under (the run's one topic here).
    page.goto(dashboard.base + "/pages")
    page.select_option("select[name=topic]", "astronomy telescope galaxy planet")
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"topic=astronomy"))
    expect(page.locator("#results tbody tr").first).to_contain_text(
        "astronomy telescope galaxy planet"
    )

    # The keyset "next" link moves on to older pages, none repeated.
    page.goto(dashboard.base + "/pages")
    first = page.locator("#results a.title").evaluate_all("links => links.map(a => a.href)")
    page.click("#next")
    expect(page).to_have_url(re.compile(r"after="))
    expect(page.locator("#results tbody tr").first).to_be_visible()
    second = page.locator("#results a.title").evaluate_all("links => links.map(a => a.href)")
    assert second
    assert not set(first) & set(second)
    watch.assert_nothing_ran(MARKER)


def _wait_for_run(db: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
                    if connection.execute("SELECT count(*) FROM runs").fetchone()[0]:
                        return
            except sqlite3.Error:
                pass
        time.sleep(0.1)
    raise AssertionError("the crawl did not start")


def test_the_live_panel_updates_while_a_crawl_runs(browser: Browser, tmp_path: Path) -> None:
    expect = _expect()
    web = DemoWeb.generate(seed=5, hosts=2, pages_per_host=30)
    server = DemoWebServer(web, slow_delay=0.3)
    db = tmp_path / "live.db"
    with server.run_in_thread():
        # Slow enough to watch: one request at a time per host, 0.15 s apart.
        crawl = threading.Thread(
            target=crawl_demo,
            args=(server, db),
            kwargs={"concurrency": 2, "politeness": {"per_host": 1, "delay": 0.15}},
        )
        crawl.start()
        try:
            _wait_for_run(db, time.monotonic() + 60)
            with live_dashboard(db) as dashboard:
                page, watch = browser.open(dashboard.base)
                page.goto(dashboard.base + "/")
                expect(page.locator("#live-run")).to_contain_text("running")
                counter = page.locator("#stat-pages")
                expect(counter).to_have_text(re.compile(r"^\d+$"))
                first = int(counter.inner_text())
                expect(counter).not_to_have_text(str(first), timeout=30_000)
                assert int(counter.inner_text()) > first
                browser.screenshot(page, "overview-live")
                crawl.join(120)
                expect(page.locator("#live-run")).to_contain_text("finished", timeout=30_000)
                # The runs table is read again when the run ends.
                expect(page.locator("#runs tbody tr").first).not_to_contain_text("running")
                final = get(dashboard.base + "/api/runs").json()["runs"][0]["stats"]["pages"]
                expect(counter).to_have_text(str(final))
                watch.assert_nothing_ran(MARKER)
        finally:
            crawl.join(120)


def test_a_token_protects_the_pages_and_the_api(
    browser: Browser, token_dashboard: LiveDashboard
) -> None:
    expect = _expect()
    base = token_dashboard.base
    page, watch = browser.open(base)
    refused = page.goto(base + "/")
    assert refused is not None
    assert refused.status == 401
    assert "needs its token" in page.content()
    page.goto(base + "/pages?" + urllib.parse.urlencode({"token": TOKEN}))
    assert page.url == base + "/pages"  # the token left the address for a cookie
    expect(page.locator("#results tbody tr").first).to_be_visible()
    page.goto(base + "/")
    expect(page.locator("#stat-pages")).to_have_text(re.compile(r"^\d[\d,]*$"))
    watch.console.clear()  # the refused first visit logged its 401


@pytest.fixture
def registry_namespace() -> Iterator[str]:
    require_service("Redis", "127.0.0.1", 6379)
    namespace = f"dash-test-{int(time.time() * 1000)}"
    yield namespace

    async def clean() -> None:
        from redis.asyncio import Redis  # noqa: PLC0415

        client = Redis.from_url(REDIS_URL)
        keys = [key async for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()

    run_async(clean())


def test_nodes_show_the_registry(
    browser: Browser, crawled_db: Path, registry_namespace: str
) -> None:
    from topicrawl.distributed.registry import Heartbeat, NodeInfo, NodeRegistry  # noqa: PLC0415

    async def populate() -> None:
        async with NodeRegistry(REDIS_URL, namespace=registry_namespace, heartbeat_timeout=30) as r:
            await r.register(NodeInfo("worker-a", "box-1", 101, capacity={"cpus": 2}))
            beat = Heartbeat(
                pages=420,
                pages_per_second=12.5,
                errors=3,
                cpu_percent=87.25,
                memory_bytes=150 * 1024 * 1024,
            )
            await r.heartbeat("worker-a", beat)
            await r.client.set(r.prefix + "coordinator", "worker-a/0123abcd")
        async with NodeRegistry(
            REDIS_URL, namespace=registry_namespace, heartbeat_timeout=0.05
        ) as short:
            await short.register(NodeInfo("worker-b", "box-2", 202))
            await asyncio.sleep(0.2)
            assert await short.mark_dead("worker-b")

    run_async(populate())
    expect = _expect()
    with live_dashboard(crawled_db, redis_url=REDIS_URL, namespace=registry_namespace) as dash:
        page, watch = browser.open(dash.base)
        page.goto(dash.base + "/nodes")
        rows = page.locator("#nodes tbody tr")
        expect(rows).to_have_count(2)
        expect(page.locator("#nodes-summary")).to_contain_text("1 live of 2 nodes")
        expect(page.locator("#nodes-summary")).to_contain_text("coordinator: worker-a/0123abcd")
        alive = page.locator("#nodes tbody tr", has_text="worker-a")
        expect(alive).to_contain_text("(coordinator)")
        expect(alive).to_contain_text("12.5")
        expect(alive).to_contain_text("420")
        expect(alive).to_contain_text("87 %")
        expect(alive).to_contain_text("150.0 MiB")
        dead = page.locator("#nodes tbody tr", has_text="worker-b")
        expect(dead).to_contain_text("dead")
        expect(dead).to_contain_text("work returned to the pool")
        browser.screenshot(page, "nodes")
        watch.assert_nothing_ran(MARKER)


def test_topics_show_heat_forecasts_cpu_and_words(browser: Browser, topics_db: Path) -> None:
    expect = _expect()
    with live_dashboard(topics_db) as dash:
        data = get(dash.base + "/api/topics").json()
        assert len(data["periods"]) == 4
        assert data["topics"]
        for topic in data["topics"]:
            for method, forecasts in topic["forecasts"].items():
                assert all(f["value"] >= 0 for f in forecasts), (method, forecasts)
        shown = [t for t in data["topics"] if t["heat"] and t["forecasts"]]
        assert shown
        assert {"des", "bp", "combined"} <= set(shown[0]["forecasts"])
        assert shown[0]["allocations"]
        assert shown[0]["words_by_period"]
        page, watch = browser.open(dash.base)
        page.goto(dash.base + "/topics")
        sections = page.locator("section.topic")
        expect(sections).to_have_count(len(data["topics"]))
        first = sections.first
        expect(first.locator(".chart .main-svg").first).to_be_attached()
        expect(first.locator(".legend")).to_have_count(2)
        legend = first.locator(".legend").first
        for name in ("heat", "des forecast", "bp forecast", "combined forecast"):
            expect(legend).to_contain_text(name)
        expect(first.locator(".legend").nth(1)).to_contain_text("processes")
        browser.screenshot(page, "topics")
        watch.assert_nothing_ran(MARKER)
