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

__all__ = ["AttachedStore", "SideStore", "open_engine"]


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
    """A store of its own on a crawl database (topics, knowledge graph): the engine it opens
    with :func:`open_engine` (``async with``, or :meth:`open` and :meth:`close`).

    Args:
        url: a SQLite file path or ``postgresql://`` URL (``?schema=`` accepted).
        what: what the store is, for messages ("topic storage").
        busy_timeout: seconds a SQLite writer waits for a lock.
        read_only: only read (the database must exist with a schema this code can read).

    Raises:
        ConfigError: ``url`` is malformed.
    """

    def __init__(
        self, url: str, *, what: str, busy_timeout: float, read_only: bool = False
    ) -> None:
        self._target: DatabaseTarget = parse_target(url)
        self._what = what
        self._busy_timeout = busy_timeout
        self._read_only = read_only
        self._engine: AsyncEngine | None = None

    @property
    def target(self) -> DatabaseTarget:
        """The database."""
        return self._target

    @property
    def engine(self) -> AsyncEngine:
        """The open engine.

        Raises:
            StorageError: the store is not open.
        """
        if self._engine is None:
            raise StorageError(f"{self._what} is not open (use `async with` or open())")
        return self._engine

    async def open(self) -> None:
        """Connect (and, unless read-only, apply missing migrations).

        Raises:
            StorageError: the database cannot be reached, is locked, or cannot be migrated.
        """
        if self._engine is not None:
            return
        self._engine = await open_engine(
            self._target,
            busy_timeout=self._busy_timeout,
            what=f"{self._what} in",
            read_only=self._read_only,
        )

    async def close(self) -> None:
        """Disconnect (nothing happens when not open)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.dispose()

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


class AttachedStore:
    """Tables read and written beside a crawl's own storage, which migrated the database:
    ``async with`` connects (no migration) and disconnects; :meth:`_open` is the engine.

    Args:
        url: a SQLite file path or ``postgresql://`` URL.
        busy_timeout: seconds a SQLite writer waits for a lock.
        read_only: only read.
    """

    what = "the store"

    def __init__(self, url: str, *, busy_timeout: float = 30.0, read_only: bool = False) -> None:
        self._target = parse_target(url)
        self._busy_timeout = busy_timeout
        self._read_only = read_only
        self._engine: AsyncEngine | None = None

    async def __aenter__(self) -> Self:
        self._engine = create_engine(
            self._target,
            busy_timeout=self._busy_timeout,
            connect_timeout=10.0,
            read_only=self._read_only,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    def _open(self) -> AsyncEngine:
        if self._engine is None:
            raise StorageError(f"{self.what} is not open (use `async with`)")
        return self._engine
