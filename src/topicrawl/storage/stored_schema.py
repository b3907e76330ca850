"""What a database opened without migrating holds: its schema version, tables and columns.

The dashboard reads a crawl database read-only, so it never migrates one. A database of an
older schema lacks the tables and columns later migrations added; readers ask a
:class:`StoredSchema` what is there, select a missing column as NULL, and say what needs a
newer schema instead of failing on it. Reflected once when the reader opens: a running crawl
of this topicrawl migrates its database before it writes, and a reader opened before that sees
the older schema until it is opened again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, inspect, literal
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["StoredSchema", "read_stored_schema"]


@dataclass(frozen=True, slots=True)
class StoredSchema:
    """The tables of a database and their columns, as reflected, and its schema version."""

    version: int
    tables: Mapping[str, frozenset[str]]

    def has(self, table: str, column: str | None = None) -> bool:
        """Whether the database has ``table`` (and its ``column``)."""
        found = self.tables.get(table)
        return found is not None and (column is None or column in found)

    def column(self, table: Table, name: str) -> ColumnElement[Any]:
        """``table.c[name]``, or a NULL of its type under its name when the database lacks it."""
        wanted = table.c[name]
        if self.has(table.name, name):
            return wanted
        return literal(None, type_=wanted.type).label(name)

    def columns(self, table: Table, names: tuple[str, ...] | None = None) -> list[Any]:
        """The columns ``names`` (every column of the definition by default), a missing one as
        a NULL under its name."""
        return [self.column(table, name) for name in names or tuple(table.c.keys())]

    def lacks(self, version: int) -> str | None:
        """Why something of schema ``version`` is not in this database (None when it is)."""
        if self.version >= version:
            return None
        return (
            f"this database has schema version {self.version}; this came with version "
            f"{version} (the dashboard opens a database read-only and never migrates it: "
            "open it once with write access, e.g. resume its crawl, to migrate it)"
        )


def _reflect(connection: Connection) -> dict[str, frozenset[str]]:
    inspector = inspect(connection)
    return {
        name: frozenset(column["name"] for column in inspector.get_columns(name))
        for name in inspector.get_table_names()
    }


async def read_stored_schema(engine: AsyncEngine, version: int) -> StoredSchema:
    """The tables and columns of the database behind ``engine`` (of schema ``version``)."""
    async with engine.connect() as connection:
        tables = await connection.run_sync(_reflect)
    return StoredSchema(version=version, tables=tables)
