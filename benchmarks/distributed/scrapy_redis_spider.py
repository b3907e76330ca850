"""scrapy-redis spider for the distributed benchmark: follows every link, stores nothing.

Every process started with this spider shares one Redis request queue and duplicate filter
(scrapy-redis's scheduler), the way scrapy-redis distributes a crawl. Start URLs come from the
Redis list ``<name>:start_urls``; a process closes after ``MAX_IDLE_TIME_BEFORE_CLOSE`` idle
seconds. Settings mirror the topicrawl workers: robots.txt obeyed, the same per-process
concurrency and per-host concurrency, the same download delay (per process in Scrapy: it has
no politeness shared across processes).

    scrapy runspider benchmarks/distributed/scrapy_redis_spider.py -a name=bench1 \
        -s REDIS_URL=redis://127.0.0.1:6379/13 -s CONCURRENT_REQUESTS=8
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider


class LatencySpider(RedisSpider):
    """Follow every link of every page."""

    name = "latency"
    custom_settings = {  # noqa: RUF012 - Scrapy reads it as an instance attribute
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        # Kept until the benchmark deletes it: without persistence the first process to
        # close clears the shared queue and duplicate filter under the others.
        "SCHEDULER_PERSIST": True,
        "ROBOTSTXT_OBEY": True,
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 4,
        "USER_AGENT": "topicrawl-bench-scrapy-redis/1.0",
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        name = kwargs.pop("name", None)
        super().__init__(*args, **kwargs)
        if name:
            self.name = name
            self.redis_key = f"{name}:start_urls"

    def parse(self, response: Response, **kwargs: Any) -> Iterator[scrapy.Request]:
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
