"""A namespace is one crawl: its agreed settings, seeds, scope and page budget live in Redis.

The first worker (or ``topicrawl crawl-ns create``) stores the crawl's settings; every worker
that joins must agree with them (a setting it was given that differs is refused with the
difference shown) and takes the others from Redis. Settings that are per node by nature
(concurrency, parse workers, pages in hand, timeouts and retries, proxies, the database URL
and its batching) stay each worker's own. Keys, under the crawl's prefix:

- ``settings``: the agreed crawl settings, JSON (the fields of :data:`SHARED`).
- ``seeds``: every start URL given to the crawl, by any worker or ``crawl-ns add-seeds``.
- ``domains``: the seeds' registered domains: the crawl's scope when no allowed domains are
  set. A seed added later widens it atomically and is announced on the ``scope`` pub/sub
  channel: running workers widen their scope as the message arrives (and at each heartbeat,
  should a message be lost while Redis was away).
- ``budget``: ``max_pages`` and ``reserved``: a page is reserved here before it is stored
  (with its links' push, one atomic script: :meth:`RedisFrontier.reserve_page`), so the
  workers together never store more than ``max_pages``. ``budgeted`` holds the lease tokens
  whose reservation is not final: acking the lease makes it final, reclaiming the lease
  gives it back, so a worker killed between a reservation and its write leaves the crawl
  no page short.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from importlib import resources
from typing import Any, TypeVar

from pydantic import ValidationError
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.core.models import Lease
from topicrawl.distributed.redis_frontier import RedisFrontier
from topicrawl.parse.urls import InvalidUrl, Scope, canonicalize, host_of, registered_domain

__all__ = [
    "NODE_FIELDS",
    "SHARED",
    "Namespace",
    "NamespaceState",
    "ScopedFrontier",
    "SharedScope",
    "adopt",
    "differences",
    "given_part",
    "list_namespaces",
    "shared_part",
]

SHARED: Mapping[str, tuple[str, ...] | None] = {
    "topics": None,
    "strategy": None,
    "strategy_options": None,
    "sitemaps": None,
    "feeds": None,
    "max_pages": None,
    "fetch": ("user_agent", "max_body_bytes", "max_redirects", "max_url_length", "content_types"),
    "politeness": ("delay", "per_host", "obey_robots", "max_crawl_delay"),
    "scope": ("allowed_domains", "include", "exclude", "max_depth", "follow_nofollow"),
    "frontier": ("lease_ttl", "bloom_capacity", "bloom_error_rate"),
    "storage": ("keep_body",),
}
"""The crawl settings a namespace agrees on: top-level fields (None) and section fields."""

NODE_FIELDS = "concurrency, pages_in_hand, parse_workers, fetch timeouts/retries/proxies/"
"""The settings each worker keeps for itself (for messages)."""
NODE_FIELDS += "connections, politeness.robots_error_ttl, frontier.kind, storage url/batching"

log = logging.getLogger(__name__)
_T = TypeVar("_T")

_KEYS = ("settings", "budget", "seeds", "domains")
_MAX_SEEDS_SHOWN = 5


def shared_part(settings: CrawlSettings) -> dict[str, Any]:
    """The settings a namespace agrees on, as JSON values."""
    dumped = settings.model_dump(mode="json")
    part: dict[str, Any] = {}
    for key, fields in SHARED.items():
        if fields is None:
            part[key] = dumped[key]
        else:
            part[key] = {name: dumped[key][name] for name in fields}
    return part


def given_part(settings: CrawlSettings) -> dict[str, Any]:
    """The shared settings that were given (option, environment, file), not defaults."""
    dumped = shared_part(settings)
    given: dict[str, Any] = {}
    for key, fields in SHARED.items():
        if key not in settings.model_fields_set:
            continue
        if fields is None:
            given[key] = dumped[key]
            continue
        section = getattr(settings, key)
        chosen = {name: dumped[key][name] for name in fields if name in section.model_fields_set}
        if chosen:
            given[key] = chosen
    return given


def differences(given: Mapping[str, Any], stored: Mapping[str, Any]) -> list[str]:
    """Each given setting that differs from the namespace's, in words."""
    found = []
    for key, value in given.items():
        if isinstance(value, dict):
            section = stored.get(key) or {}
            found += [
                f"{key}.{name}: given {_shown(v)}, the namespace has {_shown(section.get(name))}"
                for name, v in value.items()
                if section.get(name) != v
            ]
        elif stored.get(key) != value:
            found.append(
                f"{key}: given {_shown(value)}, the namespace has {_shown(stored.get(key))}"
            )
    return found


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 200 else text[:200] + "..."


