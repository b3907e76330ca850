"""``topicrawl topics``: track topics on a microblog, and show their heat history."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from topicrawl.core.errors import ConfigError, StorageError

if TYPE_CHECKING:
    from topicrawl.demoweb.microblog import MicroblogServer
    from topicrawl.storage import SqlStorage
    from topicrawl.topics.forecast import AlphaRule
    from topicrawl.topics.store import TrackingHistory
    from topicrawl.topics.supervisor import TopicResult
    from topicrawl.topics.tracker import CrawlSupervisor, PeriodReport

__all__ = ["app"]

app = typer.Typer(
    name="topics",
    help="Track topics and their heat on a microblog; show heat history and forecasts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

TOKEN_ENV = "TOPICRAWL_MASTODON_TOKEN"  # noqa: S105 - the variable's name, not a secret


@dataclass(frozen=True, slots=True)
class TrackArgs:
    source: str | None
    keywords: tuple[str, ...]
    hashtags: tuple[str, ...]
    periods: int
    period_seconds: float
    db: str
    demo: bool
    seed: int
    token: str | None
    max_posts: int
    per_process_cpu: float
    max_processes: int
    crawl: bool
    alpha: str = "volatility"


def _run_cli(coro: Coroutine[Any, Any, None]) -> None:
    from topicrawl.cli.app import EXIT_CONFIG, EXIT_STORAGE  # noqa: PLC0415 - avoids a cycle
    from topicrawl.core.errors import FetchError, TopicrawlError  # noqa: PLC0415

    try:
        asyncio.run(coro)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        raise typer.Exit(EXIT_CONFIG) from exc
    except StorageError as exc:
        err.print(f"[red]database error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_STORAGE) from exc
    except FetchError as exc:
        err.print(f"[red]microblog error:[/red] {exc}", highlight=False)
        raise typer.Exit(3) from exc
    except TopicrawlError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc


@app.command()
def track(  # noqa: PLR0917 - typer maps each option to a parameter
    source: Annotated[
        str | None, typer.Option(help="Mastodon-compatible server, e.g. https://mastodon.social")
    ] = None,
    keyword: Annotated[
        list[str] | None, typer.Option("--keyword", "-k", help="Keyword to search (repeatable).")
    ] = None,
    hashtag: Annotated[
        list[str] | None, typer.Option("--hashtag", help="Hashtag timeline to read (repeatable).")
    ] = None,
    periods: Annotated[int, typer.Option(help="Periods to track.", min=1)] = 6,
    period_seconds: Annotated[
        float, typer.Option(help="Length of a period in seconds.", min=0.0)
    ] = 60.0,
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "topics.db",
    demo: Annotated[
        bool, typer.Option(help="Serve the demo microblog (and demo web) on loopback and track it.")
    ] = False,
    seed: Annotated[int, typer.Option(help="Random seed of the demo microblog.")] = 11,
    token: Annotated[
        str | None, typer.Option(help=f"Access token (default: ${TOKEN_ENV}).")
    ] = None,
    max_posts: Annotated[int, typer.Option(help="Posts read per keyword per period.", min=1)] = 400,
    per_process_cpu: Annotated[
        float, typer.Option(help="CPU % one crawler process uses.", min=0.1)
    ] = 25.0,
    max_processes: Annotated[int, typer.Option(help="Crawler processes per topic.", min=1)] = 4,
    crawl: Annotated[
        bool, typer.Option(help="Run each topic's crawler processes on its posts' links.")
    ] = False,
    alpha: Annotated[
        str,
        typer.Option(
            help="DES smoothing: a number in (0, 1), 'volatility' (0.3, or 0.6 for volatile "
            "topics) or 'auto' (least squared error on the topic's history)."
        ),
    ] = "volatility",
) -> None:
    """Track topics period by period: posts, topics, heat, forecasts and CPU allocations.

    With --demo and no keywords, the demo microblog's six topics are tracked; a period there
    lasts --period-seconds (try 2).
    """
    args = TrackArgs(
        source=source,
        keywords=tuple(keyword or ()),
        hashtags=tuple(hashtag or ()),
        periods=periods,
        period_seconds=period_seconds,
        db=db,
        demo=demo,
        seed=seed,
        token=token or os.environ.get(TOKEN_ENV) or None,
        max_posts=max_posts,
        per_process_cpu=per_process_cpu,
        max_processes=max_processes,
        crawl=crawl,
        alpha=alpha,
    )
    if not demo and not source:
        err.print("[red]error:[/red] give --source URL, or --demo to track the demo microblog")
        raise typer.Exit(2)
    _run_cli(_track(args))


def _alpha(text: str) -> AlphaRule:
    if text == "auto":
        return "auto"
    if text == "volatility":
        return "volatility"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise ConfigError(
            f"--alpha must be a number in (0, 1), 'auto' or 'volatility', got {text!r}"
        )
    return value


@contextlib.contextmanager
def _demo_services(seed: int, periods: int) -> Iterator[tuple[str, MicroblogServer]]:
    """The demo web and the demo microblog (whose posts link to its pages), on loopback."""
    from topicrawl.demoweb import DemoWeb, DemoWebServer  # noqa: PLC0415
    from topicrawl.demoweb.microblog import MicroblogServer, MicroblogWorld  # noqa: PLC0415

    web_server = DemoWebServer(DemoWeb.generate(seed=7), slow_delay=1.0)
    with web_server.run_in_thread():
        web = web_server.web
        targets: dict[str, list[str]] = {}
        for page in web.pages:
            if page.true_topic is not None and page.kind.value == "article":
                targets.setdefault(page.true_topic, []).append(web.url_of(page))
        world = MicroblogWorld.generate(seed=seed, periods=max(periods, 12), link_targets=targets)
        server = MicroblogServer(world)
        with server.run_in_thread():
            yield server.base_url, server


@contextlib.asynccontextmanager
async def _supervisor(enabled: bool, db: str) -> AsyncIterator[CrawlSupervisor | None]:
    if not enabled:
        yield None
        return
    from topicrawl.storage import SqlStorage  # noqa: PLC0415
    from topicrawl.topics.supervisor import TopicSupervisor  # noqa: PLC0415

    queue = Path(db).with_suffix(".queue.db") if "://" not in db else Path("topics.queue.db")
    storage = SqlStorage(db)
    await storage.open()
    try:
        run_id = await storage.start_run(name="topics-crawl", config="{}")
        supervisor = TopicSupervisor(
            queue_path=queue, obey_robots=True, on_result=_result_saver(storage, run_id)
        )
        await supervisor.start()
        try:
            yield supervisor
        finally:
            await supervisor.close()
            await storage.finish_run(run_id, stats="{}")
    finally:
        await storage.close()


def _result_saver(storage: SqlStorage, run_id: int) -> Callable[[TopicResult], Awaitable[None]]:
    """Keep what the topic crawlers fetch: pages in ``pages``, failures in ``failures``."""
    from topicrawl.core.models import ErrorKind, FetchFailure, Link, Page  # noqa: PLC0415

    async def save(result: TopicResult) -> None:
        page = result.page
        now = time.time()
        if page.error is None:
            await storage.save_page(
                Page(
                    url=page.url,
                    final_url=page.final_url,
                    status=page.status,
                    depth=0,
                    fetched_at=now,
                    content_type=page.content_type,
                    title=page.title,
                    text=page.excerpt,
                    links=tuple(Link(url, "") for url in page.links),
                    reasons={"topic": float(result.topic)},
                ),
                run_id=run_id,
            )
            return
        try:
            kind = ErrorKind(page.error_kind or "")
        except ValueError:
            kind = ErrorKind.OTHER
        await storage.save_failure(
            FetchFailure(
                url=page.url,
                kind=kind,
                message=page.error,
                at=now,
                status=page.status or None,
                depth=0,
                parent_url=None,
                attempts=result.attempts,
            ),
            run_id=run_id,
        )

    return save


async def _track(args: TrackArgs) -> None:
    from topicrawl.sources.microblog import MastodonClient  # noqa: PLC0415 - slow imports
    from topicrawl.topics.store import TopicStore  # noqa: PLC0415
    from topicrawl.topics.tracker import TopicTracker, TrackerOptions  # noqa: PLC0415

    with contextlib.ExitStack() as stack:
        demo_server: MicroblogServer | None = None
        source = args.source or ""
        keywords = args.keywords
        if args.demo:
            source, demo_server = stack.enter_context(_demo_services(args.seed, args.periods))
            if not keywords and not args.hashtags:
                keywords = demo_server.world.keywords()
            out.print(f"demo microblog at {source} (periods advance every period)")
        try:
            options = TrackerOptions(
                keywords=keywords,
                hashtags=args.hashtags,
                max_posts_per_query=args.max_posts,
                per_process_cpu=args.per_process_cpu,
                max_processes=args.max_processes,
                alpha=_alpha(args.alpha),
            )
        except ValueError as exc:
            raise ConfigError(f"{exc}: use --keyword K or --hashtag T") from exc
        out.print(
            f"tracking {', '.join(keywords) or '-'}"
            f"{' #' + ' #'.join(args.hashtags) if args.hashtags else ''} on {source}: "
            f"{args.periods} periods of {args.period_seconds:g} s, saved in {args.db}"
        )
        async with (
            MastodonClient(source, token=args.token) as client,
            TopicStore(args.db) as store,
            _supervisor(args.crawl, args.db) as supervisor,
        ):
            tracker = TopicTracker(
                source=client, options=options, store=store, supervisor=supervisor
            )
            await tracker.resume()
            if tracker.next_period:
                out.print(f"resuming after period {tracker.next_period - 1}")

            def before(period: int) -> None:
                if demo_server is not None:
                    demo_server.period = min(period, demo_server.world.periods - 1)

            def report(period_report: PeriodReport) -> None:
                out.print(period_table(period_report, supervisor))

            with out.status("tracking...", spinner="dots"):
                await tracker.track(
                    args.periods,
                    period_seconds=args.period_seconds,
                    before_period=before,
                    on_period=report,
                )
    out.print(f"see the history with: topicrawl topics show --db {args.db}")


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def period_table(report: PeriodReport, supervisor: CrawlSupervisor | None = None) -> Table:
    """One period's topics, heat, forecasts (each method, weights) and allocations."""
    cpu = report.cpu
    cpu_text = (
        f"CPU {cpu.total:.0f}% of {cpu.capacity:.0f}%, others {cpu.used_by_others:.0f}%"
        if cpu is not None
        else "no topics"
    )
    table = Table(
        title=(
            f"period {report.period}: {report.collected} new posts, {len(report.topics)} topics"
            f"{', retired ' + ', '.join(map(str, report.retired)) if report.retired else ''}"
            f" ({cpu_text}, {report.seconds:.1f} s)"
        ),
        title_justify="left",
    )
    table.add_column("id", justify="right", no_wrap=True, min_width=3)
    # The numbers take about 70 columns (80 with "fetched"); the words get what is left.
    room = out.width - (80 if supervisor is not None else 70)
    table.add_column("words", max_width=max(8, min(40, room)), no_wrap=True, overflow="ellipsis")
    # Numbers never wrap nor shrink: the words column gives way on a narrow terminal.
    for name in ("posts", "heat", "DES", "BP", "next", "wDES", "cap%", "proc"):
        table.add_column(name, justify="right", no_wrap=True, min_width=max(4, len(name)))
    if supervisor is not None:
        table.add_column("fetched", justify="right", no_wrap=True, min_width=7)
    stats = supervisor.stats() if supervisor is not None else {}
    for topic in report.topics:
        forecast = topic.forecast
        methods = dict(forecast.forecasts) if forecast else {}
        weights = dict(forecast.weights) if forecast else {}
        row = [
            f"{topic.topic_id}{'*' if topic.new else ''}",
            " ".join(topic.words[:5]),
            str(topic.posts),
            _num(topic.heat),
            _num(methods.get("des")),
            _num(methods.get("bp")),
            _num(forecast.value if forecast else None),
            f"{weights['des']:.2f}" if "des" in weights else "-",
            _num(topic.allocation.cpu_cap if topic.allocation else None),
            str(topic.allocation.processes) if topic.allocation else "-",
        ]
        if supervisor is not None:
            work = stats.get(topic.topic_id)
            row.append(str(getattr(work, "fetched", "-")) if work is not None else "-")
        table.add_row(*row)
    return table


