"""A simulated web of pages changing as Poisson processes, and revisit policies on one budget.

Pure numpy, no I/O: the freshness benchmark (``benchmarks/revisit/freshness.py``) and the unit
tests drive it. Time is in days. Each step of ``dt`` days, every page changes with probability
``1 - exp(-rate dt)`` (the step's first change time is drawn uniformly inside it, for age), then
the crawler fetches exactly ``budget * dt`` pages (fractions carried over): those whose due
time is earliest, so every policy spends the same budget, fetching early when it asks for
fewer visits than the budget and late when it asks for more. A fetch sees only whether the
page changed since the previous fetch (an incomplete change history).

Freshness and age are weighted by popularity and averaged over the steps after a warm-up
(each step counted half before and half after its fetches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from topicrawl.revisit.refresh import optimal_rates, proportional_rates, uniform_rates
from topicrawl.revisit.tiers import TierPolicy, assign_tiers

__all__ = [
    "AdaptiveInterval",
    "FixedRates",
    "LearnedOptimal",
    "Outcome",
    "Policy",
    "SimWeb",
    "make_web",
    "simulate",
    "standard_policies",
    "tier_rates",
]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class SimWeb:
    """Pages' true change rates (per day) and popularity (weights summing to 1)."""

    rates: Floats
    popularity: Floats

    @property
    def size(self) -> int:
        return len(self.rates)


def make_web(
    n: int,
    rng: np.random.Generator,
    *,
    correlation: float = 0.0,
    median_rate: float = 0.2,
    rate_sigma: float = 1.5,
    popularity_sigma: float = 1.5,
) -> SimWeb:
    """``n`` pages with log-normal (heavy-tailed) change rates and popularity.

    ``correlation`` is the correlation of log popularity with log change rate (a Gaussian
    copula): 0 independent, near 1 popular pages change most, negative the reverse.
    """
    if not -1.0 <= correlation <= 1.0:
        raise ValueError(f"correlation must be in [-1, 1], got {correlation}")
    z_rate = rng.standard_normal(n)
    z_other = rng.standard_normal(n)
    rates = median_rate * np.exp(rate_sigma * z_rate)
    z_pop = correlation * z_rate + math.sqrt(1.0 - correlation**2) * z_other
    popularity = np.exp(popularity_sigma * z_pop)
    return SimWeb(rates=rates, popularity=popularity / popularity.sum())


class Policy(Protocol):
    """Decides when each page is due again; sees only what fetches saw."""

    name: str

    def start(self, web: SimWeb, budget: float, rng: np.random.Generator) -> Floats:
        """First due time of every page (the crawl starts with every page fetched at 0)."""
        ...

    def fetched(self, pages: Ints, now: float, intervals: Floats, changed: Bools) -> Floats:
        """Next due time of the pages just fetched (``intervals`` since their last fetch)."""
        ...

    def replan(self, now: float, last_fetch: Floats) -> Floats | None:
        """New due times for every page (called once a day), or ``None`` to keep them."""
        ...


@dataclass
class FixedRates:
    """Each page revisited at a fixed frequency known in advance (uniform, proportional, tiers,
    the oracle's optimum)."""

    name: str
    frequencies: Floats
    _interval: Floats = field(init=False, repr=False)

    def start(self, web: SimWeb, budget: float, rng: np.random.Generator) -> Floats:
        with np.errstate(divide="ignore"):
            self._interval = np.where(self.frequencies > 0, 1.0 / self.frequencies, np.inf)
        return rng.random(web.size) * np.where(np.isfinite(self._interval), self._interval, 1.0)

    def fetched(self, pages: Ints, now: float, intervals: Floats, changed: Bools) -> Floats:
        return now + self._interval[pages]

    def replan(self, now: float, last_fetch: Floats) -> Floats | None:
        return None


@dataclass
class AdaptiveInterval:
    """Nutch's AdaptiveFetchSchedule (without its sync delta) and StormCrawler's adaptive
    scheduler: the interval shrinks by ``decrease`` after a change, grows by ``increase``
    otherwise, within ``[low, high]`` days."""

    name: str
    decrease: float
    increase: float
    low: float = 1.0 / 24
    high: float = 365.0
    _interval: Floats = field(init=False, repr=False)

    def start(self, web: SimWeb, budget: float, rng: np.random.Generator) -> Floats:
        self._interval = np.full(web.size, web.size / budget)
        return rng.random(web.size) * self._interval

    def fetched(self, pages: Ints, now: float, intervals: Floats, changed: Bools) -> Floats:
        factor = np.where(changed, 1.0 - self.decrease, 1.0 + self.increase)
        new = np.clip(self._interval[pages] * factor, self.low, self.high)
        self._interval[pages] = new
        return now + new

    def replan(self, now: float, last_fetch: Floats) -> Floats | None:
        return None


