"""Shared frontier machinery: priority keys, per-host queues with politeness, and leases.

A queued URL is represented in memory by one Python ``int``, its *key*: the score (mapped so
that a higher score gives a smaller number), then a sequence number (so equal scores leave in
insertion order), then the URL's 64-bit fingerprint. Keys compare as plain integers, so heaps
of keys need no tuples: about 56 bytes per entry plus an 8-byte list slot.

Each host has a heap of keys. Increase-key (or a rescore, up or down) pushes a new key and
leaves the old one in the heap (lazy deletion): the implementation's ``resolve`` tells a live
key from a stale one when it reaches the top. Hosts are scheduled by two heaps: *ready* hosts
ordered by their best key, and *waiting* hosts ordered by the time their politeness delay
ends. A host with
``max_per_host`` leases out (``max_per_host + lease_headroom`` when it has no delay) is in
neither until a lease comes back.
"""

from __future__ import annotations

import heapq
import itertools
import math
import secrets
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Self, TypeVar

from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.core.models import Lease, Request
from topicrawl.parse.urls import fingerprint, fingerprints, host_of

__all__ = [
    "Clock",
    "FrontierCore",
    "Held",
    "HostQueues",
    "check_bloom_options",
    "fp_of",
    "make_key",
    "score_of",
    "seq_of",
]

Clock = Callable[[], float]
T = TypeVar("T")

_U64 = (1 << 64) - 1
_SIGN = 1 << 63
_SEQ_BITS = 48  # 2.8e14 pushes before the counter runs out
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_ORDER_SHIFT = 64 + _SEQ_BITS
_DOUBLE = struct.Struct("<d")
_UINT = struct.Struct("<Q")


def make_key(score: float, seq: int, fp: int) -> int:
    """The heap key of a URL: smaller means sooner (higher score, then earlier sequence)."""
    bits: int = _UINT.unpack(_DOUBLE.pack(score + 0.0))[0]  # + 0.0 folds -0.0 into 0.0
    ascending = (bits ^ _U64) if bits & _SIGN else (bits | _SIGN)
    return ((_U64 - ascending) << _ORDER_SHIFT) | (seq << 64) | (fp + _SIGN)


def fp_of(key: int) -> int:
    """The signed 64-bit URL fingerprint inside a key."""
    return (key & _U64) - _SIGN


def seq_of(key: int) -> int:
    """The sequence number inside a key."""
    return (key >> 64) & _SEQ_MASK


def score_of(key: int) -> float:
    """The score inside a key."""
    ascending = _U64 - (key >> _ORDER_SHIFT)
    bits = (ascending ^ _SIGN) if ascending & _SIGN else (ascending ^ _U64)
    score: float = _DOUBLE.unpack(_UINT.pack(bits))[0]
    return score


def check_bloom_options(capacity: int, error_rate: float) -> None:
    """Raise :class:`ConfigError` for a Bloom filter that cannot be built."""
    if capacity < 1:
        raise ConfigError(f"bloom_capacity must be at least 1, got {capacity}")
    if not 0.0 < error_rate < 1.0:
        raise ConfigError(f"bloom_error_rate must be between 0 and 1, got {error_rate}")