def adopt(
    settings: CrawlSettings, stored: Mapping[str, Any], seeds: Sequence[str]
) -> CrawlSettings:
    """The settings with the namespace's laid over them, seeded with the namespace's seeds.

    Raises:
        ConfigError: the stored settings are not valid settings (written by hand or by an
            incompatible version).
    """
    merged = settings.model_dump()
    for key, value in stored.items():
        if key not in SHARED:
            continue
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    merged["seeds"] = tuple(seeds)
    try:
        return CrawlSettings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(f"the namespace's stored settings are invalid: {exc}") from exc


def canonical_seeds(seeds: Iterable[str]) -> list[str]:
    """The seeds in canonical form, in order, without repeats.

    Raises:
        ConfigError: a seed is not a crawlable URL.
    """
    found: dict[str, None] = {}
    for seed in seeds:
        try:
            found[canonicalize(seed)] = None
        except InvalidUrl as exc:
            raise ConfigError(f"invalid seed {seed!r}: {exc}") from exc
    return list(found)


def _check_in_scope(seeds: Sequence[str], stored: Mapping[str, Any]) -> None:
    """Refuse seeds the namespace's scope rules out: outside its explicit allowed domains, or
    excluded by its patterns (a namespace without allowed domains takes each seed's domain
    into its scope)."""
    rules = stored.get("scope", {})
    fetch = stored.get("fetch", {})
    try:
        scope = Scope.build(
            allowed_domains=rules.get("allowed_domains") or (),
            include=rules.get("include") or (),
            exclude=rules.get("exclude") or (),
            max_url_length=int(fetch.get("max_url_length") or 2048),
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    outside = [seed for seed in seeds if not scope.allows(seed)]
    if outside:
        shown = ", ".join(outside[:_MAX_SEEDS_SHOWN])
        raise ConfigError(
            f"{len(outside)} seed(s) outside the namespace's scope (allowed domains "
            f"{', '.join(scope.allowed_domains) or 'any'}, include and exclude patterns, URL "
            f"length): {shown}"
        )


@dataclass(frozen=True, slots=True)
class NamespaceState:
    """What a namespace holds in Redis (settings None: not created)."""

    settings: dict[str, Any] | None
    seeds: tuple[str, ...]
    domains: tuple[str, ...]
    max_pages: int
    reserved: int


class Namespace:
    """One crawl's settings, seeds, scope and page budget in Redis (see the module doc).

    Args:
        client: an open Redis client.
        prefix: the crawl's key prefix (``topicrawl:{namespace}:``).
        name: the namespace's name, for messages.
        retry_for: seconds of Redis outage to ride out by retrying (0: fail at once).
    """

    def __init__(self, client: Redis, *, prefix: str, name: str, retry_for: float = 0.0) -> None:
        self._client = client
        self._retry_for = retry_for
        self.prefix = prefix
        self.name = name
        lua = resources.files("topicrawl.distributed").joinpath("lua")
        self._join = client.register_script(lua.joinpath("namespace_join.lua").read_text("utf-8"))

    @property
    def client(self) -> Redis:
        return self._client

    def key(self, name: str) -> str:
        return self.prefix + name

    async def meta(self, field: str) -> str | None:
        """A field of the frontier's ``meta`` hash (``run_id``, ``dedupe``...), or None."""
        value = await self._call(lambda: self._client.hget(self.key("meta"), field))
        return None if value is None else _text(value)

    async def exists(self) -> bool:
        """Whether the crawl was created (settings stored), or started by an older worker."""
        keys = (self.key("settings"), self.key("meta"))
        return bool(await self._call(lambda: self._client.exists(*keys)))

    async def state(self) -> NamespaceState:
        def read(pipe: Pipeline) -> None:
            pipe.get(self.key("settings"))
            pipe.smembers(self.key("seeds"))
            pipe.smembers(self.key("domains"))
            pipe.hmget(self.key("budget"), ["max_pages", "reserved"])

        raw, seeds, domains, (most, reserved) = await self._pipeline(read)
        return NamespaceState(
            settings=None if raw is None else self._settings(raw),
            seeds=tuple(sorted(_text(s) for s in seeds)),
            domains=tuple(sorted(_text(d) for d in domains)),
            max_pages=int(most or 0),
            reserved=int(reserved or 0),
        )

    async def join(self, settings: CrawlSettings) -> tuple[CrawlSettings, bool]:
        """Create the namespace from ``settings`` or check them against it; add the seeds.

        Returns:
            The settings to crawl with (the namespace's, seeded with all its seeds), and
            whether this call created the namespace.

        Raises:
            ConfigError: a given setting differs from the namespace's (each difference is
                named), no seeds were given to a namespace that has none, or a seed is bad.
            FrontierError: Redis failed.
        """
        seeds = canonical_seeds(settings.seeds)
        mine = shared_part(settings)
        if not seeds:
            state = await self.state()
            if state.settings is None:
                raise ConfigError(
                    f"namespace {self.name!r} does not exist and no seeds were given: give "
                    "--seed (or --seeds-file), or create it with topicrawl crawl-ns create"
                )
            if not state.seeds:
                raise ConfigError(
                    f"namespace {self.name!r} has no seeds: give --seed, or add some with "
                    "topicrawl crawl-ns add-seeds"
                )
        _check_in_scope(seeds, mine)
        domains = sorted({registered_domain(seed) for seed in seeds})
        created, raw = await self._call(
            lambda: self._join(
                keys=[self.key(k) for k in _KEYS],
                args=[json.dumps(mine), str(settings.max_pages), str(len(seeds)), *seeds, *domains],
            )
        )
        stored = self._settings(raw)
        if not created:
            found = differences(given_part(settings), stored)
            if found:
                raise ConfigError(
                    f"this worker's settings differ from namespace {self.name!r}'s:\n  "
                    + "\n  ".join(found)
                    + "\ngive the namespace's values (or leave them out: a worker takes them "
                    "from Redis), or use another --namespace (a page limit is changed with "
                    "topicrawl crawl-ns set --max-pages)"
                )
            await self.add_seeds(seeds, stored=stored)
        state = await self.state()
        return adopt(settings, stored, state.seeds), bool(created)

    async def add_seeds(
        self, seeds: Sequence[str], *, stored: Mapping[str, Any] | None = None
    ) -> int:
        """Add start URLs to the crawl and widen its scope by their domains (atomically);
        returns how many were new. They are not queued here: each worker queues the
        namespace's seeds as it starts, and ``crawl-ns add-seeds`` queues them in a crawl
        under way.

        Raises:
            ConfigError: the namespace does not exist, or a seed is outside its explicit
                allowed domains.
        """
        seeds = canonical_seeds(seeds)
        if stored is None:
            stored = (await self.state()).settings
            if stored is None:
                raise ConfigError(f"namespace {self.name!r} does not exist")
        _check_in_scope(seeds, stored)
        if not seeds:
            return 0
        domains = {registered_domain(seed) for seed in seeds}

        def write(pipe: Pipeline) -> None:
            pipe.sadd(self.key("seeds"), *seeds)
            pipe.sadd(self.key("domains"), *domains)
            pipe.publish(self.scope_channel, "domains")  # running workers widen at once

        added, _, _ = await self._pipeline(write)
        return int(added)

    @property
    def scope_channel(self) -> str:
        """The pub/sub channel told whenever the namespace's domains may have grown."""
        return self.key("scope")

    async def domains(self) -> frozenset[str]:
        """The seeds' domains: the crawl's scope when it has no explicit allowed domains."""
        return frozenset(
            _text(d) for d in await self._call(lambda: self._client.smembers(self.key("domains")))
        )

    async def set_max_pages(self, max_pages: int) -> None:
        """Change the crawl's page limit (running workers follow it at once).

        Raises:
            ConfigError: the namespace does not exist or the limit is negative.
        """
        if max_pages < 0:
            raise ConfigError(f"max_pages must be >= 0 (0: no limit), got {max_pages}")
        state = await self.state()
        if state.settings is None:
            raise ConfigError(f"namespace {self.name!r} does not exist")
        updated = {**state.settings, "max_pages": max_pages}

        def write(pipe: Pipeline) -> None:
            pipe.set(self.key("settings"), json.dumps(updated))
            pipe.hset(self.key("budget"), "max_pages", str(max_pages))

        await self._pipeline(write)

    async def start_budget(self, stored_pages: int) -> None:
        """Count the pages the database already holds against the limit, unless counted."""
        await self._call(
            lambda: self._client.hsetnx(self.key("budget"), "reserved", str(stored_pages))
        )

    async def limit_reached(self) -> bool:
        most, reserved = await self._call(
            lambda: self._client.hmget(self.key("budget"), ["max_pages", "reserved"])
        )
        return bool(int(most or 0)) and int(reserved or 0) >= int(most or 0)

    async def keys(self) -> list[bytes]:
        """Every key of the namespace."""

        async def scan() -> list[bytes]:
            match = self.prefix + "*"
            return [key async for key in self._client.scan_iter(match=match, count=1000)]

        return list(await self._call(scan))

    async def delete(self, *, keep: Iterable[str] = ()) -> int:
        """Delete the namespace's keys but ``keep`` (names under the prefix); returns how many."""
        kept = {(self.prefix + name).encode() for name in keep}
        doomed = [key for key in await self.keys() if key not in kept]
        batches = [doomed[start : start + 1000] for start in range(0, len(doomed), 1000)]
        return sum([int(await self._call(partial(self._client.unlink, *b))) for b in batches])

    async def reset(self) -> int:
        """Empty the frontier, dedupe, nodes and run of the crawl; keep its settings, seeds and
        scope (the page count restarts from the database's). Returns the keys deleted."""
        deleted = await self.delete(keep=("settings", "seeds", "domains", "budget"))
        await self._call(lambda: self._client.hdel(self.key("budget"), "reserved"))
        return deleted

    def _settings(self, raw: bytes | str) -> dict[str, Any]:
        try:
            value = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(f"namespace {self.name!r}: stored settings are not JSON") from exc
        if not isinstance(value, dict):
            raise ConfigError(f"namespace {self.name!r}: stored settings are not a JSON object")
        return value

    async def _pipeline(self, build: Callable[[Pipeline], None]) -> list[Any]:
        """One MULTI/EXEC transaction of the commands ``build`` queues (rebuilt if retried)."""

        async def run() -> list[Any]:
            async with self._client.pipeline(transaction=True) as pipe:
                build(pipe)
                return list(await pipe.execute())

        return await self._call(run)

    async def _call(self, operation: Callable[[], Awaitable[_T]]) -> _T:
        """Run a Redis operation, retrying while Redis is unreachable for up to
        ``retry_for`` seconds (as the frontier does)."""
        deadline = time.monotonic() + self._retry_for
        backoff = 0.05
        while True:
            try:
                return await operation()
            except (RedisConnectionError, RedisTimeoutError) as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._failed(exc) from exc
                log.warning("Redis unreachable (%s); retrying", exc)
                await asyncio.sleep(min(backoff, left))
                backoff = min(backoff * 2, 2.0)
            except RedisError as exc:
                raise self._failed(exc) from exc

    def _failed(self, exc: RedisError) -> FrontierError:
        return FrontierError(f"Redis failed on namespace {self.name!r}: {exc}")


async def list_namespaces(client: Redis) -> list[str]:
    """The namespaces present in a Redis (created, or started by an older worker).

    Raises:
        FrontierError: Redis failed.
    """
    found: set[str] = set()
    try:
        for kind in ("settings", "meta"):
            async for key in client.scan_iter(match=f"topicrawl:{{*}}:{kind}", count=1000):
                text = _text(key)
                found.add(text[len("topicrawl:{") : text.rindex("}:")])
    except RedisError as exc:
        raise FrontierError(f"Redis failed: {exc}") from exc
    return sorted(found)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class SharedScope:
    """Keeps a worker's scope as wide as its namespace's: the domains of every seed.

    The scope is read again when a seed is added (:meth:`follow` listens on the namespace's
    scope channel), at each heartbeat, and when a popped URL's host is not allowed yet (the
    URL was let in by another worker's scope, so the namespace's grew).

    Args:
        namespace: the crawl's namespace.
        scope: the crawl's scope (widened in place); one with explicit allowed domains or
            none (any domain) never changes.
    """

    _RETRY = 1.0  # seconds between attempts to listen again after Redis failed

    def __init__(self, namespace: Namespace, scope: Scope, *, fixed: bool) -> None:
        self._namespace = namespace
        self._scope = scope
        self._fixed = fixed or not scope.allowed_domains

    async def refresh(self) -> None:
        """Read the namespace's domains again."""
        if not self._fixed:
            self._scope.widen(await self._namespace.domains())

    async def check(self, url: str) -> None:
        """Before a popped URL is fetched: widen the scope if it does not allow the URL."""
        if not self._fixed and not self._scope.host_allowed(host_of(url)):
            await self.refresh()

    async def follow(self, stop: asyncio.Event) -> None:
        """Until ``stop``: widen the scope as soon as the namespace announces new domains, so
        a link to a domain added while the crawl runs is not refused until the next
        heartbeat. Redis failures are logged and listening resumes (the heartbeat's refresh
        covers the gap)."""
        if self._fixed:
            return
        while not stop.is_set():
            try:
                await self._listen(stop)
            except (RedisError, FrontierError, OSError, TimeoutError) as exc:
                log.debug("not listening for scope changes (%s); retrying", exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._RETRY)

    async def _listen(self, stop: asyncio.Event) -> None:
        pubsub = self._namespace.client.pubsub()
        try:
            await pubsub.subscribe(self._namespace.scope_channel)
            await self.refresh()  # what was added before the subscription took
            while not stop.is_set():
                async with asyncio.timeout(2 * self._RETRY):  # never stuck on a reply
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
                if message is not None:
                    await self.refresh()
        finally:
            with contextlib.suppress(TimeoutError, RedisError, OSError):
                async with asyncio.timeout(self._RETRY):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py: untyped


class ScopedFrontier(RedisFrontier):
    """The Redis frontier, checking each popped URL against the namespace's scope."""

    shared_scope: SharedScope | None = None

    async def pop(self) -> Lease | None:
        lease = await super().pop()
        if lease is not None and self.shared_scope is not None:
            await self.shared_scope.check(lease.request.url)
        return lease
