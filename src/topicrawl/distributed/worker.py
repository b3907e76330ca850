"""A worker of a distributed crawl: the engine's crawler on the shared Redis frontier.

A worker applies the configuration stored for it, joins its namespace (the crawl's agreed
settings, seeds, scope and page budget in Redis: see :mod:`topicrawl.distributed.namespace`),
joins the crawl's storage run (the first worker starts it), registers in the crawl's node
registry, crawls the hosts it holds (and takes ready hosts from busy nodes when idle),
heartbeats with its throughput, error count, queue and processing latency, tells its
assignment policy how each fetch went (and hands on a host that refuses it when the policy
says so: see :mod:`topicrawl.distributed.feedback`; under the success table it shares what it
learnt with the other nodes and starts from theirs: :mod:`topicrawl.distributed.outcomes`),
and runs the coordinator's duties whenever it holds the coordinator lock (so any worker is a
standby coordinator). It stops when the crawl is done: nothing queued and nothing in flight on
any worker. On the way out it records that it left, puts back any lease it still holds, and
hands its hosts to the live nodes.

A Redis outage up to ``redis_retry_for`` seconds is ridden out by retrying every frontier
operation; a database connection that drops is retried by the storage (``storage_retries``).
A leased URL is never lost: a worker that dies or is cut off loses its leases to the
coordinator (at once when its heartbeat expires) or to the lease expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.core.models import CrawlStats
from topicrawl.core.tasks import cancel_and_wait
from topicrawl.distributed.coordinator import Coordinator, node_loads
from topicrawl.distributed.feedback import FetchFeedback, HostAssigner
from topicrawl.distributed.namespace import Namespace, ScopedFrontier, SharedScope
from topicrawl.distributed.outcomes import SharedOutcomes
from topicrawl.distributed.partition import AssignmentPolicy
from topicrawl.distributed.policies import SuccessTablePolicy, make_policy
from topicrawl.distributed.progress import WorkerProgress, report_progress
from topicrawl.distributed.redis_frontier import RedisFrontier
from topicrawl.distributed.registry import (
    Heartbeat,
    NodeInfo,
    NodeRegistry,
    ThroughputMeter,
    local_node_id,
)
from topicrawl.distributed.runstats import RunTotals, node_numbers, write_run_stats
from topicrawl.distributed.settings import DistributedSettings
from topicrawl.distributed.usage import ProcessUsage
from topicrawl.engine.build import open_crawl
from topicrawl.engine.crawl import Crawler
from topicrawl.storage import SqlStorage

__all__ = [
    "HostAssigner",
    "WorkerReport",
    "check_timing",
    "merge_config",
    "redis_pool_size",
    "request_ttl",
    "run_worker",
]

log = logging.getLogger(__name__)

ProgressFn = Callable[[CrawlStats], None]
ProgressLineFn = Callable[[WorkerProgress], None]

_SETUP_WAIT = 60.0  # seconds a worker waits for another to start the storage run
_POP_GATE = 0.05  # seconds an idle worker leaves Redis alone after an empty pop (see PopGate)


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """What a worker did: its node id, its own stats, the run, what is left queued, the
    crawl's page limit (0: none), whether the crawl reached it, and its render stage's counts
    (empty with ``render`` never)."""

    node: str
    stats: CrawlStats
    pages: int
    run_id: int
    queued_left: int
    max_pages: int = 0
    limit_reached: bool = False
    render: Mapping[str, int] = field(default_factory=dict)


def request_ttl(settings: CrawlSettings) -> float:
    """Seconds a request may take at most: its robots.txt, every try, the waits between, and
    some slack. A request slot in Redis lasts this long unless given back sooner."""
    fetch = settings.fetch
    tries = fetch.retries + 1
    return (tries + 1) * fetch.timeout + fetch.retries * fetch.backoff_max + 5.0


def check_timing(settings: CrawlSettings, distributed: DistributedSettings) -> None:
    """Refuse a lease TTL that does not outlast the heartbeat timeout.

    A dead worker's leases come back when the coordinator finds it dead (``heartbeat_timeout``)
    or, with no coordinator running, when they expire (``frontier.lease_ttl``). A lease that
    expires first was held by a live worker that is slow to store: its URL would be fetched
    twice.

    Raises:
        ConfigError: ``lease_ttl`` is not longer than ``heartbeat_timeout``.
    """
    if settings.frontier.lease_ttl <= distributed.heartbeat_timeout:
        raise ConfigError(
            f"frontier.lease_ttl ({settings.frontier.lease_ttl:g} s) must be longer than "
            f"heartbeat_timeout ({distributed.heartbeat_timeout:g} s): a live worker's leases "
            "would expire before a dead worker's are taken back"
        )


def redis_pool_size(settings: CrawlSettings) -> int:
    """Redis connections a worker may open: one per page it works on at once (each may wait
    on Redis), and some for its checkpoints, heartbeats and coordinator duties; callers past
    it wait for a connection instead of failing with "Too many connections"."""
    in_hand = max(settings.pages_in_hand, 3 * settings.concurrency)
    return in_hand + 16


def merge_config(settings: CrawlSettings, config: Mapping[str, Any]) -> CrawlSettings:
    """The settings with a node's stored configuration laid over them (sections merged).

    Raises:
        ConfigError: the result is not valid settings.
    """
    if not config:
        return settings
    merged = settings.model_dump()
    for key, value in config.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    try:
        return CrawlSettings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(f"the configuration stored for this node is invalid: {exc}") from exc


async def run_worker(
    settings: CrawlSettings,
    distributed: DistributedSettings,
    *,
    node_id: str | None = None,
    policy: AssignmentPolicy | None = None,
    on_progress: ProgressFn | None = None,
    on_start: Callable[[Crawler], None] | None = None,
    on_line: ProgressLineFn | None = None,
    line_every: float = 10.0,
    metrics_port: int | None = None,
) -> WorkerReport:
    """Run one worker until the crawl is done (or it is stopped through ``on_start``'s crawler).

    The worker joins its namespace first (see :mod:`topicrawl.distributed.namespace`): it
    creates it from ``settings`` or crawls with the namespace's settings, refused when a
    setting it was given differs. A start that fails leaves no key behind in a namespace it
    created. ``on_line`` is given the worker's progress every ``line_every`` seconds.
    ``metrics_port`` serves the worker's Prometheus metrics on 127.0.0.1 (labelled with the
    node id); its live samples carry the node id too.

    Raises:
        FrontierError: Redis is unreachable (at start, or longer than ``redis_retry_for``).
        StorageError: the database is unreachable or failed past its retries.
        ConfigError: bad settings, or a stored node configuration that is invalid.
    """
    node = node_id or local_node_id()
    policy = policy or make_policy(
        distributed.assignment,
        min_weight=distributed.min_weight,
        model=distributed.assignment_model,
    )
    registry = NodeRegistry(
        distributed.redis_url,
        namespace=distributed.namespace,
        heartbeat_timeout=distributed.heartbeat_timeout,
    )
    async with registry:
        settings = merge_config(settings, await registry.config_for(node))
        namespace = Namespace(
            registry.client,
            prefix=registry.prefix,
            name=registry.namespace,
            retry_for=distributed.redis_retry_for,
        )
        settings, created = await namespace.join(settings)
        try:
            return await _start(
                settings,
                distributed,
                node=node,
                policy=policy,
                registry=registry,
                namespace=namespace,
                hooks=_Hooks(on_progress, on_start, on_line, line_every),
                metrics_port=metrics_port,
            )
        except BaseException:
            if created:
                await _undo_creation(namespace, registry, node)
            raise


@dataclass(frozen=True, slots=True)
class _Hooks:
    """What the caller of :func:`run_worker` hears: each page, the start, progress lines."""

    on_progress: ProgressFn | None
    on_start: Callable[[Crawler], None] | None
    on_line: ProgressLineFn | None
    line_every: float


async def _undo_creation(namespace: Namespace, registry: NodeRegistry, node: str) -> None:
    """Delete the namespace this worker created when its start failed before another node
    joined and before a page was stored (a failed start leaves nothing behind)."""
    try:
        others = [n for n in await registry.nodes() if n.node != node]
        if not others and not (await namespace.state()).reserved:
            await namespace.delete()
    except FrontierError as exc:
        log.warning("could not remove the namespace this failed start created: %s", exc)


async def _start(
    settings: CrawlSettings,
    distributed: DistributedSettings,
    *,
    node: str,
    policy: AssignmentPolicy,
    registry: NodeRegistry,
    namespace: Namespace,
    hooks: _Hooks,
    metrics_port: int | None,
) -> WorkerReport:
    check_timing(settings, distributed)
    assigner = HostAssigner(policy)
    shared = _shared_outcomes(policy, registry, node, assigner)
    if shared is not None:
        await shared.sync()  # start from what the other nodes learnt
    frontier = ScopedFrontier(
        distributed.redis_url,
        namespace=distributed.namespace,
        default_delay=settings.politeness.delay,
        max_per_host=settings.politeness.per_host,
        lease_ttl=settings.frontier.lease_ttl,
        request_ttl=request_ttl(settings),
        bloom_capacity=settings.frontier.bloom_capacity,
        bloom_error_rate=settings.frontier.bloom_error_rate,
        exact=distributed.exact_dedupe,
        node=node,
        propose_owner=assigner.propose,
        steal_min=distributed.steal_min,
        share=distributed.share_hosts,
        retry_for=distributed.redis_retry_for,
        defer_acks=True,
        pop_gate=_POP_GATE,
        max_connections=redis_pool_size(settings),
    )
    async with frontier:
        run_id = await _join_run(registry, settings)
        info = NodeInfo(
            node=node,
            machine=socket.gethostname(),
            pid=os.getpid(),
            params={
                "strategy": settings.strategy,
                "concurrency": settings.concurrency,
                "per_host": settings.politeness.per_host,
                "delay": settings.politeness.delay,
                "run_id": run_id,
            },
            capacity={"concurrency": settings.concurrency, "cpus": os.cpu_count() or 1},
        )
        coordinator = Coordinator(
            frontier=frontier,
            registry=registry,
            policy=policy,
            lock_ttl=distributed.lock_ttl,
            holder=node,
        )
        await registry.register(info)
        try:
            assigner.update(node_loads(await registry.live(), {}))
            node_crawl = _NodeCrawl(
                settings=settings,
                distributed=distributed,
                registry=registry,
                frontier=frontier,
                coordinator=coordinator,
                assigner=assigner,
                info=info,
                run_id=run_id,
                namespace=namespace,
                metrics_port=metrics_port,  # obs: dashboard metrics (issue 19)
                shared=shared,
            )
            return await node_crawl.run(hooks)
        finally:
            await _leave(registry, coordinator, node)


@dataclass(frozen=True, slots=True, kw_only=True)
class _NodeCrawl:
    """The crawl of one registered node, with its heartbeats and standby coordinator."""

    settings: CrawlSettings
    distributed: DistributedSettings
    registry: NodeRegistry
    frontier: ScopedFrontier
    coordinator: Coordinator
    assigner: HostAssigner
    info: NodeInfo
    run_id: int
    namespace: Namespace
    metrics_port: int | None = None  # obs: issue 19
    shared: SharedOutcomes | None = None

    async def run(self, hooks: _Hooks) -> WorkerReport:
        pages = _PageCounter(hooks.on_progress, self.frontier)
        feedback = FetchFeedback(
            node=self.info.node,
            assigner=self.assigner,
            frontier=self.frontier,
            shared=self.shared,
        )
        async with open_crawl(
            self.settings,
            on_progress=pages,
            frontier=self.frontier,
            run_id=self.run_id,
            storage_retries=self.distributed.storage_retries,
            node=self.info.node,  # obs: live samples and metrics per node (issue 19)
            metrics_port=self.metrics_port,
            page_budget=self.frontier,
            on_fetch=feedback,
        ) as crawler:
            if hooks.on_start is not None:
                hooks.on_start(crawler)
            scope = SharedScope(
                self.namespace,
                crawler.scope,
                fixed=bool(self.settings.scope.allowed_domains),
            )
            self.frontier.shared_scope = scope
            await self.namespace.start_budget(await crawler.storage.count_pages())
            stop = asyncio.Event()
            beats = _Heartbeats(
                registry=self.registry,
                frontier=self.frontier,
                assigner=self.assigner,
                info=self.info,
                pages=pages,
                crawler=crawler,
                feedback=feedback,
                window=self.distributed.throughput_window,
                scope=scope,
                totals=RunTotals(self.registry.client, self.registry.prefix),
            )
            interval = self.distributed.heartbeat_interval
            async with asyncio.TaskGroup() as group:
                group.create_task(beats.run(stop, interval=interval))
                group.create_task(feedback.run(stop))
                if self.shared is not None:
                    group.create_task(self.shared.run(stop, interval=interval))
                # Cancelled when the crawl ends: a listener must never hold up the worker's end.
                follower = group.create_task(scope.follow(stop))
                group.create_task(
                    self.coordinator.run(stop, interval=self.distributed.round_interval)
                )
                if hooks.on_line is not None and hooks.line_every > 0:
                    group.create_task(
                        report_progress(
                            stop=stop,
                            every=hooks.line_every,
                            read=lambda: self._progress(pages, crawler),
                            show=hooks.on_line,
                        )
                    )
                try:
                    stats = await crawler.run()
                finally:
                    stop.set()
                    await cancel_and_wait(follower)
            left = await self.frontier.queued()
            await beats.last()
            await write_run_stats(crawler.storage, self.registry, beats.totals, self.run_id)
            state = await self.namespace.state()
        return WorkerReport(
            node=self.info.node,
            stats=stats,
            pages=pages.count,
            run_id=self.run_id,
            queued_left=left,
            max_pages=state.max_pages,
            limit_reached=crawler.limit_reached or await self.namespace.limit_reached(),
            render=dict(crawler.render_counts),
        )

    async def _progress(self, pages: _PageCounter, crawler: Crawler) -> WorkerProgress:
        state = await self.namespace.state()
        return WorkerProgress(
            node=self.info.node,
            pages=pages.count,
            errors=crawler.stats.error_count,
            crawl_pages=state.reserved,
            max_pages=state.max_pages,
            queued=await self.frontier.queued(),
            in_flight=await self.frontier.in_flight(),
        )


class _PageCounter:
    """Counts the pages this worker stored (the crawler's own count starts from the
    database's total): its reservations in the namespace's page budget that were not lost
    (:attr:`RedisFrontier.pages_here`; progress is also reported when held hosts change, so a
    report is not a page); and passes progress on."""

    def __init__(self, then: ProgressFn | None, frontier: RedisFrontier) -> None:
        self._then = then
        self._frontier = frontier

    @property
    def count(self) -> int:
        return self._frontier.pages_here

    def __call__(self, stats: CrawlStats) -> None:
        if self._then is not None:
            self._then(stats)


@dataclass(slots=True, kw_only=True)
class _Heartbeats:
    registry: NodeRegistry
    frontier: RedisFrontier
    assigner: HostAssigner
    info: NodeInfo
    pages: _PageCounter
    crawler: Crawler
    feedback: FetchFeedback
    window: float
    scope: SharedScope
    totals: RunTotals
    faults: int = 0
    usage: ProcessUsage = field(default_factory=ProcessUsage)

    async def run(self, stop: asyncio.Event, *, interval: float) -> None:
        meter = ThroughputMeter(self.window)
        while not stop.is_set():
            meter.add(time.monotonic(), self.pages.count)
            try:
                await self._beat(meter.rate())
            except FrontierError as exc:
                self.faults += 1
                log.warning("heartbeat failed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    async def last(self) -> None:
        """The final heartbeat: this node's numbers as it stops (shown once it has left)."""
        try:
            await self._beat(None)
        except FrontierError as exc:
            log.warning("final heartbeat failed (nodes shows this node's earlier numbers): %s", exc)

    async def _beat(self, rate: float | None) -> None:
        numbers = node_numbers(self.crawler.stats, self.pages.count)
        cpu, rss = self.usage.sample()
        beat = Heartbeat(
            pages=numbers["pages"],
            pages_per_second=rate,
            errors=numbers["errors"] + self.faults,
            excluded=numbers["robots_excluded"],
            cpu_percent=cpu,
            memory_bytes=rss,
            queue=self.crawler.leases_in_hand,
            latency=self.feedback.latency,
        )
        # The crawl's totals first: what they gained counts even if this node is found dead.
        await self.totals.add(numbers)
        if not await self.registry.heartbeat(self.info.node, beat):
            # Declared dead while we were away: our leases and hosts went to others.
            log.warning("node %s was declared dead; registering again", self.info.node)
            await self.registry.register(self.info)
        live = await self.registry.live()
        self.frontier.peers = any(n.node != self.info.node for n in live)
        counts = await self.frontier.host_counts([n.node for n in live])
        self.assigner.update(node_loads(live, counts))
        await self.scope.refresh()


def _shared_outcomes(
    policy: AssignmentPolicy, registry: NodeRegistry, node: str, assigner: HostAssigner
) -> SharedOutcomes | None:
    """The success table's sharing through Redis (None for a policy without a table)."""
    if not isinstance(policy, SuccessTablePolicy):
        return None
    return SharedOutcomes(
        registry.client,
        prefix=registry.prefix,
        node=node,
        table=policy,
        on_learnt=assigner.forget_all,
    )


async def _join_run(registry: NodeRegistry, settings: CrawlSettings) -> int:
    """The storage run of this crawl: the first worker starts it, the others read its id."""
    client = registry.client
    meta = registry.prefix + "meta"
    setup = registry.prefix + "setup"
    deadline = time.monotonic() + _SETUP_WAIT
    while True:
        stored = await client.hget(meta, "run_id")
        if stored is not None:
            return int(stored)
        if await client.set(setup, str(os.getpid()), nx=True, px=30_000):
            try:
                async with SqlStorage(settings.storage.url) as storage:
                    run_id = await storage.start_run(
                        name=settings.strategy,
                        config=settings.model_dump_json(exclude={"seeds"}),
                    )
                await client.hset(meta, "run_id", str(run_id))
                return run_id
            finally:
                await client.delete(setup)
        if time.monotonic() > deadline:
            raise FrontierError("no worker finished starting the crawl's storage run in time")
        await asyncio.sleep(0.1)


async def _leave(registry: NodeRegistry, coordinator: Coordinator, node: str) -> None:
    try:
        await registry.leave(node)
        await coordinator.release_departed(node)
    except FrontierError as exc:
        log.warning("could not hand back this node's work on leaving: %s", exc)
