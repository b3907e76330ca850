"""A page's change rate from an incomplete change history (Cho and Garcia-Molina, 2003).

A crawler sees only whether a page changed between two visits, not how many times, so the
naive estimate (changes seen / time watched) is biased low. Two estimators from
J. Cho and H. Garcia-Molina, "Estimating frequency of change" (ACM TOIT 3(3), 2003):

- :func:`rate_regular`: visits at a regular interval ``I``, ``X`` of ``n`` visits saw a
  change: ``-ln((n - X + 0.5) / (n + 0.5)) / I``, their bias-reduced estimator (finite even
  when every visit saw a change).
- :func:`rate_mle`: visits at irregular intervals: the maximum-likelihood rate, the root of
  ``sum over changed t_i / (exp(rate t_i) - 1) = sum over unchanged t_j``; it falls back to
  the bias-reduced estimator (with the mean interval) when every interval saw a change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ChangeHistory", "rate_mle", "rate_regular"]

_MAX_ITER = 200


def rate_regular(visits: int, changes: int, interval: float) -> float:
    """Bias-reduced change rate (per unit of ``interval``) from ``changes`` of ``visits``.

    Raises:
        ValueError: negative counts, more changes than visits, or a non-positive interval.
    """
    if visits < 0 or not 0 <= changes <= visits:
        raise ValueError(f"need 0 <= changes <= visits, got {changes} of {visits}")
    if not interval > 0:
        raise ValueError(f"interval must be positive, got {interval}")
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / interval


def rate_mle(changed: Sequence[float], unchanged: Sequence[float]) -> float:
    """Maximum-likelihood change rate from the intervals that saw a change and those that did not.

    Each interval is the time between two visits. Returns 0.0 when no interval saw a change.

    Raises:
        ValueError: an interval is not a positive finite number.
    """
    for t in (*changed, *unchanged):
        if not (t > 0 and math.isfinite(t)):
            raise ValueError(f"intervals must be positive and finite, got {t}")
    if not changed:
        return 0.0
    if not unchanged:
        mean = sum(changed) / len(changed)
        return rate_regular(len(changed), len(changed), mean)
    quiet = sum(unchanged)

    def excess(rate: float) -> float:  # decreasing in rate; its root is the estimate
        return sum(t / math.expm1(rate * t) for t in changed) - quiet

    low, high = 1e-12, 1.0 / min(changed)
    while excess(high) > 0:
        high *= 2.0
    for _ in range(_MAX_ITER):
        mid = 0.5 * (low + high)
        if excess(mid) > 0:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return 0.5 * (low + high)


@dataclass(frozen=True)
class ChangeHistory:
    """What the visits of one page saw: each interval between visits and whether it changed.

    Only the last ``limit`` intervals are kept, so a page's history stays small however often
    it is visited and the estimate follows a page whose rate drifts.
    """

    intervals: tuple[tuple[float, bool], ...] = ()
    limit: int = 64

    def seen(self, interval: float, *, changed: bool) -> ChangeHistory:
        """The history after one more visit, ``interval`` after the previous one."""
        if not (interval > 0 and math.isfinite(interval)):
            return self
        kept = self.intervals[len(self.intervals) - self.limit + 1 :] if self.limit > 1 else ()
        return ChangeHistory((*kept, (interval, changed)), self.limit)

    @property
    def visits(self) -> int:
        """Intervals observed (visits after the first), up to ``limit``."""
        return len(self.intervals)

    def rate(self) -> float:
        """The maximum-likelihood change rate (per second when intervals are seconds)."""
        changed = [t for t, c in self.intervals if c]
        unchanged = [t for t, c in self.intervals if not c]
        return rate_mle(changed, unchanged)
