"""The coordinator's duties, run by whichever process holds a lock in Redis.

Any process may run a :class:`Coordinator` (the standalone ``topicrawl coordinator``, and every
worker as a standby). Each round it tries to take or renew the lock (``SET NX PX`` with a
random token; renewed and released by compare-and-set scripts, so a holder that lost the lock
can never extend or delete another's). Only the holder does the round's duties; when it dies
its lock expires and the next process to try takes over. The state a round needs (the members
as of the last rebalance) lives in Redis, so a new holder carries on where the old one stopped.

A round:

1. puts back expired leases;
2. declares dead every alive node whose heartbeat key has expired, puts its leases back at
   once, and gives its hosts to the live nodes (to the shared pool if none is live);
3. when nodes joined since the last round, moves to them their share of hosts (see
   :func:`~topicrawl.distributed.partition.plan_moves`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError

from topicrawl.core.errors import FrontierError
from topicrawl.distributed.outcomes import SharedOutcomes
from topicrawl.distributed.partition import AssignmentPolicy, NodeLoad, plan_moves
from topicrawl.distributed.policies import SuccessTablePolicy, make_policy
from topicrawl.distributed.redis_frontier import RedisFrontier
from topicrawl.distributed.registry import NodeRegistry, NodeState, NodeStatus
from topicrawl.distributed.settings import DistributedSettings

__all__ = ["Coordinator", "CoordinatorLock", "RoundReport", "crawl_done", "node_loads", "serve"]

log = logging.getLogger(__name__)

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class CoordinatorLock:
    """A lock in Redis with a TTL, held under a random token.

    Args:
        client: an open Redis connection.
        key: the lock's key.
        ttl: seconds the lock lasts unless renewed.
        holder: a name for logs and for :meth:`holder` (e.g. the node id).
    """

    def __init__(self, client: Redis, *, key: str, ttl: float, holder: str) -> None:
        if not ttl > 0:
            raise ValueError(f"lock ttl must be > 0, got {ttl}")
        self._client = client
        self._key = key
        self._ttl_ms = max(1, round(ttl * 1000))
        self._token = f"{holder}/{secrets.token_hex(8)}"
        self.held = False

    async def acquire(self) -> bool:
        """Take the lock if it is free, or renew it if we hold it; True if we hold it now."""
        if self.held and await self.renew():
            return True
        taken = await self._client.set(self._key, self._token, nx=True, px=self._ttl_ms)
        self.held = bool(taken)
        return self.held

    async def renew(self) -> bool:
        """Extend our lock by its TTL; False (and not held) if it is no longer ours."""
        renewed = await self._client.eval(_RENEW, 1, self._key, self._token, str(self._ttl_ms))
        self.held = bool(renewed)
        return self.held

    async def release(self) -> bool:
        """Delete the lock if it is still ours."""
        released = await self._client.eval(_RELEASE, 1, self._key, self._token)
        self.held = False
        return bool(released)

    async def holder(self) -> str | None:
        """The token of whoever holds the lock now (``<holder>/<random>``), or None."""
        value = await self._client.get(self._key)
        if value is None:
            return None
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True, slots=True)
class RoundReport:
    """What one coordinator round did (``led`` False: another process holds the lock)."""

    led: bool
    expired_leases: int = 0
    dead: tuple[str, ...] = ()
    released_leases: int = 0
    joined: tuple[str, ...] = ()
    moved_hosts: int = 0


def node_loads(nodes: list[NodeStatus], hosts: dict[str, int]) -> list[NodeLoad]:
    """The policy's view of the live nodes."""
    return [
        NodeLoad(
            node=n.node,
            pages_per_second=n.pages_per_second,
            hosts=hosts.get(n.node, 0),
            errors=n.errors,
            concurrency=int(n.capacity.get("concurrency", 1) or 1),
            cpu_percent=n.cpu_percent,
            memory_bytes=n.memory_bytes,
            queue=n.queue,
            latency=n.latency,
        )
        for n in nodes
        if n.live
    ]


