"""Three revisit tiers (daily, every 3 days, weekly) from a popularity or influence score.

Items are ranked by score; the top ``shares[0]`` of them go to tier 1, the next
``shares[1]`` to tier 2 and the rest to tier 3. Ties never straddle a boundary:
items with equal scores always land in the same tier (the better one), so the
assignment does not depend on dict order. Every period is configurable, and
:meth:`TierPolicy.in_days` lets a demo run a "day" in seconds.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from topicrawl.core.errors import ConfigError

__all__ = [
    "DAY",
    "TIERS",
    "TierPolicy",
    "assign_tiers",
    "period_of",
    "tier_of_period",
]

K = TypeVar("K", bound=Hashable)

DAY = 86_400.0
TIERS = (1, 2, 3)


@dataclass(frozen=True)
class TierPolicy:
    """How scores map to tiers and tiers to revisit periods.

    Attributes:
        periods: revisit period of tiers 1, 2 and 3 in seconds (default 1, 3 and 7 days).
        shares: fraction of items in tiers 1 and 2 (tier 3 takes the rest).
        recompute_period: seconds between two recomputations of the tiers (default 7 days).
    """

    periods: tuple[float, float, float] = (DAY, 3 * DAY, 7 * DAY)
    shares: tuple[float, float] = (0.2, 0.3)
    recompute_period: float = 7 * DAY

    def __post_init__(self) -> None:
        if len(self.periods) != 3 or any(not math.isfinite(p) or p <= 0 for p in self.periods):
            raise ConfigError(f"periods must be three positive numbers, got {self.periods}")
        if list(self.periods) != sorted(self.periods):
            raise ConfigError(f"periods must not decrease from tier 1 to 3: {self.periods}")
        if len(self.shares) != 2 or any(not 0 <= s <= 1 for s in self.shares):
            raise ConfigError(f"shares must be two fractions in [0, 1], got {self.shares}")
        if sum(self.shares) > 1 + 1e-9:
            raise ConfigError(f"shares of tiers 1 and 2 add up to more than 1: {self.shares}")
        if not math.isfinite(self.recompute_period) or self.recompute_period <= 0:
            raise ConfigError(f"recompute_period must be positive, got {self.recompute_period}")

    @classmethod
    def in_days(
        cls,
        *,
        periods_days: tuple[float, float, float] = (1.0, 3.0, 7.0),
        recompute_days: float = 7.0,
        shares: tuple[float, float] = (0.2, 0.3),
        day_seconds: float = DAY,
    ) -> TierPolicy:
        """A policy written in days, where a demo can make a "day" last ``day_seconds`` seconds."""
        if not math.isfinite(day_seconds) or day_seconds <= 0:
            raise ConfigError(f"day_seconds must be positive, got {day_seconds}")
        p1, p2, p3 = periods_days
        return cls(
            periods=(p1 * day_seconds, p2 * day_seconds, p3 * day_seconds),
            shares=shares,
            recompute_period=recompute_days * day_seconds,
        )


def assign_tiers(scores: Mapping[K, float], policy: TierPolicy) -> dict[K, int]:
    """Tier (1, 2 or 3) of every key: top ``shares[0]`` by score -> 1, next ``shares[1]`` -> 2.

    Counts are rounded to the nearest item (at least one item in tier 1 when its
    share is positive and there are items). Equal scores share a tier: a run of
    ties that crosses a boundary goes wholly to the better tier. NaN scores rank last.

    Raises:
        ValueError: when a score is infinite.
    """
    for key, value in scores.items():
        if math.isinf(value):
            raise ValueError(f"score of {key!r} is infinite")
    n = len(scores)
    if n == 0:
        return {}
    ranked = sorted(scores, key=lambda k: _rank_value(scores[k]), reverse=True)
    cut1 = _count(policy.shares[0], n)
    cut2 = min(n, cut1 + _count(policy.shares[1], n))
    tiers: dict[K, int] = {}
    previous: float | None = None
    tier = 1
    for index, key in enumerate(ranked):
        value = _rank_value(scores[key])
        tied = previous is not None and value == previous
        if not tied:
            tier = 1 if index < cut1 else 2 if index < cut2 else 3
        tiers[key] = tier
        previous = value
    return tiers


def period_of(tier: int, policy: TierPolicy) -> float:
    """Revisit period of a tier, in seconds.

    Raises:
        ValueError: when the tier is not 1, 2 or 3.
    """
    if tier not in TIERS:
        raise ValueError(f"tier must be 1, 2 or 3, got {tier}")
    return policy.periods[tier - 1]


def tier_of_period(period: float, policy: TierPolicy) -> int:
    """The tier whose period is nearest to ``period`` seconds (on a log scale).

    This rounds a computed revisit interval (e.g. from the budget-aware policy)
    to the tier a user sees.
    """
    if not period > 0:
        return 1
    logs = [abs(math.log(period / p)) for p in policy.periods]
    return 1 + logs.index(min(logs))


def _count(share: float, n: int) -> int:
    count = math.floor(share * n + 0.5)
    if share > 0 and count == 0:
        count = 1
    return min(n, count)


def _rank_value(score: float) -> float:
    return -math.inf if math.isnan(score) else score
