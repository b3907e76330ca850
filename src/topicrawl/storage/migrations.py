"""Ordered schema migrations, applied when storage opens: once each, in one transaction.

A database records the migrations it has had in ``schema_version``. :func:`migrate` applies the
missing ones in version order inside the caller's transaction, so a failure leaves the database
as it was, and two processes opening one database at once apply each migration once (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock).

To evolve the schema, append a :class:`Migration` with the next version number; never edit or
reorder a released one. A migration that creates tables uses :func:`create_tables` with their
definitions from :mod:`topicrawl.storage.schema`. A migration that changes an existing table
(adds a column, an index) must check the live table first (``sqlalchemy.inspect``), because a
database created after the change already got it from the table's current definition.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Table, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from topicrawl.core.errors import StorageError
from topicrawl.storage.schema import failures, links, metadata, pages, runs, schema_version

__all__ = ["LATEST_VERSION", "MIGRATIONS", "Migration", "create_tables", "migrate"]

# Any fixed 64-bit number: it names "topicrawl schema migration" among advisory locks.
_PG_MIGRATION_LOCK = 0x746F706963726177


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: ``apply`` runs on a synchronous connection inside the open transaction."""

    version: int
    description: str
    apply: Callable[[Connection], None]


def create_tables(*tables: Table) -> Callable[[Connection], None]:
    """A migration step that creates ``tables`` (with their indexes) as defined in the schema."""

    def apply(connection: Connection) -> None:
        metadata.create_all(connection, tables=list(tables), checkfirst=True)

    return apply


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, pages, links and failures", create_tables(runs, pages, links, failures)),
)

LATEST_VERSION = MIGRATIONS[-1].version


def _check_order(migrations: tuple[Migration, ...]) -> None:
    versions = [migration.version for migration in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise StorageError(f"migrations must be numbered 1, 2, 3, ... in order; got {versions}")


async def migrate(
    connection: AsyncConnection, migrations: tuple[Migration, ...] = MIGRATIONS
) -> list[int]:
    """Apply the migrations the database lacks, inside the caller's transaction.

    Returns:
        the versions applied now (empty when the database was up to date).

    Raises:
        StorageError: the database has a newer schema than this topicrawl knows.
    """
    _check_order(migrations)
    if connection.dialect.name == "postgresql":
        await connection.execute(
            text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK}
        )
    await connection.run_sync(create_tables(schema_version))
    current = (await connection.execute(select(func.max(schema_version.c.version)))).scalar()
    current = int(current or 0)
    latest = migrations[-1].version if migrations else 0
    if current > latest:
        raise StorageError(
            f"the database has schema version {current} but this topicrawl knows only up to "
            f"{latest}: upgrade topicrawl, or use another database"
        )
    applied: list[int] = []
    for migration in migrations:
        if migration.version <= current:
            continue
        await connection.run_sync(migration.apply)
        await connection.execute(
            insert(schema_version).values(
                version=migration.version,
                description=migration.description,
                applied_at=time.time(),
            )
        )
        applied.append(migration.version)
    return applied
