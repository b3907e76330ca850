"""Command-line crawl options turned into settings overrides, shared by `crawl` and `worker`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "AllowDomainOption",
    "ConfigOption",
    "CrawlOptions",
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


@dataclass(frozen=True, slots=True, kw_only=True)
class CrawlOptions:
    """The crawl options `crawl`, `worker` and `crawl-ns create` share, as given on the
    command line (None: not given, the setting is left alone)."""

    seeds: list[str]
    topic: list[str] | None = None
    strategy: str | None = None
    max_pages: int | None = None
    concurrency: int | None = None
    per_host: int | None = None
    delay: float | None = None
    ignore_robots: bool = False
    max_depth: int | None = None
    allow_domain: list[str] | None = None
    include: list[str] | None = None
    exclude: list[str] | None = None
    db: str | None = None
    render: str | None = None

    @classmethod
    def of(cls, arguments: Mapping[str, Any], *, seeds: list[str]) -> CrawlOptions:
        """The options among a command's arguments (by parameter name: pass its
        ``locals()`` before it binds other names); one the command does not take stays unset.
        """
        names = {option.name for option in fields(cls)} - {"seeds"}
        return cls(seeds=seeds, **{name: arguments[name] for name in names & arguments.keys()})

    def overrides(self) -> dict[str, Any]:
        """The settings overrides these options ask for."""
        kwargs: dict[str, Any] = {}
        put(kwargs, "seeds", tuple(self.seeds) or None)
        put(kwargs, "topics", _listed(self.topic))
        put(kwargs, "strategy", self.strategy)
        put(kwargs, "max_pages", self.max_pages)
        put(kwargs, "concurrency", self.concurrency)
        put(kwargs, "render", self.render)
        politeness: dict[str, Any] = {}
        put(politeness, "per_host", self.per_host)
        put(politeness, "delay", self.delay)
        if self.ignore_robots:
            politeness["obey_robots"] = False
        scope: dict[str, Any] = {}
        put(scope, "max_depth", self.max_depth)
        put(scope, "allowed_domains", _listed(self.allow_domain))
        put(scope, "include", _listed(self.include))
        put(scope, "exclude", _listed(self.exclude))
        put(kwargs, "politeness", politeness or None)
        put(kwargs, "scope", scope or None)
        put(kwargs, "storage", {"url": self.db} if self.db else None)
        return kwargs


def crawl_overrides(arguments: Mapping[str, Any], *, seeds: list[str]) -> dict[str, Any]:
    """Settings overrides for the crawl options among a command's ``arguments`` (see
    :meth:`CrawlOptions.of`)."""
    return CrawlOptions.of(arguments, seeds=seeds).overrides()


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
