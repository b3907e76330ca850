"""``topicrawl crawl`` spaces the requests that reach a host by ``politeness.delay``, whatever
``per_host`` allows in flight: many hosts with slow answers and few request slots make URLs
the frontier handed out wait for a slot, and two of one host must not then start together.
Arrival times are recorded at the server (the distributed worker's test is
tests/integration/distributed/test_spacing.py)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.distributed.latencysites import serve_latency_sites
from topicrawl.core.config import CrawlSettings
from topicrawl.engine import run_crawl

DELAY = 0.25
TOLERANCE = 0.05  # a request's way from its start in the crawler to the server's handler


async def test_requests_to_a_host_are_spaced_by_the_delay(tmp_path: Path) -> None:
    with serve_latency_sites(hosts=12, pages=12, latency=0.2) as sites:
        settings = CrawlSettings(
            seeds=tuple(sites.bases()),
            strategy="bfs",
            max_pages=0,
            concurrency=3,
            parse_workers=0,
            politeness={"per_host": 8, "delay": DELAY},  # type: ignore[arg-type]
            scope={"allowed_domains": ("127.0.0.1",)},  # type: ignore[arg-type]
            storage={"url": str(tmp_path / "crawl.db")},  # type: ignore[arg-type]
        )
        report = await run_crawl(settings)
    assert report.stats.pages == 12 * 12
    gaps = sites.closest()
    assert len(gaps) == 12
    assert all(gap >= DELAY - TOLERANCE for gap in gaps.values()), gaps
