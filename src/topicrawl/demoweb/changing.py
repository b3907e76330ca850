"""Pages that change: a seeded change log for the demo web's "changing page" mode.

Each article page (kind ``ARTICLE``) changes as a Poisson process with its own rate (log-normal,
so a few change many times a day and most seldom), over a simulated clock where a "day" lasts
``day_seconds``. The whole log is drawn up front from the seed, so the server and a benchmark
agree on what changed when: :meth:`ChangeLog.version` is how many times a page has changed
by a time, and a served page carries its version in its text and its ETag (the server answers
``If-None-Match`` with 304 while the version is unchanged).
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable

__all__ = ["ChangeLog"]


class ChangeLog:
    """When every changing page changes, from ``start`` (epoch seconds) for ``days`` days.

    Args:
        keys: the pages that change, as ``(host, path)``.
        seed: the random seed of the rates and change times.
        start: the epoch second the clock starts (the server's start).
        day_seconds: seconds in a simulated day.
        days: how long the log runs; after it, pages stop changing.
        median_rate: median changes a day; ``rate_sigma`` the log-normal spread.
    """

    def __init__(
        self,
        keys: Iterable[tuple[str, str]],
        *,
        seed: int,
        start: float,
        day_seconds: float = 2.0,
        days: float = 30.0,
        median_rate: float = 0.5,
        rate_sigma: float = 1.2,
    ) -> None:
        if not day_seconds > 0 or not days > 0:
            raise ValueError("day_seconds and days must be positive")
        rng = random.Random(seed)
        self.start = start
        self.day_seconds = day_seconds
        self.rates: dict[tuple[str, str], float] = {}
        self._times: dict[tuple[str, str], list[float]] = {}
        for key in sorted(keys):
            rate = median_rate * math.exp(rate_sigma * rng.gauss(0.0, 1.0))
            self.rates[key] = rate
            times, t = [], 0.0
            while True:
                t += rng.expovariate(rate)
                if t >= days:
                    break
                times.append(start + t * day_seconds)
            self._times[key] = times

    def changes(self, host: str, path: str) -> bool:
        """Whether the page is one that changes."""
        return (host, path) in self._times

    def version(self, host: str, path: str, at: float) -> int:
        """How many times the page had changed by epoch second ``at`` (0 for a still page)."""
        times = self._times.get((host, path))
        return 0 if times is None else bisect.bisect_right(times, at)

    def times(self, host: str, path: str) -> list[float]:
        """The epoch seconds the page changes at."""
        return list(self._times.get((host, path), ()))
