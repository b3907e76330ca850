"""The ``topicrawl`` command line: crawl, demo, export."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from topicrawl.cli import common
from topicrawl.cli.accounts import app as accounts_app
from topicrawl.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_MISSING,
    EXIT_SERVICE,
    dump_tasks_on_sigusr1,
    err,
    fail,
    out,
    run,
    seeds_or_exit,
    setup_logging,
)
from topicrawl.cli.kg import app as kg_app
from topicrawl.cli.kg import kg_overrides
from topicrawl.cli.label import label as label_command
from topicrawl.cli.label import print_learning
from topicrawl.cli.learn import app as learn_app
from topicrawl.cli.options import (
    AllowDomainOption,
    DelayOption,
    ExcludeOption,
    IgnoreRobotsOption,
    IncludeOption,
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
    revisit_overrides,
)
from topicrawl.cli.parsers import app as parsers_app
from topicrawl.cli.progress import CrawlProgress, held_line, print_summary
from topicrawl.cli.seeds import SearxOption, checked_searx, search_or_exit
from topicrawl.cli.seeds import app as seeds_app
from topicrawl.cli.topics import app as topics_app
from topicrawl.cli.video import app as video_app
from topicrawl.core.config import load_settings
from topicrawl.core.errors import (
    ConfigError,
)

if TYPE_CHECKING:
    from topicrawl.engine.build import CrawlReport

__all__ = ["app", "main"]

app = typer.Typer(
    name="topicrawl",
    help="A topic-focused web crawler.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(topics_app, name="topics")
app.add_typer(kg_app, name="kg")
app.add_typer(accounts_app, name="accounts")
app.add_typer(parsers_app, name="parsers")
app.add_typer(video_app, name="video")
app.add_typer(learn_app, name="learn")
app.add_typer(seeds_app, name="seeds")
app.command(name="label")(label_command)

EXIT_CONFIG = common.EXIT_CONFIG  # the exit codes, for the commands that import them from here
EXIT_UNREACHABLE = EXIT_MISSING
EXIT_STORAGE = EXIT_SERVICE

T = TypeVar("T")


class _QuitNow(Exception):
    """A second Ctrl-C (or SIGTERM) cut the crawl short without finishing pages in flight."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(sig.name)
        self.signal = sig


def _run(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine, turning topicrawl's errors into messages and exit codes."""
    try:
        return run(coro_factory)
    except _QuitNow as exc:
        # Leases of the pages in flight were not acked: the next run fetches them again.
        err.print(f"interrupted by {exc.signal.name}: run the same command again to resume")
        raise typer.Exit(128 + exc.signal.value) from exc


async def _crawl(
    settings_kwargs: dict[str, Any], config: Path | None, quiet: bool, metrics_port: int | None
) -> tuple[CrawlReport, signal.Signals | None]:
    """Run the crawl; returns its report and the signal that stopped it early, if one did."""
    from topicrawl.engine.build import CrawlReport, open_crawl  # noqa: PLC0415 - slow import
    from topicrawl.engine.heap import settle_heap  # noqa: PLC0415

    settings = load_settings(config, **settings_kwargs)
    if not settings.seeds and not settings.feeds:
        raise ConfigError("no seeds: give --seed URL (repeatable), --seeds-file FILE or --feed URL")
    progress = CrawlProgress(console=err, total=settings.max_pages, enabled=not quiet)
    stopped_by: list[signal.Signals] = []
    try:
        with progress:
            async with open_crawl(
                settings, on_progress=progress.update, metrics_port=metrics_port
            ) as crawler:
                settle_heap()
                loop = asyncio.get_running_loop()

                def on_signal(sig: signal.Signals) -> None:
                    stopped_by.append(sig)
                    if len(stopped_by) == 1:
                        err.print(
                            "[yellow]stopping: finishing pages in flight (Ctrl-C again to quit now)"
                        )
                        crawler.stop()
                    else:
                        for task in asyncio.all_tasks(loop):
                            task.cancel()

                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, on_signal, sig)
                dump_tasks_on_sigusr1()
                stats = await crawler.run()
                left = await crawler.frontier.queued()
    except asyncio.CancelledError:
        if len(stopped_by) < 2:
            raise
        raise _QuitNow(stopped_by[0]) from None
    report = CrawlReport(
        stats=stats, run_id=crawler.run_id, storage_url=settings.storage.url, queued_left=left
    )
    return report, (stopped_by[0] if stopped_by else None)


