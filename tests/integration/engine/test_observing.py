"""Live samples and the metrics endpoint of real crawls of the demo web (issue 19)."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.engine import run_crawl
from topicrawl.engine.build import open_crawl
from topicrawl.engine.diagnosis import diagnose
from topicrawl.engine.samples import WAIT_REASONS, read_samples
from topicrawl.storage.target import create_engine, parse_target


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=3, pages_per_host=30)
    demo = DemoWebServer(web, slow_delay=0.3)
    with demo.run_in_thread():
        yield demo


@pytest.fixture
def url(store_url: str) -> str:
    return store_url


def settings_for(server: DemoWebServer, url: str, **storage: Any) -> CrawlSettings:
    bases = server.web.bases()
    return CrawlSettings(
        seeds=tuple(bases.values()),
        strategy="bfs",
        max_pages=0,
        concurrency=4,
        parse_workers=0,
        politeness={"per_host": 2, "delay": 0.02},
        scope={"allowed_domains": tuple(bases), "max_depth": 4},
        fetch={"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 0.5},
        frontier={"kind": "memory"},
        storage={"url": url, "flush_interval": 0.1, **storage},
    )


async def test_a_crawl_writes_its_live_samples(server: DemoWebServer, url: str) -> None:
    report = await run_crawl(settings_for(server, url, samples_interval=0.05))

    engine = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    try:
        samples = await read_samples(engine, report.run_id)
        newest_two = await read_samples(engine, report.run_id, limit=2)
        later = await read_samples(engine, report.run_id, since=samples[-3].at)
    finally:
        await engine.dispose()

    stats = report.stats
    assert len(samples) >= 3
    assert [s.at for s in samples] == sorted(s.at for s in samples)
    assert [s.pages for s in samples] == sorted(s.pages for s in samples)
    assert newest_two == samples[-2:]
    assert later == samples[-2:]
    last = samples[-1]
    assert (last.pages, last.bytes) == (stats.pages, stats.bytes)
    assert last.failures == stats.error_count
    assert dict(last.failures_by_kind) == stats.errors
    assert (last.queued, last.in_flight, last.parse_backlog) == (0, 0, 0)
    assert set(WAIT_REASONS) <= set(last.waits)
    assert last.waits["frontier_empty"] == 1
    assert last.waits["robots_refused"] == stats.errors.get("robots", 0)
    assert all(s.node is None and s.run_id == report.run_id for s in samples)
    # Mid-crawl, something was queued or in flight.
    assert any(s.queued or s.in_flight for s in samples[:-1])
    assert diagnose(samples)[0].cause == "finished"


async def test_no_samples_when_switched_off(server: DemoWebServer, tmp_path: Path) -> None:
    url = str(tmp_path / "crawl.db")
    report = await run_crawl(settings_for(server, url, samples_interval=0))

    engine = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    try:
        assert await read_samples(engine, report.run_id) == []
    finally:
        await engine.dispose()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int) -> dict[str, list[Sample]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body = response.read().decode()
    families = text_string_to_metric_families(body)
    return {family.name: family.samples for family in families}


def value(found: dict[str, list[Sample]], family: str, sample: str, **labels: str) -> float:
    return next(
        s.value
        for s in found[family]
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    )


async def test_the_metrics_endpoint_serves_the_running_crawl(
    server: DemoWebServer, tmp_path: Path
) -> None:
    port = free_port()
    settings = settings_for(server, str(tmp_path / "crawl.db"), samples_interval=0.05)
    async with open_crawl(settings, metrics_port=port) as crawler:
        run = asyncio.create_task(crawler.run())
        during: dict[str, list[Sample]] = {}
        while not run.done():
            during = await asyncio.to_thread(scrape, port)
            if value(during, "topicrawl_pages", "topicrawl_pages_total") > 0:
                break
            await asyncio.sleep(0.02)
        stats = await run
        after = await asyncio.to_thread(scrape, port)

    assert value(during, "topicrawl_pages", "topicrawl_pages_total") > 0
    assert value(after, "topicrawl_pages", "topicrawl_pages_total") == stats.pages
    assert value(after, "topicrawl_fetched_bytes", "topicrawl_fetched_bytes_total") == stats.bytes
    for kind, count in stats.errors.items():
        assert value(after, "topicrawl_errors", "topicrawl_errors_total", kind=kind) == count
    fetches = value(
        after, "topicrawl_fetch_duration_seconds", "topicrawl_fetch_duration_seconds_count"
    )
    assert fetches >= stats.pages
    assert (
        value(
            after,
            "topicrawl_fetch_duration_seconds",
            "topicrawl_fetch_duration_seconds_bucket",
            le="+Inf",
        )
        == fetches
    )
    assert value(after, "topicrawl_strategy_seconds", "topicrawl_strategy_seconds_total") > 0
    for gauge in ("topicrawl_frontier_queued", "topicrawl_frontier_in_flight"):
        assert value(after, gauge, gauge) >= 0
    assert value(after, "topicrawl_parse_backlog", "topicrawl_parse_backlog") == 0
    waits = {s.labels["reason"] for s in after["topicrawl_waits"]}
    assert set(WAIT_REASONS) <= waits
    # The endpoint is gone with the crawl.
    with pytest.raises(OSError):
        await asyncio.to_thread(scrape, port)


async def test_a_busy_metrics_port_is_a_clear_error(server: DemoWebServer, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        settings = settings_for(server, str(tmp_path / "crawl.db"))
        with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            async with open_crawl(settings, metrics_port=port):
                pass
