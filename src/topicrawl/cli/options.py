"""Command-line crawl options turned into settings overrides, shared by `crawl` and `worker`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "AllowDomainOption",
    "ConfigOption",
    "DelayOption",
    "ExcludeOption",
    "IgnoreRobotsOption",
    "IncludeOption",
    "LeaseTtlOption",
    "MaxDepthOption",
    "MetricsPortOption",
    "PerHostOption",
    "SeedOption",
    "SeedsFileOption",
    "StrategyOption",
    "TopicOption",
    "crawl_overrides",
    "put",
    "read_seeds",
    "revisit_overrides",
]

# The crawl options of `crawl`, `worker` and `crawl-ns create`, declared once.
SeedOption = Annotated[list[str] | None, typer.Option("--seed", help="Start URL (repeatable).")]
SeedsFileOption = Annotated[
    Path | None, typer.Option("--seeds-file", help="File with one start URL per line.")
]
TopicOption = Annotated[
    list[str] | None, typer.Option("--topic", help="Topic keywords (repeatable).")
]
StrategyOption = Annotated[str | None, typer.Option(help="bfs, best-first, shark, focused.")]
PerHostOption = Annotated[int | None, typer.Option(help="Requests in flight per host.")]
DelayOption = Annotated[float | None, typer.Option(help="Seconds between requests to a host.")]
MaxDepthOption = Annotated[int | None, typer.Option(help="Deepest link level followed.")]
AllowDomainOption = Annotated[
    list[str] | None, typer.Option(help="Stay within these domains (default: the seeds').")
]
IncludeOption = Annotated[list[str] | None, typer.Option(help="Regex URLs must match.")]
ExcludeOption = Annotated[list[str] | None, typer.Option(help="Regex that rules URLs out.")]
IgnoreRobotsOption = Annotated[bool, typer.Option(help="Do not obey robots.txt.")]
LeaseTtlOption = Annotated[float | None, typer.Option(help="Seconds a lease lasts.")]
ConfigOption = Annotated[Path | None, typer.Option(help="TOML crawl settings file.")]

MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=65535,
        help="Serve this process's Prometheus metrics at http://127.0.0.1:PORT/metrics.",
    ),
]


def put(target: dict[str, Any], key: str, value: object) -> None:
    """Set ``key`` when the option was given (None means: leave the setting alone)."""
    if value is not None:
        target[key] = value


def _listed(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values else None


def read_seeds(seed: list[str] | None, seeds_file: Path | None) -> list[str]:
    """The --seed URLs, then the seed file's (see :func:`topicrawl.sources.read_seed_file`).

    Raises:
        ConfigError: the seed file is missing, unreadable, or has bad lines.
    """
    seeds = list(seed or [])
    if seeds_file is not None:
        from topicrawl.sources.seeds import read_seed_file  # noqa: PLC0415 - lxml via sources

        seeds += read_seed_file(seeds_file).urls
    return seeds


RenderOption = Annotated[
    str | None,
    typer.Option(
        help="Render pages in Chromium before parsing: never (default), auto (script shells)"
        " or always."
    ),
]


def crawl_overrides(
    *,
    seeds: list[str],
    topic: list[str] | None,
    strategy: str | None,
    max_pages: int | None,
    concurrency: int | None,
    per_host: int | None,
    delay: float | None,
    ignore_robots: bool,
    max_depth: int | None,
    allow_domain: list[str] | None,
    include: list[str] | None,
    exclude: list[str] | None,
    db: str | None,
    render: str | None = None,
) -> dict[str, Any]:
    """Settings overrides for the options `crawl` and `worker` share."""
    kwargs: dict[str, Any] = {}
    put(kwargs, "seeds", tuple(seeds) or None)
    put(kwargs, "topics", _listed(topic))
    put(kwargs, "strategy", strategy)
    put(kwargs, "max_pages", max_pages)
    put(kwargs, "concurrency", concurrency)
    put(kwargs, "render", render)
    politeness: dict[str, Any] = {}
    put(politeness, "per_host", per_host)
    put(politeness, "delay", delay)
    if ignore_robots:
        politeness["obey_robots"] = False
    scope: dict[str, Any] = {}
    put(scope, "max_depth", max_depth)
    put(scope, "allowed_domains", _listed(allow_domain))
    put(scope, "include", _listed(include))
    put(scope, "exclude", _listed(exclude))
    put(kwargs, "politeness", politeness or None)
    put(kwargs, "scope", scope or None)
    put(kwargs, "storage", {"url": db} if db else None)
    return kwargs


def revisit_overrides(
    enabled: bool, day: float | None, seconds: float | None, budget: float | None
) -> dict[str, Any] | None:
    """The ``revisit`` settings section the crawl command's --revisit options ask for."""
    section: dict[str, Any] = {}
    if enabled:
        section["enabled"] = True
    if day is not None:
        section["day_seconds"] = day
    if seconds is not None:
        section["max_seconds"] = seconds
    if budget is not None:
        section["budget"] = budget
    return section or None
