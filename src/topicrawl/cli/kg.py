"""``topicrawl kg``: load a knowledge base into a crawl database, show it, export the graph."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from topicrawl.core.errors import ConfigError, StorageError, TopicrawlError

__all__ = ["app"]

app = typer.Typer(
    name="kg",
    help="The knowledge graph: load a KB, show entities and relations, export the graph.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

EXIT_CONFIG = 2
EXIT_STORAGE = 4

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
