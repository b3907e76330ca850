"""``topicrawl worker``, ``topicrawl coordinator`` and ``topicrawl nodes``: distributed mode.

Exit codes as for ``crawl``: 2 bad settings (a worker's that differ from its namespace's
among them), 3 the namespace does not exist, 4 Redis or the database unreachable or failed,
130 interrupted by Ctrl-C (143 by SIGTERM).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.live import Live
from rich.table import Table
from rich.text import Text

from topicrawl.cli.common import (
    EXIT_CONFIG,
    EXIT_MISSING,
    dump_tasks_on_sigusr1,
    err,
    fail,
    out,
    run,
    seeds_or_exit,
    setup_logging,
)
from topicrawl.cli.options import (
    AllowDomainOption,
    ConfigOption,
    DelayOption,
    ExcludeOption,
    IgnoreRobotsOption,
    IncludeOption,
    LeaseTtlOption,
    MaxDepthOption,
    MetricsPortOption,
    PerHostOption,
    RenderOption,
    SeedOption,
    SeedsFileOption,
    StrategyOption,
    TopicOption,
    crawl_overrides,
    put,
)
from topicrawl.cli.progress import render_line
from topicrawl.core.config import CrawlSettings, load_settings
from topicrawl.core.errors import ConfigError

if TYPE_CHECKING:
    from topicrawl.distributed.progress import WorkerProgress
    from topicrawl.distributed.registry import NodeStatus
    from topicrawl.distributed.settings import DistributedSettings
    from topicrawl.distributed.worker import WorkerReport
    from topicrawl.engine.crawl import Crawler

__all__ = ["coordinator", "nodes", "nodes_table", "worker", "worker_settings"]

RedisOption = Annotated[
    str | None,
    typer.Option("--redis", help="Redis URL (env TOPICRAWL_DISTRIBUTED__REDIS_URL)."),
]
NamespaceOption = Annotated[
    str | None, typer.Option(help="The crawl's name in Redis (default 'default').")
]
HeartbeatOption = Annotated[
    float | None, typer.Option(help="Seconds between heartbeats (default 5).")
]
TimeoutOption = Annotated[
    float | None, typer.Option(help="Seconds without heartbeat before a node is dead (15).")
]
LockOption = Annotated[
    float | None,
    typer.Option(help="Coordinator lock TTL in seconds (5; at most the heartbeat timeout)."),
]

AssignmentOption = Annotated[
    str | None,
    typer.Option(
        help="Where new hosts go: success-table (default: two choices by expected delay, "
        "avoiding nodes a host refused), rendezvous (throughput-weighted), "
        "rendezvous-plain, hash, bounded, least-loaded, sed, two-choices, "
        "dqn (needs the learn extra and --assignment-model)."
    ),
]
AssignmentModelOption = Annotated[
    str | None, typer.Option(help="The dqn policy's trained model file.")
]


def _distributed(**overrides: object) -> DistributedSettings:
    from topicrawl.distributed.settings import load_distributed  # noqa: PLC0415 - slow import

    return load_distributed(**overrides)


def _stop_on_signals(
    stop: Callable[[], None],
    message: str | None = None,
    *,
    stopped_by: list[signal.Signals] | None = None,
    grace: float | None = None,
) -> None:
    """Stop on the first SIGINT or SIGTERM (each recorded in ``stopped_by``), cancel every
    task on the second.

    With ``grace``, the first signal also bounds the stop: every task is cancelled after
    ``grace`` seconds (as by a second signal), and the process exits after ``grace`` more,
    whatever it still waits for (a write to a database that does not answer, say). Nothing
    is lost either way: a URL is acked only once its page is durably stored, and the leases
    of a worker that went away go back to the crawl."""
    loop = asyncio.get_running_loop()
    interrupts: list[signal.Signals] = [] if stopped_by is None else stopped_by

    def cancel_all() -> None:
        for task in asyncio.all_tasks(loop):
            task.cancel()

    def quit_now(sig: signal.Signals) -> None:
        err.print(f"still stopping after {grace:g} s: quitting the pages in flight")
        cancel_all()
        loop.call_later(grace or 0.0, exit_now, sig)

    def exit_now(sig: signal.Signals) -> None:
        err.print(f"still stopping after {2 * (grace or 0.0):g} s: exiting (leases go back)")
        sys.stderr.flush()
        os._exit(128 + sig.value)

    def on_signal(sig: signal.Signals) -> None:
        interrupts.append(sig)
        if len(interrupts) == 1:
            if message:
                err.print(message)
            stop()
            if grace is not None:
                loop.call_later(grace, quit_now, sig)
        else:
            cancel_all()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    dump_tasks_on_sigusr1()


def worker(  # noqa: PLR0917 - typer maps each option to a parameter
    redis: RedisOption = None,
    db: Annotated[
        str | None, typer.Option(help="postgresql:// URL of the crawl's database.")
    ] = None,
    namespace: NamespaceOption = None,
    node_id: Annotated[str | None, typer.Option(help="Node id (default host-machine-pid).")] = None,
    seed: SeedOption = None,
    seeds_file: SeedsFileOption = None,
    topic: TopicOption = None,
    strategy: StrategyOption = None,
    max_pages: Annotated[
        int | None,
        typer.Option(
            help="Stop the crawl at N stored pages, all workers together (default 0: no"
            " limit; a namespace's limit is changed with crawl-ns set --max-pages)."
        ),
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight.")] = None,
    per_host: PerHostOption = None,
    delay: DelayOption = None,
    max_depth: MaxDepthOption = None,
    allow_domain: AllowDomainOption = None,
    include: IncludeOption = None,
    exclude: ExcludeOption = None,
    ignore_robots: IgnoreRobotsOption = False,
    lease_ttl: LeaseTtlOption = None,
    heartbeat_interval: HeartbeatOption = None,
    heartbeat_timeout: TimeoutOption = None,
    lock_ttl: LockOption = None,
    throughput_window: Annotated[
        float | None, typer.Option(help="Seconds over which pages/s is measured (60).")
    ] = None,
    exact_dedupe: Annotated[
        bool | None, typer.Option(help="Exact URL set in Redis instead of a Bloom filter.")
    ] = None,
    assignment: AssignmentOption = None,
    assignment_model: AssignmentModelOption = None,
    config: ConfigOption = None,
    progress_every: Annotated[
        float, typer.Option(help="Seconds between progress lines (0: none).")
    ] = 10.0,
    quiet: Annotated[bool, typer.Option(help="No progress lines, no summary line.")] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "warning",
    metrics_port: MetricsPortOption = None,  # obs: issue 19
    parsers: Annotated[
        Path | None,
        typer.Option(
            help="TOML file of site schemas: extract records (give every worker the same file;"
            " what the library learns is shared through the database)."
        ),
    ] = None,
    render: RenderOption = None,
) -> None:
    """Crawl as one worker of a distributed crawl (Redis frontier, PostgreSQL results).

    The first worker of a namespace stores the crawl's settings and seeds in Redis; a worker
    joining takes them from there (its seeds are added), and is refused if a setting it was
    given differs. Concurrency, parse workers, timeouts and the database URL stay its own.
    """
    setup_logging(log_level)
    seeds = seeds_or_exit(seed, seeds_file)
    kwargs = crawl_overrides(locals(), seeds=seeds)
    put(kwargs, "frontier", {"lease_ttl": lease_ttl} if lease_ttl else None)
    put(kwargs, "parsers", str(parsers) if parsers is not None else None)
    dist = {
        "redis_url": redis,
        "namespace": namespace,
        "heartbeat_interval": heartbeat_interval,
        "heartbeat_timeout": heartbeat_timeout,
        "lock_ttl": lock_ttl,
        "throughput_window": throughput_window,
        "exact_dedupe": exact_dedupe,
        "assignment": assignment,
        "assignment_model": assignment_model,
    }
    every = 0.0 if quiet else progress_every
    if not every >= 0 or every == float("inf"):
        err.print(Text("error: --progress-every must be a finite number >= 0", style="red"))
        raise typer.Exit(EXIT_CONFIG)
    stopped_by: list[signal.Signals] = []
    try:
        report = run(lambda: _work(kwargs, config, dist, node_id, every, stopped_by, metrics_port))
    except (asyncio.CancelledError, KeyboardInterrupt):
        if not stopped_by:
            raise
        # A second Ctrl-C: the pages in flight were not stored; their leases go back.
        err.print(f"interrupted by {stopped_by[0].name}: start the worker again to rejoin")
        raise typer.Exit(128 + stopped_by[0].value) from None
    if not quiet:
        stats = report.stats
        out.print(
            Text(
                f"worker {report.node}: {report.pages} pages, {stats.error_count} errors, "
                f"run {report.run_id}, {report.queued_left} left queued"
            )
        )
        if report.render:
            out.print(Text(render_line(report.render)), soft_wrap=True)
    if report.limit_reached:
        name = namespace or "default"
        err.print(
            Text(
                f"the crawl reached its page limit: max_pages {report.max_pages} pages stored by"
                f" all workers, {report.queued_left} URLs left queued. To go on, raise it with"
                f" `topicrawl crawl-ns set --namespace {name} --max-pages N` (0: no limit) and"
                " start the workers again",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if stopped_by:
        err.print(f"interrupted by {stopped_by[0].name}: start the worker again to rejoin")
        raise typer.Exit(128 + stopped_by[0].value)


async def _work(  # noqa: PLR0917 - the worker command's parts
    kwargs: dict[str, Any],
    config: Path | None,
    dist: dict[str, Any],
    node_id: str | None,
    every: float,
    stopped_by: list[signal.Signals],
    metrics_port: int | None = None,  # obs: issue 19
) -> WorkerReport:
    from topicrawl.distributed.worker import run_worker  # noqa: PLC0415 - slow import

    settings = worker_settings(config, kwargs)
    if not settings.storage.url.startswith(("postgresql:", "postgresql+", "postgres:")):
        raise ConfigError("a worker needs --db postgresql://... (shared by every worker)")
    distributed = _distributed(**dist)
    return await run_worker(
        settings,
        distributed,
        node_id=node_id,
        on_start=lambda crawler: _on_worker_start(crawler, stopped_by, distributed.stop_grace),
        on_line=_show_progress,
        line_every=every,
        metrics_port=metrics_port,  # obs: issue 19
    )


def _show_progress(progress: WorkerProgress) -> None:
    from topicrawl.distributed.progress import progress_line  # noqa: PLC0415

    err.print(Text(progress_line(progress)), soft_wrap=True)


def worker_settings(config: Path | None, overrides: dict[str, Any]) -> CrawlSettings:
    """A worker's crawl settings: as ``crawl``'s, but with no page limit unless one is given
    (option, environment or file). A worker is one of many on a shared crawl: the single
    process default of 1,000 pages would stop every worker at a limit nobody asked for.

    Raises:
        ConfigError: the settings are invalid.
    """
    settings = load_settings(config, **overrides)
    if "max_pages" not in settings.model_fields_set:
        settings = settings.model_copy(update={"max_pages": 0})
        # Still not given: a namespace's stored limit wins over it (see namespace.given_part).
        settings.model_fields_set.discard("max_pages")
    return settings


def _on_worker_start(crawler: Crawler, stopped_by: list[signal.Signals], grace: float) -> None:
    from topicrawl.engine.heap import settle_heap  # noqa: PLC0415

    settle_heap()
    _stop_on_signals(
        crawler.stop,
        "stopping: finishing pages in flight (Ctrl-C again to quit now)",
        stopped_by=stopped_by,
        grace=grace,
    )


def coordinator(  # noqa: PLR0917 - typer maps each option to a parameter
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    heartbeat_interval: HeartbeatOption = None,
    heartbeat_timeout: TimeoutOption = None,
    lock_ttl: LockOption = None,
    interval: Annotated[
        float | None, typer.Option(help="Seconds between rounds (default min(heartbeat, ttl/3)).")
    ] = None,
    exit_when_done: Annotated[
        bool, typer.Option(help="Exit once the crawl is over (nothing queued, no live node).")
    ] = False,
    wait_for_namespace: Annotated[
        float,
        typer.Option(
            help="Seconds to wait for the namespace to be created (by a first worker or"
            " crawl-ns create) before giving up with exit 3 (default 0: it must exist)."
        ),
    ] = 0.0,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "info",
    assignment: AssignmentOption = None,
    assignment_model: AssignmentModelOption = None,
) -> None:
    """Run the coordinator's duties (dead nodes, rebalancing); a standby takes over if it dies.

    It places the hosts it moves by the workers' assignment policy (give it the same
    --assignment as the workers)."""
    setup_logging(log_level)
    overrides = {
        "redis_url": redis,
        "namespace": namespace,
        "heartbeat_interval": heartbeat_interval,
        "heartbeat_timeout": heartbeat_timeout,
        "lock_ttl": lock_ttl,
        "coordinator_interval": interval,
        "assignment": assignment,
        "assignment_model": assignment_model,
    }
    if not (0 <= wait_for_namespace < float("inf")):
        fail(ConfigError("--wait-for-namespace must be a finite number >= 0"))
    run(lambda: _coordinate(overrides, exit_when_done, wait_for_namespace))


async def _coordinate(overrides: dict[str, Any], exit_when_done: bool, wait: float) -> None:
    from topicrawl.distributed.coordinator import serve  # noqa: PLC0415
    from topicrawl.distributed.registry import local_node_id  # noqa: PLC0415

    distributed = _distributed(**overrides)
    stop = asyncio.Event()
    _stop_on_signals(stop.set)
    await require_namespace(distributed, wait=wait, stop=stop)
    if stop.is_set():
        return
    await serve(
        distributed,
        holder=f"coordinator-{local_node_id()}",
        stop=stop,
        exit_when_done=exit_when_done,
    )


def nodes(
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    watch: Annotated[bool, typer.Option(help="Refresh the table until Ctrl-C.")] = False,
    every: Annotated[float, typer.Option(help="Seconds between refreshes.")] = 2.0,
    set_config: Annotated[
        list[str] | None,
        typer.Option(
            "--set-config",
            help="NODE=JSON: crawl settings handed to NODE when it starts ('*': every node).",
        ),
    ] = None,
) -> None:
    """Show the crawl's nodes: id, state, last heartbeat, pages/s, hosts held, errors."""
    setup_logging("warning")
    overrides = {"redis_url": redis, "namespace": namespace}
    if not every < float("inf"):  # NaN and inf; below 0.1 s it refreshes every 0.1 s
        fail(ConfigError("--every must be a finite number of seconds"))
    try:
        configs = _node_configs(set_config or [])
    except ConfigError as exc:
        fail(exc)
    try:
        run(lambda: _show_nodes(overrides, watch=watch, every=max(every, 0.1), configs=configs))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _node_configs(items: list[str]) -> dict[str, dict[str, Any]]:
    configs: dict[str, dict[str, Any]] = {}
    for item in items:
        node, sep, text = item.partition("=")
        try:
            value = json.loads(text) if sep else None
        except ValueError as exc:
            raise ConfigError(f"--set-config {node}: not JSON: {exc}") from exc
        if not node or not isinstance(value, dict):
            raise ConfigError(f"--set-config wants NODE={{json object}}, got {item[:200]!r}")
        check_node_config(node, value)
        configs[node] = value
    return configs


