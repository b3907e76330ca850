"""One typed settings tree for a crawl.

Every field can be set in a TOML file (``--config crawl.toml``), by environment variable with
the ``TOPICRAWL_`` prefix and ``__`` between levels (``TOPICRAWL_FETCH__TIMEOUT=5``), or in
code. Unknown keys are errors, so a typo never becomes a silent default. Every value has
bounds that keep a crawl workable (finite positive times, sizes and counts within reach of
one machine, header values without control characters), checked when the settings are built.

A list setting takes a JSON array, or from the environment or a TOML string also a plain
comma-separated string (``TOPICRAWL_TOPICS='java thread, python asyncio'`` is two topics);
a regex list (``scope.include``, ``scope.exclude``) takes a JSON array or one pattern.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from topicrawl.core.envsource import (
    EnvironmentSource,
    describe_invalid,
    describe_unreadable,
    parse_list,
)
from topicrawl.core.errors import ConfigError

__all__ = [
    "CrawlSettings",
    "FetchSettings",
    "FrontierSettings",
    "KgSettings",
    "PolitenessSettings",
    "RevisitSettings",
    "ScopeSettings",
    "StorageSettings",
    "VideoSettings",
    "load_settings",
]

DEFAULT_USER_AGENT = "topicrawl/0.1 (+https://example.invalid/topicrawl)"

HOUR = 3600.0
DAY = 24 * HOUR
WEEK = 7 * DAY
# Parse workers are processes of ~100 MB each: more than a few per core only adds memory.
WORKERS_PER_CORE = 4

# Environment values arrive undecoded (NoDecode) so that plain strings can be read as lists.
ListSetting = Annotated[tuple[str, ...], NoDecode]
PatternSetting = Annotated[tuple[str, ...], NoDecode]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_MEDIA_TYPE = re.compile(r"[A-Za-z0-9][\w.+-]*/(\*|[A-Za-z0-9][\w.+-]*)")
_HOST = re.compile(r"[^\s/:?#@\\]+")


def _comma_list(value: object) -> object:
    return parse_list(value, split=True)


def _pattern_list(value: object) -> object:
    return parse_list(value, split=False)


def _valid_regexes(values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{value!r} is not a valid regex: {exc}") from exc
    return values


def _no_control_characters(value: str) -> str:
    found = _CONTROL.search(value)
    if found:
        raise ValueError(
            f"contains the control character {found.group()!r} at position {found.start()};"
            " header values and URLs must be one line of printable text"
        )
    return value


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class _Section(BaseModel):
    # No NaN or infinity anywhere: an infinite timeout hangs a fetch instead of ending it.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class FetchSettings(_Section):
    """How single requests are made."""

    user_agent: str = Field(
        DEFAULT_USER_AGENT,
        min_length=1,
        max_length=512,
        description="User-Agent header and robots.txt agent (no control characters).",
    )
    timeout: float = Field(
        20.0, gt=0, le=HOUR, description="Seconds for a whole request, body included."
    )
    connect_timeout: float = Field(10.0, gt=0, le=HOUR, description="Seconds to open a connection.")
    max_body_bytes: int = Field(
        5_000_000,
        gt=0,
        le=2**30,
        description="Cap on a body after decompression; larger bodies fail.",
    )
    max_redirects: int = Field(
        5, ge=0, le=100, description="Redirect hops followed before giving up."
    )
    max_url_length: int = Field(2048, ge=16, le=65_536, description="Longer URLs are not fetched.")
    retries: int = Field(2, ge=0, le=20, description="Retries for timeouts, 5xx and 429.")
    backoff_base: float = Field(
        0.5, ge=0, le=HOUR, description="First retry waits about this long."
    )
    backoff_max: float = Field(
        30.0, ge=0, le=DAY, description="No retry waits longer (Retry-After too)."
    )
    content_types: ListSetting = Field(
        ("text/html", "application/xhtml+xml"),
        min_length=1,
        description="Content types whose bodies are kept and parsed (type/subtype or type/*).",
    )
    proxies: ListSetting = Field((), description="Proxy URLs; empty means direct.")
    proxy_max_latency: float = Field(
        2.0,
        gt=0,
        le=HOUR,
        description="Proxies slower than this (seconds, moving average) are benched.",
    )
    proxy_bench_seconds: float = Field(
        60.0, gt=0, le=DAY, description="How long a proxy stays benched."
    )
    connections: int = Field(100, gt=0, le=10_000, description="Total open connections.")

    _lists = field_validator("content_types", "proxies", mode="before")(_comma_list)

    @field_validator("user_agent")
    @classmethod
    def _header_value(cls, value: str) -> str:
        return _no_control_characters(value)

    @field_validator("content_types")
    @classmethod
    def _media_types(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _MEDIA_TYPE.fullmatch(value):
                raise ValueError(f"{value!r} is not a media type such as text/html or text/*")
        return values

    @field_validator("proxies")
    @classmethod
    def _proxy_urls(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            _no_control_characters(value)
            if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
                raise ValueError("each proxy must be an http:// or https:// URL without spaces")
        return values


class PolitenessSettings(_Section):
    """How gently each host is treated."""

    delay: float = Field(
        0.0,
        ge=0,
        le=HOUR,
        description=(
            "Minimum seconds between the starts of two requests to a host, whatever "
            "`per_host` allows in flight (across all workers of a distributed crawl)."
        ),
    )
    per_host: int = Field(8, gt=0, le=1000, description="Concurrent requests to one host.")
    obey_robots: bool = Field(True, description="Honour robots.txt rules and Crawl-delay.")
    max_crawl_delay: float = Field(
        30.0, ge=0, le=DAY, description="Cap on a robots.txt Crawl-delay."
    )
    robots_error_ttl: float = Field(
        600.0,
        gt=0,
        le=WEEK,
        description=(
            "Seconds a host stays disallowed after robots.txt gave a 429 or 5xx or a network"
            " error; a robots.txt that timed out is asked again after 15 s, then 30, 60, ..."
            " up to this."
        ),
    )
    hold_patience: float = Field(
        60.0,
        ge=0,
        le=DAY,
        description=(
            "Seconds of a held host's wait (robots.txt unreadable, the server asked for a long"
            " pause) the crawl sits out when only that host is left; a longer hold ends the"
            " crawl and its URLs are recorded as host_held, left queued for a resumed crawl."
        ),
    )


class ScopeSettings(_Section):
    """Which URLs the crawl may follow."""

    allowed_domains: ListSetting = Field(
        (), description="Registered domains or hosts to stay within; empty means the seeds'."
    )
    include: PatternSetting = Field((), description="Regexes a URL must match (any of them).")
    exclude: PatternSetting = Field((), description="Regexes that rule a URL out.")
    max_depth: int = Field(
        50, ge=0, le=1_000_000, description="Links deeper than this are not followed."
    )
    follow_nofollow: bool = Field(False, description="Follow rel=nofollow links too.")

    _lists = field_validator("allowed_domains", mode="before")(_comma_list)
    _patterns = field_validator("include", "exclude", mode="before")(_pattern_list)

    @field_validator("allowed_domains")
    @classmethod
    def _hosts(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _HOST.fullmatch(value):
                raise ValueError(
                    f"{value!r} is not a domain or host name (no scheme, path, port or spaces)"
                )
        return values

    _regexes = field_validator("include", "exclude")(_valid_regexes)


class FrontierSettings(_Section):
    """The queue of URLs to fetch."""

    kind: Literal["memory", "sqlite"] = Field("sqlite", description="Where the frontier lives.")
    lease_ttl: float = Field(
        300.0, gt=0, le=WEEK, description="Seconds before an un-acked lease expires."
    )
    bloom_capacity: int = Field(
        1_000_000, gt=0, le=10**9, description="URLs the Bloom filter is sized for."
    )
    bloom_error_rate: float = Field(1e-7, ge=1e-12, lt=1, description="Bloom false-positive rate.")
    memory_keys_per_host: int = Field(
        512,
        ge=0,
        le=10_000_000,
        description=(
            "SQLite frontier: most queued URLs of one host kept in memory (their ordering"
            " keys, ~64 bytes each); the rest wait in the table and are read back best first."
            " 0 keeps all (memory grows with the URLs queued, and pushes skip the index"
            " read-backs need); otherwise at least 2."
        ),
    )
    memory_keys_total: int = Field(
        1_000_000,
        ge=0,
        le=1_000_000_000,
        description=(
            "SQLite frontier, with memory_keys_per_host on: most queued URLs of all hosts"
            " together kept in memory (~64 MB at 1,000,000); past it every host keeps the"
            " same number of its best, down to one (many small hosts, which the per-host"
            " bound does not bound). 0: no total bound."
        ),
    )


class StorageSettings(_Section):
    """Where results are kept."""

    url: str = Field(
        "topicrawl.db", min_length=1, description="SQLite file path, or a postgresql:// URL."
    )
    batch_size: int = Field(200, gt=0, le=100_000, description="Rows written per batch.")
    flush_interval: float = Field(1.0, gt=0, le=HOUR, description="Seconds between batch writes.")
    keep_body: bool = Field(False, description="Keep raw bodies (needed for WARC export).")
    busy_timeout: float = Field(
        10.0,
        gt=0,
        le=HOUR,
        description=(
            "SQLite: seconds a write waits for another connection's lock (the frontier and the"
            " storage share the file) before it is put off and tried again later."
        ),
    )
    attempt_timeout: float = Field(
        120.0,
        gt=0,
        le=HOUR,
        description=(
            "Seconds one database operation may take in all (connect, statements, commit);"
            " then it is retried on a new connection, as after a lost one."
        ),
    )
    link_scores: bool = Field(
        True,
        description=(
            "Keep each page's link priorities and their component scores (the best 300 links,"
            " in the page's row; shown by the dashboard's page view)."
        ),
    )
    samples_interval: float = Field(
        2.0,
        ge=0,
        le=HOUR,
        description=(
            "Seconds between the crawl's live samples (table run_samples, read by the"
            " dashboard); 0 = none."
        ),
    )

    @field_validator("url")
    @classmethod
    def _printable(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty: give a SQLite file path or a postgresql:// URL")
        return _no_control_characters(value)


# -- kg --
class VideoSettings(_Section):
    """Video pages: recognising them in the parse workers, listing their media URLs."""

    detect: bool = Field(
        True,
        description=(
            "Recognise video and play pages (<video>, og:video, JSON-LD VideoObject, player"
            " configs, HLS/DASH) and store their media URLs in page_media."
        ),
    )
    fetch_manifests: bool = Field(
        True,
        description=(
            "Fetch the HLS/DASH manifests a play page links (politely, like pages) to list"
            " their renditions; off lists the manifests unread."
        ),
    )
    max_manifests: int = Field(8, ge=0, le=64, description="Manifests fetched per page at most.")
    max_manifest_bytes: int = Field(
        2_000_000, ge=1024, le=50_000_000, description="Largest manifest read, in bytes."
    )
    fetch_media: bool = Field(
        False,
        description=(
            "Also fetch each listed media file (not manifests), up to max_media_bytes, and"
            " record its status and size; bodies are not stored."
        ),
    )
    max_media_bytes: int = Field(
        10_000_000, ge=1024, le=10_000_000_000, description="Bytes of a media file read at most."
    )
    follow_embeds: bool = Field(
        False,
        description=(
            "Follow a video page's player pages (JSON-LD embedUrl, twitter:player, og:video of"
            " type text/html) as links, in scope like any link."
        ),
    )
    plugins: bool = Field(
        True,
        description="Load per-domain video resolvers (entry points topicrawl.video_resolvers).",
    )


class KgSettings(_Section):
    """The knowledge graph: recognising entities in pages, and preferring some of them."""

    recognise: bool | None = Field(
        None,
        description=(
            "Recognise and link entities in every page (in the parse workers) and record them"
            " in the database's kg tables; None = when the database has a knowledge base"
            " (`topicrawl kg load`) or entities are preferred."
        ),
    )
    prefer: ListSetting = Field(
        (),
        description=(
            "Entities whose links are crawled first: KB ids or names (a name the KB lacks is"
            " looked for as it is)."
        ),
    )
    radius: int = Field(
        1, ge=0, le=5, description="Relations from a preferred entity that still count."
    )
    boost: float | None = Field(
        None,
        gt=0,
        le=1000,
        description=(
            "Score added to a link naming a preferred entity (a neighbour d relations away:"
            " boost / (1 + d)); None = 1 for the scoring strategies (scores of 0-1) and"
            " scope.max_depth + 1 for bfs (scores are -depth, so a preferred link goes ahead"
            " of every level)."
        ),
    )
    block_exponent: float = Field(
        0.0,
        ge=0,
        le=4,
        description=(
            "A link on a page that mentions a preferred entity is raised by the page's mention"
            " times n ** -block_exponent, n the links of its block (0: every link alike; 1: a"
            " navigation block of 20 links gets a twentieth)."
        ),
    )

    _lists = field_validator("prefer", mode="before")(_pattern_list)

    @field_validator("prefer")
    @classmethod
    def _names_are_text(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not name.strip():
                raise ValueError("an empty entity name")
            _no_control_characters(name)
        return tuple(" ".join(name.split()) for name in names)


# -- end kg --


# -- revisit --
class RevisitSettings(_Section):
    """Revisits: fetched pages queued again for when they are due (``crawl --revisit``)."""

    enabled: bool = Field(False, description="Keep the crawl alive and re-fetch what is due.")
    mode: Literal["change-rate", "tiers"] = Field(
        "change-rate",
        description=(
            "change-rate: freshness-optimal intervals from each page's estimated change rate"
            " for the budget (Cho and Garcia-Molina), weighted by each page's relevance; tiers:"
            " by relevance (a popularity source, e.g. a video's counts, can replace it)."
        ),
    )
    day_seconds: float = Field(
        DAY, gt=0, le=DAY, description="Length of a day in seconds (a demo can make it 2)."
    )
    periods_days: tuple[float, float, float] = Field(
        (1.0, 3.0, 7.0), description="Revisit periods of tiers 1, 2 and 3, in days."
    )
    recompute_days: float = Field(7.0, gt=0, le=365, description="Days between tier updates.")
    budget: float | None = Field(
        None,
        gt=0,
        description=(
            "Revisit fetches a day (change-rate mode); None = every known page once per"
            " tier-2 period on average."
        ),
    )
    round_to_tiers: bool = Field(
        False,
        description=(
            "Schedule at the tiers' periods instead of each page's optimal interval (the"
            " tiers are shown to the user either way; rounding costs freshness)."
        ),
    )
    max_seconds: float = Field(
        0.0, ge=0, description="Seconds a revisit crawl runs before it stops (0 = until stopped)."
    )

    @field_validator("periods_days")
    @classmethod
    def _periods(cls, periods: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(p <= 0 for p in periods) or list(periods) != sorted(periods):
            raise ValueError(f"periods must be positive and not decrease: {periods}")
        return periods


# -- end revisit --


# -- render --
class BrowserSettings(_Section):
    """The browser pages are rendered in (``render`` auto or always; see topicrawl.render)."""

    executable: str = Field(
        "/usr/bin/chromium", min_length=1, description="The Chromium binary (never downloaded)."
    )
    pages: int = Field(4, gt=0, le=64, description="Pages rendered at once (one browser).")
    page_timeout: float = Field(
        15.0,
        gt=0,
        le=HOUR,
        description="Seconds a page may take to load and settle; then it fails.",
    )
    settle: float = Field(
        0.2,
        ge=0,
        le=60,
        description="Seconds without a script or XHR in flight after load before the DOM is read.",
    )
    resource_timeout: float = Field(
        5.0, gt=0, le=HOUR, description="Seconds for one script or XHR a page loads."
    )
    resource_bytes: int = Field(
        2_000_000, gt=0, le=2**30, description="Cap on one script or XHR body."
    )
    page_bytes: int = Field(
        8_000_000, gt=0, le=2**31, description="Cap on all the scripts and XHR of one page."
    )
    max_requests: int = Field(
        50, ge=0, le=10_000, description="Scripts and XHR one page may load; the rest abort."
    )
    heap_mb: int = Field(
        256,
        ge=16,
        le=16_384,
        description="JavaScript heap of a page's renderer (MB); over it, it crashes.",
    )
    recycle_after: int = Field(
        500,
        gt=0,
        le=10**7,
        description="Renders before the browser is replaced (memory stays flat).",
    )
    recycle_mb: int = Field(
        0,
        ge=0,
        le=2**20,
        description="Also replace the browser when its processes' PSS passes this many MB"
        " (checked every 20 renders; 0: by count only). Keep the count too: Playwright holds"
        " every request of a browser until it closes (~44 KB a render in this process).",
    )
    gc_every: int = Field(
        1,
        ge=0,
        le=10**7,
        description="Renders of a kept page between full garbage collections in its renderer"
        " (0: never; without them each render leaves ~2 MB of DOM garbage until recycling).",
    )
    cache_bytes: int = Field(
        16_000_000, ge=0, le=2**31, description="Scripts kept between pages (same URL, 200)."
    )
    min_text: int = Field(
        200, ge=0, le=10**6, description="auto: a page with scripts and less text is rendered."
    )
    hinted_text: int = Field(
        1_000,
        ge=0,
        le=10**6,
        description="auto: the text bar with an empty app root or a framework marker.",
    )
    site_rules: PatternSetting = Field(
        (), description="auto: URL regexes always rendered (a site rule)."
    )

    _patterns = field_validator("site_rules", mode="before")(_pattern_list)

    _regexes = field_validator("site_rules")(_valid_regexes)


# -- end render --


class CrawlSettings(BaseSettings):
    """A whole crawl's settings."""

    model_config = SettingsConfigDict(
        env_prefix="TOPICRAWL_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
    )

    seeds: ListSetting = Field((), description="Start URLs.")
    topics: ListSetting = Field((), description="Topic keyword strings, one per topic.")
    strategy: str = Field(
        "bfs", min_length=1, description="Crawl policy: bfs, best-first, shark, focused."
    )
    strategy_options: dict[str, float | int | bool | str | list[str]] = Field(
        default_factory=dict,
        description="Options of the strategy (e.g. decay, threshold); checked by the strategy.",
    )
    sitemaps: bool = Field(
        False,
        description="Also seed from the seed hosts' sitemaps (robots.txt, else /sitemap.xml).",
    )
    feeds: ListSetting = Field((), description="RSS/Atom feed URLs whose entries seed.")
    max_pages: int = Field(
        1000, ge=0, le=10**9, description="Stop after this many fetched pages (0 = none)."
    )
    concurrency: int = Field(16, gt=0, description="Requests in flight at once.")
    pages_in_hand: int = Field(
        0,
        ge=0,
        le=100_000,
        description=(
            "URLs worked on at once (fetched, parsed or stored); 0 = 3 x concurrency for bfs,"
            " concurrency for scoring strategies. Above concurrency, requests go on while"
            " fetched pages are parsed and stored; requests in flight stay capped by"
            " concurrency and politeness.per_host."
        ),
    )
    parse_workers: int = Field(
        -1,
        ge=-1,
        description=(
            "HTML parsing processes; 0 parses in-process, -1 = cores - 1; at most 4 x cores."
        ),
    )
    fetch: FetchSettings = FetchSettings()
    politeness: PolitenessSettings = PolitenessSettings()
    scope: ScopeSettings = ScopeSettings()
    frontier: FrontierSettings = FrontierSettings()
    storage: StorageSettings = StorageSettings()
    kg: KgSettings = KgSettings()
    revisit: RevisitSettings = RevisitSettings()
    parsers: str | None = Field(
        None,
        description=(
            "TOML file of site schemas and rules for the parser library (see"
            " topicrawl.parse.methods.schema); None = no records are extracted."
        ),
    )
    video: VideoSettings = VideoSettings()
    render: Literal["never", "auto", "always"] = Field(
        "never",
        description=(
            "Render pages in Chromium before parsing: never, auto (pages that look like script"
            " shells, or match browser.site_rules) or always (every HTML page)."
        ),
    )
    browser: BrowserSettings = BrowserSettings()

    _lists = field_validator("seeds", "topics", "feeds", mode="before")(_comma_list)

    @field_validator("seeds", "feeds")
    @classmethod
    def _seeds_are_http(cls, seeds: tuple[str, ...]) -> tuple[str, ...]:
        for seed in seeds:
            if not seed.startswith(("http://", "https://")):
                raise ValueError(f"{seed!r} is not an http(s) URL")
            _no_control_characters(seed)
        return seeds

    @field_validator("topics")
    @classmethod
    def _topics_have_words(cls, topics: tuple[str, ...]) -> tuple[str, ...]:
        if any(not topic.strip() for topic in topics):
            raise ValueError("a topic is empty: give its keywords, e.g. 'java thread'")
        return topics

    @field_validator("strategy_options", mode="before")
    @classmethod
    def _finite_options(cls, options: object) -> object:
        # Before validation: JSON's NaN and Infinity would otherwise fail every member of the
        # value's union, each with its own message.
        if isinstance(options, dict):
            for name, value in options.items():
                if isinstance(value, float) and not math.isfinite(value):
                    raise ValueError(f"option {name!r} is {value}: give a finite number")
        return options

    @field_validator("parse_workers")
    @classmethod
    def _workers_within_cores(cls, workers: int) -> int:
        cores = usable_cores()
        if workers > WORKERS_PER_CORE * cores:
            raise ValueError(
                f"{workers} parse workers for {cores} cores: at most {WORKERS_PER_CORE * cores}"
                f" ({WORKERS_PER_CORE} per core; each is a process of about 100 MB), or -1 for"
                " cores - 1"
            )
        return workers

    @model_validator(mode="after")
    def _lease_outlasts_a_request(self) -> Self:
        if self.frontier.lease_ttl <= self.fetch.timeout:
            raise ValueError(
                f"frontier.lease_ttl ({self.frontier.lease_ttl:g} s) must be longer than "
                f"fetch.timeout ({self.fetch.timeout:g} s): a lease would expire, and its URL "
                "be fetched again, while the first request still runs"
            )
        return self

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
        # The environment source names the variable when a value cannot be decoded.
        environment = EnvironmentSource(settings_cls)
        return (init_settings, environment, *_toml_sources(settings_cls))


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
        raise ConfigError(describe_invalid(exc, overrides, path)) from exc
    except SettingsError as exc:
        raise ConfigError(describe_unreadable(exc)) from exc
    finally:
        _toml_path = None
