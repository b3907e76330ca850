"""The time a revisit system runs on: the system clock, or a simulated one that jumps.

A :class:`SimulatedClock` makes ``sleep_until`` return at once with the clock moved to the
wanted time, so a test or a demo runs weeks of revisits in seconds: every due time, tier
period and weekly re-plan is computed on the clock as in real time, only no real time passes
between events. Demo servers read the same clock to serve what the site or the microblog
shows "now" (see :class:`topicrawl.demoweb.video.VideoServer` and
:class:`topicrawl.demoweb.accountserver.AccountServer`).
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Protocol

__all__ = ["Clock", "SimulatedClock", "SystemClock"]


class Clock(Protocol):
    """Seconds since the epoch, and a way to wait for a time."""

    def now(self) -> float:
        """The time now."""
        ...

    async def sleep_until(self, when: float) -> None:
        """Return at ``when`` (at once when it has passed)."""
        ...


class SystemClock:
    """The real time (``time.time``) and real waits."""

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, when: float) -> None:
        delay = when - time.time()
        if delay > 0:
            await asyncio.sleep(delay)


class SimulatedClock:
    """A clock that only moves when waited on: ``sleep_until(t)`` sets it to ``t`` at once.

    Args:
        start: its time at first (seconds since the epoch).

    Raises:
        ValueError: ``start`` is not finite.
    """

    def __init__(self, start: float) -> None:
        if not math.isfinite(start):
            raise ValueError(f"a clock starts at a finite time, not {start}")
        self._now = float(start)
        self.jumps = 0

    def now(self) -> float:
        return self._now

    async def sleep_until(self, when: float) -> None:
        if when > self._now:
            self._now = float(when)
            self.jumps += 1
        await asyncio.sleep(0)  # let other tasks run, as a real wait would
