"""Request slots: how many requests are in flight, in all and per host.

The crawl holds more pages than it has requests in flight: once a page's body has arrived its
request slot is free for the next URL while the page is still parsed, scored and stored. So
politeness (requests in flight to one host) is counted here, on requests, and not by the
frontier's leases, which last until a page is stored.

The politeness delay is kept here too, on request starts (:class:`RequestSpacing`): the
frontier spaces its hand-outs of a host by the delay, but a URL handed out waits for a request
slot (or for an event loop busy parsing) before its request starts, so hand-outs spaced by the
delay can still start together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["RequestSlots", "RequestSpacing"]


class _HostSlots:
    """One host's semaphore and how many tasks hold or wait for it."""

    __slots__ = ("semaphore", "users")

    def __init__(self, size: int) -> None:
        self.semaphore = asyncio.Semaphore(size)
        self.users = 0


class RequestSlots:
    """Caps requests in flight: ``total`` over the crawl and ``per_host`` for each host.

    Args:
        total: requests in flight at once (the crawl's concurrency).
        per_host: requests in flight to one host at once; 0 leaves hosts uncapped here.

    Raises:
        ValueError: a cap is out of range.
    """

    def __init__(self, *, total: int, per_host: int) -> None:
        if total < 1 or per_host < 0:
            raise ValueError(f"need total >= 1 and per_host >= 0, got {total} and {per_host}")
        self._total = asyncio.Semaphore(total)
        self._per_host = per_host
        self._hosts: dict[str, _HostSlots] = {}  # a host's entry goes when no task uses it

    def in_use(self, host: str) -> int:
        """Tasks holding or waiting for a slot of ``host`` (0 when the host is uncapped)."""
        entry = self._hosts.get(host)
        return 0 if entry is None else entry.users

    async def acquire(self, host: str) -> None:
        """Wait for a slot of the host, then for one of the crawl's; pair with :meth:`release`."""
        if not self._per_host:
            await self._total.acquire()
            return
        entry = self._hosts.get(host)
        if entry is None:
            entry = self._hosts[host] = _HostSlots(self._per_host)
        entry.users += 1
        try:
            await entry.semaphore.acquire()
        except BaseException:
            self._leave(host, entry, acquired=False)
            raise
        try:
            await self._total.acquire()
        except BaseException:
            self._leave(host, entry, acquired=True)
            raise

    def release(self, host: str) -> None:
        """Give back the slots :meth:`acquire` took for the host."""
        self._total.release()
        if self._per_host:
            self._leave(host, self._hosts[host], acquired=True)

    def _leave(self, host: str, entry: _HostSlots, *, acquired: bool) -> None:
        if acquired:
            entry.semaphore.release()
        entry.users -= 1
        if entry.users == 0:
            del self._hosts[host]


class RequestSpacing:
    """The next time a request to each host may start, for one process.

    :meth:`claim` is called by a request about to start: it either claims "now" (the next
    request to the host may start ``delay`` seconds later) or says how long to wait before
    asking again. A request that waited asks again rather than booking a time ahead, so one
    that starts late (the event loop was busy) pushes the next one back too.

    Args:
        clock: monotonic seconds.
    """

    _PRUNE = 4096  # hosts remembered before those whose time has passed are forgotten

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._next: dict[str, float] = {}

    async def claim(self, host: str, delay: float) -> float:
        """Seconds to wait before asking again, or 0 when the request may start now."""
        now = self._clock()
        wait = self._next.get(host, now) - now
        if wait > 0:
            return wait
        if len(self._next) >= self._PRUNE:
            self._next = {h: t for h, t in self._next.items() if t > now}
        self._next[host] = now + delay
        return 0.0