class Coordinator:
    """Runs the coordinator's rounds while it holds the lock (see the module docstring).

    Args:
        frontier: the crawl's frontier (open).
        registry: the crawl's node registry (open).
        policy: where hosts go.
        lock_ttl: seconds the lock lasts unless renewed (longer than a round).
        holder: this process's name, for the lock.
    """

    def __init__(
        self,
        *,
        frontier: RedisFrontier,
        registry: NodeRegistry,
        policy: AssignmentPolicy,
        lock_ttl: float,
        holder: str,
    ) -> None:
        self._frontier = frontier
        self._registry = registry
        self._policy = policy
        self._lock = CoordinatorLock(
            registry.client, key=registry.prefix + "coordinator", ttl=lock_ttl, holder=holder
        )
        self._members_key = registry.prefix + "assigned-members"

    @property
    def lock(self) -> CoordinatorLock:
        return self._lock

    async def round(self) -> RoundReport:
        """One round: take or renew the lock, then do the duties if we hold it.

        Raises:
            FrontierError: Redis failed (the lock may still be ours; the next round retries).
        """
        try:
            return await self._round()
        except RedisError as exc:
            raise FrontierError(f"coordinator round: {type(exc).__name__}: {exc}") from exc

    async def _round(self) -> RoundReport:
        if not await self._lock.acquire():
            return RoundReport(led=False)
        expired = await self._frontier.reclaim_expired()
        dead: list[str] = []
        released = 0
        nodes = await self._registry.nodes()
        for node in nodes:
            if (
                node.state is NodeState.ALIVE
                and node.late
                and await self._registry.mark_dead(node.node)
            ):
                dead.append(node.node)
                released += await self._frontier.release_node(node.node)
                log.warning("node %s missed its heartbeat: declared dead", node.node)
        # Declaring and releasing are two steps: a coordinator that died between them left a
        # dead node's leases out. Whoever leads next puts them back now, not at lease expiry.
        earlier = [n.node for n in nodes if n.state is NodeState.DEAD and n.node not in dead]
        if earlier:
            for node_id, count in (await self._frontier.lease_counts(earlier)).items():
                if count:
                    released += await self._frontier.release_node(node_id)
                    log.warning("dead node %s still held %d leases: put back", node_id, count)
        joined, moved = await self.rebalance()
        return RoundReport(
            led=True,
            expired_leases=expired,
            dead=tuple(dead),
            released_leases=released,
            joined=joined,
            moved_hosts=moved,
        )

    async def rebalance(self) -> tuple[tuple[str, ...], int]:
        """Move hosts off nodes no longer live, and give newcomers their share.

        Returns the nodes that joined since the last rebalance and how many hosts moved.
        """
        nodes = await self._registry.nodes()
        live = [n for n in nodes if n.live]
        previous = {_text(m) for m in await self._registry.client.smembers(self._members_key)}
        current = {n.node for n in live}
        joined = tuple(sorted(current - previous))
        gone = [n.node for n in nodes if not n.live]
        stranded = await self._frontier.host_counts(gone) if gone else {}
        if not joined and not any(stranded.values()) and previous == current:
            return joined, 0
        counts = await self._frontier.host_counts(sorted(current))
        moves = plan_moves(
            await self._frontier.owners(),
            node_loads(live, counts),
            self._policy,
            joined=joined,
        )
        moved = await self._frontier.assign_hosts(moves) if moves else 0
        async with self._registry.client.pipeline(transaction=True) as pipe:
            pipe.delete(self._members_key)
            if current:
                pipe.sadd(self._members_key, *sorted(current))
            await pipe.execute()
        if moved:
            log.info("moved %d hosts (joined: %s)", moved, ", ".join(joined) or "none")
        return joined, moved

    async def release_departed(self, node: str) -> int:
        """A node that stopped on its own: put back its leases and hand out its hosts.

        Raises:
            FrontierError: Redis failed.
        """
        try:
            released = await self._frontier.release_node(node)
            await self.rebalance()
        except RedisError as exc:
            raise FrontierError(f"releasing {node}: {type(exc).__name__}: {exc}") from exc
        return released

    async def run(self, stop: asyncio.Event, *, interval: float) -> None:
        """Run rounds every ``interval`` seconds until ``stop`` is set, then release the lock.

        A failed round (Redis away) is logged and retried next time.
        """
        try:
            while not stop.is_set():
                try:
                    report = await self.round()
                except FrontierError as exc:
                    log.warning("coordinator round failed: %s", exc)
                else:
                    if report.dead or report.moved_hosts or report.expired_leases:
                        log.info("coordinator round: %s", report)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), interval)
        finally:
            if self._lock.held:
                try:
                    await self._lock.release()
                except RedisError as exc:
                    log.warning("could not release the coordinator lock: %s", exc)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


async def crawl_done(frontier: RedisFrontier, registry: NodeRegistry) -> bool:
    """Whether the crawl has started and is over: nothing queued or in flight, no live node.

    Started means its storage run exists and a node has registered: the first worker starts
    the run before it registers and seeds the frontier, and in between the crawl looks over.
    """
    started = await registry.client.hexists(registry.prefix + "meta", "run_id")
    if not started or await frontier.queued() or await frontier.in_flight():
        return False
    nodes = await registry.nodes()
    return bool(nodes) and not any(node.live for node in nodes)


async def serve(
    distributed: DistributedSettings,
    *,
    holder: str,
    stop: asyncio.Event,
    exit_when_done: bool = False,
    policy: AssignmentPolicy | None = None,
) -> None:
    """Run the coordinator's rounds standalone until ``stop`` (or the crawl is done).

    Hosts are placed by ``policy``, by default the one ``distributed.assignment`` names (the
    workers' default: the success table, which reads what the workers learnt from Redis).

    Raises:
        FrontierError: Redis is unreachable at start.
    """
    registry = NodeRegistry(
        distributed.redis_url,
        namespace=distributed.namespace,
        heartbeat_timeout=distributed.heartbeat_timeout,
    )
    frontier = RedisFrontier(
        distributed.redis_url,
        namespace=distributed.namespace,
        observer=True,
        retry_for=distributed.redis_retry_for,
    )
    policy = policy or make_policy(
        distributed.assignment,
        min_weight=distributed.min_weight,
        model=distributed.assignment_model,
    )
    async with registry, frontier:
        coordinator = Coordinator(
            frontier=frontier,
            registry=registry,
            policy=policy,
            lock_ttl=distributed.lock_ttl,
            holder=holder,
        )
        learning = None
        if isinstance(policy, SuccessTablePolicy):  # what the workers learnt, read each round
            shared = SharedOutcomes(
                registry.client, prefix=registry.prefix, node=holder, table=policy
            )
            await shared.sync()  # before the first round places anything
            learning = asyncio.create_task(shared.run(stop, interval=distributed.round_interval))
        rounds = asyncio.create_task(coordinator.run(stop, interval=distributed.round_interval))
        try:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), distributed.round_interval)
                if exit_when_done:
                    try:
                        if await crawl_done(frontier, registry):
                            log.info("the crawl is done")
                            stop.set()
                    except (RedisError, FrontierError) as exc:
                        log.warning("could not check whether the crawl is done: %s", exc)
        finally:
            stop.set()
            await rounds
            if learning is not None:
                await learning
