"""``topicrawl worker``, ``topicrawl coordinator`` and ``topicrawl nodes``: distributed mode.

Exit codes as for ``crawl``: 2 bad settings, 4 Redis or the database unreachable or failed,
130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table
from rich.text import Text

from topicrawl.cli.options import crawl_overrides, put, read_seeds
from topicrawl.core.config import CrawlSettings, load_settings
from topicrawl.core.errors import ConfigError, FrontierError, StorageError, TopicrawlError

if TYPE_CHECKING:
    from topicrawl.distributed.registry import NodeStatus
    from topicrawl.distributed.settings import DistributedSettings
    from topicrawl.distributed.worker import WorkerReport
    from topicrawl.engine.crawl import Crawler

__all__ = ["coordinator", "nodes", "nodes_table", "worker", "worker_settings"]

err = Console(stderr=True)
out = Console()

EXIT_CONFIG = 2
EXIT_SERVICE = 4
EXIT_INTERRUPTED = 130

T = TypeVar("T")

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


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(message)s",
        handlers=[RichHandler(console=err, show_path=False, rich_tracebacks=True)],
        force=True,
    )


def _run(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine, turning topicrawl's errors into messages and exit codes."""
    try:
        return asyncio.run(coro_factory())
    except BaseExceptionGroup as group:  # errors raised inside the worker's task groups
        error = _first_error(group)
        if error is None:
            raise
        _fail(error)
    except TopicrawlError as exc:
        _fail(exc)


def _first_error(group: BaseExceptionGroup[BaseException]) -> TopicrawlError | None:
    for exc in group.exceptions:
        if isinstance(exc, TopicrawlError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_error(exc)
            if found is not None:
                return found
    return None


def _fail(exc: TopicrawlError) -> NoReturn:
    if isinstance(exc, ConfigError):
        err.print(Text(f"error: {exc}", style="red"))
        raise typer.Exit(EXIT_CONFIG) from exc
    if isinstance(exc, FrontierError):
        err.print(Text(f"Redis error: {exc}", style="red"))
        raise typer.Exit(EXIT_SERVICE) from exc
    if isinstance(exc, StorageError):
        err.print(Text(f"database error: {exc}", style="red"))
        raise typer.Exit(EXIT_SERVICE) from exc
    err.print(Text(f"error: {exc}", style="red"))
    raise typer.Exit(1) from exc


def _distributed(**overrides: object) -> DistributedSettings:
    from topicrawl.distributed.settings import load_distributed  # noqa: PLC0415 - slow import

    return load_distributed(**overrides)


def _stop_on_signals(stop: Callable[[], None], message: str | None = None) -> None:
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_signal() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            if message:
                err.print(message)
            stop()
        else:
            for task in asyncio.all_tasks(loop):
                task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)