def check_node_config(node: str, config: dict[str, Any]) -> None:
    """Refuse a node configuration that is not valid settings, or that sets a setting the
    namespace agrees on (every worker must crawl with the namespace's).

    Raises:
        ConfigError: the configuration says what is wrong.
    """
    from topicrawl.distributed.namespace import SHARED  # noqa: PLC0415
    from topicrawl.distributed.worker import merge_config  # noqa: PLC0415

    shared = sorted(
        f"{key}.{name}" if isinstance(value, dict) else key
        for key, value in config.items()
        if key in SHARED
        for name in (value if isinstance(value, dict) else [None])
        if SHARED[key] is None or name in (SHARED[key] or ())
    )
    if shared:
        raise ConfigError(
            f"--set-config {node}: {', '.join(shared)} is the namespace's to set, not a "
            "node's: every worker crawls with the namespace's settings"
        )
    try:
        merge_config(CrawlSettings(), config)
    except ConfigError as exc:
        raise ConfigError(f"--set-config {node}: {exc}") from exc


async def _show_nodes(
    overrides: dict[str, Any], *, watch: bool, every: float, configs: dict[str, dict[str, Any]]
) -> None:
    from topicrawl.distributed.coordinator import crawl_done  # noqa: PLC0415
    from topicrawl.distributed.redis_frontier import RedisFrontier  # noqa: PLC0415
    from topicrawl.distributed.registry import NodeRegistry  # noqa: PLC0415

    distributed = _distributed(**overrides)
    registry = NodeRegistry(
        distributed.redis_url,
        namespace=distributed.namespace,
        heartbeat_timeout=distributed.heartbeat_timeout,
    )
    frontier = RedisFrontier(distributed.redis_url, namespace=distributed.namespace, observer=True)
    await require_namespace(distributed)
    async with registry, frontier:
        for node, config in configs.items():
            await registry.set_config(node, config)

        async def table() -> Table:
            found = await registry.nodes()
            hosts = await frontier.host_counts([n.node for n in found])
            queued, in_flight = await frontier.queued(), await frontier.in_flight()
            holder = await registry.client.get(registry.prefix + "coordinator")
            done = await crawl_done(frontier, registry)
            caption = f"{queued} queued, {in_flight} in flight"
            caption += "; the crawl is done" if done else ""
            return nodes_table(
                found, hosts, now=time.time(), caption=caption, coordinator=_holder(holder)
            )

        if not watch:
            out.print(await table())
            return
        stop = asyncio.Event()
        _stop_on_signals(stop.set)
        with Live(await table(), console=out, auto_refresh=False) as live:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), every)
                except TimeoutError:
                    live.update(await table(), refresh=True)