# -- show ------------------------------------------------------------------------------------


@app.command()
def show(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "topics.db",
    html: Annotated[
        Path | None,
        typer.Option(help="Write the heat chart here (default: next to the database)."),
    ] = None,
    retired: Annotated[bool, typer.Option(help="Include retired topics.")] = True,
) -> None:
    """Topics with their heat history and forecasts, and a self-contained HTML chart."""
    from topicrawl.topics.chart import write_chart  # noqa: PLC0415

    if "://" not in db and not Path(db).expanduser().is_file():
        err.print(f"[red]database error:[/red] database {db} does not exist")
        raise typer.Exit(4)
    history = _load(db)
    if not history.periods:
        err.print(f"no tracked periods in {db}: run topicrawl topics track first")
        raise typer.Exit(1)
    out.print(history_table(history, include_retired=retired))
    target = html or (
        Path(db).expanduser().with_suffix(".html") if "://" not in db else Path("topics.html")
    )
    write_chart(history, target)
    out.print(f"heat chart: {target}")


def _load(db: str) -> TrackingHistory:
    from topicrawl.topics.store import TopicStore  # noqa: PLC0415

    async def load() -> TrackingHistory:
        async with TopicStore(db) as store:
            return await store.history()

    try:
        return asyncio.run(load())
    except (StorageError, ConfigError) as exc:
        err.print(f"[red]database error:[/red] {exc}", highlight=False)
        raise typer.Exit(4) from exc


