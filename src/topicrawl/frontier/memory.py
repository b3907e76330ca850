"""The in-memory frontier: per-host heaps, politeness and leases, for one process and one run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from topicrawl.core.models import Request
from topicrawl.frontier._schedule import Clock, FrontierCore, Held, check_bloom_options, fp_of
from topicrawl.frontier.dedupe import SeenUrls
from topicrawl.parse.urls import fingerprint, fingerprints

__all__ = ["MemoryFrontier"]


class MemoryFrontier(FrontierCore):
    """A max-priority frontier held in memory (lost when the process ends).

    Every operation is O(log n) in the URLs of one host plus O(log h) in the hosts, amortised
    over the stale keys increase-key leaves behind.

    Args:
        default_delay: seconds between two fetches of a host, unless :meth:`set_host_delay`
            says otherwise.
        max_per_host: leases one host may have out at once.
        lease_headroom: more leases a host may have out while its delay is 0: pages whose
            request is done but which are still being parsed and stored (the crawler then caps
            requests per host itself).
        lease_ttl: seconds a lease lasts before :meth:`reclaim_expired` takes it back.
        bloom_capacity: URLs the dedupe Bloom filter is sized for (it grows past that).
        bloom_error_rate: the Bloom filter's false-positive rate (a cost, never a lost URL).
        clock: seconds since the epoch; injectable for tests.
    """

    durable = False

    def __init__(
        self,
        *,
        default_delay: float = 0.0,
        max_per_host: int = 8,
        lease_headroom: int = 0,
        lease_ttl: float = 300.0,
        bloom_capacity: int = 1_000_000,
        bloom_error_rate: float = 1e-7,
        clock: Clock = time.time,
    ) -> None:
        super().__init__(
            default_delay=default_delay,
            max_per_host=max_per_host,
            lease_headroom=lease_headroom,
            lease_ttl=lease_ttl,
            clock=clock,
        )
        check_bloom_options(bloom_capacity, bloom_error_rate)
        self._seen = SeenUrls(capacity=bloom_capacity, error_rate=bloom_error_rate)
        # Queued and deferred URLs: fingerprint -> (current key, request at its current score).
        self._queued: dict[int, tuple[int, Request]] = {}

    def known(self, urls: Sequence[str]) -> list[bool]:
        """For each URL, whether it was ever pushed to this frontier (no I/O, marks nothing)."""
        self._check_usable()
        return self._seen.contains_many(fingerprints(urls))

    async def seen(self, url: str) -> bool:
        """Whether the URL was ever pushed to this frontier."""
        self._check_usable()
        return self._seen.contains(fingerprint(url))

    async def flush(self) -> None:
        """Nothing to make durable in memory."""
        self._check_usable()

    async def close(self) -> None:
        """Drop everything; later calls raise :class:`~topicrawl.core.errors.FrontierError`."""
        self._closed = True

    # -- hooks

    def _filter_new(self, fps: Sequence[int]) -> list[bool]:
        return self._seen.filter_new(fps)

    def _store_new(self, fp: int, key: int, request: Request) -> None:
        self._queued[fp] = (key, request)

    def _queued_score(self, fp: int) -> float | None:
        entry = self._queued.get(fp)
        return None if entry is None else entry[1].score

    def _store_rekey(self, fp: int, key: int, score: float, replacement: Request | None) -> None:
        request = self._queued[fp][1]
        self._queued[fp] = (key, replacement or replace(request, score=score))

    def _resolve(self, key: int) -> Request | None:
        entry = self._queued.get(fp_of(key))
        if entry is None or entry[0] != key:
            return None
        return entry[1]

    def _on_leased(self, fp: int) -> None:
        del self._queued[fp]

    def _on_done(self, held: Held) -> None:
        """The seen set already remembers the URL, so nothing else is kept."""

    def _on_returned(self, held: Held) -> None:
        self._queued[held.fp] = (held.key, held.lease.request)

    def _on_host_delay(self, host: str, delay: float) -> None:
        """Host delays live in the host queues only."""

    async def _wrote(self) -> None:
        """Nothing to write."""