class _Host:
    """One host's queue and politeness state."""

    __slots__ = (
        "deferred",
        "delay",
        "heap",
        "last_pop",
        "leases",
        "name",
        "next_at",
        "paused_until",
        "ready_key",
        "size",
        "spill_top",
        "wait_at",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.heap: list[int] = []  # keys, some of them stale
        self.size = 0  # live queued URLs (not counting deferred ones)
        self.deferred = 0  # URLs of the host queued again for later (see HostQueues.defer)
        self.leases = 0
        self.delay: float | None = None  # None: the frontier's default
        self.last_pop: float | None = None
        self.next_at = -math.inf
        self.paused_until = -math.inf  # nothing of the host is handed out before this
        self.ready_key: int | None = None  # the key it is filed under in the ready heap
        self.wait_at: float | None = None  # the time it is filed under in the waiting heap
        # The best key the host may have in the store only (spilled, see HostQueues.spill);
        # None: every live key of the host is in ``heap``.
        self.spill_top: int | None = None


Refill = Callable[[str, int, int], tuple[list[int], int | None]]
"""``refill(host, count, slack)``: up to ``count`` keys of the host's queued URLs from the
store, best first, skipping leased, deferred and done ones (``slack``: how many rows to read
past ``count`` to make up for those); and the largest key read if more rows may be left,
else ``None``."""


def _cut(host: _Host, keep: int, evictable: Callable[[int], bool]) -> int:
    """Keep the host's ``keep`` best keys in memory (and those ``evictable`` refuses: a push
    not yet written must stay); the host remembers its best dropped key. Returns how many
    left memory."""
    ordered = sorted(host.heap)
    kept = ordered[:keep]
    evicted: list[int] = []
    for key in ordered[keep:]:
        (evicted if evictable(fp_of(key)) else kept).append(key)
    if evicted:
        best = evicted[0]
        host.spill_top = best if host.spill_top is None else min(host.spill_top, best)
    heapq.heapify(kept)
    host.heap[:] = kept
    return len(evicted)


def _fill_level(sizes: list[int], budget: int) -> int:
    """The highest level L with ``sum(min(size, L))`` at most ``budget`` (0 if none)."""
    low, high = 0, max(sizes, default=0)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(size, mid) for size in sizes) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


