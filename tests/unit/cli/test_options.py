"""The crawl options `crawl`, `worker` and `crawl-ns create` share, turned into settings."""

from __future__ import annotations

from topicrawl.cli.options import CrawlOptions, crawl_overrides
from topicrawl.core.config import CrawlSettings


def test_options_given_become_settings_and_the_rest_are_left_alone() -> None:
    arguments = {
        "topic": ["asyncio"],
        "max_pages": 30,
        "per_host": 2,
        "ignore_robots": True,
        "allow_domain": ["example.org"],
        "db": "crawl.db",
        "redis": "redis://localhost/0",  # another command option: not a crawl setting
        "delay": None,  # not given
    }
    kwargs = crawl_overrides(arguments, seeds=["http://example.org/"])
    assert kwargs == {
        "seeds": ("http://example.org/",),
        "topics": ("asyncio",),
        "max_pages": 30,
        "politeness": {"per_host": 2, "obey_robots": False},
        "scope": {"allowed_domains": ("example.org",)},
        "storage": {"url": "crawl.db"},
    }
    settings = CrawlSettings(**kwargs)
    assert settings.politeness.delay == CrawlSettings().politeness.delay
    assert not settings.politeness.obey_robots


def test_a_command_without_an_option_leaves_its_setting_alone() -> None:
    # crawl-ns create takes neither --concurrency nor --db.
    options = CrawlOptions.of({"strategy": "bfs"}, seeds=[])
    assert options.concurrency is None
    assert options.db is None
    assert options.overrides() == {"strategy": "bfs"}
