"""The pop gate: a worker's idle tasks do not all ask Redis for work at once.

A worker runs more crawl tasks than it has requests in flight, and the crawler wakes every
idle task whenever anything changes. On a one-host crawl each freed request slot would then
send every idle task to Redis for a pop of which at most one can succeed (48 tasks, 8 slots:
about 40 pops per page). Once a pop has come back empty, the gate answers further pops
``None`` locally until something this process did may have made work (a request slot freed,
a lease acked or put back: one probe each; URLs added: open again), or a probe interval has
passed (work freed by other workers, or a politeness delay that ran out, is seen within it).
Pops go to Redis one at a time: the tasks queued behind one that comes back empty answer
``None`` without asking.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

__all__ = ["PopGate", "Probe"]


class Probe:
    """One pop's turn: ``go`` says whether to ask Redis; :meth:`found` records the answer."""

    __slots__ = ("behind", "go", "result")

    def __init__(self, *, go: bool, behind: int = 0) -> None:
        self.go = go
        self.behind = behind  # pops queued behind this one (it may lease for them too)
        self.result: bool | None = None

    def found(self, leased: bool) -> None:
        """Record whether the pop got a lease."""
        self.result = leased


class PopGate:
    """Decides whether a pop goes to Redis or is answered ``None`` locally.

    Args:
        probe_interval: seconds after an empty pop before the next one goes to Redis
            unaided; 0 turns the gate off (every pop goes to Redis, concurrently).
        clock: monotonic seconds.
    """

    def __init__(
        self, *, probe_interval: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not probe_interval >= 0:
            raise ValueError(f"probe_interval must be >= 0, got {probe_interval}")
        self._interval = probe_interval
        self._clock = clock
        self._lock = asyncio.Lock()
        self._closed_at: float | None = None  # when the last empty pop came back
        self._credits = 0  # pops let through while closed, one per local event
        self._events = 0  # local events so far (slots freed, leases acked or put back)
        self._queued = 0  # pops waiting for their turn

    def _may_probe(self) -> bool:
        if self._closed_at is None or self._credits > 0:
            return True
        return self._clock() - self._closed_at >= self._interval

    def closed_for(self) -> float | None:
        """Seconds until a pop may go to Redis again, or None while the gate is open."""
        if self._closed_at is None:
            return None
        if self._credits > 0:
            return 0.0
        return max(self._interval - (self._clock() - self._closed_at), 0.005)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[Probe]:
        """A pop's turn: waits for the pops before it, then says whether to ask Redis; the
        gate closes or opens on the answer."""
        if not self._interval:
            yield Probe(go=True)
            return
        if not self._may_probe():
            yield Probe(go=False)
            return
        self._queued += 1
        try:
            await self._lock.acquire()
        finally:
            self._queued -= 1
        try:
            probe = Probe(go=self._may_probe(), behind=self._queued)
            if probe.go and self._closed_at is not None and self._credits > 0:
                self._credits -= 1
            events = self._events
            yield probe
            if probe.result is True:
                self._closed_at = None
                self._credits = 0
            elif probe.result is False:
                self._closed_at = self._clock()
                # Events during this pop may have come after Redis answered it.
                self._credits = min(self._events - events, 1_000)
        finally:
            self._lock.release()

    def open_one(self) -> None:
        """This process freed something one pop may now take."""
        self._events += 1
        if self._closed_at is not None:
            self._credits += 1

    def open(self) -> None:
        """This process added work: let every pop through again."""
        self._events += 1
        self._closed_at = None
        self._credits = 0