@app.command()
def crawl(  # noqa: PLR0917 - typer maps each option to a parameter
    seed: SeedOption = None,
    seeds_file: SeedsFileOption = None,
    sitemaps: Annotated[
        bool, typer.Option(help="Also seed from the seed hosts' sitemaps.")
    ] = False,
    feed: Annotated[
        list[str] | None, typer.Option("--feed", help="RSS/Atom feed whose entries seed.")
    ] = None,
    topic: TopicOption = None,
    strategy: StrategyOption = None,
    max_pages: Annotated[
        int | None, typer.Option(help="Stop after N pages (0 = no limit).")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight.")] = None,
    per_host: PerHostOption = None,
    delay: DelayOption = None,
    max_depth: MaxDepthOption = None,
    allow_domain: AllowDomainOption = None,
    include: IncludeOption = None,
    exclude: ExcludeOption = None,
    ignore_robots: IgnoreRobotsOption = False,
    hold_patience: Annotated[
        float | None,
        typer.Option(
            help="Seconds a held host (robots.txt unreadable, long Retry-After) is waited for"
            " when nothing else is left (60); a longer hold ends the crawl."
        ),
    ] = None,
    frontier: Annotated[str | None, typer.Option(help="sqlite (resumable) or memory.")] = None,
    db: Annotated[str | None, typer.Option(help="SQLite file or postgresql:// URL.")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML settings file.")] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning, error.")] = "warning",
    metrics_port: MetricsPortOption = None,
    # kg
    prefer_entity: Annotated[
        list[str] | None,
        typer.Option(help="Crawl links tied to this entity first (KB id or name; repeatable)."),
    ] = None,
    prefer_entities: Annotated[
        Path | None, typer.Option(help="File of preferred entities, one per line.")
    ] = None,
    entity_radius: Annotated[
        int | None, typer.Option(help="Relations from a preferred entity that still count.")
    ] = None,
    # revisit
    revisit: Annotated[
        bool,
        typer.Option(
            help="Keep the crawl alive and fetch pages again when due (conditional requests,"
            " change rates, tiers of 1/3/7 days)."
        ),
    ] = False,
    revisit_day: Annotated[
        float | None,
        typer.Option(help="Seconds in a revisit 'day' (86400; a demo can use e.g. 2)."),
    ] = None,
    revisit_for: Annotated[
        float | None, typer.Option(help="Seconds a --revisit crawl runs (0: until stopped).")
    ] = None,
    revisit_budget: Annotated[
        float | None, typer.Option(help="Revisit fetches a day (default: pages / 3 days).")
    ] = None,
    parsers: Annotated[
        Path | None,
        typer.Option(help="TOML file of site schemas and rules: extract records from pages."),
    ] = None,
    # video
    video: Annotated[
        bool | None,
        typer.Option(help="Recognise video and play pages and store their media URLs (on)."),
    ] = None,
    fetch_media: Annotated[
        bool,
        typer.Option(
            help="Also fetch each media file listed (capped at video.max_media_bytes, not stored)."
        ),
    ] = False,
    render: RenderOption = None,
    seed_search: Annotated[
        str | None,
        typer.Option(help="Also seed from meta-search results for this query (needs --searx)."),
    ] = None,
    searx: SearxOption = None,
    seed_search_limit: Annotated[
        int, typer.Option(help="Meta-search seeds to take (the best by fused rank).")
    ] = 20,
) -> None:
    """Crawl from seeds; run it again with the same --db to resume an interrupted crawl."""
    setup_logging(log_level)
    seeds = seeds_or_exit(seed, seeds_file)
    if seed_search is not None:
        url = checked_searx(searx, "--seed-search")
        found = search_or_exit(url, seed_search, limit=seed_search_limit)
        err.print(f"{len(found)} seeds from meta-search for {seed_search!r}")
        seeds += [p.url for p in found if p.url not in seeds]
        topic = topic or [seed_search]
    try:
        kg = kg_overrides(prefer_entity, prefer_entities, entity_radius)
    except ConfigError as exc:
        fail(exc)
    kwargs = crawl_overrides(locals(), seeds=seeds)
    if sitemaps:
        kwargs["sitemaps"] = True
    if hold_patience is not None:
        kwargs.setdefault("politeness", {})["hold_patience"] = hold_patience
    put(kwargs, "feeds", tuple(feed) if feed else None)
    put(kwargs, "frontier", {"kind": frontier} if frontier else None)
    put(kwargs, "kg", kg)
    put(kwargs, "revisit", revisit_overrides(revisit, revisit_day, revisit_for, revisit_budget))
    put(kwargs, "parsers", str(parsers) if parsers is not None else None)
    video_settings: dict[str, bool] = {}
    if video is not None:
        video_settings["detect"] = video
    if fetch_media:
        video_settings["fetch_media"] = True
    put(kwargs, "video", video_settings or None)
    report, stopped_by = _run(lambda: _crawl(kwargs, config, quiet, metrics_port))
    print_summary(out, report)
    _run(lambda: print_learning(out, report.storage_url))
    if stopped_by is not None:
        # Stopped cleanly (pages in flight finished and stored) but not done: exit 128 + the
        # signal (130 for Ctrl-C, 143 for SIGTERM) so that a script can tell it from the end.
        err.print(f"interrupted by {stopped_by.name}: run the same command again to resume")
        raise typer.Exit(128 + stopped_by.value)
    _exit_for(report)


