"""A page's popularity index from its extracted counts (plays, comments, favourites) and growth.

``index = sum_k w_k log(1 + count_k) + growth_weight * sum_k w_k log(1 + growth_k)`` where
``growth_k`` is count ``k``'s increase per day since the previous snapshot. Logarithms keep one
viral page from flattening every other; growth lets a new, fast-rising page outrank an old one
with a large but static total. A topic's heat can stand in for the index directly (any float
works with :func:`~topicrawl.revisit.tiers.assign_tiers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from topicrawl.revisit.tiers import DAY

__all__ = ["DEFAULT_COUNT_WEIGHTS", "popularity_index"]

DEFAULT_COUNT_WEIGHTS: Mapping[str, float] = {"plays": 1.0, "comments": 1.0, "favourites": 1.0}


def popularity_index(
    counts: Mapping[str, float],
    *,
    previous: Mapping[str, float] | None = None,
    elapsed: float = 0.0,
    weights: Mapping[str, float] = DEFAULT_COUNT_WEIGHTS,
    growth_weight: float = 1.0,
    day_seconds: float = DAY,
) -> float:
    """Popularity of one page from its counts now and (optionally) at the previous snapshot.

    Args:
        counts: the page's counts now, by name; names without a weight are ignored.
        previous: the counts at the previous snapshot, ``elapsed`` seconds ago.
        elapsed: seconds between the two snapshots (no growth term when not positive).
        weights: weight of each count.
        growth_weight: weight of the growth term against the totals.
        day_seconds: length of a day, for growth per day (a demo may shorten it).

    Raises:
        ValueError: a count is negative or not finite.
    """
    index = 0.0
    for name, weight in weights.items():
        value = counts.get(name)
        if value is None:
            continue
        _check(name, value)
        index += weight * math.log1p(value)
        if previous is None or not elapsed > 0 or name not in previous:
            continue
        before = previous[name]
        _check(name, before)
        growth = max(0.0, value - before) * day_seconds / elapsed
        index += growth_weight * weight * math.log1p(growth)
    return index


def _check(name: str, value: float) -> None:
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"count {name!r} must be a finite number >= 0, got {value}")
