"""The shared frontier of a distributed crawl in Redis; every read-then-write is one Lua script.

Keys live under ``topicrawl:{namespace}:`` (the braces are a Redis Cluster hash tag, so a
crawl's keys share one slot), so several crawls can share one Redis:

- ``q:<host>``: a sorted set per host of queued URLs. The score is the negated priority; the
  member is a 12-hex-digit push sequence followed by the 16-hex-digit URL fingerprint, so equal
  priorities leave in push order (Redis orders equal scores by member).
- ``queued``: a hash, fingerprint (8 bytes) -> the URL's record (state, member, score, host,
  JSON payload of the request). ``deferred``: URLs reclaimed with a delay, by due time.
- ``ready``: hosts that can be popped now, ordered by their best URL (the sorted set's minimum
  is the next pop). ``waiting``: hosts with queued URLs whose politeness delay has not passed,
  by next allowed fetch time. A host with ``max_per_host`` requests in flight is in neither.
- ``inflight``/``delay``/``lastpop``/``nextat``: per-host hashes; ``lease`` (token -> record)
  and ``expiry`` (token -> expiry time) hold the leases out; ``fetching`` (token -> expiry
  time) holds the request slots, from pop until :meth:`RedisFrontier.fetched`, the ack or
  reclaim, or their own expiry (``request_ttl``), whichever comes first. ``nextreq`` (host ->
  Redis time its next request may start) spaces request starts, not hand-outs, by the delay.
- dedupe: ``seen`` (exact mode, a set of 8-byte fingerprints) or ``bloom:<n>`` bitmaps.
- the page budget (see :mod:`topicrawl.distributed.namespace`): ``budget`` (max_pages,
  reserved) and ``budgeted`` (lease token -> 1 while its page's reservation is not final:
  the ack makes it final, a reclaim of the lease gives it back).
- partitioning (see :mod:`topicrawl.distributed.partition`): ``owner`` (host -> node),
  ``hosts:<node>`` (the hosts a node holds), ``ready:<node>`` (a node's ready hosts, like
  ``ready``, which then holds only hosts without an owner), ``nl:<node>`` (the lease tokens a
  node holds, so a dead node's leases go back at once), ``members`` (live nodes).

Time always comes from the injected clock and is passed to the scripts (never Redis ``TIME``),
so every worker of a crawl must have a synchronised clock (NTP), and should share
``default_delay``, ``max_per_host`` and ``lease_ttl``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import count
from types import MappingProxyType, TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

import xxhash
from redis.asyncio import BlockingConnectionPool, Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from topicrawl.core.errors import ConfigError, FrontierError, LeaseLost
from topicrawl.core.models import EMPTY_REASONS, Lease, Request
from topicrawl.core.tasks import cancel_and_wait
from topicrawl.distributed.popgate import PopGate
from topicrawl.parse.urls import fingerprint, fingerprints, host_of

__all__ = ["BloomSize", "RedisFrontier", "bloom_size", "check_node_id", "namespace_prefix"]

log = logging.getLogger(__name__)

Clock = Callable[[], float]
OwnerProposal = Callable[[str], str | None]
_T = TypeVar("_T")

_U64 = (1 << 64) - 1
_SEGMENT_BITS = 1 << 30  # bits per bitmap key (128 MiB); SETBIT offsets must stay < 2**32
_BATCH = 1000  # requests per push script call: bounds the script's run time and arguments
_POOL_WAIT = 30.0  # seconds a call waits for a free connection of the pool, then is retried
_POP_MOST = 16  # leases one pop may take for the pops queued behind it
# Seconds a sharing node's freed request slots wait for a pop to carry them, then go alone:
# a node busy parsing may not pop for a while, and others could use the slots meanwhile.
_SLOT_RETURN = 0.02
_BUDGET_WAIT = 0.25  # seconds between asks for a page while others' reservations settle
_KNOWN_MAX = 500_000  # URLs a frontier remembers having pushed or popped (~35 MB), then forgets
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_TRANSIENT = (RedisConnectionError, RedisTimeoutError)  # worth retrying while Redis is back
_SCRIPTS = (
    "ack",
    "assign",
    "claim_request",
    "fetched",
    "increase",
    "next_ready",
    "peek",
    "pop",
    "push",
    "reclaim",
    "reclaim_expired",
    "release_node",
    "renew",
    "rescore",
    "seen",
    "set_host_delay",
)


@dataclass(frozen=True, slots=True)
class BloomSize:
    """The shape of a Bloom filter: ``bits`` in all, ``hashes`` bit positions per URL."""

    bits: int
    hashes: int
    capacity: int

    @property
    def bits_per_url(self) -> float:
        """Bits of filter per URL at capacity: 33.5 at a 1e-7 error rate, 9.6 at 1e-2."""
        return self.bits / self.capacity

    @property
    def error_rate(self) -> float:
        """The false-positive rate once ``capacity`` URLs are in: ``(1 - e^(-k n / m))^k``."""
        return float((1.0 - math.exp(-self.hashes * self.capacity / self.bits)) ** self.hashes)


@dataclass(slots=True, eq=False)
class _PagePush:
    """A page's push waiting for its script call: its arguments (see push.lua), how many
    requests they hold, and where its answer goes."""

    args: list[str]
    count: int
    done: asyncio.Future[int]


def bloom_size(capacity: int, error_rate: float) -> BloomSize:
    """The optimal Bloom filter for ``capacity`` URLs at ``error_rate``.

    ``m = -n ln p / ln(2)^2`` bits and ``k = (m / n) ln 2`` hashes.

    Raises:
        ConfigError: capacity below 1 or an error rate outside (0, 1).
    """
    if capacity < 1:
        raise ConfigError(f"bloom_capacity must be at least 1, got {capacity}")
    if not 0.0 < error_rate < 1.0:
        raise ConfigError(f"bloom_error_rate must be between 0 and 1, got {error_rate}")
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    hashes = max(1, round(bits / capacity * math.log(2)))
    return BloomSize(bits=bits, hashes=hashes, capacity=capacity)


def namespace_prefix(namespace: str) -> str:
    """The key prefix of a crawl's namespace, ``topicrawl:{namespace}:``.

    Raises:
        ConfigError: the namespace has characters other than letters, digits, ``.``, ``_``, ``-``.
    """
    if not _NAMESPACE.fullmatch(namespace):
        raise ConfigError(
            f"namespace must be 1-100 letters, digits, '.', '_' or '-', got {namespace!r}"
        )
    return f"topicrawl:{{{namespace}}}:"


def check_node_id(node: str) -> str:
    """The node id, checked: 1-100 letters, digits, ``.``, ``_``, ``-`` (no ``~``).

    Raises:
        ConfigError: the id has other characters.
    """
    if not _NODE.fullmatch(node):
        raise ConfigError(f"node id must be 1-100 letters, digits, '.', '_' or '-', got {node!r}")
    return node


def redact(url: str) -> str:
    """The Redis URL without its password, for error messages."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        user = parts.username or ""
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port is not None else ""
        netloc = f"{user}:***@{host}{port}" if user else f":***@{host}{port}"
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "<unparsable Redis URL>"