async def require_namespace(
    distributed: DistributedSettings, *, wait: float = 0.0, stop: asyncio.Event | None = None
) -> None:
    """Return once the namespace exists (waiting up to ``wait`` seconds, or until ``stop``).

    Raises:
        typer.Exit: 3, with a message naming the namespaces this Redis holds.
    """
    from redis.asyncio import Redis  # noqa: PLC0415

    from topicrawl.distributed.namespace import Namespace, list_namespaces  # noqa: PLC0415
    from topicrawl.distributed.redis_frontier import namespace_prefix, redact  # noqa: PLC0415

    name = distributed.namespace
    try:
        client = Redis.from_url(distributed.redis_url, socket_connect_timeout=5.0)
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL {redact(distributed.redis_url)}: {exc}") from exc
    try:
        found = Namespace(client, prefix=namespace_prefix(name), name=name)
        deadline = time.monotonic() + wait
        said = False
        while not await found.exists():
            if stop is not None and stop.is_set():
                return
            if time.monotonic() >= deadline:
                present = await list_namespaces(client)
                err.print(
                    Text(
                        f"error: namespace {name!r} does not exist in Redis at "
                        f"{redact(distributed.redis_url)} (namespaces there: "
                        f"{', '.join(present[:20]) or 'none'}); start a worker or run "
                        "topicrawl crawl-ns create",
                        style="red",
                    ),
                    soft_wrap=True,
                )
                raise typer.Exit(EXIT_MISSING)
            if not said:
                err.print(f"waiting up to {wait:g} s for namespace {name!r} to be created")
                said = True
            await asyncio.sleep(0.2)
    finally:
        await client.aclose()


