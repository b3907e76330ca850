"""Opening a crawl database for a side store (topics, knowledge graph): migrated, or to read."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Self

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from topicrawl.core.errors import StorageError
from topicrawl.storage.migrations import check_readable, migrate
from topicrawl.storage.target import WRITE_OPTION, DatabaseTarget, create_engine, parse_target

__all__ = ["SideStore", "open_engine"]


async def open_engine(
    target: DatabaseTarget, *, busy_timeout: float, what: str, read_only: bool = False
) -> AsyncEngine:
    """An engine on ``target`` with every migration applied (its schema created first), or,
    ``read_only``, one on a database whose schema this topicrawl can read.

    Raises:
        StorageError: the database cannot be reached, is locked, or cannot be migrated (the
            message names ``what`` was being opened).
    """
    engine = create_engine(
        target, busy_timeout=busy_timeout, connect_timeout=10.0, read_only=read_only
    )
    try:
        if read_only:
            await check_readable(engine, display=target.display)
            return engine
        async with engine.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            if target.schema is not None:
                await connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{target.schema}"'))
            await migrate(connection)
    except (OperationalError, DBAPIError, OSError) as exc:
        await engine.dispose()
        raise StorageError(f"cannot open {what} {target.display}: {exc}") from exc
    except BaseException:
        await engine.dispose()
        raise
    return engine


class SideStore:
    """The life cycle of a side store on a crawl database: ``async with`` opens (migrating
    unless read-only) and closes; :attr:`engine`, :meth:`_fetch` and :meth:`_write` for the
    subclass's queries. (Used by the account store; the topic and knowledge-graph stores
    predate it and keep their own copies.)

    Args:
        url: the storage URL (SQLite path or ``postgresql://...``).
        read_only: only read (the database must exist with a schema this topicrawl reads).
    """

    what = "the tables in"

    def __init__(self, url: str, *, read_only: bool = False, busy_timeout: float = 30.0) -> None:
        self._target = parse_target(url)
        self._read_only = read_only
        self._busy_timeout = busy_timeout
        self._engine: AsyncEngine | None = None

    async def open(self) -> None:
        """Connect (and, unless read-only, migrate). Raises StorageError when it cannot."""
        if self._engine is None:
            self._engine = await open_engine(
                self._target,
                busy_timeout=self._busy_timeout,
                what=self.what,
                read_only=self._read_only,
            )

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def engine(self) -> AsyncEngine:
        if self._engine is None:
            raise StorageError(f"{self.what} {self._target.display} is not open (use `async with`)")
        return self._engine

    async def _fetch(self, statement: Any) -> Sequence[Any]:
        try:
            async with self.engine.connect() as connection:
                return (await connection.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise StorageError(f"reading {self._target.display}: {exc}") from exc

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction; a database error becomes :class:`StorageError`."""
        try:
            async with self.engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StorageError(f"writing {self._target.display}: {exc}") from exc
