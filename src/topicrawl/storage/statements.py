"""The hot statements, compiled once per dialect, and the write of one batch.

Rows are plain tuples in a fixed column order run as driver SQL, which skips SQLAlchemy's
per-row parameter processing: a large share of the write cost at thousands of links a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

from topicrawl.storage.rows import FAILURE_COLUMNS, LINK_COLUMNS, PAGE_COLUMNS, PreparedBatch
from topicrawl.storage.schema import failures, links, pages

__all__ = ["Statements", "write_batch"]

_T = TypeVar("_T")

# Bound parameters per IN (...) list: well under SQLite's and PostgreSQL's limits.
_IN_CHUNK = 500
# Link rows per driver call.
_LINK_CHUNK = 2000


class Statements:
    """The page upsert, link and failure inserts and the content-hash lookup, as SQL text for
    one dialect, each taking a tuple in a fixed column order."""

    def __init__(self, dialect: Dialect) -> None:
        dialect_insert = postgresql.insert if dialect.name == "postgresql" else sqlite.insert
        upsert = dialect_insert(pages)
        upsert = upsert.on_conflict_do_update(
            index_elements=[pages.c.url],
            set_={name: upsert.excluded[name] for name in PAGE_COLUMNS if name != "url"},
        )
        self.upsert_page = _compile(upsert, dialect, PAGE_COLUMNS)
        self.insert_link = _compile(insert(links), dialect, LINK_COLUMNS)
        self.insert_failure = _compile(insert(failures), dialect, FAILURE_COLUMNS)
        # The first page (lowest id) holding a content hash; one parameter, no LIMIT.
        first_with_hash = (
            select(func.min(pages.c.id))
            .where(pages.c.content_hash == bindparam("content_hash"))
            .scalar_subquery()
        )
        self.find_hash = _compile(
            select(pages.c.url, pages.c.duplicate_of).where(pages.c.id == first_with_hash),
            dialect,
            ("content_hash",),
            for_executemany=False,
        )


def _compile(
    statement: ClauseElement,
    dialect: Dialect,
    columns: tuple[str, ...],
    *,
    for_executemany: bool = True,
) -> str:
    compiled = statement.compile(
        dialect=dialect, column_keys=list(columns), for_executemany=for_executemany
    )
    if not isinstance(compiled, SQLCompiler):
        raise TypeError(f"{statement} did not compile to SQL")
    order = tuple(compiled.positiontup or ())
    if order != columns:
        raise RuntimeError(f"statement parameters {order} do not match row columns {columns}")
    return str(compiled)


async def write_batch(
    connection: AsyncConnection, statements: Statements, batch: PreparedBatch
) -> None:
    """Upsert a batch's pages, replace their links and add its failures, in one transaction."""
    if batch.page_rows:
        await connection.exec_driver_sql(statements.upsert_page, batch.page_rows)
        ids = await _page_ids(connection, batch.urls)
        for id_chunk in _chunks(list(ids.values()), _IN_CHUNK):
            await connection.execute(delete(links).where(links.c.page_id.in_(id_chunk)))
        link_rows = [(ids[url], *row) for url, rows in batch.links for row in rows]
        # In slices, so no single driver call keeps the event loop busy encoding for long.
        for row_chunk in _chunks(link_rows, _LINK_CHUNK):
            await connection.exec_driver_sql(statements.insert_link, list(row_chunk))
    if batch.failure_rows:
        await connection.exec_driver_sql(statements.insert_failure, batch.failure_rows)


def _chunks(items: Sequence[_T], size: int) -> list[Sequence[_T]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


async def _page_ids(connection: AsyncConnection, urls: Sequence[str]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for chunk in _chunks(urls, _IN_CHUNK):
        result = await connection.execute(
            select(pages.c.url, pages.c.id).where(pages.c.url.in_(chunk))
        )
        ids.update((row.url, row.id) for row in result)
    return ids
