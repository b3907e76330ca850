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
import heapq
import itertools
import math
import time
from typing import Protocol

__all__ = ["Clock", "LockstepClock", "SimulatedClock", "SystemClock"]


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


class LockstepClock:
    """A simulated clock shared by several parties (e.g. nodes) running at once in one loop.

    Time moves only when every party is waiting on it, and then to the earliest time one of
    them waits for: work takes no time on this clock, and no party sees time pass while
    another is still working at the current instant. A party that is done calls
    :meth:`leave` so the others are not held for it. Each party waits in one task at a time.

    Args:
        start: its time at first (seconds since the epoch).
        parties: how many parties share it.

    Raises:
        ValueError: ``start`` is not finite or ``parties`` is under 1.
    """

    def __init__(self, start: float, *, parties: int) -> None:
        if not math.isfinite(start) or parties < 1:
            raise ValueError(f"a lockstep clock needs a finite start and parties >= 1, not "
                             f"{start}, {parties}")  # fmt: skip
        self._now = float(start)
        self._parties = parties
        self._waiting: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.jumps = 0

    def now(self) -> float:
        return self._now

    async def sleep_until(self, when: float) -> None:
        if when <= self._now:
            await asyncio.sleep(0)
            return
        entry = (float(when), next(self._order), asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiting, entry)
        self._advance()
        try:
            await entry[2]
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
            raise

    def leave(self) -> None:
        """One party is done: time no longer waits for it."""
        self._parties -= 1
        self._advance()

    def _advance(self) -> None:
        if not self._waiting or len(self._waiting) < self._parties:
            return
        self._now = max(self._now, self._waiting[0][0])
        self.jumps += 1
        while self._waiting and self._waiting[0][0] <= self._now:
            future = heapq.heappop(self._waiting)[2]
            if not future.done():
                future.set_result(None)
