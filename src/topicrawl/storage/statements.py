"""The hot statements, compiled once per dialect, and the write of one batch.

Rows are plain tuples in a fixed column order run as driver SQL, which skips SQLAlchemy's
per-statement compilation and per-row parameter processing. On PostgreSQL a batch is one
``executemany`` (asyncpg pipelines it). On SQLite it is one multi-row ``INSERT ... VALUES
(...), (...), ...`` per batch: ``executemany`` runs one SQLite step per row, and each step
hands the GIL back and forth between aiosqlite's thread and the event loop; with the loop busy
(parsing, scoring) every hand-back waits up to the 5 ms switch interval. Measured with raw
sqlite3 beside a busy Python thread: 900-1,500 pages/s with ``executemany``, ~3,700 with one
statement per batch (the same ~7,500 when nothing else runs).

Multi-row statements come in a few fixed sizes only (powers of two up to
:data:`MAX_ROWS_PER_STATEMENT` rows): the sqlite3 module keeps up to 128 prepared statements
per connection, and a prepared statement costs SQLite about 0.6 KB per bound parameter. With
one statement per batch size, every partial batch of a different length was another cached
statement: 30-35 MB of SQLite memory on a 6,600-page crawl, growing with the crawl.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import chain
from typing import Any

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement

from topicrawl.storage.rows import FAILURE_COLUMNS, MEDIA_COLUMNS, PAGE_COLUMNS, PreparedBatch
from topicrawl.storage.schema import failures, page_media, pages

__all__ = ["MAX_ROWS_PER_STATEMENT", "RowStatement", "Statements", "write_batch"]

# Rows one multi-row SQLite statement inserts at most: a batch is cut into statements of this
# many rows and a rest in powers of two, so at most log2(64) + 1 = 7 sizes are ever prepared.
MAX_ROWS_PER_STATEMENT = 64


def _sqlite_max_variables() -> int:
    """Bound parameters one SQLite statement may take, in the library aiosqlite uses."""
    connection = sqlite3.connect(":memory:")
    try:
        return int(connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    finally:
        connection.close()


def _power_of_two_at_most(limit: int) -> int:
    return 1 << (max(1, limit).bit_length() - 1)


class RowStatement:
    """An insert of rows in a fixed column order: the one-row SQL, and on SQLite the same
    statement for several rows at once (``VALUES (...), (...)``).

    Args:
        sql: the one-row statement, with exactly one ``(?, ?, ...)`` values group.
        columns: the row's columns, in parameter order.
        max_variables: bound parameters one statement may take; ``None`` when rows go one
            ``executemany`` instead.
    """

    def __init__(self, sql: str, columns: Sequence[str], *, max_variables: int | None) -> None:
        self.sql = sql
        self._width = len(columns)
        self.rows_per_statement = (
            1
            if max_variables is None
            else _power_of_two_at_most(min(MAX_ROWS_PER_STATEMENT, max_variables // self._width))
        )
        self._group = "(" + ", ".join(["?"] * self._width) + ")"
        if max_variables is not None and sql.count(self._group) != 1:
            raise RuntimeError(f"cannot find the one values group {self._group} in {sql!r}")
        self._many: dict[int, str] = {}

    def sql_for(self, rows: int) -> str:
        """The statement inserting ``rows`` rows (a power of two, at most
        :attr:`rows_per_statement`)."""
        found = self._many.get(rows)
        if found is None:
            if rows > self.rows_per_statement or rows & (rows - 1):
                raise ValueError(
                    f"{rows} rows: statements take a power of two up to {self.rows_per_statement}"
                )
            found = self.sql.replace(self._group, ", ".join([self._group] * rows), 1)
            self._many[rows] = found
        return found

    def chunks(self, rows: Sequence[tuple[Any, ...]]) -> list[tuple[str, tuple[Any, ...]]]:
        """The statements and flattened parameters that insert ``rows`` on SQLite, in order:
        full statements of :attr:`rows_per_statement` rows, then the rest as statements of
        falling powers of two."""
        out: list[tuple[str, tuple[Any, ...]]] = []
        start, size = 0, self.rows_per_statement
        while start < len(rows):
            while size > len(rows) - start:
                size //= 2
            chunk = rows[start : start + size]
            out.append((self.sql_for(size), tuple(chain.from_iterable(chunk))))
            start += size
        return out


class Statements:
    """The page upsert, the failure upsert and the content-hash lookup, as SQL text for one
    dialect, each taking a tuple in a fixed column order."""

    def __init__(self, dialect: Dialect) -> None:
        self.multi_row = dialect.name == "sqlite"
        max_variables = _sqlite_max_variables() if self.multi_row else None
        dialect_insert = postgresql.insert if dialect.name == "postgresql" else sqlite.insert
        upsert = dialect_insert(pages)
        upsert = upsert.on_conflict_do_update(
            index_elements=[pages.c.url],
            set_={name: upsert.excluded[name] for name in PAGE_COLUMNS if name != "url"},
            # A late write of an older fetch (a worker cut off past its lease, whose URL was
            # fetched again meanwhile) never replaces a newer one.
            where=pages.c.fetched_at <= upsert.excluded.fetched_at,
        )
        self.upsert_page = RowStatement(
            _compile(upsert, dialect, PAGE_COLUMNS), PAGE_COLUMNS, max_variables=max_variables
        )
        failure_upsert = dialect_insert(failures)
        failure_upsert = failure_upsert.on_conflict_do_update(
            index_elements=[failures.c.url],
            set_={name: failure_upsert.excluded[name] for name in FAILURE_COLUMNS if name != "url"},
            # As for pages: a late write of an older failure never replaces a newer one.
            where=failures.c.at <= failure_upsert.excluded.at,
        )
        self.insert_failure = RowStatement(
            _compile(failure_upsert, dialect, FAILURE_COLUMNS),
            FAILURE_COLUMNS,
            max_variables=max_variables,
        )
        media_upsert = dialect_insert(page_media)
        media_upsert = media_upsert.on_conflict_do_update(
            index_elements=[page_media.c.url],
            set_={name: media_upsert.excluded[name] for name in MEDIA_COLUMNS if name != "url"},
            where=page_media.c.fetched_at <= media_upsert.excluded.fetched_at,
        )
        self.upsert_media = RowStatement(
            _compile(media_upsert, dialect, MEDIA_COLUMNS),
            MEDIA_COLUMNS,
            max_variables=max_variables,
        )
        # A page fetched again that is no longer a video page loses its media row (an older
        # fetch written late never deletes a newer row).
        self.delete_media = _compile(
            delete(page_media).where(
                page_media.c.url == bindparam("url"),
                page_media.c.fetched_at <= bindparam("fetched_at"),
            ),
            dialect,
            ("url", "fetched_at"),
        )
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
    connection: AsyncConnection,
    statements: Statements,
    batch: PreparedBatch,
    *,
    media_rows_exist: bool = True,
) -> None:
    """Upsert a batch's pages (links included), failures and video rows, in the caller's
    transaction; with ``media_rows_exist``, delete the media rows of pages no longer video
    pages (a database that never had one skips that statement)."""
    if media_rows_exist and batch.media_gone:
        await connection.exec_driver_sql(statements.delete_media, batch.media_gone)
    for statement, rows in (
        (statements.upsert_page, batch.page_rows),
        (statements.insert_failure, batch.failure_rows),
        (statements.upsert_media, batch.media_rows),
    ):
        if not rows:
            continue
        if not statements.multi_row:
            await connection.exec_driver_sql(statement.sql, rows)
            continue
        for sql, parameters in statement.chunks(rows):
            await connection.exec_driver_sql(sql, parameters)
