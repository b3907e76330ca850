"""Start-up checks of the crawl's limits: a concurrency it cannot use, a seed it cannot fetch."""

from __future__ import annotations

import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError
from topicrawl.engine.build import MAX_CONCURRENCY, _seed_requests, check_limits


def test_concurrency_beyond_the_connection_pool_is_refused() -> None:
    settings = CrawlSettings(concurrency=101, fetch={"connections": 100})
    with pytest.raises(ConfigError, match=r"concurrency 101 is more than fetch.connections 100"):
        check_limits(settings)


def test_concurrency_beyond_what_the_loop_can_wake_is_refused() -> None:
    too_many = MAX_CONCURRENCY + 1
    settings = CrawlSettings(concurrency=too_many, fetch={"connections": too_many})
    with pytest.raises(ConfigError, match=f"concurrency {too_many} is more than {MAX_CONCURRENCY}"):
        check_limits(settings)


def test_too_many_pages_in_hand_are_refused() -> None:
    with pytest.raises(ConfigError, match="pages_in_hand 100000"):
        check_limits(CrawlSettings(pages_in_hand=100_000))


def test_sensible_limits_pass() -> None:
    check_limits(CrawlSettings(concurrency=100, fetch={"connections": 100}))
    check_limits(CrawlSettings(concurrency=MAX_CONCURRENCY, fetch={"connections": 5000}))


def test_a_seed_longer_than_the_url_limit_is_refused_with_its_length() -> None:
    seed = "http://a.test/" + "x" * 100
    with pytest.raises(
        ConfigError, match=r"114 characters long, more than fetch.max_url_length 50"
    ):
        _seed_requests([seed], 50)
    assert [r.url for r in _seed_requests(["http://a.test/"], 50)] == ["http://a.test/"]
