"""Request slots: how many requests are in flight, in all and per host.

The crawl holds more pages than it has requests in flight: once a page's body has arrived its
request slot is free for the next URL while the page is still parsed, scored and stored. So
politeness (requests in flight to one host) is counted here, on requests, and not by the
frontier's leases, which last until a page is stored.
"""

from __future__ import annotations

import asyncio

__all__ = ["RequestSlots"]


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
        # host -> [its semaphore, tasks holding or waiting for it]; dropped when unused.
        self._hosts: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    def in_use(self, host: str) -> int:
        """Tasks holding or waiting for a slot of ``host`` (0 when the host is uncapped)."""
        entry = self._hosts.get(host)
        return 0 if entry is None else entry[1][0]

    async def acquire(self, host: str) -> None:
        """Wait for a slot of the host, then for one of the crawl's; pair with :meth:`release`."""
        if self._per_host:
            entry = self._hosts.get(host)
            if entry is None:
                entry = self._hosts[host] = (asyncio.Semaphore(self._per_host), [0])
            entry[1][0] += 1
            try:
                await entry[0].acquire()
            except BaseException:
                self._leave(host, entry, acquired=False)
                raise
            try:
                await self._total.acquire()
            except BaseException:
                self._leave(host, entry, acquired=True)
                raise
        else:
            await self._total.acquire()

    def release(self, host: str) -> None:
        """Give back the slots :meth:`acquire` took for the host."""
        self._total.release()
        if self._per_host:
            self._leave(host, self._hosts[host], acquired=True)

    def _leave(
        self, host: str, entry: tuple[asyncio.Semaphore, list[int]], *, acquired: bool
    ) -> None:
        if acquired:
            entry[0].release()
        entry[1][0] -= 1
        if entry[1][0] == 0:
            del self._hosts[host]
