"""The node registry of a distributed crawl, in Redis next to the crawl's frontier.

Keys, under the crawl's prefix ``topicrawl:{namespace}:``:

- ``node:<id>``: a hash describing the node: machine, pid, parameters and capacities (JSON),
  state (alive, dead, left), start time, and what its last heartbeat said (time, pages,
  pages per second over the last window, errors).
- ``hb:<id>``: the heartbeat key, set with a TTL of ``heartbeat_timeout`` on every beat; a
  node whose key has expired is late, and the coordinator declares it dead.
- ``nodes``: every node ever registered (so dead ones can still be shown); ``members``: the
  live ones (the frontier's scripts read it to place hosts and to take work).
- ``nodecfg``: per-node configuration, node id (or ``*`` for every node) -> JSON object of
  crawl settings the node applies on start.

State changes that race (a late heartbeat against the coordinator's verdict) are Lua scripts.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import os
import re
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.distributed.redis_frontier import check_node_id, namespace_prefix, redact

__all__ = [
    "Heartbeat",
    "NodeInfo",
    "NodeRegistry",
    "NodeState",
    "NodeStatus",
    "ThroughputMeter",
    "local_node_id",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_MAX_CONFIG = 64_000  # bytes of JSON per node configuration

# Mark a node dead only if it is still alive and its heartbeat key is gone (atomic against a
# heartbeat arriving at the same time). KEYS: node hash, heartbeat key, members. ARGV: node, now.
_MARK_DEAD = """
if redis.call('HGET', KEYS[1], 'state') ~= 'alive' then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'state', 'dead', 'died_at', ARGV[2])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
"""

# A heartbeat from a node not declared dead refreshes its key and stats; from a dead node it
# changes nothing and returns 0, so the node knows to register again.
# KEYS: node hash, heartbeat key. ARGV: ttl ms, then field/value pairs.
_BEAT = """
if redis.call('HGET', KEYS[1], 'state') ~= 'alive' then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1
"""


class NodeState(enum.StrEnum):
    """Where a node is in its life."""

    ALIVE = "alive"
    DEAD = "dead"  # declared dead by the coordinator: its heartbeat expired
    LEFT = "left"  # stopped on its own


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """What a node says about itself when it registers."""

    node: str
    machine: str
    pid: int
    params: Mapping[str, Any] = field(default_factory=dict)
    capacity: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """What a node publishes with each heartbeat: pages it stored, its rate, failed fetches
    (``errors``), and URLs robots.txt kept it from fetching (``excluded``, not errors).

    ``queue`` (leases the node is working on) and ``latency`` (its recent mean seconds per
    fetch, its processing latency) feed the load-aware assignment policies; a node that does
    not send them (``None``, or a node of an older version, whose hash lacks the fields) is
    read back with ``None``, and the policies fall back to host counts and throughput.
    """

    pages: int
    pages_per_second: float | None
    errors: int
    excluded: int = 0
    cpu_percent: float | None = None  # the process's CPU since its last beat, one core = 100
    memory_bytes: int | None = None  # its resident memory
    queue: int | None = None
    latency: float | None = None


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """A node as the registry sees it. ``late`` means alive but its heartbeat key expired."""

    node: str
    state: NodeState
    late: bool
    machine: str
    pid: int
    started_at: float
    last_heartbeat: float | None
    pages: int
    pages_per_second: float | None
    errors: int
    params: Mapping[str, Any]
    capacity: Mapping[str, Any]
    died_at: float | None = None
    excluded: int = 0
    cpu_percent: float | None = None
    memory_bytes: int | None = None
    queue: int | None = None
    latency: float | None = None

    @property
    def live(self) -> bool:
        """Alive and heartbeating."""
        return self.state is NodeState.ALIVE and not self.late


class ThroughputMeter:
    """Pages per second over the last ``window`` seconds, from cumulative page counts."""

    def __init__(self, window: float) -> None:
        if not window > 0:
            raise ValueError(f"window must be > 0, got {window}")
        self._window = window
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, pages: int) -> None:
        """Record the cumulative page count at ``now``."""
        self._samples.append((now, pages))
        # Keep one sample at or before the window's start, so the rate spans a whole window.
        while len(self._samples) > 2 and self._samples[1][0] <= now - self._window:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Pages per second over the last window; ``None`` until a whole window is covered."""
        if len(self._samples) < 2:
            return None
        (t0, p0), (t1, p1) = self._samples[0], self._samples[-1]
        if t1 - t0 < self._window or t1 <= t0:
            return None
        return (p1 - p0) / (t1 - t0)