def _holder(value: bytes | str | None) -> str | None:
    """The node or process holding the coordinator lock (its value is ``<holder>/<token>``)."""
    if value is None:
        return None
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return text.rpartition("/")[0] or text


def nodes_table(
    found: list[NodeStatus],
    hosts: dict[str, int],
    *,
    now: float,
    caption: str = "",
    coordinator: str | None = None,
) -> Table:
    """The nodes as a rich table (every value from Redis shown as plain text, never markup).

    A node that left or was declared dead shows the numbers of its last heartbeat and no
    rate; the coordinator (the holder of the lock) is marked; a last row sums every node.
    """
    table = Table(title="topicrawl nodes", caption=caption or None)
    for name, justify in (
        ("node", "left"),
        ("state", "left"),
        ("last heartbeat", "right"),
        ("pages/s", "right"),
        ("pages", "right"),
        ("hosts held", "right"),
        ("errors", "right"),
        ("robots.txt excluded", "right"),
        ("machine/pid", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    styles = {"alive": "green", "dead": "red", "left": "dim"}
    for node in found:
        state = "late" if node.late else node.state.value
        if node.node == coordinator:
            state += ", coordinator"
        beat = (
            "-"
            if node.last_heartbeat is None
            else f"{max(0.0, now - node.last_heartbeat):.1f} s ago"
        )
        rate = (
            "-"
            if node.pages_per_second is None or not node.live
            else f"{node.pages_per_second:.1f}"
        )
        table.add_row(
            Text(node.node),
            Text(state, style="yellow" if node.late else styles.get(node.state.value, "")),
            Text(beat),
            Text(rate),
            Text(str(node.pages)),
            Text(str(hosts.get(node.node, 0))),
            Text(str(node.errors)),
            Text(str(node.excluded)),
            Text(f"{node.machine[:40]}/{node.pid}"),
        )
    live = [n for n in found if n.live]
    if coordinator is not None and coordinator not in {n.node for n in found}:
        caption_holder = Text(f"coordinator: {coordinator}")
        table.add_row(Text("(standalone)"), caption_holder, *[Text("")] * 7)
    table.add_section()
    table.add_row(
        Text(f"total ({len(live)} live of {len(found)})"),
        Text(""),
        Text(""),
        Text(f"{sum(n.pages_per_second or 0.0 for n in live):.1f}"),
        Text(str(sum(n.pages for n in found))),
        Text(str(sum(hosts.get(n.node, 0) for n in found))),
        Text(str(sum(n.errors for n in found))),
        Text(str(sum(n.excluded for n in found))),
        Text(""),
    )
    return table