class HostQueues:
    """Per-host heaps of keys, and the ready and waiting schedules over hosts.

    With ``spill_limit`` (a durable store only), a host's heap is cut back to half of it by
    :meth:`spill` whenever it holds more: the worst keys leave memory (their URLs stay queued
    in the store) and ``refill`` reads the best of them back when the host's heap runs out of
    keys better than them. Memory then grows with the hosts, not with the URLs queued.

    With ``spill_total`` too, the keys of all hosts together are bounded: when they pass it,
    every heap is cut to one level (the highest at which they all fit in half of it), so a
    web of many small hosts, which the per-host bound does not bound, stays within it too
    (then down to one key a host: a host's own record is not bounded).
    """

    def __init__(
        self,
        *,
        default_delay: float,
        max_per_host: int,
        lease_headroom: int = 0,
        spill_limit: int = 0,
        spill_total: int = 0,
        refill: Refill | None = None,
    ) -> None:
        if spill_limit and (spill_limit < 2 or refill is None):
            raise ConfigError("spill_limit needs refill and must be 0 (off) or at least 2")
        if spill_total < 0 or (spill_total and not spill_limit):
            raise ConfigError("spill_total must be 0 (off), or >= 1 with spill_limit on")
        self.spill_total = spill_total
        self._level: int | None = None  # keys a host keeps while the total bound is cutting
        self.default_delay = default_delay
        self.max_per_host = max_per_host
        self.lease_headroom = lease_headroom
        self.spill_limit = spill_limit
        self._refill = refill
        self._over: set[str] = set()  # hosts whose heap is over spill_limit
        self._hosts: dict[str, _Host] = {}
        self._ready: list[tuple[int, str]] = []
        self._waiting: list[tuple[float, str]] = []
        self._deferred: dict[int, tuple[int, str]] = {}  # fp -> (key, host)
        self._deferred_heap: list[tuple[float, int]] = []  # (due, fp)
        self._live = 0

    def __len__(self) -> int:
        return self._live + len(self._deferred)

    def _host(self, name: str) -> _Host:
        host = self._hosts.get(name)
        if host is None:
            host = self._hosts[name] = _Host(name)
        return host

    def add(self, name: str, key: int, now: float) -> None:
        """Queue a URL that was not queued."""
        host = self._host(name)
        heapq.heappush(host.heap, key)
        host.size += 1
        self._live += 1
        if self.spill_limit and len(host.heap) > self.spill_limit:
            self._over.add(name)
        self._place(host, now)

    def load(self, name: str, keys: list[int], now: float) -> None:
        """Queue many URLs of one host at once (rebuilding after a restart)."""
        host = self._host(name)
        host.heap.extend(keys)
        heapq.heapify(host.heap)
        host.size += len(keys)
        self._live += len(keys)
        if self.spill_limit and len(host.heap) > self.spill_limit:
            self._over.add(name)
        self._place(host, now)

    def load_spilled(self, name: str, count: int, best: int) -> None:
        """Count ``count`` more queued URLs of the host that stay in the store (rebuilding
        after a restart), the best of them with key ``best``."""
        host = self._host(name)
        host.size += count
        self._live += count
        host.spill_top = best if host.spill_top is None else min(host.spill_top, best)

    def spill(self, evictable: Callable[[int], bool]) -> int:
        """Cut each host heap over ``spill_limit`` back to half of it; returns keys dropped.

        The worst keys go, but only those whose URL ``evictable(fp)`` says the store holds
        (a push not yet written must stay). The host remembers its best dropped key, so
        :meth:`take` reads them back (``refill``) before it would hand out a worse one.
        """
        dropped = 0
        for name in self._over:
            host = self._hosts.get(name)
            if host is not None and len(host.heap) > self.spill_limit:
                dropped += _cut(host, self.spill_limit // 2, evictable)
        self._over.clear()
        if self.spill_total:
            dropped += self._spill_total(evictable)
        return dropped

    def _spill_total(self, evictable: Callable[[int], bool]) -> int:
        """Cut every heap to one level when all the keys in memory pass ``spill_total``."""
        self._level = None
        if self._live <= self.spill_total:  # cheap first look: fewer URLs queued than that
            return 0
        sizes = [len(host.heap) for host in self._hosts.values()]
        if sum(sizes) <= self.spill_total:
            return 0
        level = max(_fill_level(sizes, self.spill_total // 2), 1)
        self._level = level
        dropped = 0
        for host in self._hosts.values():
            if len(host.heap) > level:
                dropped += _cut(host, level, evictable)
        return dropped

    def keys_in_memory(self) -> int:
        """Keys held in the host heaps (live and stale), for measuring the spill."""
        return sum(len(h.heap) for h in self._hosts.values())

    def rekey(self, name: str, fp: int, key: int, now: float) -> None:
        """A queued URL got a new key (better, or worse after a rescore); its old key becomes
        stale."""
        if fp in self._deferred:
            self._deferred[fp] = (key, name)
            return
        host = self._host(name)
        heapq.heappush(host.heap, key)
        if len(host.heap) > 2 * host.size + 64:
            _drop_superseded(host.heap)
        if self.spill_limit and len(host.heap) > self.spill_limit:
            self._over.add(name)
        self._place(host, now)

    def defer(self, name: str, fp: int, key: int, due: float) -> None:
        """Queue a URL again, but only from ``due`` on."""
        if fp not in self._deferred:
            self._host(name).deferred += 1
        self._deferred[fp] = (key, name)
        heapq.heappush(self._deferred_heap, (due, fp))

    def pause(self, name: str, seconds: float, now: float) -> None:
        """Hand out nothing of the host for ``seconds`` (its delay is left as it is)."""
        host = self._host(name)
        host.paused_until = max(host.paused_until, now + seconds)
        self._place(host, now)

    def count(self, name: str) -> int:
        """URLs of the host waiting to be handed out, deferred ones included."""
        host = self._hosts.get(name)
        return 0 if host is None else host.size + host.deferred

    def keys_of(self, name: str) -> tuple[list[int], list[int]]:
        """The host's queued keys (some may be stale) and its deferred keys."""
        host = self._hosts.get(name)
        if host is None:
            return [], []
        deferred = [key for key, owner in self._deferred.values() if owner == name]
        return list(host.heap), deferred

    def is_deferred(self, fp: int) -> bool:
        return fp in self._deferred

    def release(self, name: str, now: float) -> None:
        """A lease on the host ended."""
        host = self._hosts[name]
        host.leases -= 1
        self._place(host, now)

    def set_delay(self, name: str, delay: float, now: float) -> None:
        """Seconds between two fetches of the host; the wait since its last fetch is redone."""
        host = self._host(name)
        host.delay = delay
        if host.last_pop is not None:
            host.next_at = host.last_pop + delay
        self._place(host, now)

    def waiting(self, now: float) -> tuple[int, int]:
        """Hosts with queued URLs waiting out their delay (or a pause) now, and URLs queued
        again for later (retries after a server asked us to wait). One pass over the hosts:
        for the live samples, every few seconds, not per page."""
        self._advance(now)
        hosts = sum(1 for h in self._hosts.values() if h.size and h.wait_at is not None)
        return hosts, len(self._deferred)

    def delays(self) -> dict[str, float]:
        return {h.name: h.delay for h in self._hosts.values() if h.delay is not None}

    def take(self, now: float, resolve: Callable[[int], T | None]) -> tuple[str, int, T] | None:
        """Pop the best live key among ready hosts, or ``None`` when no host is ready.

        ``resolve(key)`` returns the request behind a live key and ``None`` for a stale one.
        """
        found = self._best(now, resolve)
        if found is None:
            return None
        host, key, value = found
        heapq.heappop(self._ready)
        heapq.heappop(host.heap)
        host.size -= 1
        self._live -= 1
        if host.size == 0:
            host.heap.clear()  # whatever is left is stale
        host.leases += 1
        host.last_pop = now
        host.next_at = now + (self.default_delay if host.delay is None else host.delay)
        host.ready_key = None
        self._place(host, now)
        return host.name, key, value

    def peek(self, now: float, resolve: Callable[[int], T | None]) -> T | None:
        """What :meth:`take` would return, without taking it."""
        found = self._best(now, resolve)
        return None if found is None else found[2]

    def next_ready_in(self, now: float, lease_due: float | None) -> float | None:
        """Seconds until a host can be popped from; ``None`` when nothing is queued.

        When every host with queued URLs is at its lease limit, the time until the first lease
        expires (``lease_due``) is the answer, 0 if it has expired: reclaiming it frees the host.
        """
        if len(self) == 0:
            return None
        self._advance(now)
        ready = self._ready
        while ready and self._hosts[ready[0][1]].ready_key != ready[0][0]:
            heapq.heappop(ready)
        if ready:
            return 0.0
        waiting = self._waiting
        while waiting and self._hosts[waiting[0][1]].wait_at != waiting[0][0]:
            heapq.heappop(waiting)
        soonest = math.inf
        if waiting:
            soonest = waiting[0][0]
        if self._deferred_heap:
            soonest = min(soonest, self._deferred_heap[0][0])
        if soonest == math.inf:
            if lease_due is None:
                return None
            soonest = lease_due
        return max(0.0, soonest - now)

    # -- internals

    def _best(self, now: float, resolve: Callable[[int], T | None]) -> tuple[_Host, int, T] | None:
        self._advance(now)
        ready = self._ready
        while ready:
            key, name = ready[0]
            host = self._hosts[name]
            if host.ready_key != key:
                heapq.heappop(ready)
                continue
            heap = host.heap
            value: T | None = None
            added = -1
            while True:
                spilled = host.spill_top
                if spilled is not None and (not heap or heap[0] > spilled):
                    added = self._read_back(host)
                while heap:
                    value = resolve(heap[0])
                    if value is not None:
                        break
                    heapq.heappop(heap)
                if value is not None or host.spill_top is None or added == 0:
                    break
            if value is None:
                # Only stale keys were left: the live count was wrong (the store lost rows).
                self._live -= host.size
                host.size = 0
                host.ready_key = None
                heapq.heappop(ready)
                continue
            top = heap[0]
            if top != key:
                # The host's best key was stale; file it under its real best and look again.
                host.ready_key = top
                heapq.heapreplace(ready, (top, name))
                if ready[0] != (top, name):
                    continue
            return host, top, value
        return None

    def _read_back(self, host: _Host) -> int:
        """Bring the best spilled keys of the host back into its heap; returns how many."""
        assert self._refill is not None
        heap = host.heap
        slack = len(heap) + host.leases + host.deferred + 16
        want = self.spill_limit // 2
        if self._level is not None:  # the total bound is cutting: read back no more than that
            want = min(want, self._level)
        keys, more_after = self._refill(host.name, max(want, 1), slack)
        present = set(heap)
        added = 0
        for key in keys:
            if key not in present:
                heapq.heappush(heap, key)
                added += 1
        host.spill_top = more_after
        return added

    def _advance(self, now: float) -> None:
        deferred_heap = self._deferred_heap
        while deferred_heap and deferred_heap[0][0] <= now:
            _, fp = heapq.heappop(deferred_heap)
            item = self._deferred.pop(fp, None)
            if item is not None:
                self._hosts[item[1]].deferred -= 1
                self.add(item[1], item[0], now)
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            at, name = heapq.heappop(waiting)
            host = self._hosts[name]
            if host.wait_at == at:
                host.wait_at = None
                self._place(host, now)

    def _place(self, host: _Host, now: float) -> None:
        """File the host in the heap its state calls for (old entries become stale)."""
        limit = self.max_per_host
        if self.lease_headroom and not (self.default_delay if host.delay is None else host.delay):
            limit += self.lease_headroom
        if host.size == 0 or host.leases >= limit:
            host.ready_key = None
            host.wait_at = None
            return
        ready_at = max(host.next_at, host.paused_until)
        if ready_at > now:
            host.ready_key = None
            if host.wait_at != ready_at:
                host.wait_at = ready_at
                heapq.heappush(self._waiting, (ready_at, host.name))
                if len(self._waiting) > 2 * len(self._hosts) + 64:
                    self._waiting = [
                        (h.wait_at, h.name) for h in self._hosts.values() if h.wait_at is not None
                    ]
                    heapq.heapify(self._waiting)
            return
        host.wait_at = None
        spilled = host.spill_top
        if spilled is not None and (not host.heap or host.heap[0] > spilled):
            # The host's best URLs are in the store only: read them back, so that it is filed
            # under its real best key (or, if the store has none left, the count was wrong,
            # as when the store lost rows).
            self._read_back(host)
        if not host.heap:
            self._live -= host.size
            host.size = 0
            host.ready_key = None
            return
        top = host.heap[0]
        if host.ready_key is None or top < host.ready_key:
            host.ready_key = top
            heapq.heappush(self._ready, (top, host.name))
            if len(self._ready) > 2 * len(self._hosts) + 64:
                self._ready = [
                    (h.ready_key, h.name) for h in self._hosts.values() if h.ready_key is not None
                ]
                heapq.heapify(self._ready)


def _drop_superseded(heap: list[int]) -> None:
    """Keep one key per URL, the newest (increase-key always assigns a newer sequence)."""
    newest: dict[int, int] = {}
    for key in heap:
        fp = key & _U64
        kept = newest.get(fp)
        if kept is None or seq_of(key) > seq_of(kept):
            newest[fp] = key
    heap[:] = newest.values()
    heapq.heapify(heap)


@dataclass(frozen=True, slots=True)
class Held:
    """A lease that is out, with the key its URL goes back under."""

    lease: Lease
    key: int
    fp: int


def _check_score(request: Request) -> None:
    if math.isnan(request.score):
        raise ValueError(f"score of {request.url[:200]!r} is NaN")


class FrontierCore(ABC):
    """Push, pop, leases and politeness over :class:`HostQueues`; subclasses keep the URLs.

    Hooks: ``_filter_new`` (dedupe), ``_store_new``, ``_queued_score`` (score of a URL that is
    queued, else ``None``), ``_store_rekey``, ``_resolve`` (request behind a live key),
    ``_on_leased``, ``_on_done``, ``_on_returned``, ``_on_host_delay``, ``_wrote`` (after
    each change; persistence may flush).
    """

    durable: bool = True

    def __init__(
        self,
        *,
        default_delay: float,
        max_per_host: int,
        lease_ttl: float,
        clock: Clock,
        lease_headroom: int = 0,
    ) -> None:
        if not (default_delay >= 0 and math.isfinite(default_delay)):
            raise ConfigError(f"default_delay must be a finite number >= 0, got {default_delay}")
        if max_per_host < 1:
            raise ConfigError(f"max_per_host must be at least 1, got {max_per_host}")
        if lease_headroom < 0:
            raise ConfigError(f"lease_headroom must be >= 0, got {lease_headroom}")
        if not (lease_ttl > 0 and math.isfinite(lease_ttl)):
            raise ConfigError(f"lease_ttl must be a finite number > 0, got {lease_ttl}")
        self._clock = clock
        self._lease_ttl = lease_ttl
        self._queues = HostQueues(
            default_delay=default_delay, max_per_host=max_per_host, lease_headroom=lease_headroom
        )
        self._leases: dict[str, Held] = {}
        self._expiry: list[tuple[float, str]] = []
        self._seq = 0
        self._token_prefix = secrets.token_hex(6)
        self._tokens = itertools.count(1)
        self._closed = False

    # -- the Frontier protocol

    async def push(self, requests: Sequence[Request]) -> int:
        """Queue the requests not seen before; raise the score of queued ones pushed higher.

        Returns:
            How many requests were added (increase-key does not count).

        Raises:
            ValueError: a score is NaN (nothing of the batch is queued).
        """
        self._check_usable()
        if not requests:
            return 0
        for request in requests:
            _check_score(request)
        fps = fingerprints([request.url for request in requests])
        fresh = self._filter_new(fps)
        now = self._clock()
        queues = self._queues
        added = 0
        for request, fp, is_new in zip(requests, fps, fresh, strict=True):
            if is_new:
                key = make_key(request.score, self._next_seq(), fp)
                self._store_new(fp, key, request)
                queues.add(host_of(request.url), key, now)
                added += 1
                continue
            current = self._queued_score(fp)
            if current is not None and request.score > current:
                self._rekey(fp, host_of(request.url), request.score, request, now)
        await self._wrote()
        return added

    async def pop(self) -> Lease | None:
        """Lease the best request among ready hosts, or ``None`` when no host is ready."""
        self._check_usable()
        now = self._clock()
        taken = self._queues.take(now, self._resolve)
        if taken is None:
            return None
        host, key, request = taken
        token = f"{self._token_prefix}-{next(self._tokens):x}"
        lease = Lease(request=request, token=token, host=host, expires_at=now + self._lease_ttl)
        fp = fp_of(key)
        self._leases[token] = Held(lease=lease, key=key, fp=fp)
        heapq.heappush(self._expiry, (lease.expires_at, token))
        if len(self._expiry) > 2 * len(self._leases) + 1024:
            self._expiry = [(h.lease.expires_at, t) for t, h in self._leases.items()]
            heapq.heapify(self._expiry)
        self._on_leased(fp)
        return lease

    async def ack(self, lease: Lease) -> bool:
        """Mark the leased URL done. ``False`` (and no change) for an unknown or expired lease."""
        self._check_usable()
        now = self._clock()
        held = self._current(lease, now)
        if held is None:
            return False
        del self._leases[lease.token]
        self._on_done(held)
        self._queues.release(held.lease.host, now)
        await self._wrote()
        return True

    async def reclaim(self, lease: Lease, *, delay: float = 0.0) -> bool:
        """Put the leased URL back, to be handed out again ``delay`` seconds from now.

        Returns ``False`` (and changes nothing) for an unknown or expired lease.
        """
        self._check_usable()
        if not (delay >= 0 and math.isfinite(delay)):
            raise ValueError(f"reclaim delay must be a finite number >= 0, got {delay}")
        now = self._clock()
        held = self._current(lease, now)
        if held is None:
            return False
        del self._leases[lease.token]
        self._return(held, now, delay)
        await self._wrote()
        return True

    async def revisit(self, lease: Lease, *, due: float) -> bool:
        """Mark the leased fetch done and queue its URL again, handed out from ``due`` on.

        ``due`` is seconds since the epoch (a time already past makes it ready at once). The
        URL keeps its score. Returns ``False`` (and changes nothing) for an unknown or expired
        lease.
        """
        self._check_usable()
        if not math.isfinite(due):
            raise ValueError(f"revisit due time must be finite, got {due}")
        now = self._clock()
        held = self._current(lease, now)
        if held is None:
            return False
        del self._leases[lease.token]
        self._on_rescheduled(held, due)
        self._requeue(held, now, due)
        await self._wrote()
        return True

    async def increase(self, url: str, score: float) -> bool:
        """Raise the score of a queued URL. ``False`` when it is not queued or not raised."""
        self._check_usable()
        if math.isnan(score):
            raise ValueError(f"score of {url[:200]!r} is NaN")
        fp = fingerprint(url)
        current = self._queued_score(fp)
        if current is None or not score > current:
            return False
        self._rekey(fp, host_of(url), score, None, self._clock())
        await self._wrote()
        return True

    async def rescore(self, scores: Mapping[str, float]) -> int:
        """Set the score of queued URLs, higher or lower: the strategy learned what they are
        worth since it pushed them. URLs not queued (unknown, leased, done) are left alone.

        Returns:
            How many queued URLs got a new score.

        Raises:
            ValueError: a score is NaN (nothing is changed).
        """
        self._check_usable()
        for url, score in scores.items():
            if math.isnan(score):
                raise ValueError(f"score of {url[:200]!r} is NaN")
        now = self._clock()
        changed = 0
        for url, score in scores.items():
            fp = fingerprint(url)
            current = self._queued_score(fp)
            if current is None or score == current:
                continue
            self._rekey(fp, host_of(url), score, None, now)
            changed += 1
        if changed:
            await self._wrote()
        return changed

    async def peek(self) -> Request | None:
        """The request :meth:`pop` would hand out now, without leasing it."""
        self._check_usable()
        return self._queues.peek(self._clock(), self._resolve)

    async def renew(self, leases: Sequence[Lease]) -> dict[str, float]:
        """Extend each lease still out (not acked, reclaimed or expired) to ``lease_ttl`` from
        now: its holder is alive and still working on its page. Returns the new expiry of
        each lease renewed, by token; a lease gone is left out (its URL may be another's)."""
        self._check_usable()
        now = self._clock()
        renewed: dict[str, float] = {}
        for lease in leases:
            held = self._current(lease, now)
            if held is None:
                continue
            expires_at = now + self._lease_ttl
            self._leases[lease.token] = replace(
                held, lease=replace(held.lease, expires_at=expires_at)
            )
            heapq.heappush(self._expiry, (expires_at, lease.token))
            renewed[lease.token] = expires_at
        return renewed

    async def reclaim_expired(self) -> int:
        """Put back every lease past its expiry; returns how many."""
        self._check_usable()
        now = self._clock()
        expiry = self._expiry
        count = 0
        while expiry and expiry[0][0] <= now:
            expires_at, token = heapq.heappop(expiry)
            held = self._leases.get(token)
            if held is None or held.lease.expires_at != expires_at:
                continue
            del self._leases[token]
            self._return(held, now, 0.0)
            count += 1
        if count:
            await self._wrote()
        return count

    async def set_host_delay(self, host: str, delay: float) -> None:
        """Seconds between two fetches of ``host`` (e.g. robots.txt Crawl-delay)."""
        self._check_usable()
        if not (delay >= 0 and math.isfinite(delay)):
            raise ValueError(f"host delay must be a finite number >= 0, got {delay}")
        self._queues.set_delay(host, delay, self._clock())
        self._on_host_delay(host, delay)
        await self._wrote()

    async def pause_host(self, host: str, seconds: float) -> None:
        """Hand out no URL of ``host`` for ``seconds`` (its robots.txt cannot be read, or its
        server asked for a long wait). Not kept across a restart: a resumed crawl asks anew.
        """
        self._check_usable()
        if not (seconds >= 0 and math.isfinite(seconds)):
            raise ValueError(f"pause must be a finite number >= 0, got {seconds}")
        self._queues.pause(host, seconds, self._clock())

    async def queued_in(self, hosts: Iterable[str]) -> int:
        """URLs of these hosts waiting to be handed out (deferred ones included)."""
        self._check_usable()
        return sum(self._queues.count(host) for host in set(hosts))

    async def queued_requests(self, host: str) -> list[Request]:
        """The URLs of ``host`` waiting to be handed out, best first (none is leased)."""
        self._check_usable()
        live, deferred = self._queues.keys_of(host)
        found: dict[int, tuple[int, Request]] = {}
        for key in sorted(live):
            request = self._resolve(key)
            if request is not None:
                found.setdefault(fp_of(key), (key, request))
        for key in deferred:
            request = self._lookup(key)
            if request is not None:
                found.setdefault(fp_of(key), (key, request))
        return [request for _, request in sorted(found.values(), key=lambda item: item[0])]

    async def next_ready_in(self) -> float | None:
        """Seconds until :meth:`pop` can hand something out; ``None`` when nothing is queued.

        0 means a pop succeeds now, or (when every host with queued URLs is at its lease limit)
        a lease has expired and :meth:`reclaim_expired` will free its host."""
        self._check_usable()
        expiry = self._expiry
        while expiry:
            held = self._leases.get(expiry[0][1])
            if held is not None and held.lease.expires_at == expiry[0][0]:
                break
            heapq.heappop(expiry)
        lease_due = expiry[0][0] if expiry else None
        return self._queues.next_ready_in(self._clock(), lease_due)

    def waits(self) -> dict[str, int]:
        """Why queued URLs are not handed out now (see topicrawl.engine.samples)."""
        hosts, deferred = self._queues.waiting(self._clock())
        return {"host_delay": hosts, "retry_backoff": deferred}

    async def queued(self) -> int:
        """URLs waiting to be handed out (including reclaimed ones still being delayed)."""
        return len(self._queues)

    async def in_flight(self) -> int:
        """Leases out."""
        return len(self._leases)

    async def open(self) -> Self:
        """Make the frontier ready for use (a no-op for in-memory ones); returns it."""
        return self

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- shared steps

    def _check_usable(self) -> None:
        if self._closed:
            raise FrontierError("the frontier is closed")

    def _next_seq(self) -> int:
        self._seq += 1
        if self._seq > _SEQ_MASK:
            raise FrontierError("the frontier's sequence counter is exhausted")
        return self._seq

    def _current(self, lease: Lease, now: float) -> Held | None:
        held = self._leases.get(lease.token)
        if held is None or now >= held.lease.expires_at:
            return None
        return held

    def _return(self, held: Held, now: float, delay: float) -> None:
        self._on_returned(held)
        self._requeue(held, now, now + delay)

    def _requeue(self, held: Held, now: float, due: float) -> None:
        host = held.lease.host
        if due > now:
            self._queues.defer(host, held.fp, held.key, due)
        else:
            self._queues.add(host, held.key, now)
        self._queues.release(host, now)

    def _rekey(
        self, fp: int, host: str, score: float, replacement: Request | None, now: float
    ) -> None:
        """Give a queued URL a new key (its old key goes stale); a lower score too."""
        key = make_key(score, self._next_seq(), fp)
        self._store_rekey(fp, key, score, replacement)
        self._queues.rekey(host, fp, key, now)

    # -- hooks

    @abstractmethod
    def _filter_new(self, fps: Sequence[int]) -> list[bool]:
        """For each fingerprint, whether it is new to the crawl; marks them all seen."""

    @abstractmethod
    def _store_new(self, fp: int, key: int, request: Request) -> None:
        """Keep a newly queued request."""

    @abstractmethod
    def _queued_score(self, fp: int) -> float | None:
        """The score of a URL that is queued (or deferred); ``None`` for any other."""

    @abstractmethod
    def _store_rekey(self, fp: int, key: int, score: float, replacement: Request | None) -> None:
        """A queued URL has a new key; ``replacement`` (if any) is the request to keep."""

    @abstractmethod
    def _resolve(self, key: int) -> Request | None:
        """The request behind a live key, ``None`` for a stale key."""

    def _lookup(self, key: int) -> Request | None:
        """The request behind a deferred URL's key (``_resolve`` may refuse deferred ones)."""
        return self._resolve(key)

    @abstractmethod
    def _on_leased(self, fp: int) -> None:
        """The URL was handed out."""

    @abstractmethod
    def _on_done(self, held: Held) -> None:
        """The URL was acked."""

    @abstractmethod
    def _on_returned(self, held: Held) -> None:
        """The URL goes back to the queue."""

    def _on_rescheduled(self, held: Held, due: float) -> None:
        """The fetch is done and the URL goes back to the queue, due at ``due``."""
        self._on_returned(held)

    @abstractmethod
    def _on_host_delay(self, host: str, delay: float) -> None:
        """A host delay was set."""

    @abstractmethod
    async def _wrote(self) -> None:
        """Called after every change."""

    @abstractmethod
    async def seen(self, url: str) -> bool:
        """Whether the URL was ever pushed in this crawl."""

    @abstractmethod
    async def flush(self) -> None:
        """Make every change so far durable."""

    @abstractmethod
    async def close(self) -> None:
        """Flush and release resources; later calls raise :class:`FrontierError`."""
