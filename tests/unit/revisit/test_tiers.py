"""Tier boundaries, ties, periods and the demo time scale."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicrawl.core.errors import ConfigError
from topicrawl.revisit import DAY, TierPolicy, assign_tiers, period_of, tier_of_period


def test_default_policy_is_daily_three_days_weekly_recomputed_weekly() -> None:
    policy = TierPolicy()
    assert policy.periods == (DAY, 3 * DAY, 7 * DAY)
    assert policy.recompute_period == 7 * DAY
    assert [period_of(t, policy) for t in (1, 2, 3)] == [86_400.0, 259_200.0, 604_800.0]


def test_ten_items_split_two_three_five() -> None:
    scores = {f"v{i}": float(i) for i in range(10)}
    tiers = assign_tiers(scores, TierPolicy())
    assert {k for k, t in tiers.items() if t == 1} == {"v9", "v8"}
    assert {k for k, t in tiers.items() if t == 2} == {"v7", "v6", "v5"}
    assert {k for k, t in tiers.items() if t == 3} == {f"v{i}" for i in range(5)}


def test_ties_across_a_boundary_go_to_the_better_tier() -> None:
    # v8 and v7 tie at the tier-1 boundary (top 2 of 10): both are tier 1.
    scores = {f"v{i}": float(i) for i in range(10)}
    scores["v7"] = 8.0
    tiers = assign_tiers(scores, TierPolicy())
    assert tiers["v9"] == tiers["v8"] == tiers["v7"] == 1
    assert tiers["v6"] == 2


def test_nan_ranks_last_and_infinity_is_refused() -> None:
    tiers = assign_tiers({"a": math.nan, "b": 1.0, "c": 0.0, "d": 2.0, "e": 3.0}, TierPolicy())
    assert tiers["a"] == 3
    assert tiers["e"] == 1
    with pytest.raises(ValueError, match="infinite"):
        assign_tiers({"a": math.inf}, TierPolicy())


def test_one_item_is_tier_one_and_empty_is_empty() -> None:
    assert assign_tiers({"only": 0.0}, TierPolicy()) == {"only": 1}
    assert assign_tiers({}, TierPolicy()) == {}


def test_demo_time_scale_makes_a_day_two_seconds() -> None:
    policy = TierPolicy.in_days(day_seconds=2.0)
    assert policy.periods == (2.0, 6.0, 14.0)
    assert policy.recompute_period == 14.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"periods": (3.0, 1.0, 7.0)},
        {"periods": (0.0, 1.0, 7.0)},
        {"shares": (0.8, 0.3)},
        {"shares": (-0.1, 0.3)},
        {"recompute_period": 0.0},
    ],
)
def test_bad_policies_are_config_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        TierPolicy(**kwargs)  # type: ignore[arg-type]


def test_unknown_tier_has_no_period() -> None:
    with pytest.raises(ValueError, match="tier"):
        period_of(4, TierPolicy())


def test_tier_of_period_rounds_on_a_log_scale() -> None:
    policy = TierPolicy()
    assert tier_of_period(0.5 * DAY, policy) == 1
    assert tier_of_period(1.7 * DAY, policy) == 1  # log(1.7) < log(3/1.7)
    assert tier_of_period(1.8 * DAY, policy) == 2
    assert tier_of_period(30 * DAY, policy) == 3


@given(st.dictionaries(st.integers(), st.floats(-1e6, 1e6), max_size=200))
@settings(max_examples=80, deadline=None)
def test_a_higher_score_never_gets_a_worse_tier(scores: dict[int, float]) -> None:
    tiers = assign_tiers(scores, TierPolicy())
    assert set(tiers) == set(scores)
    for a, score_a in scores.items():
        for b, score_b in scores.items():
            if score_a > score_b:
                assert tiers[a] <= tiers[b]