def worker(  # noqa: PLR0917 - typer maps each option to a parameter
    redis: RedisOption = None,
    db: Annotated[
        str | None, typer.Option(help="postgresql:// URL of the crawl's database.")
    ] = None,
    namespace: NamespaceOption = None,
    node_id: Annotated[str | None, typer.Option(help="Node id (default host-machine-pid).")] = None,
    seed: Annotated[
        list[str] | None, typer.Option("--seed", help="Start URL (repeatable).")
    ] = None,
    seeds_file: Annotated[
        Path | None, typer.Option("--seeds-file", help="File with one start URL per line.")
    ] = None,
    topic: Annotated[
        list[str] | None, typer.Option("--topic", help="Topic keywords (repeatable).")
    ] = None,
    strategy: Annotated[str | None, typer.Option(help="bfs, best-first, shark, focused.")] = None,
    max_pages: Annotated[
        int | None,
        typer.Option(
            help="Stop the crawl at about N stored pages, all workers together (default 0:"
            " no limit; the workers together may store a few pages more)."
        ),
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight.")] = None,
    per_host: Annotated[int | None, typer.Option(help="Requests in flight per host.")] = None,
    delay: Annotated[float | None, typer.Option(help="Seconds between requests to a host.")] = None,
    max_depth: Annotated[int | None, typer.Option(help="Deepest link level followed.")] = None,
    allow_domain: Annotated[
        list[str] | None, typer.Option(help="Stay within these domains (default: the seeds').")
    ] = None,
    include: Annotated[list[str] | None, typer.Option(help="Regex URLs must match.")] = None,
    exclude: Annotated[list[str] | None, typer.Option(help="Regex that rules URLs out.")] = None,
    ignore_robots: Annotated[bool, typer.Option(help="Do not obey robots.txt.")] = False,
    lease_ttl: Annotated[float | None, typer.Option(help="Seconds a lease lasts.")] = None,
    heartbeat_interval: HeartbeatOption = None,
    heartbeat_timeout: TimeoutOption = None,
    lock_ttl: LockOption = None,
    throughput_window: Annotated[
        float | None, typer.Option(help="Seconds over which pages/s is measured (60).")
    ] = None,
    exact_dedupe: Annotated[
        bool | None, typer.Option(help="Exact URL set in Redis instead of a Bloom filter.")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="TOML crawl settings file.")] = None,
    quiet: Annotated[bool, typer.Option(help="No summary line.")] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "warning",
) -> None:
    """Crawl as one worker of a distributed crawl (Redis frontier, PostgreSQL results)."""
    _setup_logging(log_level)
    try:
        seeds = read_seeds(seed, seeds_file)
    except ConfigError as exc:
        err.print(Text(f"error: {exc}", style="red"))
        raise typer.Exit(EXIT_CONFIG) from exc
    kwargs = crawl_overrides(
        seeds=seeds,
        topic=topic,
        strategy=strategy,
        max_pages=max_pages,
        concurrency=concurrency,
        per_host=per_host,
        delay=delay,
        ignore_robots=ignore_robots,
        max_depth=max_depth,
        allow_domain=allow_domain,
        include=include,
        exclude=exclude,
        db=db,
    )
    put(kwargs, "frontier", {"lease_ttl": lease_ttl} if lease_ttl else None)
    dist = {
        "redis_url": redis,
        "namespace": namespace,
        "heartbeat_interval": heartbeat_interval,
        "heartbeat_timeout": heartbeat_timeout,
        "lock_ttl": lock_ttl,
        "throughput_window": throughput_window,
        "exact_dedupe": exact_dedupe,
    }
    report = _run(lambda: _work(kwargs, config, dist, node_id))
    if not quiet:
        stats = report.stats
        out.print(
            Text(
                f"worker {report.node}: {report.pages} pages, {stats.error_count} errors, "
                f"run {report.run_id}, {report.queued_left} left queued"
            )
        )
    if report.max_pages and report.queued_left and report.stats.pages >= report.max_pages:
        err.print(
            Text(
                f"stopped at the page limit (max_pages {report.max_pages}, {report.stats.pages}"
                f" pages stored by all workers) with {report.queued_left} URLs left queued:"
                " raise --max-pages (0 = no limit) and start the workers again to go on",
                style="yellow",
            )
        )


async def _work(
    kwargs: dict[str, Any], config: Path | None, dist: dict[str, Any], node_id: str | None
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
        on_start=_on_worker_start,
    )


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
    return settings


def _on_worker_start(crawler: Crawler) -> None:
    from topicrawl.engine.heap import settle_heap  # noqa: PLC0415

    settle_heap()
    _stop_on_signals(crawler.stop, "stopping: finishing pages in flight (Ctrl-C again to quit now)")


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
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "info",
) -> None:
    """Run the coordinator's duties (dead nodes, rebalancing); a standby takes over if it dies."""
    _setup_logging(log_level)
    overrides = {
        "redis_url": redis,
        "namespace": namespace,
        "heartbeat_interval": heartbeat_interval,
        "heartbeat_timeout": heartbeat_timeout,
        "lock_ttl": lock_ttl,
        "coordinator_interval": interval,
    }
    _run(lambda: _coordinate(overrides, exit_when_done))


async def _coordinate(overrides: dict[str, Any], exit_when_done: bool) -> None:
    from topicrawl.distributed.coordinator import serve  # noqa: PLC0415
    from topicrawl.distributed.registry import local_node_id  # noqa: PLC0415

    distributed = _distributed(**overrides)
    stop = asyncio.Event()
    _stop_on_signals(stop.set)
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
    _setup_logging("warning")
    overrides = {"redis_url": redis, "namespace": namespace}
    try:
        configs = _node_configs(set_config or [])
    except ConfigError as exc:
        _fail(exc)
    try:
        _run(lambda: _show_nodes(overrides, watch=watch, every=max(every, 0.1), configs=configs))
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
        configs[node] = value
    return configs


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
