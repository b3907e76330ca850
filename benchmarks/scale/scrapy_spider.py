"""Scrapy BFS spider for the scale benchmark: counts 200 HTML pages, stores nothing.

    scrapy runspider benchmarks/scale/scrapy_spider.py -a seeds_file=SEEDS \
        -a progress=OUT/scrapy-progress.txt -s CONCURRENT_REQUESTS=128 [-s JOBDIR=DIR]

Settings match the topicrawl run: robots.txt obeyed, 8 requests in flight per host, no delay,
no autothrottle, breadth first (``DEPTH_PRIORITY = 1`` with FIFO queues, Scrapy's documented
recipe), asyncio reactor, the stock LinkExtractor and fingerprint dupefilter. Links leave
the seeds' hosts never (the scale web's hosts are all seeded). Every 1,000 pages it appends
``<unix time> <pages>`` to the progress file, which ``run.py`` reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor

PROGRESS_EVERY = 1000


class ScaleSpider(scrapy.Spider):
    """Follow every link to a seeded host breadth first; count HTML pages."""

    name = "scalebench"
    custom_settings = {  # noqa: RUF012
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 128,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "LOG_LEVEL": "INFO",
        "LOGSTATS_INTERVAL": 60,
        "TELNETCONSOLE_ENABLED": False,
        "USER_AGENT": "topicrawl-bench-scrapy/1.0",
        "REACTOR_THREADPOOL_MAXSIZE": 20,
    }

    def __init__(self, seeds_file: str = "", progress: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [u for u in Path(seeds_file).read_text().split() if u]
        self.hosts = {urlsplit(u).hostname for u in self.start_urls}
        self.progress = Path(progress) if progress else None
        self.pages = 0
        self.link_extractor = LinkExtractor()

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1").lower()
        if (
            response.status != 200
            or not content_type.startswith("text/html")
            or not isinstance(response, TextResponse)
        ):
            return
        self.pages += 1
        if self.progress is not None and self.pages % PROGRESS_EVERY == 0:
            with self.progress.open("a") as out:
                out.write(f"{time.time():.3f} {self.pages}\n")
        for link in self.link_extractor.extract_links(response):
            if urlsplit(link.url).hostname in self.hosts:
                yield scrapy.Request(link.url, callback=self.parse)
