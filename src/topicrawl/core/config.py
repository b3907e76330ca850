"""One typed settings tree for a crawl.

Every field can be set in a TOML file (``--config crawl.toml``), by environment variable with
the ``TOPICRAWL_`` prefix and ``__`` between levels (``TOPICRAWL_FETCH__TIMEOUT=5``), or in
code. Unknown keys are errors, so a typo never becomes a silent default.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from topicrawl.core.errors import ConfigError

__all__ = [
    "CrawlSettings",
    "FetchSettings",
    "FrontierSettings",
    "PolitenessSettings",
    "ScopeSettings",
    "StorageSettings",
    "load_settings",
]

DEFAULT_USER_AGENT = "topicrawl/0.1 (+https://example.invalid/topicrawl)"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FetchSettings(_Section):
    """How single requests are made."""

    user_agent: str = Field(
        DEFAULT_USER_AGENT, description="User-Agent header and robots.txt agent."
    )
    timeout: float = Field(20.0, gt=0, description="Seconds for a whole request, body included.")
    connect_timeout: float = Field(10.0, gt=0, description="Seconds to open a connection.")
    max_body_bytes: int = Field(
        5_000_000, gt=0, description="Cap on a body after decompression; larger bodies fail."
    )
    max_redirects: int = Field(5, ge=0, description="Redirect hops followed before giving up.")
    max_url_length: int = Field(2048, gt=0, description="Longer URLs are not fetched.")
    retries: int = Field(2, ge=0, description="Retries for timeouts, 5xx and 429.")
    backoff_base: float = Field(0.5, ge=0, description="First retry waits about this long.")
    backoff_max: float = Field(30.0, ge=0, description="No retry waits longer (Retry-After too).")
    content_types: tuple[str, ...] = Field(
        ("text/html", "application/xhtml+xml"),
        description="Content types whose bodies are kept and parsed.",
    )
    proxies: tuple[str, ...] = Field((), description="Proxy URLs; empty means direct.")
    proxy_max_latency: float = Field(
        2.0, gt=0, description="Proxies slower than this (seconds, moving average) are benched."
    )
    proxy_bench_seconds: float = Field(60.0, gt=0, description="How long a proxy stays benched.")
    connections: int = Field(100, gt=0, description="Total open connections.")


class PolitenessSettings(_Section):
    """How gently each host is treated."""

    delay: float = Field(0.0, ge=0, description="Minimum seconds between requests to a host.")
    per_host: int = Field(8, gt=0, description="Concurrent requests to one host.")
    obey_robots: bool = Field(True, description="Honour robots.txt rules and Crawl-delay.")
    max_crawl_delay: float = Field(30.0, ge=0, description="Cap on a robots.txt Crawl-delay.")
    robots_error_ttl: float = Field(
        600.0, gt=0, description="Seconds a host stays disallowed after robots.txt gave a 5xx."
    )


class ScopeSettings(_Section):
    """Which URLs the crawl may follow."""

    allowed_domains: tuple[str, ...] = Field(
        (), description="Registered domains or hosts to stay within; empty means the seeds'."
    )
    include: tuple[str, ...] = Field((), description="Regexes a URL must match (any of them).")
    exclude: tuple[str, ...] = Field((), description="Regexes that rule a URL out.")
    max_depth: int = Field(50, ge=0, description="Links deeper than this are not followed.")
    follow_nofollow: bool = Field(False, description="Follow rel=nofollow links too.")


class FrontierSettings(_Section):
    """The queue of URLs to fetch."""

    kind: Literal["memory", "sqlite"] = Field("sqlite", description="Where the frontier lives.")
    lease_ttl: float = Field(300.0, gt=0, description="Seconds before an un-acked lease expires.")
    bloom_capacity: int = Field(1_000_000, gt=0, description="URLs the Bloom filter is sized for.")
    bloom_error_rate: float = Field(1e-7, gt=0, lt=1, description="Bloom false-positive rate.")


class StorageSettings(_Section):
    """Where results are kept."""

    url: str = Field("topicrawl.db", description="SQLite file path, or a postgresql:// URL.")
    batch_size: int = Field(200, gt=0, description="Rows written per batch.")
    flush_interval: float = Field(1.0, gt=0, description="Seconds between batch writes.")
    keep_body: bool = Field(False, description="Keep raw bodies (needed for WARC export).")


class CrawlSettings(BaseSettings):
    """A whole crawl's settings."""

    model_config = SettingsConfigDict(
        env_prefix="TOPICRAWL_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    seeds: tuple[str, ...] = Field((), description="Start URLs.")
    topics: tuple[str, ...] = Field((), description="Topic keyword strings, one per topic.")
    strategy: str = Field("bfs", description="Crawl policy: bfs, best-first, shark, focused.")
    strategy_options: dict[str, float | int | bool | str | list[str]] = Field(
        default_factory=dict,
        description="Options of the strategy (e.g. decay, threshold); checked by the strategy.",
    )
    sitemaps: bool = Field(
        False,
        description="Also seed from the seed hosts' sitemaps (robots.txt, else /sitemap.xml).",
    )
    feeds: tuple[str, ...] = Field((), description="RSS/Atom feed URLs whose entries seed.")
    max_pages: int = Field(1000, ge=0, description="Stop after this many fetched pages (0 = none).")
    concurrency: int = Field(16, gt=0, description="Requests in flight at once.")
    pages_in_hand: int = Field(
        0,
        ge=0,
        description=(
            "URLs worked on at once (fetched, parsed or stored); 0 = 3 x concurrency for bfs,"
            " concurrency for scoring strategies. Above concurrency, requests go on while"
            " fetched pages are parsed and stored; requests in flight stay capped by"
            " concurrency and politeness.per_host."
        ),
    )
    parse_workers: int = Field(
        -1, ge=-1, description="HTML parsing processes; 0 parses in-process, -1 = cores - 1."
    )
    fetch: FetchSettings = FetchSettings()
    politeness: PolitenessSettings = PolitenessSettings()
    scope: ScopeSettings = ScopeSettings()
    frontier: FrontierSettings = FrontierSettings()
    storage: StorageSettings = StorageSettings()

    @field_validator("seeds", "feeds")
    @classmethod
    def _seeds_are_http(cls, seeds: tuple[str, ...]) -> tuple[str, ...]:
        for seed in seeds:
            if not seed.startswith(("http://", "https://")):
                raise ValueError(f"{seed!r} is not an http(s) URL")
        return seeds

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Precedence: arguments in code > environment > TOML file (when one is given).
        return (init_settings, env_settings, *_toml_sources(settings_cls))


_toml_path: Path | None = None


def _toml_sources(settings_cls: type[BaseSettings]) -> tuple[PydanticBaseSettingsSource, ...]:
    if _toml_path is None:
        return ()
    return (TomlConfigSettingsSource(settings_cls, toml_file=_toml_path),)


def load_settings(path: Path | None = None, **overrides: Any) -> CrawlSettings:
    """Build settings from an optional TOML file, the environment and explicit overrides.

    Raises:
        ConfigError: the file is missing or not TOML, or a value or key is invalid.
    """
    global _toml_path  # noqa: PLW0603 - pydantic-settings takes the file per class, not per call
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    _toml_path = path
    try:
        return CrawlSettings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from exc
    finally:
        _toml_path = None


def _describe(exc: ValidationError) -> str:
    lines = ["invalid settings:"]
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        lines.append(f"  {where}: {error['msg']}")
    return "\n".join(lines)
