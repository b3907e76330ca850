"""Refresh rates for a fetch budget: uniform, proportional, and the freshness-optimal one.

The optimal policy is Cho and Garcia-Molina's ("Effective page refresh policies for web
crawlers", ACM TODS 28(4), 2003): with page ``i`` changing as a Poisson process of rate
``rate_i``, importance ``w_i`` and revisited every ``1 / f_i``, its expected freshness is
``F = (f / rate) (1 - exp(-rate / f))``. Maximising ``sum w_i F_i`` under ``sum f_i = budget``
gives, by Lagrange, ``w_i / rate_i * g(rate_i / f_i) = mu`` with ``g(x) = 1 - (1 + x) e^-x``;
pages changing so fast that ``w_i / rate_i <= mu`` are not revisited at all. ``mu`` is found by
bisection so the rates spend the budget exactly. Pure numpy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from topicrawl.revisit.estimate import ChangeHistory
from topicrawl.revisit.tiers import TierPolicy, period_of, tier_of_period

__all__ = [
    "expected_freshness",
    "optimal_rates",
    "planned_intervals",
    "planning_rate",
    "proportional_rates",
    "rounded_tiers",
    "uniform_rates",
]

Floats = npt.NDArray[np.float64]

_BISECT = 32


def expected_freshness(rates: Floats, frequencies: Floats) -> Floats:
    """Time-averaged freshness of pages revisited at fixed intervals ``1 / frequency``."""
    rates = np.asarray(rates, dtype=float)
    freq = np.asarray(frequencies, dtype=float)
    out = np.zeros_like(rates)
    still = rates <= 0
    out[still] = 1.0
    visited = (~still) & (freq > 0)
    x = rates[visited] / freq[visited]
    out[visited] = -np.expm1(-x) / x
    return out


def uniform_rates(n: int, budget: float) -> Floats:
    """Every page revisited equally often."""
    return np.full(n, budget / n) if n else np.zeros(0)


def proportional_rates(rates: Floats, budget: float) -> Floats:
    """Revisits in proportion to the change rate (worse than uniform, Cho and Garcia-Molina)."""
    rates = np.asarray(rates, dtype=float)
    total = float(rates.sum())
    if total <= 0:
        return uniform_rates(len(rates), budget)
    return budget * rates / total


_GRID = np.geomspace(1e-7, 60.0, 4096)
_G_GRID = -np.expm1(-_GRID) - _GRID * np.exp(-_GRID)


def _g_inverse(y: Floats) -> Floats:
    """``x`` with ``1 - (1 + x) e^-x = y`` for ``y`` in [0, 1): a table, then Newton steps."""
    x = np.interp(y, _G_GRID, _GRID)
    for _ in range(3):
        slope = x * np.exp(-x)
        x = x - (-np.expm1(-x) - x * np.exp(-x) - y) / np.maximum(slope, 1e-300)
        x = np.clip(x, 1e-12, 700.0)
    return x


def _spend(rates: Floats, weights: Floats, mu: float) -> Floats:
    freq = np.zeros_like(rates)
    ratio = mu * rates / weights
    take = ratio < 1
    x = _g_inverse(ratio[take])
    freq[take] = rates[take] / np.maximum(x, 1e-300)
    return freq


def optimal_rates(rates: Floats, weights: Floats, budget: float) -> Floats:
    """Revisit frequencies maximising importance-weighted freshness for ``budget`` visits.

    Args:
        rates: change rates (changes per unit of time); 0 for pages that never change.
        weights: importance of each page (e.g. popularity), >= 0.
        budget: visits per unit of time over all pages.

    Returns:
        Visits per unit of time of each page, summing to ``budget`` (a page that never
        changes or has no weight gets none, unless every page is like that).
    """
    rates = np.asarray(rates, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if rates.shape != weights.shape:
        raise ValueError("rates and weights must have the same shape")
    if budget <= 0 or len(rates) == 0:
        return np.zeros_like(rates)
    live = (rates > 0) & (weights > 0)
    if not live.any():
        return uniform_rates(len(rates), budget)
    r, w = rates[live], weights[live]
    # mu = w / rate at the largest is where every page gets no visit; at a tiny mu each gets many.
    high = float((w / r).max())
    low = high * 1e-12
    for _ in range(_BISECT):
        mid = (low * high) ** 0.5
        if _spend(r, w, mid).sum() > budget:
            low = mid
        else:
            high = mid
    freq = _spend(r, w, high)
    total = freq.sum()
    out = np.zeros_like(rates)
    out[live] = freq * (budget / total) if total > 0 else budget / live.sum()
    return out


def rounded_tiers(frequencies: Floats, policy: TierPolicy) -> list[int]:
    """The tier (1, 2 or 3) whose period is nearest each frequency's interval, for the user."""
    return [
        tier_of_period(1.0 / f if f > 0 else float("inf"), policy)
        for f in np.asarray(frequencies, dtype=float)
    ]


def planning_rate(history: ChangeHistory, *, prior: float) -> float:
    """The change rate a plan uses: the bias-reduced estimator over the mean interval with a
    prior of one visit, half changed, ``prior`` long (the history's unit), so a page seen
    unchanged a few times is not taken for one that never changes (as the benchmarked policy,
    ``revisit.simulate.LearnedOptimal``)."""
    n = history.visits + 1.0
    changed = sum(1 for _, c in history.intervals if c) + 0.5
    span = sum(t for t, _ in history.intervals) + prior
    return -math.log((n - changed + 0.5) / (n + 0.5)) / (span / n)


def planned_intervals(
    rates: Sequence[float],
    weights: Sequence[float],
    budget: float,
    policy: TierPolicy,
    *,
    day: float,
    round_to_tiers: bool = False,
    spread: float = 0.03,
) -> list[float]:
    """Each page's revisit interval in seconds: the freshness-optimal frequencies for
    ``budget`` visits a day (rates per day, weights the importance), ``spread`` of the budget
    given evenly so no page is left unseen for good; an interval is kept between a quarter of
    the tier-1 period and four tier-3 periods, or rounded to the nearest tier's period.
    """
    if not rates:
        return []
    floor = spread * budget
    freq = optimal_rates(np.asarray(rates), np.asarray(weights), budget - floor)
    freq = freq + floor / len(rates)
    periods = policy.periods
    intervals: list[float] = []
    for interval_days in (1.0 / freq).tolist():
        seconds = interval_days * day
        if round_to_tiers:
            seconds = period_of(tier_of_period(seconds, policy), policy)
        else:
            seconds = min(max(seconds, periods[0] / 4), 4 * periods[2])
        intervals.append(seconds)
    return intervals
