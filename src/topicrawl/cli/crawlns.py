"""``topicrawl crawl-ns``: a distributed crawl's namespace (its settings, seeds, state) in Redis.

Exit codes: 2 bad settings or a refused change (live workers), 3 the namespace does not exist
(or already exists, for ``create``), 4 Redis unreachable or failed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from topicrawl.cli.common import (
    EXIT_CONFIG,
    EXIT_MISSING,
    err,
    fail,
    out,
    run,
    seeds_or_exit,
    setup_logging,
)
from topicrawl.cli.distributed import NamespaceOption, RedisOption, _distributed, worker_settings
from topicrawl.cli.options import (
    AllowDomainOption,
    ConfigOption,
    DelayOption,
    ExcludeOption,
    IgnoreRobotsOption,
    IncludeOption,
    LeaseTtlOption,
    MaxDepthOption,
    PerHostOption,
    SeedOption,
    SeedsFileOption,
    StrategyOption,
    TopicOption,
    crawl_overrides,
    put,
)
from topicrawl.core.errors import ConfigError

if TYPE_CHECKING:
    from topicrawl.distributed.namespace import Namespace

__all__ = ["app"]

app = typer.Typer(
    help="A distributed crawl's namespace in Redis: create it, add seeds, show, list, reset, drop.",
    no_args_is_help=True,
)

ForceOption = Annotated[
    bool, typer.Option(help="Even while workers are registered alive (they will fail).")
]


class _Missing(Exception):
    """The namespace does not exist."""


@asynccontextmanager
async def _opened(redis: str | None, namespace: str | None) -> AsyncIterator[Namespace]:
    from redis.asyncio import Redis  # noqa: PLC0415

    from topicrawl.distributed.namespace import Namespace  # noqa: PLC0415
    from topicrawl.distributed.redis_frontier import namespace_prefix, redact  # noqa: PLC0415

    distributed = _distributed(redis_url=redis, namespace=namespace)
    name = distributed.namespace
    prefix = namespace_prefix(name)
    try:
        client = Redis.from_url(distributed.redis_url, socket_connect_timeout=5.0)
    except ValueError as exc:
        raise ConfigError(f"bad Redis URL {redact(distributed.redis_url)}: {exc}") from exc
    try:
        yield Namespace(client, prefix=prefix, name=name)
    finally:
        await client.aclose()


def _missing(name: str) -> typer.Exit:
    err.print(
        Text(
            f"error: namespace {name!r} does not exist (topicrawl crawl-ns list shows those"
            " there are)",
            style="red",
        ),
        soft_wrap=True,
    )
    return typer.Exit(EXIT_MISSING)


def _refuse(message: str) -> typer.Exit:
    err.print(Text(f"error: {message}", style="red"), soft_wrap=True)
    return typer.Exit(EXIT_CONFIG)


@app.command()
def create(  # noqa: PLR0917 - typer maps each option to a parameter
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    seed: SeedOption = None,
    seeds_file: SeedsFileOption = None,
    topic: TopicOption = None,
    strategy: StrategyOption = None,
    max_pages: Annotated[
        int | None, typer.Option(help="Stop at N stored pages, all workers (0: no limit).")
    ] = None,
    per_host: PerHostOption = None,
    delay: DelayOption = None,
    max_depth: MaxDepthOption = None,
    allow_domain: AllowDomainOption = None,
    include: IncludeOption = None,
    exclude: ExcludeOption = None,
    ignore_robots: IgnoreRobotsOption = False,
    lease_ttl: LeaseTtlOption = None,
    config: ConfigOption = None,
) -> None:
    """Create a crawl: its settings and seeds, which every worker that joins then uses."""
    setup_logging("warning")
    seeds = _seeds_given(seed, seeds_file, "a crawl needs start URLs: give --seed or --seeds-file")
    try:
        kwargs = crawl_overrides(locals(), seeds=seeds)
        put(kwargs, "frontier", {"lease_ttl": lease_ttl} if lease_ttl else None)
        settings = worker_settings(config, kwargs)
    except ConfigError as exc:
        fail(exc)

    async def make() -> bool:
        from topicrawl.distributed.namespace import canonical_seeds  # noqa: PLC0415

        async with _opened(redis, namespace) as found:
            if await found.exists():
                return False
            # Checked as a worker would check its own (seeds in scope, the strategy known).
            canonical_seeds(settings.seeds)
            _check_strategy(settings.strategy, settings.topics, settings.strategy_options)
            _, created = await found.join(settings)
            return created

    if not run(make):
        raise _refuse(
            f"namespace {namespace or 'default'!r} exists already: see it with crawl-ns show,"
            " change its page limit with crawl-ns set, or drop it first"
        )
    err.print(f"created namespace {namespace or 'default'!r} with {len(settings.seeds)} seed(s)")


def _seeds_given(seed: list[str] | None, seeds_file: Path | None, otherwise: str) -> list[str]:
    seeds = seeds_or_exit(seed, seeds_file)
    if not seeds:
        fail(ConfigError(otherwise))
    return seeds


def _check_strategy(name: str, topics: Any, options: Any) -> None:
    from topicrawl.focus import make_strategy  # noqa: PLC0415

    try:
        make_strategy(name, topics=topics, **options)
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"strategy {name!r}: {exc}") from exc


@app.command("add-seeds")
def add_seeds(
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    seed: SeedOption = None,
    seeds_file: SeedsFileOption = None,
) -> None:
    """Add start URLs to a crawl, running or not: its scope widens by their domains, and
    workers running take them up at once."""
    setup_logging("warning")
    seeds = _seeds_given(seed, seeds_file, "give --seed or --seeds-file")

    async def add() -> tuple[int, int] | None:
        async with _opened(redis, namespace) as found:
            stored = (await found.state()).settings
            if stored is None:
                return None
            added = await found.add_seeds(seeds, stored=stored)
            return added, await _queue_seeds(found, redis, stored, seeds)

    done = run(add)
    if done is None:
        raise _missing(namespace or "default")
    added, queued = done
    err.print(f"{added} new seed(s); {queued} queued for the workers running or to come")


async def _queue_seeds(
    found: Namespace, redis: str | None, stored: dict[str, Any], seeds: list[str]
) -> int:
    """Queue seeds in a crawl that has started (its frontier exists); a crawl not started yet
    queues every seed of its namespace when its first worker starts."""
    from topicrawl.core.models import Request  # noqa: PLC0415
    from topicrawl.distributed.namespace import adopt, canonical_seeds  # noqa: PLC0415
    from topicrawl.distributed.redis_frontier import RedisFrontier  # noqa: PLC0415
    from topicrawl.focus import make_strategy  # noqa: PLC0415

    dedupe = await found.meta("dedupe")
    if dedupe is None:
        return 0
    from topicrawl.core.config import CrawlSettings  # noqa: PLC0415

    settings = adopt(CrawlSettings(), stored, seeds)
    strategy = make_strategy(settings.strategy, topics=settings.topics, **settings.strategy_options)
    requests = list(strategy.seeds(Request(url=url, depth=0) for url in canonical_seeds(seeds)))
    frontier = RedisFrontier(
        _distributed(redis_url=redis).redis_url,
        namespace=found.name,
        default_delay=settings.politeness.delay,
        max_per_host=settings.politeness.per_host,
        lease_ttl=settings.frontier.lease_ttl,
        bloom_capacity=settings.frontier.bloom_capacity,
        bloom_error_rate=settings.frontier.bloom_error_rate,
        exact=dedupe == "exact",
    )
    async with frontier:
        return await frontier.push(requests)


@app.command("set")
def set_limit(
    max_pages: Annotated[int, typer.Option(help="The crawl's page limit (0: no limit).")],
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Change a crawl's page limit; workers running follow it at once."""
    setup_logging("warning")

    async def change() -> bool:
        async with _opened(redis, namespace) as found:
            if not await found.exists():
                return False
            await found.set_max_pages(max_pages)
            return True

    if not run(change):
        raise _missing(namespace or "default")
    err.print(f"namespace {namespace or 'default'!r}: max_pages {max_pages}")


