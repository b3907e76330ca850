"""``topicrawl video``: seed 004 as one system (issue #22).

``run`` crawls a video site with the parser library, ranks its videos into revisit tiers by
the popularity of their extracted counts, matches their names to microblog accounts (follow
graph, LDA filter, weighted PageRank tiers) and revisits pages and accounts when due, for
``--days`` days of a real or simulated clock; ``--demo`` serves the demo video site and
microblog on loopback and runs against them. ``show`` prints what a run stored.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from topicrawl.cli.common import EXIT_CONFIG, err, fail, out, run
from topicrawl.core.errors import ConfigError

if TYPE_CHECKING:
    from topicrawl.engine.videosystem import SystemReport, VideoSystemSettings
    from topicrawl.revisit.clock import Clock

__all__ = ["app"]

app = typer.Typer(
    name="video",
    help="Seed 004: a video site's videos and their microblog accounts, revisited by tier.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _settings(site: str, parsers: str, api: str | None, **kw: Any) -> VideoSystemSettings:
    from topicrawl.engine.accounts import AccountPipelineSettings  # noqa: PLC0415
    from topicrawl.engine.videosystem import VideoSystemSettings  # noqa: PLC0415
    from topicrawl.revisit.tiers import TierPolicy  # noqa: PLC0415

    day = kw.pop("day_seconds")
    hops, per_hop = kw.pop("max_hops"), kw.pop("max_per_hop")
    return VideoSystemSettings(
        site=site,
        parsers=parsers,
        api=api,
        tiers=TierPolicy.in_days(day_seconds=day),
        accounts=AccountPipelineSettings(max_hops=hops, max_per_hop=per_hop),
        day_seconds=day,
        **kw,
    )


async def _run(
    clock: Clock, settings: VideoSystemSettings, demo: bool, titles: int
) -> SystemReport:
    from topicrawl.demoweb.seed004 import Seed004Demo  # noqa: PLC0415
    from topicrawl.engine.videosystem import VideoSystem  # noqa: PLC0415

    def say(line: str) -> None:
        err.print(escape(line), highlight=False)

    if not demo:
        return await VideoSystem(settings, clock=clock, progress=say).run()
    with (
        Seed004Demo(clock, titles=titles, day_seconds=settings.day_seconds) as world,
        tempfile.TemporaryDirectory(prefix="topicrawl-video-") as folder,
    ):
        schemas = world.write_schemas(Path(folder) / "schemas.toml")
        say(f"demo video site {world.site_url}, demo microblog {world.api_url}")
        demo_settings = replace(
            settings, site=world.site_url, parsers=str(schemas), api=world.api_url
        )
        return await VideoSystem(demo_settings, clock=clock, progress=say).run()


@app.command("run")
def run_command(  # noqa: PLR0917 - typer maps each option to a parameter
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "video.db",
    site: Annotated[
        str | None, typer.Option(help="The video site's start URL (not with --demo).")
    ] = None,
    parsers: Annotated[
        Path | None, typer.Option(help="The site's schemas (TOML) for the parser library.")
    ] = None,
    api: Annotated[
        str | None, typer.Option(help="Mastodon-compatible server for the accounts.")
    ] = None,
    demo: Annotated[
        bool, typer.Option(help="Serve the demo video site and microblog and run on them.")
    ] = False,
    titles: Annotated[int, typer.Option(min=2, max=500, help="Demo site's titles.")] = 40,
    days: Annotated[
        float,
        typer.Option(min=0.001, help="Days to revisit after the first crawl and ranking."),
    ] = 28.0,
    clock: Annotated[
        str, typer.Option(help="'real', or 'simulated': jump from one due time to the next.")
    ] = "real",
    day_seconds: Annotated[
        float, typer.Option(min=0.001, help="A day's length in seconds (a demo: 2).")
    ] = 86_400.0,
    nodes: Annotated[str, typer.Option(help="Comma-separated node names.")] = "local",
    node: Annotated[
        str | None, typer.Option(help="This node: revisit only what hashes to it.")
    ] = None,
    max_pages: Annotated[int, typer.Option(min=0, help="First crawl's pages (0: all).")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, max=256, help="Requests at once.")] = 4,
    delay: Annotated[float, typer.Option(min=0.0, help="Seconds between a host's requests.")] = 0,
    max_hops: Annotated[int, typer.Option(min=0, max=3, help="Follow-graph hops.")] = 3,
    max_per_hop: Annotated[int, typer.Option(min=1, help="New accounts a hop adds.")] = 200,
    lease_ttl: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="Seconds the leader's lease lasts unless renewed (every third of it, also "
            "while crawling or ranking); a follower takes over an expired one, before the "
            "first plan too (default: a twentieth of the re-plan period, at least 60).",
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            help="Page revisits: 'tiers' (each video's tier by popularity) or 'change-rate' "
            "(each page's optimal interval from its change rate and plays, at the tiers' "
            "budget, shown as the nearest tier)."
        ),
    ] = "tiers",
    split: Annotated[
        bool,
        typer.Option(
            help="With several nodes, every node does part of the first crawl and of the "
            "account reads (through the database). Off by default: each node keeps a host's "
            "delay on its own (N nodes may ask a host N times as often), and on a fast site "
            "it is slower than the leader alone."
        ),
    ] = False,
) -> None:
    """Crawl a video site with the parser library, tier its videos by popularity, rank their
    microblog accounts, and revisit both when due (see ``topicrawl video --help``)."""
    from topicrawl.revisit.clock import SimulatedClock, SystemClock  # noqa: PLC0415

    if clock not in ("real", "simulated"):
        err.print("[red]error:[/red] --clock is 'real' or 'simulated'")
        raise typer.Exit(EXIT_CONFIG)
    if demo == (site is not None):
        err.print("[red]error:[/red] give --site (with --parsers) or --demo, not both")
        raise typer.Exit(EXIT_CONFIG)
    if demo and node is not None and node != nodes.split(",")[0].strip():
        err.print(
            "[red]error:[/red] --demo serves a demo web of its own; a following node (--node "
            "other than the first of --nodes) needs the leader's --site, --parsers and --api"
        )
        raise typer.Exit(EXIT_CONFIG)
    if not demo and parsers is None:
        err.print("[red]error:[/red] --site needs --parsers FILE.toml (the site's schemas)")
        raise typer.Exit(EXIT_CONFIG)
    try:
        settings = _settings(
            site or "http://demo.invalid/",
            str(parsers or ""),
            api,
            db=db,
            days=days,
            nodes=tuple(n.strip() for n in nodes.split(",") if n.strip()),
            node=node,
            max_pages=max_pages,
            concurrency=concurrency,
            delay=delay,
            day_seconds=day_seconds,
            max_hops=max_hops,
            max_per_hop=max_per_hop,
            policy=policy,
            lease_ttl=lease_ttl,
            split=split,
        )
    except ConfigError as exc:
        fail(exc)
    time_source: Clock = SimulatedClock(time.time()) if clock == "simulated" else SystemClock()
    report = run(lambda: _run(time_source, settings, demo, titles))
    visits = report.visits_by_tier
    out.print(
        f"{report.pages_crawled} pages crawled, {report.records} records, {report.videos} "
        f"videos ({report.partial} partial); {len(report.plans)} plans; page revisits "
        f"{report.page_visits} ({report.changed_pages} changed, {report.not_modified} not "
        f"modified); accounts {report.accounts.get('kept', 0)} kept, "
        f"{report.accounts.get('dropped', 0)} dropped, {report.account_visits} account "
        f"revisits ({report.new_posts} new posts); by tier "
        + ", ".join(f"{k}: {v}" for k, v in sorted(visits.items()))
        + f"; latest a visit came after its due time: {report.max_lateness:.1f} s"
    )


async def _read(db: str, limit: int) -> dict[str, Any]:
    from topicrawl.engine.build import sqlite_path  # noqa: PLC0415
    from topicrawl.storage.videostore import VideoStore  # noqa: PLC0415

    where = sqlite_path(db)
    if where is not None and not where.is_file():
        raise ConfigError(f"database {where} does not exist")
    async with VideoStore(db, read_only=True) as store:
        visits = await store.visits()
        return {
            "videos": await store.videos(limit=limit),
            "counts": await store.counts(),
            "visits": visits[-limit:],
        }


@app.command()
def show(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    limit: Annotated[int, typer.Option(min=1, help="Videos and visits shown.")] = 30,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of tables.")] = False,
) -> None:
    """Videos by popularity with their counts, tier and node; the last revisits."""
    body = run(lambda: _read(db, limit))
    if as_json:
        out.print_json(json.dumps(body, ensure_ascii=False, default=str))
        return
    table = Table(title=f"videos ({body['counts'].get('videos', 0)} stored)")
    for column in ("video", "title", "kind", "counts", "popularity", "tier", "node"):
        table.add_column(column, overflow="fold")
    for row in body["videos"]:
        counts = json.loads(row["counts"])
        table.add_row(
            escape(row["video"]),
            escape(row["title"]) + (" (partial)" if row["partial"] else ""),
            escape(row["kind"]),
            escape(", ".join(f"{k} {v:,.0f}" for k, v in sorted(counts.items()))),
            f"{row['popularity']:.2f}",
            f"{row['tier']} ({row['revisit_days']:g} d)",
            escape(row["node"]),
        )
    out.print(table)
    visits = Table(title="last revisits")
    for column in ("kind", "item", "tier", "node", "due", "visited", "status", "found"):
        visits.add_column(column, overflow="fold")
    for v in body["visits"]:
        visits.add_row(
            v["kind"], escape(v["item"]), str(v["tier"]), escape(v["node"]),
            _when(v["due_at"]), _when(v["visited_at"]), str(v["status"]), str(v["found"]),
        )  # fmt: skip
    out.print(visits)
    out.print(", ".join(f"{k}: {v}" for k, v in sorted(body["counts"].items())))


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(at))