def history_table(history: TrackingHistory, *, include_retired: bool = True) -> Table:
    """Every topic: its words, life span, heat per period and latest forecast."""
    from rich.markup import escape  # noqa: PLC0415

    last = history.periods[-1].period
    table = Table(
        title=f"{len(history.topics)} topics over periods {history.periods[0].period}-{last}",
        title_justify="left",
    )
    for name in ("topic", "words", "seen", "heat by period", "last heat", "forecast", "cap %"):
        table.add_column(name)
    for topic in history.topics:
        if topic.retired_at is not None and not include_retired:
            continue
        heats = history.heat.get(topic.topic_id, ())
        forecasts = [f for f in history.forecasts.get(topic.topic_id, ()) if f.method == "combined"]
        allocations = history.allocations.get(topic.topic_id, ())
        span = f"{topic.first_seen}-{topic.retired_at if topic.retired_at is not None else last}"
        table.add_row(
            str(topic.topic_id) + (" (retired)" if topic.retired_at is not None else ""),
            escape(" ".join(list(topic.words)[:5])),
            span,
            _sparkline([h.heat for h in heats]),
            _num(heats[-1].heat if heats else None),
            f"{_num(forecasts[-1].value)} @{forecasts[-1].target_period}" if forecasts else "-",
            _num(allocations[-1].cpu_cap if allocations else None),
        )
    return table


_BARS = "▁▂▃▄▅▆▇█"


def _sparkline(values: Sequence[float]) -> str:
    if not values:
        return ""
    top = max(values) or 1.0
    return "".join(_BARS[min(len(_BARS) - 1, int(v / top * (len(_BARS) - 1)))] for v in values)
