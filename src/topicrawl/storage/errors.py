"""Turn database driver errors into topicrawl's storage errors, and tell transient ones apart.

SQLite: "database is locked" becomes :class:`DatabaseLocked`; "file is not a database" or a
malformed image becomes :class:`DatabaseCorrupt`. PostgreSQL: an unreachable server becomes a
:class:`StorageError` naming the host. Everything else becomes a :class:`StorageError` that
names the database and keeps the driver's message.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from topicrawl.core.errors import DatabaseCorrupt, DatabaseLocked, StorageError
from topicrawl.storage.target import DatabaseTarget

__all__ = ["DATABASE_ERRORS", "is_transient", "translate_error", "with_retries"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

_MAX_BACKOFF = 5.0

# What a database call can raise besides our own errors: SQLAlchemy's tree (which wraps the
# drivers'), and the OS-level errors asyncpg raises while connecting.
DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    DBAPIError,
    OSError,
    TimeoutError,
    PoolTimeout,
    sqlite3.Error,
)

# SQLSTATEs worth retrying: connection exceptions (class 08), the server shutting down or
# killing our backend (57P01-57P03), too many connections, serialization failure, deadlock,
# and a session the server ended for idling inside a transaction (25P03).
_TRANSIENT_SQLSTATES = {"57P01", "57P02", "57P03", "53300", "40001", "40P01", "25P03"}
_CLOSED_MARKERS = ("connection is closed", "connection was closed", "connection reset")
_LOCKED_MARKERS = ("database is locked", "database table is locked")
_CORRUPT_MARKERS = (
    "file is not a database",
    "database disk image is malformed",
    "file is encrypted or is not a database",
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The error, the driver error it wraps, and their causes, each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        if isinstance(orig, BaseException):
            todo.append(orig)
        for nested in (current.__cause__, current.__context__):
            if nested is not None:
                todo.append(nested)


def _driver_message(exc: BaseException) -> str:
    """The most specific message: the driver's, without SQLAlchemy's statement dump."""
    source = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    message = str(source).strip() or type(exc).__name__
    return message.splitlines()[0]


def is_transient(exc: BaseException) -> bool:
    """True when trying the same database call again may succeed (lost connection, deadlock)."""
    for error in _chain(exc):
        if isinstance(error, DBAPIError) and error.connection_invalidated:
            return True
        # PoolTimeout: every pooled connection stayed busy for the pool's timeout (30 s), as
        # under a heavily loaded machine with many pages in flight; a later try may get one.
        if isinstance(error, (ConnectionError, TimeoutError, PoolTimeout)):
            return True
        sqlstate = getattr(error, "sqlstate", None)
        if isinstance(sqlstate, str) and (
            sqlstate.startswith("08") or sqlstate in _TRANSIENT_SQLSTATES
        ):
            return True
        if type(error).__name__ in {"ConnectionDoesNotExistError", "ConnectionFailureError"}:
            return True
        text = str(error).lower()
        if any(marker in text for marker in _CLOSED_MARKERS):
            return True
        # A SQLite lock held past the busy timeout (the frontier's commit, a user's shell):
        # a later try may get it. Opening is not retried, so a second crawl is still refused.
        if isinstance(error, sqlite3.OperationalError) and any(
            marker in text for marker in _LOCKED_MARKERS
        ):
            return True
    return False


def translate_error(exc: BaseException, target: DatabaseTarget, *, doing: str) -> StorageError:
    """The :class:`StorageError` to raise for a driver error met while ``doing`` something."""
    message = _driver_message(exc)
    texts = [str(error).lower() for error in _chain(exc)]
    if target.dialect == "sqlite":
        if any(marker in text for text in texts for marker in _LOCKED_MARKERS):
            return DatabaseLocked(
                f"SQLite database {target.display} is locked: another process holds it "
                f"(another crawl on the same file?) while {doing}. Stop that process or use "
                "another file."
            )
        if any(marker in text for text in texts for marker in _CORRUPT_MARKERS):
            return DatabaseCorrupt(
                f"{target.display} is not a usable SQLite database ({message}) while {doing}: "
                "restore it from a backup, remove it, or point storage at another file"
            )
        return StorageError(f"SQLite database {target.display} failed while {doing}: {message}")
    if _connection_lost(exc):
        return StorageError(
            f"lost the connection to PostgreSQL at {target.display} while {doing}: {message}"
        )
    if _cannot_connect(exc):
        return StorageError(
            f"cannot connect to PostgreSQL at {target.display} while {doing}: {message}. "
            "Check that the server is running and that the host, port, database and "
            "credentials are right."
        )
    return StorageError(f"PostgreSQL at {target.display} failed while {doing}: {message}")


def _sqlstates(exc: BaseException) -> list[str]:
    found = (getattr(error, "sqlstate", None) for error in _chain(exc))
    return [state for state in found if isinstance(state, str)]


def _connection_lost(exc: BaseException) -> bool:
    """An established connection went away (server shutdown, backend terminated, reset)."""
    if any(state.startswith("57P") for state in _sqlstates(exc)):
        return True
    return any(
        isinstance(error, DBAPIError) and error.connection_invalidated for error in _chain(exc)
    )


def _cannot_connect(exc: BaseException) -> bool:
    """No connection could be made: refused, unresolvable, timed out, rejected at login."""
    if any(isinstance(error, (OSError, TimeoutError)) for error in _chain(exc)):
        return True
    # 08: connection exception, 28: bad credentials, 3D: no such database.
    return any(state.startswith(("08", "28", "3D")) for state in _sqlstates(exc))


async def with_retries(
    operation: Callable[[], Awaitable[_T]],
    *,
    target: DatabaseTarget,
    doing: str,
    retries: int,
    backoff: float,
    attempt_timeout: float | None = None,
) -> _T:
    """Run a database operation, again after a dropped connection (``retries`` times at most,
    waiting ``backoff`` seconds, doubled each time, at most 5 s).

    ``attempt_timeout`` bounds each attempt as a whole (pool checkout, connect, every
    statement, commit, and the driver's clean-up), so an attempt stuck on a connection that
    will never answer fails as a lost connection does and is retried on another: without it
    a crawl whose write waits forever never ends (its pages in hand never finish).

    Raises:
        StorageError: the operation failed for good (translated from the driver's error).
    """
    attempt = 0
    while True:
        try:
            if attempt_timeout is None:
                return await operation()
            async with asyncio.timeout(attempt_timeout):
                return await operation()
        except DATABASE_ERRORS as exc:
            if attempt >= retries or not is_transient(exc):
                raise translate_error(exc, target, doing=doing) from exc
            delay = min(backoff * 2**attempt, _MAX_BACKOFF)
            attempt += 1
            _log.warning(
                "storage %s: connection lost while %s (%s); retry %d of %d in %.2f s",
                target.display,
                doing,
                exc,
                attempt,
                retries,
                delay,
            )
            await asyncio.sleep(delay)
