"""Cho and Garcia-Molina's change-rate estimators on hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicrawl.revisit.estimate import ChangeHistory, rate_mle, rate_regular


def test_regular_visits_bias_reduced_estimate() -> None:
    # 10 daily visits, 3 saw a change: -ln((10 - 3 + 0.5) / 10.5) = ln(1.4) = 0.33647 per day.
    assert rate_regular(10, 3, 1.0) == pytest.approx(math.log(1.4), rel=1e-12)
    # Every visit saw a change: still finite, ln(10.5 / 0.5) = ln 21 per 2 days.
    assert rate_regular(10, 10, 2.0) == pytest.approx(math.log(21.0) / 2.0, rel=1e-12)
    assert rate_regular(5, 0, 1.0) == 0.0


def test_mle_with_equal_intervals_is_ln_n_over_n_minus_x() -> None:
    # 3 of 10 equal intervals changed: 3 / (e^r - 1) = 7 -> r = ln(10 / 7).
    assert rate_mle([1.0] * 3, [1.0] * 7) == pytest.approx(math.log(10 / 7), rel=1e-9)


def test_mle_with_irregular_intervals() -> None:
    # Changed after 1 and 2 days, unchanged after 1: 1/(x-1) + 2/(x^2-1) = 1 with x = e^r,
    # so x^2 - x - 4 = 0, x = (1 + sqrt 17) / 2, r = ln x = 0.94058.
    expected = math.log((1 + math.sqrt(17)) / 2)
    assert rate_mle([1.0, 2.0], [1.0]) == pytest.approx(expected, rel=1e-9)


def test_mle_without_changes_is_zero_and_all_changed_falls_back() -> None:
    assert rate_mle([], [1.0, 2.0]) == 0.0
    assert rate_mle([2.0, 2.0], []) == pytest.approx(rate_regular(2, 2, 2.0))


def test_mle_refuses_bad_intervals() -> None:
    with pytest.raises(ValueError, match="positive"):
        rate_mle([0.0], [1.0])
    with pytest.raises(ValueError, match="changes"):
        rate_regular(3, 4, 1.0)


def test_mle_recovers_a_simulated_rate_better_than_the_naive_ratio() -> None:
    rng = np.random.default_rng(7)
    true_rate = 0.8
    intervals = rng.uniform(0.5, 3.0, size=4000)
    changed = rng.random(4000) < -np.expm1(-true_rate * intervals)
    estimate = rate_mle(list(intervals[changed]), list(intervals[~changed]))
    naive = changed.sum() / intervals.sum()
    assert abs(estimate - true_rate) < 0.05
    assert naive < 0.7  # the naive ratio misses changes hidden between visits


def test_history_keeps_the_last_intervals() -> None:
    history = ChangeHistory(limit=3)
    for t, c in [(1.0, True), (1.0, False), (2.0, True), (1.0, False)]:
        history = history.seen(t, changed=c)
    assert history.intervals == ((1.0, False), (2.0, True), (1.0, False))
    assert history.seen(0.0, changed=True) == history  # a zero interval says nothing
    assert history.rate() == pytest.approx(rate_mle([2.0], [1.0, 1.0]))
