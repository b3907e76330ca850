"""Refresh rates for a budget: closed forms, the optimum and its rounding to tiers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topicrawl.revisit import DAY, TierPolicy
from topicrawl.revisit.estimate import ChangeHistory
from topicrawl.revisit.popularity import popularity_index
from topicrawl.revisit.refresh import (
    expected_freshness,
    optimal_rates,
    planned_intervals,
    planning_rate,
    proportional_rates,
    rounded_tiers,
    uniform_rates,
)


def test_expected_freshness_closed_form() -> None:
    # rate 1, visited once per unit: (1 - e^-1) = 0.63212; never changing: 1; never visited: 0.
    out = expected_freshness(np.array([1.0, 0.0, 2.0]), np.array([1.0, 0.0, 0.0]))
    assert out == pytest.approx([1 - math.exp(-1), 1.0, 0.0])


def test_uniform_and_proportional_spend_the_budget() -> None:
    rates = np.array([1.0, 3.0])
    assert uniform_rates(2, 4.0) == pytest.approx([2.0, 2.0])
    assert proportional_rates(rates, 4.0) == pytest.approx([1.0, 3.0])


def test_optimal_rates_satisfy_the_lagrange_condition() -> None:
    rng = np.random.default_rng(3)
    rates = rng.lognormal(0.0, 1.0, 200)
    weights = rng.lognormal(0.0, 1.0, 200)
    freq = optimal_rates(rates, weights, 50.0)
    assert freq.sum() == pytest.approx(50.0, rel=1e-6)
    visited = freq > 0
    x = rates[visited] / freq[visited]
    marginal = weights[visited] / rates[visited] * (1 - (1 + x) * np.exp(-x))
    assert marginal == pytest.approx(np.full(visited.sum(), marginal[0]), rel=1e-4)
    # Pages left out would gain less than mu from their first visit.
    assert (weights[~visited] / rates[~visited] <= marginal[0] * (1 + 1e-6)).all()


def test_optimal_beats_uniform_and_proportional() -> None:
    rng = np.random.default_rng(5)
    rates = rng.lognormal(-1.0, 1.5, 1000)
    weights = np.ones(1000)
    budget = 200.0
    score = {
        name: float(expected_freshness(rates, f).mean())
        for name, f in {
            "optimal": optimal_rates(rates, weights, budget),
            "uniform": uniform_rates(1000, budget),
            "proportional": proportional_rates(rates, budget),
        }.items()
    }
    assert score["optimal"] > score["uniform"] > score["proportional"]


def test_two_equal_pages_share_the_budget_equally() -> None:
    freq = optimal_rates(np.array([0.5, 0.5]), np.array([1.0, 1.0]), 3.0)
    assert freq == pytest.approx([1.5, 1.5], rel=1e-6)


def test_rounded_tiers_for_the_user() -> None:
    per_second = np.array([1 / DAY, 1 / (3 * DAY), 1 / (10 * DAY), 0.0])
    assert rounded_tiers(per_second, TierPolicy()) == [1, 2, 3, 3]


def test_popularity_index_grows_with_counts_and_growth() -> None:
    base = popularity_index({"plays": 99.0, "comments": 0.0})
    assert base == pytest.approx(math.log(100.0))
    rising = popularity_index(
        {"plays": 99.0}, previous={"plays": 49.0}, elapsed=2 * DAY, growth_weight=0.5
    )
    assert rising == pytest.approx(math.log(100.0) + 0.5 * math.log(26.0))
    with pytest.raises(ValueError, match="plays"):
        popularity_index({"plays": -1.0})


def test_planning_rate_with_no_visit_is_the_priors() -> None:
    # one visit, half changed, 3 days long: -ln((1 - 0.5 + 0.5) / 1.5) / 3
    assert planning_rate(ChangeHistory(), prior=3.0) == pytest.approx(math.log(1.5) / 3)
    seen = ChangeHistory().seen(1.0, changed=True).seen(1.0, changed=True)
    quiet = ChangeHistory().seen(1.0, changed=False).seen(1.0, changed=False)
    assert planning_rate(seen, prior=3.0) > planning_rate(ChangeHistory(), prior=3.0)
    assert 0 < planning_rate(quiet, prior=3.0) < planning_rate(ChangeHistory(), prior=3.0)


def test_planned_intervals_spend_the_budget_and_favour_weight() -> None:
    policy = TierPolicy()
    rates, weights = [0.3, 0.3, 0.3, 0.3], [4.0, 5.0, 6.0, 8.0]
    seconds = planned_intervals(rates, weights, 1.0, policy, day=DAY)
    assert sum(DAY / s for s in seconds) == pytest.approx(1.0, rel=1e-6)
    assert seconds == sorted(seconds, reverse=True)  # more weight, shorter interval
    rounded = planned_intervals(rates, weights, 1.0, policy, day=DAY, round_to_tiers=True)
    assert set(rounded) <= set(policy.periods)
    assert planned_intervals([], [], 1.0, policy, day=DAY) == []
    # bounds: never under a quarter of tier 1, never over four tier-3 periods
    extreme = planned_intervals([5.0, 1e-6], [1e6, 1e-6], 40.0, policy, day=DAY)
    assert policy.periods[0] / 4 <= min(extreme) <= max(extreme) <= 4 * policy.periods[2]