def _exit_for(report: CrawlReport) -> None:
    stats = report.stats
    if stats.pages == 0 and stats.error_count:
        if stats.held:
            err.print(f"[red]error:[/red] no page could be fetched: {held_line(stats)}")
        else:
            err.print("[red]error:[/red] no page could be fetched; are the seeds reachable?")
        raise typer.Exit(EXIT_UNREACHABLE)


@app.command()
def demo(
    db: Annotated[Path | None, typer.Option(help="Where to keep the results.")] = None,
    strategy: Annotated[str, typer.Option(help="bfs, best-first, shark, focused.")] = "focused",
    max_pages: Annotated[int, typer.Option(help="Pages to fetch.")] = 300,
    seed: Annotated[int, typer.Option(help="Random seed of the demo web.")] = 7,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Serve the built-in demo web on loopback, crawl it, and summarise against ground truth."""
    from topicrawl.cli.demo import run_demo  # noqa: PLC0415 - keeps `topicrawl --help` fast

    setup_logging("warning")
    _run(lambda: run_demo(db=db, strategy=strategy, max_pages=max_pages, seed=seed, quiet=quiet))


@app.command()
def export(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    format: Annotated[str, typer.Option(help="jsonl, csv or warc (warc: pages only).")] = "jsonl",
    output: Annotated[Path | None, typer.Option(help="File to write (default stdout).")] = None,
    what: Annotated[
        str, typer.Option(help="pages (in fetch order) or failures (one per failed URL).")
    ] = "pages",
) -> None:
    """Write one record per fetched page, or per failed URL."""
    from topicrawl.cli.exporting import run_export  # noqa: PLC0415

    setup_logging("warning")
    count = _run(lambda: run_export(db=db, fmt=format, output=output, what=what))
    err.print(f"exported {count} {what}")


from topicrawl.cli import distributed as _distributed  # noqa: E402 - needs `app` defined

app.command()(_distributed.worker)
app.command()(_distributed.coordinator)
app.command()(_distributed.nodes)
from topicrawl.cli.crawlns import app as _crawl_ns_app  # noqa: E402

app.add_typer(_crawl_ns_app, name="crawl-ns")

from topicrawl.cli.serve import serve as _serve  # noqa: E402

app.command(name="serve")(_serve)


def main() -> None:
    """Console entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)
