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
  by next allowed fetch time. A host at ``max_per_host`` leases is in neither.
- ``leases``/``delay``/``lastpop``/``nextat``: per-host hashes; ``lease`` (token -> record)
  and ``expiry`` (token -> expiry time) hold the leases out.
- dedupe: ``seen`` (exact mode, a set of 8-byte fingerprints) or ``bloom:<n>`` bitmaps.

Time always comes from the injected clock and is passed to the scripts (never Redis ``TIME``),
so every worker of a crawl must have a synchronised clock (NTP), and should share
``default_delay``, ``max_per_host`` and ``lease_ttl``.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import count
from types import MappingProxyType, TracebackType
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import xxhash
from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.core.models import EMPTY_REASONS, Lease, Request
from topicrawl.parse.urls import fingerprint, host_of

__all__ = ["BloomSize", "RedisFrontier", "bloom_size"]

Clock = Callable[[], float]

_U64 = (1 << 64) - 1
_SEGMENT_BITS = 1 << 30  # bits per bitmap key (128 MiB); SETBIT offsets must stay < 2**32
_BATCH = 1000  # requests per push script call: bounds the script's run time and arguments
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_SCRIPTS = (
    "ack",
    "increase",
    "next_ready",
    "peek",
    "pop",
    "push",
    "reclaim",
    "reclaim_expired",
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

    Args:
        redis_url: e.g. ``redis://host:6379/0`` (``rediss://`` for TLS).
        namespace: the crawl's name; letters, digits, ``.``, ``_``, ``-``.
        default_delay: seconds between two fetches of a host, unless set per host.
        max_per_host: leases one host may have out at once.
        lease_ttl: seconds a lease lasts before :meth:`reclaim_expired` takes it back.
        bloom_capacity: URLs the Bloom filter is sized for.
        bloom_error_rate: its false-positive rate at capacity.
        exact: dedupe with an exact set instead of a Bloom filter.
        clock: seconds since the epoch; injectable for tests.
    """

    def __init__(
        self,
        redis_url: str,
        *,
        namespace: str,
        default_delay: float = 0.0,
        max_per_host: int = 8,
        lease_ttl: float = 300.0,
        bloom_capacity: int = 1_000_000,
        bloom_error_rate: float = 1e-7,
        exact: bool = False,
        clock: Clock = time.time,
    ) -> None:
        if not _NAMESPACE.fullmatch(namespace):
            raise ConfigError(
                f"namespace must be 1-100 letters, digits, '.', '_' or '-', got {namespace!r}"
            )
        if not (default_delay >= 0 and math.isfinite(default_delay)):
            raise ConfigError(f"default_delay must be a finite number >= 0, got {default_delay}")
        if max_per_host < 1:
            raise ConfigError(f"max_per_host must be at least 1, got {max_per_host}")
        if not (lease_ttl > 0 and math.isfinite(lease_ttl)):
            raise ConfigError(f"lease_ttl must be a finite number > 0, got {lease_ttl}")
        self._bloom = bloom_size(bloom_capacity, bloom_error_rate)
        self._url = redis_url
        self._where = redact(redis_url)
        self.namespace = namespace
        self.prefix = f"topicrawl:{{{namespace}}}:"
        self._default_delay = _num(default_delay)
        self._max_per_host = str(max_per_host)
        self._lease_ttl = lease_ttl
        self._exact = exact
        self._clock = clock
        self._token_prefix = secrets.token_hex(8)
        self._tokens = count(1)
        self._redis: Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._closed = False

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
            client = Redis.from_url(self._url, socket_connect_timeout=5.0)
        except ValueError as exc:
            raise ConfigError(f"bad Redis URL {self._where}: {exc}") from exc
        try:
            await client.ping()
            mode = "exact" if self._exact else f"bloom:{self._bloom.bits}:{self._bloom.hashes}"
            meta = self.prefix + "meta"
            await client.hsetnx(meta, "dedupe", mode)
            stored = await client.hget(meta, "dedupe")
        except RedisError as exc:
            await client.aclose()
            raise FrontierError(f"cannot use Redis at {self._where}: {exc}") from exc
        if isinstance(stored, bytes):
            stored = stored.decode()
        if stored is not None and stored != mode:
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
        """Every operation is already in Redis when it returns (its durability is Redis's)."""
        self._client()

    async def close(self) -> None:
        """Disconnect (the crawl stays in Redis); later calls raise FrontierError."""
        self._closed = True
        client, self._redis = self._redis, None
        if client is not None:
            await client.aclose()

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
        self._client()
        for request in requests:
            if math.isnan(request.score):
                raise ValueError(f"score of {request.url[:200]!r} is NaN")
        added = 0
        bloom = self._bloom
        head = [
            "x" if self._exact else "b",
            str(bloom.bits),
            str(bloom.hashes),
            str(_SEGMENT_BITS),
        ]
        for start in range(0, len(requests), _BATCH):
            args: list[str] = []
            for request in requests[start : start + _BATCH]:
                fp = fingerprint(request.url)
                a, b = self._positions(fp)
                args += [
                    f"{fp & _U64:016x}",
                    host_of(request.url),
                    _num(0.0 - request.score),
                    _payload(request),
                    a,
                    b,
                ]
            result = await self._run("push", self._now_args() + head + args)
            added += int(result)
        return added

    async def pop(self) -> Lease | None:
        """Lease the best request among ready hosts, or ``None`` when no host is ready."""
        now = self._clock()
        expires_at = now + self._lease_ttl
        token = f"{self._token_prefix}-{next(self._tokens):x}"
        record = await self._run(
            "pop",
            [_num(now), self._max_per_host, self._default_delay, token, _num(expires_at)],
        )
        if not record:
            return None
        request, host = _record_request(record)
        return Lease(request=request, token=token, host=host, expires_at=expires_at)

    async def ack(self, lease: Lease) -> bool:
        """Mark the leased URL done. ``False`` (and no change) for an unknown or expired lease."""
        return bool(await self._run("ack", [*self._now_args(), lease.token]))

    async def reclaim(self, lease: Lease, *, delay: float = 0.0) -> bool:
        """Put the leased URL back under its old priority, to be handed out ``delay`` s from now.

        Returns ``False`` (and changes nothing) for an unknown or expired lease.
        """
        if not (delay >= 0 and math.isfinite(delay)):
            raise ValueError(f"reclaim delay must be a finite number >= 0, got {delay}")
        return bool(await self._run("reclaim", [*self._now_args(), lease.token, _num(delay)]))

    async def increase(self, url: str, score: float) -> bool:
        """Raise the score of a queued URL. ``False`` when it is not queued or not raised."""
        if math.isnan(score):
            raise ValueError(f"score of {url[:200]!r} is NaN")
        fp = f"{fingerprint(url) & _U64:016x}"
        return bool(await self._run("increase", [*self._now_args(), fp, _num(0.0 - score)]))

    async def peek(self) -> Request | None:
        """The request :meth:`pop` would hand out now, without leasing it."""
        record = await self._run("peek", self._now_args())
        return _record_request(record)[0] if record else None

    async def reclaim_expired(self) -> int:
        """Put back every lease past its expiry (whichever worker held it); returns how many."""
        return int(await self._run("reclaim_expired", self._now_args()))

    async def set_host_delay(self, host: str, delay: float) -> None:
        """Seconds between two fetches of ``host`` (robots.txt Crawl-delay), for all workers."""
        if not (delay >= 0 and math.isfinite(delay)):
            raise ValueError(f"host delay must be a finite number >= 0, got {delay}")
        await self._run("set_host_delay", [*self._now_args(), host, _num(delay)])

    async def next_ready_in(self) -> float | None:
        """Seconds until :meth:`pop` can hand something out; ``None`` when nothing is queued.

        0 means a pop succeeds now, or (when every host with queued URLs is at its lease limit)
        a lease has expired and :meth:`reclaim_expired` will free its host."""
        now = self._clock()
        answer = await self._run("next_ready", [_num(now), self._max_per_host])
        kind = int(answer[0])
        if kind == 0:
            return None
        if kind == 1:
            return 0.0
        return max(0.0, float(answer[1]) - now)

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
        client = self._client()
        try:
            return await self._scripts[name](keys=[self.prefix], args=args, client=client)
        except RedisError as exc:
            raise self._failed(exc) from exc

    async def _hlen(self, key: str) -> int:
        client = self._client()
        try:
            return await client.hlen(self.prefix + key)
        except RedisError as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: RedisError) -> FrontierError:
        return FrontierError(f"Redis at {self._where} failed: {type(exc).__name__}: {exc}")
