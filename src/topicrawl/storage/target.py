"""Where storage lives: parse a storage URL and build the async engine for it.

Accepted forms:

- a SQLite file path (``crawl.db``, ``~/data/crawl.db``), or ``sqlite:///path`` (also
  ``sqlite+aiosqlite:///path``);
- ``postgresql://user:password@host:port/database`` (also ``postgres://`` and
  ``postgresql+asyncpg://``). Query parameters: ``schema=name`` keeps the tables in that
  PostgreSQL schema (created when missing; the name is case-sensitive, as if quoted) instead
  of ``public``; ``application_name=name`` labels the connections in ``pg_stat_activity``
  (default ``topicrawl``); the libpq parameters ``sslmode`` and ``target_session_attrs`` are
  passed to asyncpg. Any other parameter is refused.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import URL, Connection, event, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from topicrawl.core.errors import ConfigError, StorageError

__all__ = ["SQLITE_PAGE_SIZE", "WRITE_OPTION", "DatabaseTarget", "create_engine", "parse_target"]

_log = logging.getLogger(__name__)

# Execution option that marks a write transaction; on SQLite it begins with BEGIN IMMEDIATE, so
# a writer takes the write lock up front instead of failing to upgrade a read lock later.
WRITE_OPTION = "topicrawl_write"

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# libpq URL parameters asyncpg understands, with the values it accepts.
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_SESSION_ATTRS = ("any", "primary", "standby", "prefer-standby", "read-write", "read-only")
_PASSED = {
    "sslmode": ("ssl", _SSLMODES),
    "target_session_attrs": ("target_session_attrs", _SESSION_ATTRS),
}

# Pages of 20 KB text span fewer overflow pages at 8 KiB than at SQLite's default 4 KiB.
SQLITE_PAGE_SIZE = 8192
# Checkpoint the WAL into the database once it holds this much (SQLite's default is ~4 MiB,
# less than one batch of pages): each checkpoint costs two fsyncs and rewrites the index pages
# touched since the last, so a checkpoint every few batches instead of every one roughly
# doubled raw insert throughput. The WAL file grows to about this size while a crawl runs.
_WAL_CHECKPOINT_BYTES = 64 * 2**20
# A log that starts over is cut back to this size (else it keeps its largest size on disk).
WAL_KEEP_BYTES = _WAL_CHECKPOINT_BYTES


@dataclass(frozen=True, slots=True)
class DatabaseTarget:
    """A parsed storage URL.

    ``display`` names the database for people (a path, or ``host:port/database``) and never
    holds a password.
    """

    dialect: Literal["sqlite", "postgresql"]
    url: URL
    display: str
    path: Path | None = None
    host: str | None = None
    schema: str | None = None
    application_name: str = "topicrawl"
    driver_options: tuple[tuple[str, str], ...] = ()


def parse_target(url: str) -> DatabaseTarget:
    """Parse a storage URL or SQLite path.

    Raises:
        ConfigError: the URL is malformed, names another database or driver, or an in-memory
            SQLite database (which the storage's several connections could not share).
    """
    if not url.strip():
        raise ConfigError("the storage URL is empty: give a SQLite file path or postgresql:// URL")
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in {"postgresql", "postgres", "postgresql+asyncpg"}:
        return _postgres_target(url)
    if scheme in {"sqlite", "sqlite+aiosqlite"}:
        try:
            database = make_url(url).database or ""
        except ArgumentError as exc:
            raise ConfigError(f"storage URL {url!r} is malformed: {exc}") from exc
        return _sqlite_target(database)
    if scheme:
        raise ConfigError(
            f"storage URL scheme {scheme!r} is not supported: use a SQLite file path, "
            "sqlite:///path, or postgresql://host/database"
        )
    return _sqlite_target(url)


def _sqlite_target(database: str) -> DatabaseTarget:
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        raise ConfigError(
            "storage needs a SQLite file path: an in-memory database is not shared between "
            "connections"
        )
    path = Path(database).expanduser()
    sa_url = URL.create("sqlite+aiosqlite", database=str(path))
    return DatabaseTarget(dialect="sqlite", url=sa_url, display=str(path), path=path)


def _postgres_target(url: str) -> DatabaseTarget:
    try:
        parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    except ArgumentError as exc:
        raise ConfigError(f"storage URL is malformed: {exc}") from exc
    query = dict(parsed.query)
    schema_value = query.pop("schema", None)
    app_value = query.pop("application_name", "topicrawl")
    if isinstance(schema_value, tuple) or isinstance(app_value, tuple):
        raise ConfigError("the storage URL gives ?schema= or ?application_name= more than once")
    if schema_value is not None and not _SCHEMA_NAME.fullmatch(schema_value):
        raise ConfigError(
            f"PostgreSQL schema name {schema_value!r} must be letters, digits and underscores, "
            "not starting with a digit, at most 63 characters"
        )
    driver_options = _driver_options(query)
    sa_url = parsed.set(drivername="postgresql+asyncpg", query={})
    host = parsed.host or "localhost"
    display = f"{host}:{parsed.port or 5432}/{parsed.database or ''}"
    return DatabaseTarget(
        dialect="postgresql",
        url=sa_url,
        display=display,
        host=host,
        schema=schema_value,
        application_name=app_value,
        driver_options=driver_options,
    )


def _driver_options(query: dict[str, str | tuple[str, ...]]) -> tuple[tuple[str, str], ...]:
    """asyncpg's connect arguments for the URL's libpq parameters (what is left of the query).

    Raises:
        ConfigError: a parameter asyncpg cannot take, given twice, or with a bad value.
    """
    unknown = sorted(set(query) - set(_PASSED))
    if unknown:
        raise ConfigError(
            f"storage URL parameter(s) {', '.join(unknown)} not supported: a PostgreSQL URL "
            f"takes schema, application_name, {', '.join(sorted(_PASSED))}"
        )
    options = []
    for name, value in sorted(query.items()):
        argument, allowed = _PASSED[name]
        if isinstance(value, tuple) or value not in allowed:
            raise ConfigError(
                f"storage URL parameter {name}={value!r}: give it once, one of {', '.join(allowed)}"
            )
        options.append((argument, value))
    return tuple(options)


# Server settings of every PostgreSQL session, so a writer cut off by a network partition does
# not hold its row locks (and stall every other worker's upsert of those URLs) for as long as
# the partition lasts. Our write transactions send their statements back to back, so a
# session idle inside one for 15 s has lost its client: the server ends it and rolls back.
# Keepalives end a session whose client went silent mid-statement within about 10 + 5 * 3 s
# (the server's default is 2 h).
_PG_SESSION = {
    "idle_in_transaction_session_timeout": "15000",
    "tcp_keepalives_idle": "10",
    "tcp_keepalives_interval": "5",
    "tcp_keepalives_count": "3",
}


def create_engine(
    target: DatabaseTarget,
    *,
    busy_timeout: float,
    connect_timeout: float,
    read_only: bool = False,
    command_timeout: float | None = None,
) -> AsyncEngine:
    """Build the async engine: aiosqlite with WAL for SQLite, an asyncpg pool for PostgreSQL.

    ``command_timeout``: seconds a PostgreSQL command may wait for its answer (None: no limit).

    With ``read_only``, nothing is ever written: a SQLite file is opened with ``mode=ro`` (or
    ``immutable=1`` where even that cannot open it, e.g. a WAL database on read-only media)
    and set ``query_only``; PostgreSQL sessions default to read-only transactions.

    Raises:
        ConfigError: the driver for the target is not installed, or the SQLite path is a
            directory.
        StorageError: the SQLite file's directory cannot be created.
    """
    if target.dialect == "sqlite":
        if read_only:
            return _sqlite_reader(target, busy_timeout=busy_timeout)
        return _sqlite_engine(target, busy_timeout=busy_timeout)
    connect_args: dict[str, Any] = {
        "timeout": connect_timeout,
        "server_settings": {"application_name": target.application_name, **_PG_SESSION},
    }
    connect_args["connection_class"] = _bounded_close_connection()
    if command_timeout is not None:
        # Without it a command whose session the server ended while the network was cut
        # (no reset ever arrives) waits for an answer forever; a timed-out command is a
        # TimeoutError, which storage retries on a fresh connection.
        connect_args["command_timeout"] = command_timeout
    if read_only:
        connect_args["server_settings"]["default_transaction_read_only"] = "on"
    connect_args.update(target.driver_options)
    if target.schema is not None:
        # Quoted, as the schema is created: an unquoted name would be folded to lower case.
        connect_args["server_settings"]["search_path"] = f'"{target.schema}"'
    try:
        return create_async_engine(
            target.url,
            pool_size=5,
            max_overflow=10,
            # No pre-ping (a round trip per checkout): storage retries an operation whose
            # connection turns out dead, and SQLAlchemy then recycles the whole pool.
            pool_pre_ping=False,
            pool_recycle=1800,
            connect_args=connect_args,
        )
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "PostgreSQL storage needs asyncpg: pip install 'topicrawl[postgres]'"
        ) from exc


# Seconds closing a PostgreSQL connection may take (the Terminate message and the server's
# goodbye); then the socket is dropped.
_CLOSE_TIMEOUT = 5.0


def _bounded_close_connection() -> type[Any]:
    """An asyncpg connection class whose ``close()`` gives up after :data:`_CLOSE_TIMEOUT`.

    SQLAlchemy closes pooled connections with asyncpg's ``close()`` and no timeout (when the
    pool is disposed at the end of a crawl, and when an overflow connection is checked in).
    On a connection that stopped answering without closing (a network partition; a session
    whose protocol is left waiting after a lost or cancelled command) that waits for ever:
    the crawl's storage never closes and the process never ends. Given up, asyncpg aborts
    the socket and SQLAlchemy logs the failed close and goes on.
    """
    import asyncpg  # noqa: PLC0415 - PostgreSQL only

    class BoundedCloseConnection(asyncpg.Connection):  # type: ignore[misc]
        async def close(self, *, timeout: float | None = None) -> None:  # noqa: ASYNC109 - asyncpg API
            await super().close(timeout=_CLOSE_TIMEOUT if timeout is None else timeout)

    return BoundedCloseConnection


def _sqlite_engine(target: DatabaseTarget, *, busy_timeout: float) -> AsyncEngine:
    path = target.path
    if path is not None:
        # Checked here because aiosqlite, when the connect itself fails, leaves a thread that
        # reports back to the event loop later, possibly after the loop is gone.
        if path.is_dir():
            raise ConfigError(f"SQLite database path {path} is a directory: give a file path")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create the directory for SQLite database {path}: {exc}"
            ) from exc
    engine = create_async_engine(target.url, connect_args={"timeout": busy_timeout})

    @event.listens_for(engine.sync_engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        try:
            _set_pragmas(dbapi_connection, target, busy_timeout)
        except BaseException:
            # The pool drops a connection whose set-up failed without closing it; an unclosed
            # aiosqlite connection keeps a thread that may outlive the event loop.
            dbapi_connection.close()
            raise

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(connection: Connection) -> None:
        # Reads run without BEGIN: each SELECT is then its own consistent snapshot, and a
        # lookup costs fewer round trips to aiosqlite's thread.
        if connection.get_execution_options().get(WRITE_OPTION):
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _sqlite_reader(target: DatabaseTarget, *, busy_timeout: float) -> AsyncEngine:
    path = target.path
    assert path is not None
    if path.is_dir():
        raise ConfigError(f"SQLite database path {path} is a directory: give a file path")
    location = "file:" + urllib.parse.quote(str(path.resolve()))
    mode = _read_only_mode(location, path)
    url = URL.create("sqlite+aiosqlite", database=location, query={**mode, "uri": "true"})
    engine = create_async_engine(url, connect_args={"timeout": busy_timeout})

    @event.listens_for(engine.sync_engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA query_only=ON")
                cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            finally:
                cursor.close()
        except BaseException:
            dbapi_connection.close()
            raise

    return engine


def _read_only_mode(location: str, path: Path) -> dict[str, str]:
    """``mode=ro`` when SQLite can read the file that way, else ``immutable=1``.

    A WAL database needs its ``-shm`` file even to be read; on read-only media (or in a
    directory we may not write) SQLite cannot create it and ``mode=ro`` fails to open.
    ``immutable=1`` reads the main file alone, without locks: right for media nothing
    writes to, and it cannot see writes still in a ``-wal`` file, which is said.
    """
    try:
        probe = sqlite3.connect(f"{location}?mode=ro", uri=True)
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            probe.close()
    except sqlite3.OperationalError as exc:
        if "unable to open" not in str(exc) and "readonly" not in str(exc):
            raise StorageError(f"cannot read SQLite database {path}: {exc}") from exc
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            _log.warning(
                "%s cannot be opened for reading with its write-ahead log (%s); reading the "
                "main file alone, without the writes still in %s. Copy the database with "
                "its -wal file to writable storage to read them.",
                path,
                exc,
                wal,
            )
        return {"immutable": "1"}
    return {"mode": "ro"}


def _switch_to_wal(cursor: Any, busy_timeout: float) -> Any:
    """``PRAGMA journal_mode=WAL``, retried while another connection holds the file.

    SQLite answers a journal-mode change with "database is locked" at once, without its busy
    handler, when another connection opening the same new file at the same moment holds a
    lock; so several processes starting one crawl together must retry it themselves.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.01
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return cursor.fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def _set_pragmas(dbapi_connection: Any, target: DatabaseTarget, busy_timeout: float) -> None:
    """Page size (new files), WAL and its checkpoint interval, NORMAL sync, foreign keys and
    the busy timeout; transactions left to SQLAlchemy."""
    # Hand transaction control to SQLAlchemy (the engine's "begin" hook): the sqlite3
    # module's legacy mode would run DDL outside the migration transaction.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # Only takes effect on a new, empty file (a WAL database keeps the size it has).
        cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
        row = _switch_to_wal(cursor, busy_timeout)
        if row is None or str(row[0]).lower() != "wal":
            _log.warning(
                "SQLite database %s could not switch to WAL (journal mode %s): readers "
                "will block the writer",
                target.display,
                row[0] if row else None,
            )
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA page_size")
        page_size = int(cursor.fetchone()[0])
        cursor.execute(f"PRAGMA wal_autocheckpoint={max(1, _WAL_CHECKPOINT_BYTES // page_size)}")
        cursor.execute(f"PRAGMA journal_size_limit={WAL_KEEP_BYTES}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    finally:
        cursor.close()
