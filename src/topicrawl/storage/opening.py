"""Opening a crawl database for a side store (topics, knowledge graph): migrated, or to read."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.core.errors import StorageError
from topicrawl.storage.migrations import check_readable, migrate
from topicrawl.storage.target import WRITE_OPTION, DatabaseTarget, create_engine

__all__ = ["open_engine"]


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
