"""The demo web's changing-page mode: a seeded change log, versions in text and ETag, 304."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from topicrawl.demoweb import DemoWeb, DemoWebServer, Kind
from topicrawl.demoweb.changing import ChangeLog


def test_the_log_is_seeded_and_versions_count_changes() -> None:
    keys = [("h", f"/{i}") for i in range(50)]
    one = ChangeLog(keys, seed=1, start=100.0, day_seconds=2.0, days=10.0)
    two = ChangeLog(keys, seed=1, start=100.0, day_seconds=2.0, days=10.0)
    assert one.rates == two.rates
    times = one.times("h", "/0")
    assert times == sorted(times)
    assert all(100.0 < t < 120.0 for t in times)
    assert one.version("h", "/0", 100.0) == 0
    assert one.version("h", "/0", 121.0) == len(times)
    if times:
        assert one.version("h", "/0", times[0]) == 1
    assert one.version("other", "/", 1e12) == 0
    assert not one.changes("other", "/")
    # Poisson counts: the mean over pages is near the mean rate times the days.
    counts = [len(one.times(*k)) for k in keys]
    expected = sum(one.rates[k] * 10.0 for k in keys)
    assert sum(counts) == pytest.approx(expected, rel=0.35)


def _get(url: str, etag: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"If-None-Match": etag} if etag else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.headers.get("ETag", ""), answer.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the open response (and its socket) until closed
            return exc.code, exc.headers.get("ETag", ""), ""


def test_a_changing_page_carries_its_version_and_answers_304() -> None:
    web = DemoWeb.generate(seed=3, hosts=2, pages_per_host=5)
    bound = web.at_port(1)
    page = next(
        p
        for p in (bound.find(u) for u in bound.urls(documents_only=True))
        if p is not None and p.kind is Kind.ARTICLE and p.host == "127.0.0.3"
    )
    # One change half a second after the start.
    log = ChangeLog([(page.host, page.path)], seed=0, start=time.time(), day_seconds=1.0)
    log._times[(page.host, page.path)] = [log.start + 0.5]
    with DemoWebServer(web, changes=log).run_in_thread() as server:
        url = server.web.base_url(page.host).rstrip("/") + page.path
        status, etag, text = _get(url)
        assert (status, etag) == (200, '"v0"')
        assert "Revision 0 of this page." in text
        assert _get(url, etag)[0] == 304
        time.sleep(0.6)
        status, etag, text = _get(url, '"v0"')
        assert (status, etag) == (200, '"v1"')
        assert "Revision 1 of this page." in text
