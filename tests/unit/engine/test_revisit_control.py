"""RevisitControl without I/O: validators, change detection, due times and tiers."""

from __future__ import annotations

import pytest

from topicrawl.core.models import Response
from topicrawl.engine.revisit import RevisitControl
from topicrawl.revisit import TierPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _response(url: str, status: int = 200, **headers: str) -> Response:
    return Response(
        url=url,
        final_url=url,
        status=status,
        headers=headers,
        body=b"",
        content_type="text/html",
        encoding=None,
        text=None,
        fetched_at=0.0,
        elapsed=0.0,
    )


def _control(clock: Clock, **options: object) -> RevisitControl:
    policy = TierPolicy.in_days(day_seconds=10.0)  # tiers of 10, 30 and 70 s
    return RevisitControl(policy=policy, clock=clock, **options)  # type: ignore[arg-type]


def test_first_fetch_is_due_after_one_tier_one_period_and_sends_no_validators() -> None:
    clock = Clock()
    control = _control(clock)
    assert control.headers("http://a.test/") == {}
    due = control.observe(_response("http://a.test/", ETag='"v1"', **{"Last-Modified": "x"}), "h1")
    assert due == pytest.approx(1_010.0)
    assert control.headers("http://a.test/") == {"If-None-Match": '"v1"', "If-Modified-Since": "x"}


def test_304_and_same_text_are_unchanged_a_new_hash_is_a_change() -> None:
    clock = Clock()
    control = _control(clock)
    url = "http://a.test/"
    control.observe(_response(url, ETag='"v1"'), "h1")
    clock.now += 10
    control.observe(_response(url, 304), None)
    clock.now += 10
    control.observe(_response(url), "h1")
    clock.now += 10
    control.observe(_response(url), "h2")
    assert (control.changes, control.unchanged, control.not_modified) == (1, 2, 1)
    # Three 1-day intervals, one changed: the MLE is ln(3 / 2) per day.
    assert control.rate(url) == pytest.approx(0.405465, rel=1e-4)


def _learn(control: RevisitControl, clock: Clock, fast: str, still: str) -> None:
    for step in range(6):
        control.observe(_response(fast), f"f{step}")
        control.observe(_response(still), "same")
        clock.now += 10
    clock.now += 10  # a new day: the plan is made again


def test_learned_rates_spend_the_budget_on_the_page_that_changes() -> None:
    clock = Clock()
    control = _control(clock, budget=2.0)  # two revisits a (10 s) day for two pages
    fast, still = "http://a.test/fast", "http://a.test/still"
    _learn(control, clock, fast, still)
    fast_days = control.interval(fast, clock.now) / 10
    still_days = control.interval(still, clock.now) / 10
    # The plan spends the budget (no page hits the four-week cap here), mostly on the page
    # that changes; the one seen unchanged keeps a prior's small rate and is seen again.
    assert 1 / fast_days + 1 / still_days == pytest.approx(2.0, rel=1e-3)
    assert 1 / fast_days > 1.5
    assert 1 < still_days <= 28
    assert control.tier(fast) == 1
    assert control.tier(still) in {2, 3}


def test_rounded_to_tiers_the_intervals_are_the_tiers_periods() -> None:
    clock = Clock()
    control = _control(clock, budget=2.0, round_to_tiers=True)
    fast, still = "http://a.test/fast", "http://a.test/still"
    _learn(control, clock, fast, still)
    assert control.interval(fast, clock.now) == pytest.approx(10.0)  # tier 1
    assert control.interval(still, clock.now) in {30.0, 70.0}  # tier 2 or 3


def test_tiers_mode_follows_popularity() -> None:
    clock = Clock()
    scores = {f"http://a.test/{i}": float(i) for i in range(10)}
    control = _control(clock, mode="tiers", popularity=scores.__getitem__)
    for url in scores:
        control.observe(_response(url), "h")
    clock.now += 1_000
    assert control.tier("http://a.test/9") == 1
    assert control.tier("http://a.test/6") == 2
    assert control.tier("http://a.test/0") == 3


def test_a_failed_fetch_of_a_known_page_is_tried_again_later() -> None:
    clock = Clock()
    control = _control(clock)
    assert control.after_failure("http://a.test/new") is None
    control.observe(_response("http://a.test/old"), "h")
    assert control.after_failure("http://a.test/old") == pytest.approx(1_010.0)


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="budget"):
        _control(Clock(), budget=0.0)


def test_without_popularity_the_strategys_relevance_sets_the_tiers() -> None:
    clock = Clock()
    control = _control(clock, mode="tiers")
    for i in range(10):
        control.observe(_response(f"http://a.test/{i}"), "h", relevance=i / 10)
    clock.now += 1_000
    assert control.tier("http://a.test/9") == 1
    assert control.tier("http://a.test/0") == 3
