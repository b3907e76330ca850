"""Lock-free counters the crawl keeps for its metrics endpoint and live samples.

The crawl loop runs on one event loop, so a plain list of integers needs no lock; the metrics
endpoint (a thread) reads a copy, which at worst misses the observation being made.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["FETCH_BUCKETS", "HistogramSnapshot", "LatencyHistogram"]

# Seconds; a loopback fetch takes about a millisecond, a slow server's tens of seconds.
FETCH_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    """Cumulative counts at each upper bound (the last one +Inf), their sum and count."""

    bounds: tuple[float, ...]
    cumulative: tuple[int, ...]
    total: float
    count: int


class LatencyHistogram:
    """Counts of observations per bucket (upper bounds ``buckets``, then +Inf).

    Raises:
        ValueError: the buckets are empty or not strictly increasing.
    """

    def __init__(self, buckets: Sequence[float] = FETCH_BUCKETS) -> None:
        bounds = tuple(float(b) for b in buckets)
        if not bounds or any(a >= b for a, b in pairwise(bounds)):
            raise ValueError(f"buckets must be a strictly increasing, non-empty list: {buckets}")
        self._bounds = bounds
        self._counts = [0] * (len(bounds) + 1)
        self._sum = 0.0

    def observe(self, seconds: float) -> None:
        """Count one observation (a value on a bound falls in that bound's bucket)."""
        self._counts[bisect_left(self._bounds, seconds)] += 1
        self._sum += seconds

    def snapshot(self) -> HistogramSnapshot:
        counts = list(self._counts)
        cumulative: list[int] = []
        running = 0
        for count in counts:
            running += count
            cumulative.append(running)
        return HistogramSnapshot(
            bounds=(*self._bounds, float("inf")),
            cumulative=tuple(cumulative),
            total=self._sum,
            count=running,
        )
