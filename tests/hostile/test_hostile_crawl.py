"""Whole crawls of the hostile site, with every strategy, through the real engine.

For each case: the failure kind recorded (or the page stored), every stored page equal to
what the server sent for its URL, the crawl ended (under a hang guard), memory bounded.
The default run crawls the cheap cases with bfs; ``-m hostile`` (slow ones included) runs
every case with every strategy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.crawling import CrawlOutcome, crawl, hostile_settings
from tests.hostile.server import HostileServer
from tests.hostile.site import CASES, Case, calendar_route, site_route
from topicrawl.parse.urls import canonicalize

pytestmark = pytest.mark.hostile

STRATEGIES = ("bfs", "best-first", "shark", "focused")
FAST = tuple(c for c in CASES if not c.slow)
RSS_CAP = 600 * 1024 * 1024  # generous: the crawl holds at most a few 16 MB bodies


@pytest.fixture(scope="module")
def fast_site() -> Iterator[HostileServer]:
    with HostileServer(route=site_route(FAST), listeners=3).run_in_thread() as server:
        yield server


@pytest.fixture(scope="module")
def full_site() -> Iterator[HostileServer]:
    with HostileServer(route=site_route(CASES), listeners=3).run_in_thread() as server:
        yield server


def _seeds(server: HostileServer, cases: tuple[Case, ...]) -> list[str]:
    """The main page (which links every case) and every case: a strategy may hold a link
    back that it does not find on topic, but every strategy fetches its seeds."""
    return [server.base() + "/"] + [server.base(c.listener) + c.path for c in cases]


def _url(server: HostileServer, case: Case) -> str:
    return canonicalize(server.base(case.listener) + case.path)


@pytest.fixture(scope="module")
def fast_crawl(fast_site: HostileServer, tmp_path_factory: pytest.TempPathFactory) -> CrawlOutcome:
    db = tmp_path_factory.mktemp("hostile") / "fast.db"
    return crawl(hostile_settings(_seeds(fast_site, FAST), db, "bfs"))


_full: dict[str, CrawlOutcome] = {}


@pytest.fixture(scope="module", params=STRATEGIES)
def full_crawl(
    request: pytest.FixtureRequest,
    full_site: HostileServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> CrawlOutcome:
    strategy: str = request.param
    if strategy not in _full:
        db = tmp_path_factory.mktemp("hostile") / f"{strategy}.db"
        _full[strategy] = crawl(hostile_settings(_seeds(full_site, CASES), db, strategy))
    return _full[strategy]


def _check_case(outcome: CrawlOutcome, server: HostileServer, case: Case) -> None:
    url = _url(server, case)
    kinds = outcome.failure_kinds(url)
    if case.kind is None:
        assert not kinds, f"{case.name}: failed with {kinds}"
        final = outcome.stored_urls.get(url)
        assert final is not None, f"{case.name}: not stored"
        assert outcome.stored[final] == server.sent[final], f"{case.name}: not what was sent"
    elif case.may_store and url in outcome.stored_urls:
        assert not kinds, f"{case.name}: failed with {kinds} and stored"
    else:
        assert kinds == {case.kind}, f"{case.name}: recorded {kinds}, expected {case.kind}"
        assert url not in outcome.stored_urls, f"{case.name}: stored although it failed"


def _check_crawl(outcome: CrawlOutcome, server: HostileServer) -> None:
    assert not outcome.hung, f"the {outcome.strategy} crawl did not end"
    # No page stored under another URL: every stored body is what was sent for its URL.
    wrong = [url for url, digest in outcome.stored.items() if server.sent.get(url) != digest]
    assert not wrong, f"stored with a body the server did not send for that URL: {wrong}"
    assert outcome.rss_growth < RSS_CAP, f"memory grew by {outcome.rss_growth >> 20} MB"
    # The 10 KB link on the main page is over max_url_length: never requested.
    assert not [r for r in server.requests if len(r) > 2048]


def test_fast_crawl_ends_and_stores_only_what_each_url_sent(
    fast_crawl: CrawlOutcome, fast_site: HostileServer
) -> None:
    _check_crawl(fast_crawl, fast_site)


@pytest.mark.parametrize("case", FAST, ids=[c.name for c in FAST])
def test_fast_case(fast_crawl: CrawlOutcome, fast_site: HostileServer, case: Case) -> None:
    _check_case(fast_crawl, fast_site, case)


@pytest.mark.slow
def test_crawl_ends_and_stores_only_what_each_url_sent(
    full_crawl: CrawlOutcome, full_site: HostileServer
) -> None:
    _check_crawl(full_crawl, full_site)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(full_crawl: CrawlOutcome, full_site: HostileServer, case: Case) -> None:
    _check_case(full_crawl, full_site, case)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.slow
def test_calendar_trap_stops_at_max_depth(strategy: str, tmp_path: Path) -> None:
    with HostileServer(route=calendar_route).run_in_thread() as server:
        seeds = [server.base() + "/cal?day=0"]
        outcome = crawl(hostile_settings(seeds, tmp_path / "cal.db", strategy), guard=60)
    assert not outcome.hung
    assert outcome.depths, "nothing stored"
    assert max(outcome.depths.values()) <= 3
    assert len(outcome.depths) <= 7  # days -3 .. 3


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_surplus_bytes_never_shift_pages_one_request_at_a_time(
    strategy: str, tmp_path: Path
) -> None:
    """The issue's run: one request at a time, seeds /smuggle, /ok/1 ... /ok/4; /smuggle
    sends a second response 50 ms after its page, while its connection idles in the pool."""
    with HostileServer(route=site_route(())).run_in_thread() as server:
        seeds = [server.base() + p for p in ("/smuggle", "/ok/1", "/ok/2", "/ok/3", "/ok/4")]
        outcome = crawl(hostile_settings(seeds, tmp_path / "cl.db", strategy, concurrency=1))
    _check_crawl(outcome, server)
    assert sorted(outcome.stored) == sorted(canonicalize(s) for s in seeds)