@app.command()
def show(
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """A crawl's settings, seeds, counts (queued, in flight, stored, errors), nodes, and
    whether it is done."""
    setup_logging("warning")
    report = run(lambda: _report(redis, namespace))
    if report is None:
        raise _missing(namespace or "default")
    if as_json:
        out.print_json(json.dumps(report))
        return
    _print_report(report)


async def _report(redis: str | None, namespace: str | None) -> dict[str, Any] | None:
    from topicrawl.distributed.coordinator import crawl_done  # noqa: PLC0415
    from topicrawl.distributed.redis_frontier import RedisFrontier  # noqa: PLC0415
    from topicrawl.distributed.registry import NodeRegistry  # noqa: PLC0415

    async with _opened(redis, namespace) as found:
        if not await found.exists():
            return None
        state = await found.state()
        distributed = _distributed(redis_url=redis, namespace=namespace)
        registry = NodeRegistry(
            distributed.redis_url,
            namespace=found.name,
            heartbeat_timeout=distributed.heartbeat_timeout,
        )
        frontier = RedisFrontier(distributed.redis_url, namespace=found.name, observer=True)
        async with registry, frontier:
            nodes = await registry.nodes()
            return {
                "namespace": found.name,
                "settings": state.settings,
                "seeds": list(state.seeds),
                "domains": list(state.domains),
                "max_pages": state.max_pages,
                "stored": state.reserved,
                "queued": await frontier.queued(),
                "in_flight": await frontier.in_flight(),
                "errors": sum(node.errors for node in nodes),
                "nodes": {node.node: node.state.value for node in nodes},
                "live_nodes": sorted(node.node for node in nodes if node.live),
                "done": await crawl_done(frontier, registry),
                "run_id": await found.meta("run_id"),
            }


def _print_report(report: dict[str, Any]) -> None:
    limit = f" of {report['max_pages']:,}" if report["max_pages"] else " (no limit)"
    seeds = report["seeds"]
    lines = [
        f"namespace {report['namespace']}: {'done' if report['done'] else 'not done'}",
        f"pages stored {report['stored']:,}{limit}, {report['queued']:,} queued,"
        f" {report['in_flight']:,} in flight, {report['errors']:,} errors",
        f"nodes: {len(report['live_nodes'])} live of {len(report['nodes'])}"
        + "".join(f"\n  {node}: {state}" for node, state in sorted(report["nodes"].items())),
        f"seeds ({len(seeds)}):"
        + "".join(f"\n  {seed}" for seed in seeds[:20])
        + (f"\n  ... and {len(seeds) - 20} more" if len(seeds) > 20 else ""),
        f"scope domains: {', '.join(report['domains']) or '-'}",
        "settings: " + json.dumps(report["settings"], indent=2, sort_keys=True),
    ]
    for line in lines:
        out.print(Text(line), soft_wrap=True)


@app.command("list")
def list_command(redis: RedisOption = None) -> None:
    """The namespaces in this Redis, with their live nodes and queued URLs."""
    setup_logging("warning")

    async def gather() -> list[tuple[str, int, int, bool]]:
        from topicrawl.distributed.namespace import list_namespaces  # noqa: PLC0415

        rows = []
        async with _opened(redis, None) as found:
            names = await list_namespaces(found.client)
        for name in names:
            report = await _report(redis, name)
            if report is not None:
                rows.append((name, len(report["live_nodes"]), report["queued"], report["done"]))
        return rows

    rows = run(gather)
    for name, live, queued, done in rows:
        state = "done" if done else f"{live} live node(s), {queued:,} queued"
        out.print(Text(f"{name}\t{state}"))
    if not rows:
        err.print("no namespace in this Redis")


@app.command()
def reset(
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    force: ForceOption = False,
) -> None:
    """Empty a crawl's frontier, dedupe, nodes and run; keep its settings, seeds and scope:
    workers started afterwards crawl it again from its seeds (into the same database)."""
    _change(redis, namespace, force=force, drop=False)


@app.command()
def drop(
    redis: RedisOption = None,
    namespace: NamespaceOption = None,
    force: ForceOption = False,
) -> None:
    """Delete every key of a crawl (its Bloom filter too); the database keeps its pages."""
    _change(redis, namespace, force=force, drop=True)


def _change(redis: str | None, namespace: str | None, *, force: bool, drop: bool) -> None:
    setup_logging("warning")

    async def change() -> tuple[str, int, list[str]]:
        from topicrawl.distributed.registry import NodeRegistry  # noqa: PLC0415

        async with _opened(redis, namespace) as found:
            if not await found.exists():
                return "missing", 0, []
            distributed = _distributed(redis_url=redis, namespace=namespace)
            async with NodeRegistry(
                distributed.redis_url,
                namespace=found.name,
                heartbeat_timeout=distributed.heartbeat_timeout,
            ) as registry:
                live = sorted(node.node for node in await registry.live())
            if live and not force:
                return "live", 0, live
            return "done", await (found.delete() if drop else found.reset()), []

    outcome, deleted, live = run(change)
    name = namespace or "default"
    if outcome == "missing":
        raise _missing(name)
    if outcome == "live":
        raise _refuse(
            f"namespace {name!r} has live workers ({', '.join(live)}): stop them"
            " first, or pass --force"
        )
    what = "dropped" if drop else "reset"
    err.print(f"namespace {name!r} {what} ({deleted} keys deleted)")
