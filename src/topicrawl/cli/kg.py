"""``topicrawl kg``: load a knowledge base into a crawl database, show it, export the graph."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from topicrawl.cli.common import EXIT_CONFIG, EXIT_SERVICE, err, out
from topicrawl.core.errors import ConfigError, StorageError, TopicrawlError

if TYPE_CHECKING:
    from topicrawl.kg.views import KgSnapshot

__all__ = ["app"]

app = typer.Typer(
    name="kg",
    help="The knowledge graph: load a KB, show entities and relations, export the graph.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
EXIT_STORAGE = EXIT_SERVICE

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return asyncio.run(coro)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}", soft_wrap=True, markup=True, highlight=False)
        raise typer.Exit(EXIT_CONFIG) from exc
    except StorageError as exc:
        err.print(f"[red]database error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(EXIT_STORAGE) from exc
    except TopicrawlError as exc:
        err.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(1) from exc


async def _load(path: Path, db: str) -> tuple[int, int, int]:
    from topicrawl.engine.build import sqlite_path  # noqa: PLC0415
    from topicrawl.kg.kbfile import read_kb_file  # noqa: PLC0415 - keeps --help fast
    from topicrawl.kg.store import KgStore  # noqa: PLC0415

    where = sqlite_path(db)
    # A new database is made only for a good file; an existing one's ids may be named.
    kb = read_kb_file(path) if where is not None and not where.exists() else None
    async with KgStore(db) as store:
        if kb is None:
            kb = read_kb_file(path, known=await store.keys())
        counts = await store.load(kb)
    return counts.entities, counts.aliases, counts.relations


@app.command()
def load(
    file: Annotated[Path, typer.Argument(help="KB file: .jsonl (or .json) or .csv.")],
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL.")] = "crawl.db",
) -> None:
    """Load a knowledge base (entities with aliases and types, optional relations).

    Entities are replaced by id; a file with any bad line is rejected whole, with line
    numbers, and nothing of it is loaded (exit 2).
    """
    entities, aliases, relations = _run(_load(file, db))
    out.print(f"loaded {entities} entities ({aliases} names) and {relations} relations into {db}")


def kg_overrides(
    prefer_entity: list[str] | None, prefer_entities: Path | None, entity_radius: int | None
) -> dict[str, object] | None:
    """The ``kg`` settings the crawl's preference options give (None: none given).

    Raises:
        ConfigError: the names file is missing, unreadable or not UTF-8.
    """
    names = list(prefer_entity or [])
    if prefer_entities is not None:
        try:
            lines = prefer_entities.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read --prefer-entities {prefer_entities}: {exc}") from exc
        names += [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    overrides: dict[str, object] = {}
    if names:
        overrides["prefer"] = tuple(names)
    if entity_radius is not None:
        overrides["radius"] = entity_radius
    return overrides or None


async def _snapshot(db: str, limit: int, urls: int) -> KgSnapshot:
    from topicrawl.engine.build import sqlite_path  # noqa: PLC0415
    from topicrawl.kg.store import KgStore  # noqa: PLC0415
    from topicrawl.kg.views import graph_snapshot  # noqa: PLC0415

    where = sqlite_path(db)
    if where is not None and not where.is_file():
        raise ConfigError(f"database {where} does not exist")
    async with KgStore(db, read_only=True) as store:
        return await graph_snapshot(store.engine, limit=limit, urls_per_entity=urls)


@app.command()
def show(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    limit: Annotated[int, typer.Option(min=1, help="Entities shown (most pages first).")] = 50,
    urls: Annotated[int, typer.Option(min=0, help="URLs listed per entity.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="JSON instead of tables.")] = False,
) -> None:
    """Entities (most mentioned first), the relations between them, and their pages."""
    snapshot = _run(_snapshot(db, limit, urls))
    if as_json:
        out.print_json(json.dumps(snapshot.to_json(), ensure_ascii=False))
        return
    entities = Table(title=f"entities ({len(snapshot.nodes)} of {snapshot.total_entities})")
    for column in ("key", "name", "type", "origin", "pages", "URLs"):
        entities.add_column(column, overflow="fold")
    for node in snapshot.nodes:
        mark = " *" if node.preferred else ""
        entities.add_row(
            escape(node.key + mark),
            escape(node.name),
            escape(node.type),
            node.origin,
            str(node.pages),
            escape("\n".join(snapshot.entity_urls.get(node.key, ()))),
        )
    out.print(entities)
    relations = Table(title=f"relations ({len(snapshot.edges)} of {snapshot.total_relations})")
    for column in ("subject", "relation", "object", "confidence", "source", "pages"):
        relations.add_column(column, overflow="fold")
    for edge in snapshot.edges:
        relations.add_row(
            escape(edge.subject),
            escape(edge.type),
            escape(edge.object),
            f"{edge.confidence:.2f}",
            escape(edge.provenance),
            str(edge.pages),
        )
    out.print(relations)
    if snapshot.preferred:
        out.print("* preferred by the latest crawl")


EXPORT_FORMATS = ("jsonl", "graphml")


@app.command()
def export(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL (read only).")],
    format: Annotated[str, typer.Option(help="jsonl (nodes, then edges) or graphml.")] = "jsonl",
    output: Annotated[Path | None, typer.Option(help="File to write (default stdout).")] = None,
) -> None:
    """Write the whole graph: every entity with its URLs, and every relation."""
    if format not in EXPORT_FORMATS:
        err.print(f"[red]error:[/red] unknown --format {format!r}; use jsonl or graphml")
        raise typer.Exit(EXIT_CONFIG)
    if output is not None and (output.is_dir() or not output.parent.is_dir()):
        err.print(f"[red]error:[/red] cannot write --output {output}")
        raise typer.Exit(EXIT_CONFIG)
    from topicrawl.kg.views import export_graphml, export_jsonl  # noqa: PLC0415

    snapshot = _run(_snapshot(db, _EVERYTHING, _EVERYTHING))
    data = export_jsonl(snapshot).encode("utf-8") if format == "jsonl" else export_graphml(snapshot)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        partial = output.with_name(f".{output.name}.part")
        partial.write_bytes(data)
        partial.replace(output)
    err.print(f"exported {len(snapshot.nodes)} entities and {len(snapshot.edges)} relations")


# Every row: the export is of the whole graph.
_EVERYTHING = 1 << 40