def local_node_id(pid: int | None = None) -> str:
    """This process's node id: host name, machine id (first 8 hex digits) and process id."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:40].strip("-.") or "node"
    machine = ""
    for path in (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id")):
        try:
            machine = path.read_text(encoding="ascii").strip()[:8]
        except (OSError, UnicodeDecodeError):
            continue
        if re.fullmatch(r"[0-9a-f]{8}", machine):
            break
        machine = ""
    parts = [name, machine, str(os.getpid() if pid is None else pid)]
    return "-".join(part for part in parts if part)


class NodeRegistry:
    """Registers nodes, records their heartbeats, and keeps per-node configuration.

    Args:
        redis_url: the Redis of the crawl.
        namespace: the crawl's name (the frontier's namespace).
        heartbeat_timeout: seconds a heartbeat keeps a node alive (its key's TTL).
        clock: seconds since the epoch.
    """

    def __init__(
        self,
        redis_url: str,
        *,
        namespace: str,
        heartbeat_timeout: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not heartbeat_timeout > 0:
            raise ConfigError(f"heartbeat_timeout must be > 0, got {heartbeat_timeout}")
        self._url = redis_url
        self._where = redact(redis_url)
        self.prefix = namespace_prefix(namespace)
        self.namespace = namespace
        self._ttl_ms = max(1, round(heartbeat_timeout * 1000))
        self._clock = clock
        self._redis: Redis | None = None

    # -- lifecycle

    async def open(self) -> Self:
        """Connect; returns self.

        Raises:
            FrontierError: Redis cannot be reached.
        """
        if self._redis is not None:
            return self
        try:
            client = Redis.from_url(self._url, socket_connect_timeout=5.0)
        except ValueError as exc:
            raise ConfigError(f"bad Redis URL {self._where}: {exc}") from exc
        try:
            await client.ping()
        except RedisError as exc:
            await client.aclose()
            raise FrontierError(f"cannot use Redis at {self._where}: {exc}") from exc
        self._redis = client
        return self

    async def close(self) -> None:
        """Disconnect."""
        client, self._redis = self._redis, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def client(self) -> Redis:
        """The open Redis connection (for the coordinator lock)."""
        if self._redis is None:
            raise FrontierError("the registry is not open")
        return self._redis

    # -- nodes

    async def register(self, info: NodeInfo) -> None:
        """Record a node as alive (again, if it was declared dead) and start its heartbeat."""
        node = check_node_id(info.node)
        now = self._clock()

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.delete(self._key("node", node))
                pipe.hset(
                    self._key("node", node),
                    mapping={
                        "machine": info.machine,
                        "pid": str(info.pid),
                        "params": json.dumps(dict(info.params), default=str),
                        "capacity": json.dumps(dict(info.capacity), default=str),
                        "state": NodeState.ALIVE.value,
                        "started_at": repr(now),
                        "last_heartbeat": repr(now),
                        "pages": "0",
                        "rate": "",
                        "errors": "0",
                        "excluded": "0",
                    },
                )
                pipe.set(self._key("hb", node), "1", px=self._ttl_ms)
                pipe.sadd(self.prefix + "nodes", node)
                pipe.sadd(self.prefix + "members", node)
                await pipe.execute()

        await self._call(write)

    async def heartbeat(self, node: str, beat: Heartbeat) -> bool:
        """Refresh the node's heartbeat and publish its numbers.

        Returns:
            False when the node had been declared dead (nothing is changed): it must
            :meth:`register` again, since its leases and hosts were handed out.
        """
        args = [str(self._ttl_ms), "last_heartbeat", repr(self._clock())]
        for name, value in _beat_fields(beat).items():
            args += [name, value]
        keys = [self._key("node", node), self._key("hb", node)]

        async def beat_once(client: Redis) -> Any:
            return await client.eval(_BEAT, 2, *keys, *args)

        return bool(await self._call(beat_once))

    async def mark_dead(self, node: str) -> bool:
        """Declare an alive node dead if its heartbeat has expired; True if this call did."""
        keys = [self._key("node", node), self._key("hb", node), self.prefix + "members"]

        async def mark(client: Redis) -> Any:
            return await client.eval(_MARK_DEAD, 3, *keys, node, repr(self._clock()))

        return bool(await self._call(mark))

    async def leave(self, node: str) -> None:
        """Record that a node stopped on its own (its numbers stay those of its last
        heartbeat; its pages per second are cleared: it no longer crawls)."""

        async def write(client: Redis) -> None:
            async with client.pipeline(transaction=True) as pipe:
                pipe.hset(self._key("node", node), "state", NodeState.LEFT.value)
                pipe.hset(self._key("node", node), "died_at", repr(self._clock()))
                pipe.hset(self._key("node", node), "rate", "")
                pipe.delete(self._key("hb", node))
                pipe.srem(self.prefix + "members", node)
                await pipe.execute()

        await self._call(write)

    async def nodes(self) -> list[NodeStatus]:
        """Every node ever registered in this crawl, by id."""

        async def read(client: Redis) -> list[NodeStatus]:
            ids = sorted(_text(n) for n in await client.smembers(self.prefix + "nodes"))
            async with client.pipeline(transaction=False) as pipe:
                for node in ids:
                    pipe.hgetall(self._key("node", node))
                    pipe.exists(self._key("hb", node))
                answers = await pipe.execute()
            found = []
            for i, node in enumerate(ids):
                fields = {_text(k): _text(v) for k, v in answers[2 * i].items()}
                if fields:
                    found.append(_status(node, fields, beating=bool(answers[2 * i + 1])))
            return found

        return await self._call(read)

    async def live(self) -> list[NodeStatus]:
        """The nodes alive and heartbeating."""
        return [n for n in await self.nodes() if n.live]

    # -- per-node configuration

    async def set_config(self, node: str, config: Mapping[str, Any]) -> None:
        """Store crawl settings for a node (``*``: for every node; a node's own win).

        Raises:
            ConfigError: the configuration is not a JSON object or is too large.
        """
        if node != "*":
            check_node_id(node)
        text = json.dumps(dict(config))
        if len(text) > _MAX_CONFIG:
            raise ConfigError(f"node configuration is {len(text)} bytes; at most {_MAX_CONFIG}")

        async def write(client: Redis) -> None:
            await client.hset(self.prefix + "nodecfg", node, text)

        await self._call(write)

    async def config_for(self, node: str) -> dict[str, Any]:
        """The configuration handed to ``node``: the ``*`` entry updated by its own."""

        async def read(client: Redis) -> list[Any]:
            return list(await client.hmget(self.prefix + "nodecfg", ["*", node]))

        merged: dict[str, Any] = {}
        for raw in await self._call(read):
            if raw is None:
                continue
            try:
                value = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ConfigError(f"stored configuration for {node!r} is not JSON: {exc}") from exc
            if not isinstance(value, dict):
                raise ConfigError(f"stored configuration for {node!r} is not a JSON object")
            merged.update(value)
        return merged

    # -- internals

    def _key(self, kind: str, node: str) -> str:
        return f"{self.prefix}{kind}:{node}"

    async def _call(self, operation: Callable[[Redis], Awaitable[_T]]) -> _T:
        try:
            return await operation(self.client)
        except RedisError as exc:
            raise FrontierError(
                f"Redis at {self._where} failed: {type(exc).__name__}: {exc}"
            ) from exc


def _beat_fields(beat: Heartbeat) -> dict[str, str]:
    """A heartbeat as fields of the node hash."""
    return {
        "pages": str(beat.pages),
        "rate": "" if beat.pages_per_second is None else repr(beat.pages_per_second),
        "errors": str(beat.errors),
        "excluded": str(beat.excluded),
        "cpu": "" if beat.cpu_percent is None else repr(beat.cpu_percent),
        "rss": "" if beat.memory_bytes is None else str(beat.memory_bytes),
        "queue": "" if beat.queue is None else str(beat.queue),
        "latency": "" if beat.latency is None else repr(beat.latency),
    }


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _float(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _json(value: str | None) -> dict[str, Any]:
    try:
        loaded = json.loads(value or "{}")
    except ValueError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _status(node: str, fields: Mapping[str, str], *, beating: bool) -> NodeStatus:
    try:
        state = NodeState(fields.get("state", "dead"))
    except ValueError:
        state = NodeState.DEAD
    return NodeStatus(
        node=node,
        state=state,
        late=state is NodeState.ALIVE and not beating,
        machine=fields.get("machine", ""),
        pid=int(_float(fields.get("pid")) or 0),
        started_at=_float(fields.get("started_at")) or 0.0,
        last_heartbeat=_float(fields.get("last_heartbeat")),
        pages=int(_float(fields.get("pages")) or 0),
        pages_per_second=_float(fields.get("rate")),
        errors=int(_float(fields.get("errors")) or 0),
        params=_json(fields.get("params")),
        capacity=_json(fields.get("capacity")),
        died_at=_float(fields.get("died_at")),
        excluded=int(_float(fields.get("excluded")) or 0),
        cpu_percent=_float(fields.get("cpu")),
        memory_bytes=None if (rss := _float(fields.get("rss"))) is None else int(rss),
        queue=None if (queue := _measure(fields.get("queue"))) is None else int(queue),
        latency=_measure(fields.get("latency")),
    )


def _measure(value: str | None) -> float | None:
    """A queue or latency field: None when absent (an older node) or not a finite number >= 0."""
    number = _float(value)
    if number is None or not math.isfinite(number) or number < 0:
        return None
    return number
