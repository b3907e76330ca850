"""A crawl of the demo web that prefers an entity reaches its pages in fewer fetches."""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.demoweb_crawl import crawl_settings, demo_server
from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWebServer
from topicrawl.demoweb.kb import demo_kb_jsonl
from topicrawl.engine import run_crawl
from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.store import KgStore

ENTITY = "Julia Child"


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    # No robots.txt Crawl-delay on the second host: with it, that host's pages come last
    # in any order, and the fetch order depends on fetch timings.
    with demo_server(slow_delay=0.2, crawl_delay=0.0) as demo:
        yield demo


def _settings(server: DemoWebServer, db: Path, **extra: object) -> CrawlSettings:
    # Two in flight, one per host, one parse worker: the order follows the priorities.
    options: dict[str, object] = {
        "concurrency": 2,
        "parse_workers": 1,
        "politeness": {"per_host": 1},
    }
    return crawl_settings(server, db, **{**options, **extra})


def _fetch_order(db: Path) -> list[tuple[str, dict[str, float]]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT final_url, reasons FROM pages ORDER BY id").fetchall()
    return [(url, json.loads(reasons)) for url, reasons in rows]


def _positions(order: list[tuple[str, dict[str, float]]], gold: set[str]) -> list[int]:
    """At which fetch each gold page came."""
    return [index for index, (url, _) in enumerate(order, start=1) if url in gold]


async def test_bfs_preferring_an_entity_reaches_its_pages_sooner(
    server: DemoWebServer, tmp_path: Path
) -> None:
    web = server.web
    # Ground truth from the demo web's own text, not from the crawl.
    gold = {web.url_of(page) for page in web.pages if page.is_document and ENTITY in page.text}
    plain_db, preferring_db = tmp_path / "plain.db", tmp_path / "prefer.db"
    kb = parse_kb(demo_kb_jsonl(), fmt="jsonl")
    for db in (plain_db, preferring_db):  # both recognise the same entities
        async with KgStore(str(db)) as store:
            await store.load(kb)
    await run_crawl(_settings(server, plain_db))
    # Radius 2: Julia Child, her topic (cooking), and the topic's other names.
    await run_crawl(_settings(server, preferring_db, kg={"prefer": (ENTITY,), "radius": 2}))
    plain, preferring = _fetch_order(plain_db), _fetch_order(preferring_db)

    reached = gold & {url for url, _ in plain}
    assert len(reached) >= 5
    assert reached == gold & {url for url, _ in preferring}  # the same pages in the end
    # The measure: how soon the pages come on average, and when half of them have come.
    plain_at, preferring_at = _positions(plain, reached), _positions(preferring, reached)
    assert statistics.mean(preferring_at) < 0.8 * statistics.mean(plain_at), (
        preferring_at,
        plain_at,
    )
    half = math.ceil(len(reached) / 2) - 1
    assert preferring_at[half] < plain_at[half], (preferring_at, plain_at)
    # The stored component scores show the boost; the plain crawl has none.
    assert any("kg" in reasons for _, reasons in preferring)
    assert not any("kg" in reasons for _, reasons in plain)

    # The preferring crawl recorded the entity's pages in its knowledge graph.
    with sqlite3.connect(preferring_db) as connection:
        urls = {
            url
            for (url,) in connection.execute(
                "SELECT u.url FROM kg_entity_urls u JOIN kg_entities e ON e.id = u.entity_id "
                "WHERE e.name = ? AND e.origin = 'loaded'",
                (ENTITY,),
            )
        }
    assert reached <= urls


@pytest.mark.slow
async def test_focused_preferring_an_entity_queues_its_held_back_links(
    server: DemoWebServer, tmp_path: Path
) -> None:
    # The focused strategy holds back the links under its threshold (a topic far from the
    # entity's): the preference must still reach them.
    entity = "世界杯"
    web = server.web
    gold = {web.url_of(page) for page in web.pages if page.is_document and entity in page.text}
    plain_db, preferring_db = tmp_path / "plain.db", tmp_path / "prefer.db"
    kb = parse_kb(demo_kb_jsonl(), fmt="jsonl")
    for db in (plain_db, preferring_db):
        async with KgStore(str(db)) as store:
            await store.load(kb)
    focused = {"strategy": "focused", "topics": ("news",)}
    await run_crawl(_settings(server, plain_db, **focused))
    await run_crawl(
        _settings(server, preferring_db, **focused, kg={"prefer": (entity,), "radius": 2})
    )
    plain, preferring = _fetch_order(plain_db), _fetch_order(preferring_db)
    reached = gold & {url for url, _ in plain} & {url for url, _ in preferring}
    assert len(reached) >= 5
    # Links the focused strategy held back were queued for the entity, and stored so.
    assert any("kg_held" in reasons for _, reasons in preferring)
    assert not any("kg_held" in reasons for _, reasons in plain)
    plain_at, preferring_at = _positions(plain, reached), _positions(preferring, reached)
    assert statistics.mean(preferring_at) < 0.8 * statistics.mean(plain_at), (
        preferring_at,
        plain_at,
    )
