"""The simulated web and the policies: closed forms, equal budgets and the ordering that matters."""

from __future__ import annotations

import numpy as np
import pytest

from topicrawl.revisit import TierPolicy
from topicrawl.revisit.refresh import expected_freshness
from topicrawl.revisit.simulate import (
    AdaptiveInterval,
    make_web,
    simulate,
    standard_policies,
    tier_rates,
)


def test_web_correlation_follows_the_setting() -> None:
    for corr in (-0.8, 0.0, 0.8):
        web = make_web(5000, np.random.default_rng(1), correlation=corr)
        measured = np.corrcoef(np.log(web.rates), np.log(web.popularity))[0, 1]
        assert measured == pytest.approx(corr, abs=0.05)
    assert web.popularity.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="correlation"):
        make_web(10, np.random.default_rng(1), correlation=1.5)


def test_uniform_matches_its_closed_form() -> None:
    web = make_web(3000, np.random.default_rng(2), median_rate=0.3)
    budget = 0.25 * web.size
    uniform = standard_policies(web, budget)[0]
    out = simulate(web, uniform, np.random.default_rng(3), budget=budget, days=40, warmup=10)
    closed = float((web.popularity * expected_freshness(web.rates, np.full(3000, 0.25))).sum())
    assert out.freshness == pytest.approx(closed, rel=0.03)


def test_every_policy_spends_the_same_budget_and_the_order_holds() -> None:
    web = make_web(2000, np.random.default_rng(4), correlation=0.5)
    budget = 0.2 * web.size
    outcomes = {
        p.name: simulate(web, p, np.random.default_rng(5), budget=budget, days=40, warmup=15)
        for p in standard_policies(web, budget)
    }
    assert len({o.fetches for o in outcomes.values()}) == 1
    fresh = {name: o.freshness for name, o in outcomes.items()}
    assert fresh["oracle"] >= max(fresh.values()) - 0.01
    assert fresh["change-rate aware"] > fresh["uniform"]
    assert fresh["change-rate aware"] > fresh["tiers (1/3/7 by popularity)"]
    assert fresh["change-rate aware"] > 0.9 * fresh["oracle"]
    assert fresh["uniform"] > fresh["proportional"]


def test_adaptive_interval_shrinks_on_change_and_grows_otherwise() -> None:
    web = make_web(4, np.random.default_rng(6))
    policy = AdaptiveInterval("nutch", decrease=0.2, increase=0.4)
    policy.start(web, budget=2.0, rng=np.random.default_rng(7))  # interval 2 days
    pages = np.array([0, 1])
    due = policy.fetched(pages, 10.0, np.array([2.0, 2.0]), np.array([True, False]))
    assert due == pytest.approx([10.0 + 1.6, 10.0 + 2.8])


def test_tier_rates_keep_the_period_ratio_and_the_budget() -> None:
    web = make_web(100, np.random.default_rng(8))
    rates = tier_rates(web, 20.0, TierPolicy())
    assert rates.sum() == pytest.approx(20.0)
    assert sorted(set(np.round(rates.max() / rates, 6))) == [1.0, 3.0, 7.0]
