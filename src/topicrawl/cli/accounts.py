"""``topicrawl accounts``: entity names -> microblog accounts -> follow graph -> LDA -> tiers.

``run`` talks to any Mastodon-compatible server (``--api``), stores accounts, follow edges,
posts, influence tiers and the run's history in the crawl database; ``show`` prints them;
``demo-server`` serves the demo accounts world for a list of names.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from topicrawl.cli.common import EXIT_CONFIG, EXIT_MISSING, EXIT_SERVICE, err, out
from topicrawl.core.errors import ConfigError, FetchError, StorageError, TopicrawlError

if TYPE_CHECKING:
    from topicrawl.engine.accounts import AccountPipelineSettings
    from topicrawl.storage.accountstore import RunRecord

__all__ = ["app", "read_names"]

app = typer.Typer(
    name="accounts",
    help="Microblog accounts of a domain: match names, grow the follow graph, filter, rank.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
EXIT_UNREACHABLE = EXIT_MISSING
EXIT_STORAGE = EXIT_SERVICE
_MAX_NAMES = 10_000
_MAX_NAME_CHARS = 100

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return asyncio.run(coro)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        raise typer.Exit(EXIT_CONFIG) from exc
    except StorageError as exc:
        err.print(f"[red]database error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_STORAGE) from exc
    except FetchError as exc:
        err.print(f"[red]microblog error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_UNREACHABLE) from exc
    except TopicrawlError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        raise typer.Exit(1) from exc


def read_names(names: list[str] | None, entities: Path | None) -> list[str]:
    """Entity names from ``--name`` options and an ``--entities`` file (one a line, ``#``
    comments; or JSON lines with a ``name`` field), in order, without repeats.

    Raises:
        ConfigError: the file cannot be read, a line is malformed, a name is too long, or
            there are too many names or none.
    """
    found = [n.strip() for n in names or [] if n.strip()]
    if entities is not None:
        try:
            lines = entities.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read --entities {entities}: {exc}") from exc
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if text.startswith("{"):
                try:
                    value = json.loads(text).get("name")
                except (json.JSONDecodeError, AttributeError) as exc:
                    raise ConfigError(f"{entities}:{number}: not a JSON object") from exc
                if not isinstance(value, str) or not value.strip():
                    raise ConfigError(f'{entities}:{number}: no "name" string')
                text = value.strip()
            found.append(text)
    for name in found:
        if len(name) > _MAX_NAME_CHARS:
            raise ConfigError(f"entity name longer than {_MAX_NAME_CHARS} characters: {name[:40]}…")
    unique = list(dict.fromkeys(found))
    if not unique:
        raise ConfigError("give entity names with --name or --entities FILE")
    if len(unique) > _MAX_NAMES:
        raise ConfigError(f"at most {_MAX_NAMES} entity names, got {len(unique)}")
    return unique


async def _run_pipeline(
    db: str, api: str, names: list[str], settings: AccountPipelineSettings, force: bool
) -> None:
    from topicrawl.engine.accounts import run_and_store  # noqa: PLC0415
    from topicrawl.revisit.influence import recompute_due  # noqa: PLC0415
    from topicrawl.sources.accountsapi import AccountsClient  # noqa: PLC0415
    from topicrawl.storage.accountstore import AccountStore  # noqa: PLC0415

    token = os.environ.get("TOPICRAWL_MICROBLOG_TOKEN") or None
    # Say so when the client waits for a rate limit to reset (it may wait minutes).
    waits = logging.getLogger("topicrawl.sources.microblog")
    if not waits.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        waits.addHandler(handler)
        waits.setLevel(logging.INFO)
    async with AccountStore(db) as store, AccountsClient(api, token=token) as client:
        last = await store.last_done(client.source)
        if not force and not recompute_due(
            last, time.time(), every=settings.tiers.recompute_period
        ):
            assert last is not None
            days = (time.time() - last) / 86_400
            out.print(
                f"accounts of {client.source} were ranked {days:.1f} days ago; they are "
                "recomputed weekly (use --force to run now)"
            )
            return

        def progress(stage: str, done: int, total: int) -> None:
            if done == total:
                err.print(f"{stage}: {done}")

        run_id, result, _ = await run_and_store(client, store, names, settings, progress=progress)
    steps = {1: 0, 2: 0, 3: 0}
    for match in result.matches:
        steps[int(match.step)] += 1
    tiers = {t: sum(1 for v in result.tiers.values() if v == t) for t in (1, 2, 3)}
    out.print(
        f"run {run_id}: {len(names)} names -> {len(result.matches)} matches "
        f"(exact {steps[1]}, affix {steps[2]}, fuzzy {steps[3]}); follow graph "
        f"{len(result.graph.accounts)} accounts, {len(result.graph.edges)} edges; "
        f"{len(result.kept)} kept by the LDA filter; tiers 1/2/3: "
        f"{tiers[1]}/{tiers[2]}/{tiers[3]}; {client.requests} requests"
    )


@app.command()
def run(  # noqa: PLR0917 - typer maps each option to a parameter
    api: Annotated[str, typer.Option(help="Mastodon-compatible server, e.g. https://host/.")],
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "crawl.db",
    name: Annotated[list[str] | None, typer.Option(help="An entity name (repeatable).")] = None,
    entities: Annotated[
        Path | None, typer.Option(help="File of entity names: one a line, or JSON lines.")
    ] = None,
    word: Annotated[
        list[str] | None, typer.Option(help="A domain word for the LDA filter (repeatable).")
    ] = None,
    max_hops: Annotated[int, typer.Option(min=0, max=3, help="Follow-graph hops.")] = 3,
    max_per_hop: Annotated[int, typer.Option(min=1, help="New accounts a hop adds.")] = 200,
    max_posts: Annotated[int, typer.Option(min=1, help="Posts read per account.")] = 100,
    threshold: Annotated[float, typer.Option(min=0.0, max=1.0, help="LDA score kept.")] = 0.3,
    nodes: Annotated[str, typer.Option(help="Comma-separated node names.")] = "local",
    threads: Annotated[int, typer.Option(min=1, max=1024, help="Threads per node.")] = 4,
    day_seconds: Annotated[
        float, typer.Option(min=0.001, help="Length of a 'day' for tier periods (demo: 1).")
    ] = 86_400.0,
    force: Annotated[bool, typer.Option(help="Recompute even within the week.")] = False,
) -> None:
    """Match names to accounts, grow the follow graph 3 hops, keep the domain's accounts by
    LDA, rank them by weighted PageRank and store tiers (revisit every 1, 3 or 7 days).

    An access token is read from TOPICRAWL_MICROBLOG_TOKEN when set.
    """
    from topicrawl.engine.accounts import (  # noqa: PLC0415
        VIDEO_DOMAIN_WORDS,
        AccountPipelineSettings,
    )
    from topicrawl.revisit.tiers import TierPolicy  # noqa: PLC0415
    from topicrawl.sources.lda import LdaSettings  # noqa: PLC0415

    try:
        names = read_names(name, entities)
        node_names = tuple(n.strip() for n in nodes.split(",") if n.strip())
        settings = AccountPipelineSettings(
            domain_words=VIDEO_DOMAIN_WORDS + tuple(w for w in word or [] if w.strip()),
            max_hops=max_hops,
            max_per_hop=max_per_hop,
            max_posts=max_posts,
            lda=LdaSettings(threshold=threshold),
            tiers=TierPolicy.in_days(day_seconds=day_seconds),
            nodes=node_names,
            threads=threads,
        )
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        raise typer.Exit(EXIT_CONFIG) from exc
    _run(_run_pipeline(db, api, names, settings, force))


async def _read(
    db: str, limit: int, all_accounts: bool
) -> tuple[list[dict[str, Any]], list[RunRecord], dict[str, int]]:
    from topicrawl.engine.build import sqlite_path  # noqa: PLC0415
    from topicrawl.storage.accountstore import AccountStore  # noqa: PLC0415

    where = sqlite_path(db)
    if where is not None and not where.is_file():
        raise ConfigError(f"database {where} does not exist")
    async with AccountStore(db, read_only=True) as store:
        rows = await store.accounts(kept_only=not all_accounts, limit=limit)
        return rows, await store.runs(limit=5), await store.counts()


@app.command()
def show(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    limit: Annotated[
        int, typer.Option(min=1, help="Accounts shown (most influential first).")
    ] = 30,
    all_accounts: Annotated[
        bool, typer.Option("--all", help="Also accounts the LDA filter dropped.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of tables.")] = False,
) -> None:
    """Accounts by influence with their match, LDA score, tier and node; the last runs."""
    rows, runs, counts = _run(_read(db, limit, all_accounts))
    if as_json:
        body = {"accounts": rows, "runs": [asdict(r) for r in runs], "counts": counts}
        out.print_json(json.dumps(body, ensure_ascii=False, default=str))
        return
    table = Table(title=f"accounts ({len(rows)} shown; {counts.get('accounts', 0)} stored)")
    columns = ("account", "name", "match", "hop", "LDA", "kept", "influence", "tier", "node")
    for column in columns:
        table.add_column(column, overflow="fold")
    step_names = {1: "exact", 2: "affix", 3: "fuzzy"}
    for row in rows:
        match = (
            f"{step_names.get(row['match_step'], '?')}: {row['match_name']}"
            if row["match_step"]
            else ""
        )
        table.add_row(
            escape(str(row["account_id"])),
            escape(str(row["display_name"])),
            escape(match),
            "" if row["hop"] is None else str(row["hop"]),
            f"{row['domain_score']:.2f}" if row["domain_score"] is not None else "",
            "yes" if row["kept"] else "no",
            f"{row['influence']:.4f}" if row["influence"] is not None else "",
            f"{row['tier']} ({_period(row['revisit_days'])})" if row["tier"] else "",
            escape(f"{row['node'] or ''}/{row['thread'] if row['thread'] is not None else ''}"),
        )
    out.print(table)
    history = Table(title="runs")
    for column in ("run", "source", "started", "status", "names", "matched", "accounts", "kept"):
        history.add_column(column)
    for r in runs:
        started = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r.started_at))
        history.add_row(
            str(r.id), escape(r.source), started, escape(r.status), str(r.entities),
            str(r.matched), str(r.accounts), str(r.kept),
        )  # fmt: skip
    out.print(history)


def _period(days: float) -> str:
    """A revisit period for people: days, or seconds when a demo shortened the day."""
    return f"{days:g} d" if days >= 1 else f"{days * 86_400:.3g} s"


@app.command("demo-server")
def demo_server(
    name: Annotated[list[str] | None, typer.Option(help="An entity name (repeatable).")] = None,
    entities: Annotated[Path | None, typer.Option(help="File of entity names.")] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one).")] = 0,
    seed: Annotated[int, typer.Option(help="The demo world's seed.")] = 7,
    rate_limit: Annotated[int, typer.Option(min=1, help="Requests per 5 minutes.")] = 3000,
) -> None:
    """Serve a demo microblog of accounts around the given names (loopback, until Ctrl-C)."""
    from topicrawl.demoweb.accounts import AccountWorld  # noqa: PLC0415
    from topicrawl.demoweb.accountserver import AccountServer  # noqa: PLC0415

    try:
        world = AccountWorld.generate(read_names(name, entities), seed=seed)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        raise typer.Exit(EXIT_CONFIG) from exc

    async def serve() -> None:
        async with AccountServer(world, port=port, rate_limit=rate_limit) as server:
            out.print(f"demo microblog: {server.base_url} ({len(world.accounts)} accounts)")
            await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
