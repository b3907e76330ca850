"""``topicrawl parsers``: the parser library of a crawl database (URL patterns, the methods
that work for them, success rates, and the changes it made after template changes)."""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from topicrawl.cli.common import EXIT_CONFIG, EXIT_SERVICE, err, out
from topicrawl.core.errors import ConfigError, StorageError

if TYPE_CHECKING:
    from topicrawl.parse.methods import MethodChange, PatternState

__all__ = ["app"]

app = typer.Typer(
    name="parsers",
    help="The self-healing parser library: patterns, methods, success rates, changes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
EXIT_STORAGE = EXIT_SERVICE


async def _read(db: str, changes: int) -> tuple[list[PatternState], list[MethodChange], int, int]:
    from topicrawl.engine.build import sqlite_path  # noqa: PLC0415 - keeps --help fast
    from topicrawl.storage.parsers import SqlParserStore  # noqa: PLC0415

    where = sqlite_path(db)
    if where is not None and not where.is_file():
        raise ConfigError(f"database {where} does not exist")
    async with SqlParserStore(db, read_only=True) as store:
        try:
            return (
                await store.patterns(),
                await store.changes(limit=changes),
                await store.count_records(),
                await store.count_records(partial=True),
            )
        except StorageError as exc:
            if "parser_patterns" in str(exc):
                raise StorageError(
                    f"{exc}\n(this database has no parser library yet: crawl it with --parsers)"
                ) from exc
            raise


def _when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


@app.command()
def show(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    changes: Annotated[int, typer.Option(min=0, help="Latest method changes shown.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of tables.")] = False,
) -> None:
    """URL patterns with their method and success rate, then the latest method changes."""
    try:
        patterns, changed, records, partial = asyncio.run(_read(db, changes))
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_CONFIG) from exc
    except StorageError as exc:
        err.print(f"[red]database error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_STORAGE) from exc
    if as_json:
        data = {
            "records": records,
            "partial_records": partial,
            "patterns": [
                {
                    "pattern": p.pattern,
                    "schema": p.schema,
                    "method": p.method,
                    "pages": p.pages,
                    "successes": p.successes,
                    "failures": p.failures,
                    "success_rate": round(p.success_rate, 4),
                    "methods_tried_per_page": round(p.tried / p.pages, 3) if p.pages else 0,
                }
                for p in patterns
            ],
            "changes": [
                {
                    "at": c.at,
                    "pattern": c.pattern,
                    "old_method": c.old_method,
                    "new_method": c.new_method,
                    "sample_url": c.sample_url,
                    "failed_fields": list(c.failed_fields),
                }
                for c in changed
            ],
        }
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    table = Table(
        title=f"URL patterns ({len(patterns)}; {records} pages with a record, {partial} with"
        " a partial one)"
    )
    for column in ("pattern", "schema", "method", "pages", "success", "tried/page"):
        table.add_column(column, overflow="fold")
    for p in patterns:
        table.add_row(
            escape(p.pattern),
            escape(p.schema),
            p.method or "-",
            str(p.pages),
            f"{p.success_rate:.1%}",
            f"{p.tried / p.pages:.2f}" if p.pages else "-",
        )
    out.print(table)
    log = Table(title=f"method changes (latest {len(changed)})")
    for column in ("when (UTC)", "pattern", "old", "new", "failed fields", "sample URL"):
        log.add_column(column, overflow="fold")
    for c in changed:
        log.add_row(
            _when(c.at),
            escape(c.pattern),
            c.old_method or "-",
            c.new_method,
            escape(", ".join(c.failed_fields) or "-"),
            escape(c.sample_url),
        )
    out.print(log)