@dataclass
class LearnedOptimal:
    """The change-rate-aware policy: each page's rate estimated from what its fetches saw
    (Cho and Garcia-Molina's bias-reduced estimator over the mean interval), then the
    freshness-optimal frequencies for the budget, recomputed daily.

    A prior of ``prior_visits`` visits with half of them changed, at the uniform interval,
    keeps unseen pages from looking static; a ``floor`` share of the budget is spread evenly
    so a page whose estimate says "never" is still looked at now and then.
    """

    name: str = "change-rate aware"
    prior_visits: float = 1.0
    floor: float = 0.03
    tiers: TierPolicy | None = None  # round each interval to the nearest tier's period
    learn_visits: int = 0  # a page is visited daily until it has been seen this often
    cap_days: float | None = None  # no page waits longer than this
    _n: Floats = field(init=False, repr=False)
    _x: Floats = field(init=False, repr=False)
    _t: Floats = field(init=False, repr=False)
    _weights: Floats = field(init=False, repr=False)
    _budget: float = field(init=False, repr=False)
    _interval: Floats = field(init=False, repr=False)

    def start(self, web: SimWeb, budget: float, rng: np.random.Generator) -> Floats:
        uniform = web.size / budget
        self._n = np.full(web.size, self.prior_visits)
        self._x = np.full(web.size, 0.5 * self.prior_visits)
        self._t = np.full(web.size, self.prior_visits * uniform)
        self._weights = web.popularity
        self._budget = budget
        self._interval = np.full(web.size, uniform)
        return rng.random(web.size) * uniform

    def estimates(self) -> Floats:
        """Each page's estimated change rate per day."""
        n, x = self._n, self._x
        mean_interval = self._t / n
        return -np.log((n - x + 0.5) / (n + 0.5)) / mean_interval

    def fetched(self, pages: Ints, now: float, intervals: Floats, changed: Bools) -> Floats:
        self._n[pages] += 1.0
        self._x[pages] += changed
        self._t[pages] += intervals
        return now + self._interval[pages]

    def replan(self, now: float, last_fetch: Floats) -> Floats | None:
        spread = self.floor * self._budget
        freq = optimal_rates(self.estimates(), self._weights, self._budget - spread)
        freq += spread / len(freq)
        self._interval = 1.0 / freq
        if self.tiers is not None:
            periods = np.array(self.tiers.periods) / self.tiers.periods[0]  # tier 1 = 1 day
            nearest = np.abs(np.log(self._interval[:, None] / periods[None, :])).argmin(axis=1)
            self._interval = periods[nearest]
        if self.cap_days is not None:
            self._interval = np.minimum(self._interval, self.cap_days)
        if self.learn_visits:
            learning = self._n - self.prior_visits < self.learn_visits
            self._interval = np.where(learning, 1.0, self._interval)
        return last_fetch + self._interval


def tier_rates(web: SimWeb, budget: float, policy: TierPolicy) -> Floats:
    """The seed's tiers: popularity -> tiers 1/2/3, periods in the ratio of the policy's,
    scaled so the visits spend the budget."""
    tiers = assign_tiers(dict(enumerate(web.popularity.tolist())), policy)
    periods = np.array([policy.periods[tiers[i] - 1] for i in range(web.size)])
    per_period: Floats = 1.0 / periods
    scaled: Floats = per_period * (budget / float(per_period.sum()))
    return scaled


def standard_policies(web: SimWeb, budget: float) -> list[Policy]:
    """Every policy of the benchmark for one web and budget."""
    return [
        FixedRates("uniform", uniform_rates(web.size, budget)),
        FixedRates("proportional", proportional_rates(web.rates, budget)),
        FixedRates("tiers (1/3/7 by popularity)", tier_rates(web, budget, TierPolicy())),
        AdaptiveInterval("Nutch adaptive", decrease=0.2, increase=0.4),
        AdaptiveInterval("StormCrawler adaptive", decrease=0.5, increase=0.5),
        LearnedOptimal(),
        LearnedOptimal(name="change-rate aware, rounded to tiers", tiers=TierPolicy()),
        LearnedOptimal(
            name="change-rate aware as in crawl --revisit", learn_visits=3, cap_days=28.0
        ),
        FixedRates("oracle", optimal_rates(web.rates, web.popularity, budget)),
    ]


@dataclass(frozen=True)
class Outcome:
    """Popularity-weighted freshness (0..1) and age (days), time-averaged after the warm-up."""

    freshness: float
    age: float
    fetches: int


def simulate(
    web: SimWeb,
    policy: Policy,
    rng: np.random.Generator,
    *,
    budget: float,
    days: float = 60.0,
    warmup: float = 20.0,
    dt: float = 1.0 / 24,
) -> Outcome:
    """Run one policy on one web for ``days`` days with ``budget`` fetches a day."""
    if not budget > 0 or not 0 <= warmup < days or not dt > 0:
        raise ValueError("need budget > 0, 0 <= warmup < days and dt > 0")
    n = web.size
    w = web.popularity / web.popularity.sum()
    change_p = -np.expm1(-web.rates * dt)
    due = policy.start(web, budget, rng)
    last_fetch = np.zeros(n)
    stale = np.zeros(n, dtype=bool)
    stale_since = np.zeros(n)
    steps = round(days / dt)
    per_day = max(1, round(1.0 / dt))
    carry = 0.0
    fresh_sum = age_sum = 0.0
    measured = fetches = 0
    for step in range(steps):
        start, now = step * dt, (step + 1) * dt
        newly = (rng.random(n) < change_p) & ~stale
        stale_since[newly] = start + dt * rng.random(int(newly.sum()))
        stale |= newly
        counting = start >= warmup
        if counting:
            fresh_sum += 0.5 * float(w[~stale].sum())
            age_sum += 0.5 * float((w * np.where(stale, now - stale_since, 0.0)).sum())
        carry += budget * dt
        take = min(n, int(carry))
        carry -= take
        if take:
            pages = np.argpartition(due, take - 1)[:take] if take < n else np.arange(n)
            changed = stale[pages].copy()
            intervals = now - last_fetch[pages]
            stale[pages] = False
            last_fetch[pages] = now
            due[pages] = policy.fetched(pages, now, intervals, changed)
            fetches += take
        if counting:
            fresh_sum += 0.5 * float(w[~stale].sum())
            age_sum += 0.5 * float((w * np.where(stale, now - stale_since, 0.0)).sum())
            measured += 1
        if (step + 1) % per_day == 0:
            planned = policy.replan(now, last_fetch)
            if planned is not None:
                due = planned
    return Outcome(freshness=fresh_sum / measured, age=age_sum / measured, fetches=fetches)
