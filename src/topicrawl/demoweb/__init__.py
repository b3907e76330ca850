"""A local, seeded web for the demo, tests and benchmarks: topical hosts, traps, ground truth."""

from __future__ import annotations

from topicrawl.demoweb.graph import CALENDAR_ENTRY, DemoWeb, normalise_path
from topicrawl.demoweb.model import DemoHost, DemoLink, DemoPage, HrefStyle, Kind, ServedLink
from topicrawl.demoweb.server import AccessRecord, DemoWebServer
from topicrawl.demoweb.text import TOPICS, Topic
from topicrawl.demoweb.truth import CrawlRules, expected_crawl, fetch_outcome, harvest_rate

__all__ = [
    "CALENDAR_ENTRY",
    "TOPICS",
    "AccessRecord",
    "CrawlRules",
    "DemoHost",
    "DemoLink",
    "DemoPage",
    "DemoWeb",
    "DemoWebServer",
    "HrefStyle",
    "Kind",
    "ServedLink",
    "Topic",
    "expected_crawl",
    "fetch_outcome",
    "harvest_rate",
    "normalise_path",
]