def _num(value: float) -> str:
    """A float as a string Redis and Lua parse back to the same double."""
    return repr(value + 0.0)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _payload(request: Request) -> str:
    return json.dumps(
        [
            request.url,
            request.depth,
            request.parent_url,
            request.anchor,
            request.inherited,
            dict(request.reasons) if request.reasons else None,
        ],
        separators=(",", ":"),
    )


def _record_request(record: bytes) -> tuple[Request, str]:
    """The request in a URL record (see the Lua scripts), and its host."""
    text = record.decode("utf-8")
    first = text.index("\t", 29)
    second = text.rindex("\t")  # the host may hold a tab; the JSON payload cannot
    url, depth, parent_url, anchor, inherited, reasons = json.loads(text[second + 1 :])
    request = Request(
        url=url,
        score=0.0 - float(text[29:first]),
        depth=depth,
        parent_url=parent_url,
        anchor=anchor,
        inherited=inherited,
        reasons=MappingProxyType(reasons) if reasons else EMPTY_REASONS,
    )
    return request, text[first + 1 : second]


class RedisFrontier:
    """A max-priority frontier in Redis, shared by any number of workers of one crawl.

    Every operation that reads then writes runs as one Lua script, so two workers never get
    the same URL and a crash between steps cannot leave a half-done change. A worker that dies
    holding leases loses nothing: :meth:`reclaim_expired` (called by any worker) puts its URLs
    back once their leases expire. Reopening does not reclaim leases, since other workers may
    still hold theirs.

    Dedupe: in the default Bloom mode each seen URL costs ``-ln(p)/ln(2)^2`` bits (33.5 bits,
    4.2 bytes at ``p = 1e-7``; 4.2 MB for a million URLs, allocated as the bits get set). The
    filter is sized up front for ``bloom_capacity`` URLs; past that its error rate climbs.
    **A Bloom false positive drops a new URL silently**: it is taken for one already seen and
    never queued, and nothing can tell it apart from a real duplicate (at 1e-7, about one URL
    in ten million). ``exact=True`` keeps a Redis set of 8-byte fingerprints instead (about
    40-70 bytes per URL in Redis): nothing is ever dropped, at roughly 10-15 times the memory.
    The two modes cannot be mixed in one namespace.

    Partitioned crawls: a frontier opened with ``node`` pops only from hosts that node holds
    (or, when it has none ready, adopts a host from the shared pool, or takes one host from the
    live node with at least ``steal_min`` ready hosts waiting, or with ``share`` pops from
    another node's ready host, which stays that node's). ``propose_owner`` names the
    node a host seen for the first time goes to (a node not live leaves it in the pool).
    Politeness (delays, ``max_per_host``) stays per host across all nodes. Without ``node``
    the frontier behaves exactly as an unpartitioned one.

    Requests in flight, not leases, count against ``max_per_host``: a pop takes one of its
    host's request slots with the lease, and :meth:`fetched` gives it back once the response
    is in, while the lease stays out until its page is stored and acked. So a worker whose
    acks wait for its storage's flush still keeps ``max_per_host`` requests going to a host.
    A slot also comes back with the ack or reclaim, when the lease expires or its node is
    released, and after ``request_ttl`` seconds, so a dead worker's slots come back too.
    A caller that never calls :meth:`fetched` gets the plain lease limit of the contract.

    Redis outages: with ``retry_for > 0`` an operation that cannot reach Redis is retried with
    backoff for up to that many seconds before :class:`FrontierError`. Every retried operation
    is safe to repeat: a pop whose reply was lost leaves a lease that expires and is reclaimed,
    a push is deduplicated, a repeated ack or reclaim is refused as stale.

    Args:
        redis_url: e.g. ``redis://host:6379/0`` (``rediss://`` for TLS).
        namespace: the crawl's name; letters, digits, ``.``, ``_``, ``-``.
        default_delay: seconds between two fetches of a host, unless set per host.
        max_per_host: requests in flight to one host at once, over all workers.
        lease_ttl: seconds a lease lasts before :meth:`reclaim_expired` takes it back.
        request_ttl: seconds a lease's request slot lasts at most (None: ``lease_ttl``);
            longer than any one fetch can take, retries included.
        bloom_capacity: URLs the Bloom filter is sized for.
        bloom_error_rate: its false-positive rate at capacity.
        exact: dedupe with an exact set instead of a Bloom filter.
        clock: seconds since the epoch; injectable for tests.
        node: the node this frontier pops for (partitioned crawls), or None.
        propose_owner: host -> the node a new host should go to (None: leave it in the pool).
        steal_min: ready hosts another node must have before an idle node takes one (0: never).
        share: an idle node (none of its own hosts ready, none to adopt or take) pops from
            the best ready host of another live node without taking the host, so several
            nodes serve one big host at once; its politeness stays global (see above).
        retry_for: seconds of Redis outage to ride out by retrying (0: fail at once).
        poll_interval: what :meth:`next_ready_in` answers when only other nodes have work.
        observer: for the coordinator and monitors, which never push: takes the crawl's
            ``max_per_host`` and ``default_delay`` as its first worker recorded them, and
            skips the dedupe check (``push`` refuses to run).
        defer_acks: hold acks until :meth:`flush`. The crawler flushes its storage before the
            frontier, so a URL is marked done only once its page is durably stored; without
            this a worker killed with pages still in its write buffer would lose them (the
            acks in Redis are durable at once, the buffered pages are not).
        pop_gate: after an empty pop, seconds during which further pops are answered locally
            unless this frontier freed or added work meanwhile (0: off; see :meth:`pop`).
        max_connections: Redis connections at most; callers past it wait for one (size it
            from the concurrency: every page in hand may be waiting on Redis).
    """

    durable = True

    def __init__(
        self,
        redis_url: str,
        *,
        namespace: str,
        default_delay: float = 0.0,
        max_per_host: int = 8,
        lease_ttl: float = 300.0,
        request_ttl: float | None = None,
        bloom_capacity: int = 1_000_000,
        bloom_error_rate: float = 1e-7,
        exact: bool = False,
        clock: Clock = time.time,
        node: str | None = None,
        propose_owner: OwnerProposal | None = None,
        steal_min: int = 2,
        share: bool = False,
        retry_for: float = 0.0,
        poll_interval: float = 0.2,
        observer: bool = False,
        defer_acks: bool = False,
        pop_gate: float = 0.0,
        max_connections: int = 100,
    ) -> None:
        prefix = namespace_prefix(namespace)
        if node is not None:
            check_node_id(node)
        if steal_min < 0 or not (retry_for >= 0 and math.isfinite(retry_for)):
            raise ConfigError("steal_min must be >= 0 and retry_for a finite number >= 0")
        if max_connections < 1:
            raise ConfigError(f"max_connections must be at least 1, got {max_connections}")
        if not (pop_gate >= 0 and math.isfinite(pop_gate)):
            raise ConfigError(f"pop_gate must be a finite number >= 0, got {pop_gate}")
        if not poll_interval > 0:
            raise ConfigError(f"poll_interval must be > 0, got {poll_interval}")
        if not (default_delay >= 0 and math.isfinite(default_delay)):
            raise ConfigError(f"default_delay must be a finite number >= 0, got {default_delay}")
        if max_per_host < 1:
            raise ConfigError(f"max_per_host must be at least 1, got {max_per_host}")
        if not (lease_ttl > 0 and math.isfinite(lease_ttl)):
            raise ConfigError(f"lease_ttl must be a finite number > 0, got {lease_ttl}")
        if request_ttl is not None and not (request_ttl > 0 and math.isfinite(request_ttl)):
            raise ConfigError(f"request_ttl must be a finite number > 0, got {request_ttl}")
        self._bloom = bloom_size(bloom_capacity, bloom_error_rate)
        self._url = redis_url
        self._where = redact(redis_url)
        self.namespace = namespace
        self.prefix = prefix
        self.node = node
        self._propose_owner = propose_owner
        self._steal_min = str(steal_min)
        self._share = "1" if share and node is not None else "0"
        self._retry_for = retry_for
        self._poll_interval = poll_interval
        self._observer = observer
        self._defer_acks = defer_acks
        self._held_acks: list[str] = []
        self._renewed: dict[str, float] = {}  # token -> expiry, for leases renewed since popped
        self._held_revisits: list[tuple[str, float]] = []  # (token, due), sent by flush()
        self._default_delay = _num(default_delay)
        self._max_per_host = str(max_per_host)
        self._lease_ttl = lease_ttl
        self._request_ttl = min(lease_ttl, request_ttl or lease_ttl)
        self._gate = PopGate(probe_interval=pop_gate)
        self._max_connections = max_connections
        self._exact = exact
        self._clock = clock
        random = secrets.token_hex(8)
        self._token_prefix = random if node is None else f"{node}~{random}"
        self._tokens = count(1)
        self._known: set[int] = set()
        self._fetched: list[str] = []  # leases whose request slots go back with the next pop
        self._popped: deque[Lease] = deque()  # leased for pops queued behind the one that asked
        self._returning: asyncio.Task[None] | None = None  # sends slots no pop carried
        self._pushes: deque[_PagePush] = deque()  # page pushes waiting for a script call
        self._pushing: asyncio.Task[None] | None = None  # sends them (see _reserve)
        self._redis: Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._closed = False
        self.reserved_here = 0
        """Pages of the crawl's budget reserved through this frontier (by this worker); a
        reservation can be lost after it is made (see :attr:`pages_here`)."""
        self.final_here = 0
        """Reservations this worker's acks (or revisits) made final: pages it stored that count."""
        self._unsettled: set[str] = set()  # tokens reserved here, not yet acked or given back
        self.peers = True
        """Whether other nodes are live (told at each heartbeat): a node alone lets its pops
        carry its freed request slots (see :meth:`fetched`), as no one else waits for them."""

    @property
    def bloom(self) -> BloomSize:
        """The Bloom filter's shape (unused in exact mode)."""
        return self._bloom

    # -- lifecycle

    async def open(self) -> Self:
        """Connect, check the namespace's dedupe mode matches, load the scripts; returns self.

        Raises:
            FrontierError: Redis cannot be reached (the message names the URL, no password).
            ConfigError: the namespace was started with another dedupe mode or Bloom size.
        """
        if self._closed:
            raise FrontierError("the frontier is closed")
        if self._redis is not None:
            return self
        try:
            pool = BlockingConnectionPool.from_url(
                self._url,
                max_connections=self._max_connections,
                timeout=_POOL_WAIT,
                socket_connect_timeout=5.0,
            )
            client = Redis.from_pool(pool)
        except ValueError as exc:
            raise ConfigError(f"bad Redis URL {self._where}: {exc}") from exc
        mode = "exact" if self._exact else f"bloom:{self._bloom.bits}:{self._bloom.hashes}"
        meta = self.prefix + "meta"
        try:
            await client.ping()
            if not self._observer:
                await client.hsetnx(meta, "dedupe", mode)
                await client.hsetnx(meta, "max_per_host", self._max_per_host)
                await client.hsetnx(meta, "default_delay", self._default_delay)
            stored, max_per_host, default_delay = await client.hmget(
                meta, ["dedupe", "max_per_host", "default_delay"]
            )
        except RedisError as exc:
            await client.aclose()
            raise FrontierError(f"cannot use Redis at {self._where}: {exc}") from exc
        if isinstance(stored, bytes):
            stored = stored.decode()
        if self._observer:
            # Place hosts with the limits the workers use (see the class docstring).
            if max_per_host is not None:
                self._max_per_host = _text(max_per_host)
            if default_delay is not None:
                self._default_delay = _text(default_delay)
        elif stored is not None and stored != mode:
            await client.aclose()
            raise ConfigError(
                f"namespace {self.namespace!r} uses dedupe {stored!r}, not {mode!r}: "
                "open it with the same exact/bloom options, or use another namespace"
            )
        lua = resources.files("topicrawl.distributed").joinpath("lua")
        common = lua.joinpath("common.lua").read_text("utf-8")
        self._scripts = {
            name: client.register_script(common + lua.joinpath(f"{name}.lua").read_text("utf-8"))
            for name in _SCRIPTS
        }
        self._redis = client
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

    async def flush(self) -> None:
        """Send the request slots given back (:meth:`fetched`) and the acks held back
        (``defer_acks``); every other operation is already in Redis when it returns (its
        durability is Redis's).

        Raises:
            FrontierError: Redis failed; the held acks stay held for the next flush.
        """
        self._client()
        done, self._fetched = self._fetched, []
        try:
            for start in range(0, len(done), _BATCH):
                await self._run("fetched", [*self._now_args(), *done[start : start + _BATCH]])
        except BaseException:
            self._fetched[:0] = done
            raise
        tokens, self._held_acks = self._held_acks, []
        try:
            while tokens:  # each batch leaves the list once Redis has it (the rest stay held)
                batch = tokens[:_BATCH]
                self._settle(batch, await self._run("ack", [*self._now_args(), *batch]))
                del tokens[: len(batch)]
        finally:
            self._held_acks[:0] = tokens
        revisits, self._held_revisits = self._held_revisits, []
        try:
            while revisits:
                token, due = revisits[0]
                await self._requeue_at(token, due)
                del revisits[0]
        finally:
            self._held_revisits[:0] = revisits

    async def close(self) -> None:
        """Give back the leases taken for pops that never came for them, then disconnect (the
        crawl stays in Redis); later calls raise FrontierError."""
        await self._give_back_unused()
        self._closed = True
        for task in (self._returning, self._pushing):
            if task is not None:
                await cancel_and_wait(task)
        client, self._redis = self._redis, None
        if client is not None:
            await client.aclose()

    async def _give_back_unused(self) -> None:
        """Put back the leases a pop took for the pops queued behind it (or a shared host's
        run) that no pop took: a crawl that stopped (its page limit, Ctrl-C) pops no more, and
        left out there they would keep their URLs in flight for every worker until they
        expired (``lease_ttl``: other workers wait that long at the end of a crawl)."""
        unused, self._popped = list(self._popped), deque()
        if not unused or self._redis is None or self._closed:
            return
        try:
            for lease in unused:
                await self._run("reclaim", [*self._now_args(), lease.token, "0"])
        except FrontierError as exc:
            log.warning("%d unused leases not given back (they expire): %s", len(unused), exc)

    async def drop(self) -> int:
        """Delete every key of this namespace (the whole crawl); returns how many."""
        client = self._client()
        deleted = 0
        try:
            batch: list[bytes] = []
            async for key in client.scan_iter(match=self.prefix + "*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    deleted += await client.unlink(*batch)
                    batch = []
            if batch:
                deleted += await client.unlink(*batch)
        except RedisError as exc:
            raise self._failed(exc) from exc
        return deleted

    # -- the Frontier protocol

    async def push(self, requests: Sequence[Request]) -> int:
        """Queue the requests not seen before; raise the score of queued ones pushed higher.

        Each batch of up to 1000 requests is one atomic script.

        Returns:
            How many requests were added (increase-key does not count).

        Raises:
            ValueError: a score is NaN (nothing of the call is queued).
        """
        all_fps = self._checked(requests)
        new = set(self._remember_new(all_fps))
        return await self._push_rest(requests, all_fps, new, 0)

    async def reserve_page(
        self,
        lease: Lease,
        requests: Sequence[Request],
        *,
        stopping: asyncio.Event | None = None,
    ) -> int | None:
        """Reserve one page of the crawl's page budget for the lease's page before it is
        stored, and queue ``requests`` (the page's links) in the same round trip, one script
        call shared with the pages that ask while another call is on its way (see
        :meth:`_reserve`).

        The reservation belongs to the lease until it is acked (then it is final); a lease
        reclaimed unstored (by its worker, on expiry, or when its node is found dead) gives
        it back, so a worker killed between the reservation and the page's storage leaves
        the crawl no page short of its limit.

        While the limit is reached only with reservations not yet final (other pages in
        hand, or a dead worker's not yet given back), the call waits for them to settle,
        as long as the lease lasts, and no longer than until ``stopping`` is set: a crawl
        that stops sends no more of its own acks, so its reservations would not settle
        before the lease ran out (a worker's stop waited up to ``lease_ttl``).

        Returns:
            How many requests were added, or None when the limit is reached (nothing is
            reserved or queued).

        Raises:
            LeaseLost: the lease is no longer this worker's (expired, or given back when the
                worker was thought dead): nothing is reserved or queued, and the page must
                not be stored (its URL is queued again).
        """
        while True:
            added = await self._reserve(lease.token, requests)
            if added >= 0:
                self.reserved_here += 1
                self._unsettled.add(lease.token)
                return added
            if added == -3:
                raise LeaseLost(f"the lease of {lease.request.url[:200]} is gone")
            left = self._renewed.get(lease.token, lease.expires_at) - self._clock()
            if added == -1 or left < 4 * _BUDGET_WAIT:
                return None
            if stopping is None:
                await asyncio.sleep(_BUDGET_WAIT)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_BUDGET_WAIT):
                    await stopping.wait()
            if stopping.is_set():
                return None

    def _checked(self, requests: Sequence[Request]) -> list[int]:
        """The requests' fingerprints, remembered as known (see :meth:`known`).

        Known from the moment the push starts, not when its answer comes back: the pages
        handled meanwhile (16 in flight) would otherwise push the same links again (measured:
        9,162 links sent for 7,053 URLs in 2,000 Java pages). The caller forgets them again if
        they are not queued (a refusal, or Redis lost). Known gap: a page handled while such a
        push was on its way has skipped those links already; if the push is then refused
        (page limit reached) or lost, that page does not push them.

        Raises:
            FrontierError: an observer frontier (it never pushes).
            ValueError: a score is NaN.
        """
        self._client()
        if self._observer:
            raise FrontierError("an observer frontier cannot push")
        for request in requests:
            if math.isnan(request.score):
                raise ValueError(f"score of {request.url[:200]!r} is NaN")
        return fingerprints([request.url for request in requests])

    def _group(self, token: str, requests: Sequence[Request], fps: Sequence[int]) -> list[str]:
        """One page's group of push.lua's arguments: token, count, two per request."""
        propose = self._propose_owner
        owners: dict[str, str] = {}
        args = [token, str(len(requests))]
        for request, fp in zip(requests, fps, strict=True):
            a, b = self._positions(fp)
            host = host_of(request.url)
            owner = owners.get(host)
            if owner is None:
                owner = owners[host] = (propose(host) or "") if propose else ""
            score = _num(0.0 - request.score)
            args += [host, f"{fp & _U64:016x} {score} {a} {b} {owner}\t{_payload(request)}"]
        return args

    def _push_head(self) -> list[str]:
        bloom = self._bloom
        mode = "x" if self._exact else "b"
        return [*self._now_args(), mode, str(bloom.bits), str(bloom.hashes), str(_SEGMENT_BITS)]

    async def _push_rest(
        self, requests: Sequence[Request], all_fps: Sequence[int], new: set[int], start: int
    ) -> int:
        """Push ``requests[start:]`` in batches, one script call each; a failed batch forgets
        the ``new`` fingerprints from it on."""
        added = 0
        for at in range(start, len(requests), _BATCH):
            group = self._group("", requests[at : at + _BATCH], all_fps[at : at + _BATCH])
            try:
                added += int((await self._run("push", [*self._push_head(), *group]))[0])
            except BaseException:
                self._known.difference_update(new.intersection(all_fps[at:]))
                raise
        if added:
            self._gate.open()
        return added

    async def _reserve(self, token: str, requests: Sequence[Request]) -> int:
        """Reserve a page for the lease ``token`` and push its first 1000 requests, in one
        script call shared with the other pages that ask while a call is on its way (a group
        commit: pages that finish together cost one round trip, not one each); then the
        rest of its requests, if any. How many were added, or the refusal (-1, -2, -3: see
        push.lua; nothing is queued).

        A call that fails fails every page in it (the error is raised to each; their leases
        stay out, their URLs are forgotten as known); pages waiting behind it go in the next.
        """
        all_fps = self._checked(requests)
        new = set(self._remember_new(all_fps))
        head = requests[:_BATCH]
        entry = _PagePush(
            self._group(token, head, all_fps[:_BATCH]),
            len(head),
            asyncio.get_running_loop().create_future(),
        )
        self._pushes.append(entry)
        if self._pushing is None:
            self._pushing = asyncio.create_task(self._send_pushes())
        try:
            result = await entry.done
        except BaseException:
            if entry in self._pushes:  # cancelled before it was sent
                self._pushes.remove(entry)
            self._known.difference_update(new)
            raise
        if result < 0:  # refused: nothing of it was queued
            self._known.difference_update(new)
            return result
        if result:
            self._gate.open()
        if len(requests) > _BATCH:
            result += await self._push_rest(requests, all_fps, new, _BATCH)
        return result

    async def _send_pushes(self) -> None:
        """Send the queued page pushes, as many as fit in one call (1000 requests), call after
        call, until none is left (see :meth:`_reserve`)."""
        pushes = self._pushes
        try:
            while pushes:
                batch = [pushes.popleft()]
                size = batch[0].count
                while pushes and size + pushes[0].count <= _BATCH:
                    size += pushes[0].count
                    batch.append(pushes.popleft())
                args = self._push_head()
                for entry in batch:
                    args += entry.args
                try:
                    results = await self._run("push", args)
                except Exception as exc:
                    for entry in batch:
                        if not entry.done.done():
                            entry.done.set_exception(exc)
                    continue
                except BaseException:  # the frontier closes: the call's outcome is unknown
                    pushes.extendleft(reversed(batch))
                    raise
                for entry, result in zip(batch, results, strict=True):
                    if not entry.done.done():
                        entry.done.set_result(int(result))
        finally:
            self._pushing = None
            while pushes:  # the frontier closes: these are not (or not surely) sent
                entry = pushes.popleft()
                if not entry.done.done():
                    entry.done.set_exception(FrontierError("the frontier closed during a push"))

    async def pop(self) -> Lease | None:
        """Lease the best request among ready hosts, or ``None`` when no host is ready.

        With ``pop_gate``, pops go to Redis one at a time, and after an empty answer further
        pops are answered ``None`` here, without Redis, until this frontier frees a request
        slot or adds URLs, or ``pop_gate`` seconds pass (see
        :class:`~topicrawl.distributed.popgate.PopGate`)."""
        if self._popped:
            return self._popped.popleft()
        async with self._gate.turn() as turn:
            if self._popped:  # leased for us by the pop we queued behind
                return self._popped.popleft()
            if not turn.go:
                return None
            leases = await self._pop_leases(min(1 + turn.behind, _POP_MOST))
            turn.found(bool(leases))
        if not leases:
            return None
        self._popped.extend(leases[1:])
        return leases[0]

    async def _pop_leases(self, most: int) -> list[Lease]:
        """Lease up to ``most`` requests in one round trip (for the pops queued behind)."""
        now = self._clock()
        expires_at = now + self._lease_ttl
        token = f"{self._token_prefix}-{next(self._tokens):x}"
        args = [
            _num(now),
            self._max_per_host,
            self._default_delay,
            token,
            _num(expires_at),
            self.node or "",
            self._steal_min,
            _num(now + self._request_ttl),
            str(most),
            self._share,
        ]
        done, self._fetched = self._fetched, []
        try:
            records = await self._run("pop", args + done)
        except BaseException:
            self._fetched[:0] = done
            raise
        leases = []
        for i, record in enumerate(records or (), start=1):
            request, host = _record_request(record)
            leases.append(
                Lease(request=request, token=f"{token}.{i}", host=host, expires_at=expires_at)
            )
        self._remember([fingerprint(lease.request.url) for lease in leases])
        return leases

    async def fetched(self, lease: Lease) -> None:
        """The lease's request is done (its response arrived, or it failed): its host's request
        slot goes back, for every worker, while the lease stays out until acked.

        The slot goes back with this frontier's next pop (one round trip for both) or flush,
        whichever comes first; a worker that pops no more has nothing to use it for, and
        flushes every checkpoint. A node that shares hosts (``share``) sends the slots no pop
        has carried after 20 ms on their own while other nodes are live: they may be waiting for
        them. A lease
        acked, reclaimed or expired meanwhile holds no slot.
        """
        self._client()
        self._fetched.append(lease.token)
        self._gate.open_one()
        if self._share == "1" and self.peers and self._returning is None:
            self._returning = asyncio.create_task(self._return_slots())

    async def _return_slots(self) -> None:
        """Send the freed request slots no pop carried meanwhile (see :meth:`fetched`)."""
        try:
            while True:  # until a wait passes with no slot freed and none carried
                await asyncio.sleep(_SLOT_RETURN)
                done, self._fetched = self._fetched, []
                if not done:
                    return
                try:
                    await self._run("fetched", [*self._now_args(), *done])
                except BaseException:
                    self._fetched[:0] = done  # the next pop or flush takes them
                    raise
        except FrontierError as exc:
            log.debug("request slots not returned now (%s); the next pop takes them", exc)
        finally:
            self._returning = None

    async def ack(self, lease: Lease) -> bool:
        """Mark the leased URL done. ``False`` (and no change) for an unknown or expired lease.

        With ``defer_acks`` the ack is held until :meth:`flush` (``False`` at once only when the
        lease has expired by the local clock); until then the URL still counts as in flight.
        """
        if self._defer_acks:
            self._client()
            if self._expired(lease):
                self._unsettled.discard(lease.token)  # expired: its reservation goes back
                return False
            self._held_acks.append(lease.token)
            return True
        self._renewed.pop(lease.token, None)
        done = self._settle([lease.token], await self._run("ack", [*self._now_args(), lease.token]))
        self._gate.open_one()
        return done > 0

    @property
    def pages_here(self) -> int:
        """Pages this worker stored that count: reservations made final by its acks, and those
        not settled yet (pages in hand or waiting for the checkpoint's acks). A reservation
        whose lease was lost before its ack (expired, or given back when this node was thought
        dead: another worker fetches the page again and counts it) is not counted, so the
        workers' counts add up to the pages stored."""
        return self.final_here + len(self._unsettled)

    def _settle(self, tokens: Sequence[str], answer: Any) -> int:
        """Record an ack script's answer for ``tokens`` (valid leases, reservations made
        final); returns how many leases were valid."""
        done, final = (int(x) for x in answer)
        self.final_here += final
        self._unsettled.difference_update(tokens)
        return done

    def _expired(self, lease: Lease) -> bool:
        """Whether the lease has expired by the local clock (renewals counted); a lease done
        here is forgotten by the renewals."""
        expires_at = self._renewed.pop(lease.token, lease.expires_at)
        return self._clock() >= expires_at

    async def renew(self, leases: Sequence[Lease]) -> dict[str, float]:
        """Extend each lease still out (not acked, reclaimed or expired) to ``lease_ttl`` from
        now: this worker is alive and still working on its page. Returns the new expiry of
        each lease renewed, by token; a lease gone is left out (its URL may be another's)."""
        self._client()
        expires_at = self._clock() + self._lease_ttl
        renewed: dict[str, float] = {}
        tokens = [lease.token for lease in leases]
        for start in range(0, len(tokens), _BATCH):
            got = await self._run(
                "renew", [*self._now_args(), _num(expires_at), *tokens[start : start + _BATCH]]
            )
            renewed.update((_text(token), expires_at) for token in got or ())
        self._renewed.update(renewed)
        return renewed

    async def reclaim(self, lease: Lease, *, delay: float = 0.0) -> bool:
        """Put the leased URL back under its old priority, to be handed out ``delay`` s from now.

        Returns ``False`` (and changes nothing) for an unknown or expired lease.
        """
        if not (delay >= 0 and math.isfinite(delay)):
            raise ValueError(f"reclaim delay must be a finite number >= 0, got {delay}")
        self._renewed.pop(lease.token, None)
        back = bool(await self._run("reclaim", [*self._now_args(), lease.token, _num(delay)]))
        self._unsettled.discard(lease.token)  # its reservation, if any, went back (or was gone)
        self._gate.open_one()
        return back

    async def revisit(self, lease: Lease, *, due: float) -> bool:
        """Mark the leased fetch done and queue the URL again under its old priority, handed
        out from ``due`` (seconds since the epoch) on: the reclaim script with a delay.

        With ``defer_acks`` it is held until :meth:`flush`, like an ack (``False`` at once only
        when the lease has expired by the local clock).
        """
        if not math.isfinite(due):
            raise ValueError(f"revisit due time must be finite, got {due}")
        if self._defer_acks:
            self._client()
            if self._expired(lease):
                self._unsettled.discard(lease.token)
                return False
            self._held_revisits.append((lease.token, due))
            return True
        self._renewed.pop(lease.token, None)
        back = await self._requeue_at(lease.token, due)
        self._gate.open_one()
        return back

    async def _requeue_at(self, token: str, due: float) -> bool:
        delay = max(0.0, due - self._clock())
        # "1": the page was stored, so its budget reservation is final (an ack's), not given back.
        back = int(await self._run("reclaim", [*self._now_args(), token, _num(delay), "1"]))
        if back == 2:
            self.final_here += 1
        self._unsettled.discard(token)
        return back > 0

    async def increase(self, url: str, score: float) -> bool:
        """Raise the score of a queued URL. ``False`` when it is not queued or not raised."""
        if math.isnan(score):
            raise ValueError(f"score of {url[:200]!r} is NaN")
        fp = f"{fingerprint(url) & _U64:016x}"
        return bool(await self._run("increase", [*self._now_args(), fp, _num(0.0 - score)]))

    async def rescore(self, scores: Mapping[str, float]) -> int:
        """Set the score of queued URLs, higher or lower (for every worker); URLs not queued
        are left alone. Returns how many got a new score.

        Raises:
            ValueError: a score is NaN (nothing is changed).
        """
        self._client()
        if self._observer:
            raise FrontierError("an observer frontier cannot rescore")
        for url, score in scores.items():
            if math.isnan(score):
                raise ValueError(f"score of {url[:200]!r} is NaN")
        pairs = [(f"{fingerprint(url) & _U64:016x}", _num(0.0 - s)) for url, s in scores.items()]
        changed = 0
        for start in range(0, len(pairs), _BATCH):
            args = [value for pair in pairs[start : start + _BATCH] for value in pair]
            changed += int(await self._run("rescore", [*self._now_args(), *args]))
        return changed

    async def peek(self) -> Request | None:
        """The request :meth:`pop` would hand out now, without leasing it."""
        record = await self._run("peek", [*self._now_args(), self.node or ""])
        return _record_request(record)[0] if record else None

    async def reclaim_expired(self) -> int:
        """Put back every lease past its expiry (whichever worker held it); returns how many."""
        back = int(await self._run("reclaim_expired", self._now_args()))
        if back:
            self._gate.open()
        return back

    async def set_host_delay(self, host: str, delay: float) -> None:
        """Seconds between two fetches of ``host`` (robots.txt Crawl-delay), for all workers."""
        if not (delay >= 0 and math.isfinite(delay)):
            raise ValueError(f"host delay must be a finite number >= 0, got {delay}")
        await self._run("set_host_delay", [*self._now_args(), host, _num(delay)])

    async def claim_request(self, host: str, delay: float) -> float:
        """A request to ``host`` is about to start: 0 when it may (the host's next request,
        from any worker, may start ``delay`` seconds later), else the seconds to wait before
        asking again (see :class:`~topicrawl.engine.slots.RequestSpacing`)."""
        return float(await self._run("claim_request", [host, _num(delay)]))

    async def next_ready_in(self) -> float | None:
        """Seconds until :meth:`pop` can hand something out; ``None`` when nothing is queued.

        0 means a pop succeeds now, or (when every host with queued URLs is at its limit) a
        lease has expired and :meth:`reclaim_expired` will free its host. While pops are
        answered here (see :meth:`pop`), so is this: the time until the next probe."""
        closed_for = self._gate.closed_for()
        if closed_for is not None:
            return closed_for
        now = self._clock()
        args = [_num(now), self._max_per_host, self.node or "", self._steal_min, self._share]
        answer = await self._run("next_ready", args)
        kind = int(answer[0])
        if kind == 0:
            return None
        if kind == 1:
            return 0.0
        if kind == 3:
            return self._poll_interval
        wait = max(0.0, float(answer[1]) - now)
        # A node also polls for work it may take from others, which no time here predicts.
        return wait if self.node is None else min(wait, self._poll_interval)

    async def queued(self) -> int:
        """URLs waiting to be handed out (including reclaimed ones still being delayed)."""
        return await self._hlen("queued")

    async def in_flight(self) -> int:
        """Leases out, over all workers."""
        return await self._hlen("lease")

    async def seen(self, url: str) -> bool:
        """Whether the URL was ever pushed (in Bloom mode, or is a false positive)."""
        fp = fingerprint(url)
        bloom = self._bloom
        a, b = self._positions(fp)
        args = ["x" if self._exact else "b", str(bloom.bits), str(bloom.hashes)]
        args += [str(_SEGMENT_BITS), f"{fp & _U64:016x}", a, b]
        return bool(await self._run("seen", args))

    def known(self, urls: Sequence[str]) -> list[bool]:
        """For each URL, whether this frontier pushed or popped it (so Redis has seen it),
        without asking Redis. False says nothing: another worker may have pushed it.

        A breadth-first crawl asks this before building requests for a page's links: on the
        Java docs 93 % of links lead to URLs seen before, and pushing them all made the push
        script's arguments (7 per link) the worker's main cost."""
        known = self._known
        return [fp in known for fp in fingerprints(urls)]

    def _remember(self, fps: Sequence[int]) -> None:
        if len(self._known) + len(fps) > _KNOWN_MAX:
            self._known.clear()
        self._known.update(fps)

    def _remember_new(self, fps: Sequence[int]) -> list[int]:
        """Remember ``fps``; the ones not known before (to forget if their push fails)."""
        known = self._known
        new = [fp for fp in fps if fp not in known]
        self._remember(new)
        return new

    # -- partitioning (used by the coordinator and the workers)

    async def assign_hosts(self, owners: Mapping[str, str]) -> int:
        """Give each host to a node (``""``: the shared pool); returns how many changed owner.

        A host's queued URLs, politeness state and leases stay as they are; only which node's
        pop hands it out changes. Each batch of up to 1000 hosts is one atomic script."""
        moved = 0
        items = list(owners.items())
        for start in range(0, len(items), _BATCH):
            args = self._now_args()
            for host, node in items[start : start + _BATCH]:
                if node:
                    check_node_id(node)
                args += [host, node]
            moved += int(await self._run("assign", args))
        if moved:
            self._gate.open()
        return moved

    async def release_node(self, node: str) -> int:
        """Put back at once every lease ``node`` holds (it is dead); returns how many."""
        back = int(await self._run("release_node", [*self._now_args(), check_node_id(node)]))
        if back:
            self._gate.open()
        return back

    async def hosts_of(self, node: str) -> set[str]:
        """The hosts ``node`` holds."""

        async def read(client: Redis) -> set[str]:
            members = await client.smembers(f"{self.prefix}hosts:{node}")
            return {_text(m) for m in members}

        return await self._call(read)

    async def lease_counts(self, nodes: Sequence[str]) -> dict[str, int]:
        """How many leases each of ``nodes`` holds."""
        return await self._set_sizes("nl", nodes)

    async def host_counts(self, nodes: Sequence[str]) -> dict[str, int]:
        """How many hosts each of ``nodes`` holds."""
        return await self._set_sizes("hosts", nodes)

    async def _set_sizes(self, kind: str, nodes: Sequence[str]) -> dict[str, int]:
        async def count_all(client: Redis) -> list[int]:
            async with client.pipeline(transaction=False) as pipe:
                for node in nodes:
                    pipe.scard(f"{self.prefix}{kind}:{node}")
                return [int(n) for n in await pipe.execute()]

        counts = await self._call(count_all)
        return dict(zip(nodes, counts, strict=True))

    async def owners_of(self, hosts: Sequence[str]) -> dict[str, str]:
        """The owner of each of ``hosts`` that has one."""
        if not hosts:
            return {}

        async def read(client: Redis) -> list[Any]:
            return list(await client.hmget(self.prefix + "owner", list(hosts)))

        answers = await self._call(read)
        return {host: _text(node) for host, node in zip(hosts, answers, strict=True) if node}

    async def owners(self) -> dict[str, str]:
        """Every host with an owner, and its owner."""

        async def scan(client: Redis) -> dict[str, str]:
            found: dict[str, str] = {}
            async for host, node in client.hscan_iter(self.prefix + "owner", count=1000):
                found[_text(host)] = _text(node)
            return found

        return await self._call(scan)

    # -- internals

    def _client(self) -> Redis:
        if self._closed:
            raise FrontierError("the frontier is closed")
        if self._redis is None:
            raise FrontierError("the frontier is not open: call `await frontier.open()` first")
        return self._redis

    def _now_args(self) -> list[str]:
        return [_num(self._clock()), self._max_per_host]

    def _positions(self, fp: int) -> tuple[str, str]:
        """Start and step of the URL's Bloom bit positions (double hashing); empty when exact."""
        if self._exact:
            return "", ""
        bits = self._bloom.bits
        unsigned = fp & _U64
        step = xxhash.xxh3_64_intdigest(unsigned.to_bytes(8, "little"), seed=0x9E3779B9) % bits
        return str(unsigned % bits), str(step or 1)

    async def _run(self, name: str, args: list[str]) -> Any:
        self._client()
        script = self._scripts[name]
        return await self._call(lambda client: script(keys=[self.prefix], args=args, client=client))

    async def _hlen(self, key: str) -> int:
        return int(await self._call(lambda client: client.hlen(self.prefix + key)))

    async def _call(self, operation: Callable[[Redis], Awaitable[_T]]) -> _T:
        """Run a Redis operation, retrying while Redis is unreachable for up to ``retry_for``."""
        deadline = time.monotonic() + self._retry_for
        backoff = 0.05
        while True:
            client = self._client()
            try:
                return await operation(client)
            except _TRANSIENT as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._failed(exc) from exc
                log.warning("Redis at %s unreachable (%s); retrying", self._where, exc)
                await asyncio.sleep(min(backoff, left))
                backoff = min(backoff * 2, 2.0)
            except RedisError as exc:
                raise self._failed(exc) from exc

    def _failed(self, exc: RedisError) -> FrontierError:
        return FrontierError(f"Redis at {self._where} failed: {type(exc).__name__}: {exc}")
