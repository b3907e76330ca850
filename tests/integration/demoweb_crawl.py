"""Set-up shared by the integration tests that crawl the demo web over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from topicrawl.core.config import CrawlSettings
from topicrawl.demoweb import DemoWeb, DemoWebServer

MAX_DEPTH = 6


@contextmanager
def demo_server(*, slow_delay: float, crawl_delay: float | None = None) -> Iterator[DemoWebServer]:
    """The demo web of seed 11 (4 hosts x 25 articles) served in a thread.

    ``crawl_delay``: the second host's robots.txt Crawl-delay (None: the generator's own).
    """
    options = {} if crawl_delay is None else {"crawl_delay": crawl_delay}
    web = DemoWeb.generate(seed=11, hosts=4, pages_per_host=25, **options)
    demo = DemoWebServer(web, slow_delay=slow_delay)
    with demo.run_in_thread():
        yield demo


def crawl_settings(server: DemoWebServer, db: Path, **extra: object) -> CrawlSettings:
    """Breadth-first settings for crawling the whole demo web into ``db`` (SQLite), with
    ``extra`` settings on top."""
    bases = server.web.bases()
    options: dict[str, object] = {
        "seeds": tuple(bases.values()),
        "strategy": "bfs",
        "max_pages": 0,
        "concurrency": 8,
        "parse_workers": 0,
        "politeness": {"per_host": 3},
        "scope": {"allowed_domains": tuple(bases), "max_depth": MAX_DEPTH},
        "fetch": {"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 1.0},
        "storage": {"url": str(db), "flush_interval": 0.2},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]
