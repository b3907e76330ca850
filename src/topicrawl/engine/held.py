"""Hosts the crawl holds back: their robots.txt cannot be read, or their server asked for a
long wait.

A held host's URLs stay queued (the frontier pauses the host), the crawl goes on with the
other hosts, and when nothing else is left the crawl ends instead of waiting the hold out:
a hold longer than ``patience`` is not worth keeping the whole crawl open for. Those URLs are
then recorded as failures (kind ``host_held``) and left queued, so a resumed crawl tries
them again. A short hold (a server's brief Retry-After) is waited out.

Pure policy (no I/O, the clock is passed in), but for :func:`leave_queued`, which records
what a crawl ending this way leaves unfetched.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol, runtime_checkable

from topicrawl.core.models import ErrorKind, FetchFailure, HeldHost, Request

__all__ = ["HeldHosts", "HostHolds", "describe", "leave_queued"]

RecordFn = Callable[[Request, ErrorKind, str], Awaitable[FetchFailure]]


@runtime_checkable
class HostHolds(Protocol):
    """A frontier that can pause a host and count and list its queued URLs (the in-process
    frontiers); with another one a held host keeps the crawl waiting."""

    async def pause_host(self, host: str, seconds: float) -> None: ...

    async def queued_in(self, hosts: Iterable[str]) -> int: ...

    async def queued_requests(self, host: str) -> list[Request]: ...


class HeldHosts:
    """The holds in force, one per host (a new hold on a held host replaces the old one).

    Args:
        patience: seconds of a hold the crawl waits out when nothing else is left to do;
            a longer hold ends the crawl instead.
    """

    def __init__(self, *, patience: float) -> None:
        if not patience >= 0:
            raise ValueError(f"patience must be >= 0, got {patience}")
        self.patience = patience
        self._holds: dict[str, HeldHost] = {}

    def hold(self, host: str, *, reason: str, seconds: float, now: float) -> HeldHost:
        """Hold ``host`` for ``seconds`` from ``now``."""
        held = HeldHost(host=host, reason=reason, until=now + max(seconds, 0.0))
        self._holds[host] = held
        return held

    def current(self, now: float) -> dict[str, HeldHost]:
        """The holds not yet over (expired ones are forgotten)."""
        for host in [h for h, held in self._holds.items() if held.until <= now]:
            del self._holds[host]
        return dict(self._holds)

    def lasting(self, now: float) -> list[HeldHost]:
        """The holds that end more than ``patience`` from now: not worth waiting for."""
        return [h for h in self.current(now).values() if h.until - now > self.patience]

    def is_lasting(self, seconds: float) -> bool:
        """Whether a hold of ``seconds`` is longer than the crawl waits out."""
        return seconds > self.patience


def describe(holds: Iterable[HeldHost], *, now: float | None = None) -> str:
    """Holds in words for a progress line or a log: host, why, and when it is retried."""
    current = time.time() if now is None else now
    return ", ".join(held.describe(current) for held in holds)


async def leave_queued(holds: HostHolds, lasting: Iterable[HeldHost], record: RecordFn) -> int:
    """Record each URL still queued for a held host as a ``host_held`` failure (the URL stays
    queued); returns how many there were."""
    left = 0
    for held in lasting:
        for request in await holds.queued_requests(held.host):
            message = f"not fetched: host {held.host} held ({held.reason})"
            await record(request, ErrorKind.HOST_HELD, message)
            left += 1
    return left
