"""Scrapy BFS spider for the crawl benchmark: counts 200 HTML responses, stores nothing.

Run with:
    scrapy runspider benchmarks/crawl/scrapy_spider.py \
        -a seed=http://127.0.0.11:8080/index.html [-a dump_urls=out/urls.txt] [-a canonicalize=1]

Settings follow Scrapy's documented recipe for a broad BFS crawl at fixed concurrency:
asyncio reactor, robots.txt obeyed, 64 concurrent requests (64 per domain), no delay, no
autothrottle, FIFO queues with DEPTH_PRIORITY = 1.  Links come from the stock LinkExtractor
(``<a href>`` and ``<area href>``), requests are deduplicated by Scrapy's own fingerprint
filter, and offsite links are dropped by ``allowed_domains``.  At close it prints one JSON
line: pages (200 ``text/html`` responses), errors, seconds, and a few of Scrapy's stats.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

PAGES_STAT = "bench/html_200"
IGNORED_STAT = "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest"


class BenchSpider(scrapy.Spider):
    """Follow every on-host link breadth first; count HTML pages."""

    name = "crawlbench"
    # Scrapy declares custom_settings as an instance attribute, so no ClassVar here.
    custom_settings = {  # noqa: RUF012
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 64,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": "topicrawl-bench-scrapy/1.0",
    }

    def __init__(self, seed: str = "http://127.0.0.11:8080/index.html", **kwargs: Any) -> None:
        dump_urls = kwargs.pop("dump_urls", None)
        # Off by default (stock LinkExtractor).  On, links are canonicalised and so
        # deduplicated per page without their fragments: fewer Requests for Scrapy to filter.
        canonicalize = kwargs.pop("canonicalize", "0") not in ("0", "", "false")
        super().__init__(**kwargs)
        self.start_urls = [seed]
        host = urlsplit(seed).hostname
        if host is None:
            raise ValueError(f"seed has no host: {seed!r}")
        self.allowed_domains = [host]
        self.dump_urls = Path(dump_urls) if dump_urls else None
        self.fetched_urls: list[str] = []
        self.link_extractor = LinkExtractor(canonicalize=canonicalize)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        # HttpErrorMiddleware already dropped non-2xx responses; redirects were followed
        # by RedirectMiddleware as new, deduplicated requests.
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        if (
            response.status != 200
            or not content_type.startswith("text/html")
            or not isinstance(response, TextResponse)
        ):
            return
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(PAGES_STAT)
        self.fetched_urls.append(response.url)
        for link in self.link_extractor.extract_links(response):
            yield scrapy.Request(link.url, callback=self.parse)

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats
        assert stats is not None
        if self.dump_urls is not None:
            self.dump_urls.write_text("".join(f"{u}\n" for u in sorted(self.fetched_urls)))
        # RobotsTxtMiddleware reports each forbidden URL as an IgnoreRequest exception:
        # those are robots_blocked, not errors.
        errors = (
            int(stats.get_value("downloader/exception_count", 0))
            - int(stats.get_value(IGNORED_STAT, 0))
            + int(stats.get_value("httperror/response_ignored_count", 0))
        )
        # CoreStats sets elapsed_time_seconds only after this handler has run.
        started = stats.get_value("start_time")
        elapsed = (datetime.now(tz=UTC) - started).total_seconds() if started else None
        result = {
            "crawler": "scrapy",
            "pages": int(stats.get_value(PAGES_STAT, 0)),
            "errors": errors,
            "requests": int(stats.get_value("downloader/request_count", 0)),
            "robots_blocked": int(stats.get_value("robotstxt/forbidden", 0)),
            "offsite": int(stats.get_value("offsite/filtered", 0)),
            "dupes_filtered": int(stats.get_value("dupefilter/filtered", 0)),
            "duplicate_fetches": len(self.fetched_urls) - len(set(self.fetched_urls)),
            "finish_reason": reason,
            "seconds": round(float(elapsed), 3) if elapsed is not None else None,
        }
        print(json.dumps(result), flush=True)
