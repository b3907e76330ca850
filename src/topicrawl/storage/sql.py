"""Crawl storage on SQLite or PostgreSQL through one SQLAlchemy async code path.

Pages and failures are buffered in memory and written in batches by a background task: when
``batch_size`` pages are waiting, every ``flush_interval`` seconds, on :meth:`SqlStorage.flush`
and on :meth:`SqlStorage.close`. Each batch is one transaction. Reads (counts, iteration) flush
first, so they see every write made before them.

A page's outgoing links are stored in its own row, packed into one column
(:mod:`topicrawl.storage.outlinks`), so a page costs one row however many links it has. A
link-graph index (the pages linking to a URL, PageRank edges) is a derived table to be built
from that column by a later job; no such table is built yet.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeVar

from sqlalchemy import Row, func, insert, inspect, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.expression import Executable

from topicrawl.core.errors import DatabaseLocked, StorageError
from topicrawl.core.models import FetchFailure, Page
from topicrawl.storage.buffer import WriteBuffer
from topicrawl.storage.errors import with_retries
from topicrawl.storage.hashes import HashFilter
from topicrawl.storage.migrations import check_readable, migrate
from topicrawl.storage.rows import (
    ArchivedPage,
    PendingPage,
    PreparedBatch,
    StoredRun,
    clean,
    decode_body,
    failure_from_row,
    failure_row,
    headers_from_row,
    page_from_row,
    pending_page,
    prepare_batch,
    run_from_row,
    video_from_row,
)
from topicrawl.storage.schema import failures, page_media, pages, run_samples, runs
from topicrawl.storage.statements import Statements, write_batch
from topicrawl.storage.target import WRITE_OPTION, DatabaseTarget, create_engine, parse_target
from topicrawl.storage.wal import WAL_LIMIT_BYTES, WalBound

__all__ = ["SqlStorage", "StorageStats"]

MIGRATION_COMMAND_TIMEOUT = 3600.0
"""Seconds a PostgreSQL command of a migration may wait for its answer (storage's own bound,
``command_timeout``, is for writes and reads)."""
_log = logging.getLogger(__name__)

_T = TypeVar("_T")

# Rows read per query when iterating pages and failures, and when loading content hashes.
_READ_CHUNK = 500
_HASH_CHUNK = 20_000
# Live samples kept while the database cannot be written (an hour at one every 2 s).
_MAX_SAMPLES = 1800
# Seconds a caller saving in a tight loop runs before giving other tasks a turn.
_YIELD_EVERY = 0.001
# Content-hash look-ups in the database at once (of the pool's 5 + 10 connections).
_MAX_LOOKUPS = 4

# A page's columns but the kept raw response, the packed links and the links' priorities
# (read on request).
_PAGE_FIELDS = [
    c for c in pages.columns if c.name not in {"body", "headers", "links", "link_scores"}
]
_MEDIA_FIELDS = [
    page_media.c.video_class,
    page_media.c.media,
    page_media.c.resolver,
    page_media.c.errors,
]


async def _has_table(engine: AsyncEngine, name: str) -> bool:
    async with engine.connect() as connection:
        return bool(await connection.run_sync(lambda sync: inspect(sync).has_table(name)))


@dataclass(frozen=True, slots=True)
class StorageStats:
    """Counters of a storage's writes since it opened.

    ``last_flush_seconds`` and ``max_flush_seconds`` time one batch transaction each (row
    preparation included); ``buffered_pages`` are saved but not yet written.
    """

    pages_written: int
    failures_written: int
    batches: int
    buffered_pages: int
    buffered_failures: int
    last_flush_seconds: float
    max_flush_seconds: float
    total_flush_seconds: float


@dataclass(frozen=True, slots=True)
class _TakenBatch:
    """Pages and failures taken from the buffer, with their rows (being) prepared: at once,
    or in a worker thread when raw bodies need compressing."""

    pages: list[PendingPage]
    failures: list[tuple[FetchFailure, int]]
    preparing: asyncio.Future[PreparedBatch]
    started: float

    def discard(self) -> None:
        """Drop the rows being prepared (the thread still finishes; its outcome is ignored)."""
        self.preparing.add_done_callback(_ignore_outcome)


def _ignore_outcome(future: asyncio.Future[PreparedBatch]) -> None:
    # Retrieved so asyncio does not log "exception was never retrieved" for a discarded batch;
    # the batch itself is back in the buffer and will be prepared again.
    if not future.cancelled():
        future.exception()


class SqlStorage:
    """The :class:`~topicrawl.core.protocols.Storage` on SQLite (default) or PostgreSQL.

    Args:
        url: a SQLite file path (or ``sqlite:///path``) or a ``postgresql://`` URL, optionally
            with ``?schema=name`` (see :mod:`topicrawl.storage.target`).
        batch_size: pages per write transaction; a full batch is written at once.
        flush_interval: seconds between background writes of a partial batch.
        keep_body: keep each page's raw body (zlib-compressed) and response headers, as passed
            to :meth:`save_page`; WARC export writes them as ``response`` records.
        keep_link_scores: keep each page's link priorities (``Page.link_scores``, the best
            :data:`~topicrawl.storage.link_scores.MAX_LINKS`) in its row, for the dashboard;
            False stores none (NULL).
        busy_timeout: seconds a SQLite writer waits for another process's lock before
            :class:`~topicrawl.core.errors.DatabaseLocked`.
        connect_timeout: seconds to connect to PostgreSQL.
        command_timeout: seconds a PostgreSQL command may wait for its answer, then it fails
            as a lost connection would and is retried (None: no limit). Long enough for a
            write waiting on another's lock; it bounds a wait on a session the server ended
            while the network was cut, which would otherwise never end.
        retries: attempts after the first for an operation whose connection dropped.
        attempt_timeout: seconds one attempt of an operation may take in all (pool
            checkout, connect, statements, commit), then it counts as a lost connection and
            is retried (None: no bound). A bound on the whole attempt, as ``command_timeout``
            is only on each command's answer.
        retry_backoff: seconds before the first retry; doubled each time (at most 5 s).
        hash_filter: answer most :meth:`find_content_hash` misses from an in-memory Bloom
            filter of the stored hashes (loaded at open) instead of the database. ``None``
            (default) means on for SQLite, off for PostgreSQL, whose database other workers
            write to as well.
        close_lock_wait: seconds :meth:`close` goes on trying its last write while another
            connection holds a SQLite file's lock, before it raises.
        read_only: only read: nothing is written, not even migrations, so a database on
            read-only media (or one another process writes) can be read; saving raises
            :class:`~topicrawl.core.errors.StorageError`. The database must exist and have
            a schema this topicrawl can read.

    Raises:
        ConfigError: ``url`` is malformed or names an unsupported database.
    """

    def __init__(
        self,
        url: str,
        *,
        batch_size: int = 200,
        flush_interval: float = 1.0,
        keep_body: bool = False,
        keep_link_scores: bool = True,
        busy_timeout: float = 5.0,
        connect_timeout: float = 10.0,
        command_timeout: float | None = 300.0,
        retries: int = 4,
        retry_backoff: float = 0.25,
        attempt_timeout: float | None = 120.0,
        hash_filter: bool | None = None,
        close_lock_wait: float = 60.0,
        read_only: bool = False,
        wal_limit_bytes: int = WAL_LIMIT_BYTES,
    ) -> None:
        if batch_size < 1 or flush_interval <= 0 or retries < 0 or retry_backoff < 0:
            raise ValueError(
                "batch_size must be >= 1, flush_interval > 0, retries and retry_backoff >= 0"
            )
        if attempt_timeout is not None and not attempt_timeout > 0:
            raise ValueError(f"attempt_timeout must be > 0 or None, got {attempt_timeout}")
        self._target: DatabaseTarget = parse_target(url)
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._keep_body = keep_body
        self._keep_link_scores = keep_link_scores
        self._busy_timeout = busy_timeout
        self._connect_timeout = connect_timeout
        self._command_timeout = command_timeout
        self._retries = retries
        self._retry_backoff = retry_backoff
        self._attempt_timeout = attempt_timeout
        self._read_only = read_only
        self._wal_limit = wal_limit_bytes
        self.wal: WalBound | None = None
        """SQLite: the bound on the write-ahead log (its counters), once open."""
        # Past this many buffered pages, save_page waits for a write instead of growing memory.
        self._max_buffered = batch_size * 8

        self._engine: AsyncEngine | None = None
        self._writer: AsyncEngine | None = None
        self._reader: AsyncEngine | None = None
        self._statements: Statements | None = None
        # Whether the database has the page_media table (every database written by this
        # version; an older one opened read-only may not), and whether it has any row (else
        # a batch skips deleting the rows of pages no longer video pages).
        self._has_media = True
        self._media_rows_exist = False
        self._flusher: asyncio.Task[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        # Savers waiting for room in a full buffer, first come first served (see _wait_for_room).
        self._room_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._close_lock_wait = close_lock_wait
        # Content-hash look-ups that reach the database at once. After a resume (or any
        # refetch) every page's hash is in the filter and each page asks the database; on a
        # loaded machine 128 such look-ups held all 15 pooled connections for 30 s, the
        # writer got none, and pool timeouts stalled the crawl. Queued here, they leave the
        # writer and other reads connections.
        self._lookups = asyncio.Semaphore(_MAX_LOOKUPS)
        self._stopping = False
        self._closed = False
        self._error: StorageError | None = None

        self._buffer = WriteBuffer()
        self._samples: list[dict[str, Any]] = []  # live samples waiting for the writer
        self._last_yield = 0.0
        use_filter = self._target.dialect == "sqlite" if hash_filter is None else hash_filter
        use_filter = use_filter and not read_only
        self._hashes: HashFilter | None = HashFilter() if use_filter else None

        self._pages_written = 0
        self._failures_written = 0
        self._batches = 0
        self._last_flush = 0.0
        self._max_flush = 0.0
        self._total_flush = 0.0

    @property
    def target(self) -> DatabaseTarget:
        """The parsed database location."""
        return self._target

    @property
    def stats(self) -> StorageStats:
        """A snapshot of the write counters."""
        return StorageStats(
            pages_written=self._pages_written,
            failures_written=self._failures_written,
            batches=self._batches,
            buffered_pages=self._buffer.page_count,
            buffered_failures=self._buffer.failure_count,
            last_flush_seconds=self._last_flush,
            max_flush_seconds=self._max_flush,
            total_flush_seconds=self._total_flush,
        )

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # -- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, apply missing migrations and start the background writer.

        Raises:
            DatabaseLocked: another process holds the SQLite database.
            DatabaseCorrupt: the SQLite file is not a usable database.
            StorageError: the database cannot be reached or migrated.
        """
        if self._closed:
            raise StorageError(f"storage {self._target.display} was closed; make a new one")
        if self._engine is not None:
            return
        engine = create_engine(
            self._target,
            busy_timeout=self._busy_timeout,
            connect_timeout=self._connect_timeout,
            read_only=self._read_only,
            command_timeout=self._command_timeout,
        )
        if self._read_only:
            await self._open_for_reading(engine)
            return
        writer = engine.execution_options(**{WRITE_OPTION: True})
        try:
            # No retries: an unreachable or locked database at start is reported at once.
            await self._attempt(
                "opening the database", partial(self._open_migrated, writer), retries=0
            )
        except BaseException:
            await engine.dispose()
            raise
        self._engine, self._writer = engine, writer
        # PostgreSQL reads run in autocommit: no BEGIN/ROLLBACK round trips around a SELECT.
        # (SQLite reads already skip BEGIN; its driver's isolation level must stay untouched.)
        self._reader = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if self._target.dialect == "postgresql"
            else engine
        )
        if self._hashes is not None:
            try:
                await self._attempt("loading content hashes", self._load_hashes)
            except BaseException:
                self._engine = self._writer = self._reader = None
                await engine.dispose()
                raise
        self._statements = Statements(engine.dialect)
        if self._target.path is not None:
            self.wal = WalBound(
                self._target.path, limit_bytes=self._wal_limit, busy_timeout=self._busy_timeout
            )
        self._start_flusher()

    async def _open_for_reading(self, engine: AsyncEngine) -> None:
        try:
            await self._attempt(
                "opening the database to read",
                partial(check_readable, engine, display=self._target.display),
                retries=0,
            )
            self._has_media = await self._attempt(
                "looking for the page_media table",
                partial(_has_table, engine, "page_media"),
                retries=0,
            )
        except BaseException:
            await engine.dispose()
            raise
        self._engine = engine
        self._reader = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if self._target.dialect == "postgresql"
            else engine
        )
        self._statements = Statements(engine.dialect)

    def _start_flusher(self) -> None:
        self._flusher = asyncio.create_task(self._flush_loop(), name="topicrawl-storage-writer")
        self._flusher.add_done_callback(self._flusher_done)

    async def _open_migrated(self, writer: AsyncEngine) -> None:
        """Migrate; on PostgreSQL on an engine of its own whose commands may take up to
        :data:`MIGRATION_COMMAND_TIMEOUT`: a migration's fill or index build on a database of a
        million pages takes minutes (schema 17: benchmarks/dashboard/README.md)."""
        if self._target.dialect == "sqlite":
            await self._migrate(writer)
            return
        engine = create_engine(
            self._target,
            busy_timeout=self._busy_timeout,
            connect_timeout=self._connect_timeout,
            command_timeout=(
                None
                if self._command_timeout is None
                else max(self._command_timeout, MIGRATION_COMMAND_TIMEOUT)
            ),
        )
        try:
            await self._migrate(engine.execution_options(**{WRITE_OPTION: True}))
        finally:
            await engine.dispose()

    async def _migrate(self, writer: AsyncEngine) -> None:
        async with writer.begin() as connection:
            if self._target.schema is not None:
                await connection.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:name))"),
                    {"name": f"topicrawl schema {self._target.schema}"},
                )
                await connection.execute(
                    text(f'CREATE SCHEMA IF NOT EXISTS "{self._target.schema}"')
                )
            applied = await migrate(connection)
            found = await connection.execute(select(page_media.c.id).limit(1))
            self._media_rows_exist = found.first() is not None
        if applied:
            _log.info("storage %s migrated to schema version %s", self._target.display, applied[-1])

    async def _load_hashes(self) -> None:
        assert self._hashes is not None
        last_id = 0
        while True:
            statement = (
                select(pages.c.id, pages.c.content_hash)
                .where(pages.c.id > last_id, pages.c.content_hash.is_not(None))
                .order_by(pages.c.id)
                .limit(_HASH_CHUNK)
            )
            rows = await self._read(statement)
            if not rows:
                return
            for row in rows:
                self._hashes.add(row.content_hash)
            last_id = rows[-1].id

    async def close(self) -> None:
        """Write everything buffered, stop the background writer and disconnect.

        New saves are refused from the moment close starts; a second call waits for the
        first to finish.

        Raises:
            StorageError: the last writes failed; the message says how much was not written.
        """
        self._closed = True
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shut_down())
        # Shielded: a caller cancelled while closing must not cut the final write short.
        await asyncio.shield(self._closing)

    async def _shut_down(self) -> None:
        engine = self._engine
        if engine is None:
            return
        self._stopping = True
        self._wake.set()
        if self._flusher is not None:
            await asyncio.wait([self._flusher])
        try:
            await self._drain_through_locks(self._close_lock_wait)
        except StorageError as exc:
            raise type(exc)(
                f"{exc} ({self._buffer.page_count} pages and {self._buffer.failure_count} "
                "failures were not written)"
            ) from exc
        finally:
            self._engine = self._writer = self._reader = None
            await engine.dispose()

    # -- writes ----------------------------------------------------------------------------

    async def start_run(self, *, name: str, config: str) -> int:
        """Record the start of a crawl run and return its id."""
        statement = (
            insert(runs)
            .values(name=clean(name), started_at=time.time(), config=clean(config))
            .returning(runs.c.id)
        )

        async def write() -> int:
            async with self._write_engine().begin() as connection:
                return int((await connection.execute(statement)).scalar_one())

        return await self._attempt("starting a run", write)

    async def finish_run(self, run_id: int, *, stats: str) -> None:
        """Write what is buffered, then record the end of run ``run_id`` with its stats.

        Raises:
            StorageError: there is no run ``run_id``.
        """
        await self.flush()
        statement = (
            update(runs)
            .where(runs.c.id == run_id)
            .values(finished_at=time.time(), stats=clean(stats))
        )

        async def write() -> int:
            async with self._write_engine().begin() as connection:
                return (await connection.execute(statement)).rowcount

        if await self._attempt(f"finishing run {run_id}", write) == 0:
            raise StorageError(f"there is no run {run_id} in {self._target.display}")

    async def save_page(
        self,
        page: Page,
        *,
        run_id: int,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Buffer ``page`` for writing; it replaces any stored page with the same URL.

        A page saved again keeps its place in fetch order. ``body`` (the raw response body
        after HTTP decompression) and ``headers`` (the response headers) are stored only when
        the storage keeps bodies (``keep_body=True``), for WARC export.

        The page's row is built here, on the caller's thread (about a microsecond a link), so
        a page that cannot be stored is refused at once instead of failing a later batch.

        Raises:
            StorageError: an earlier background write failed and has not yet succeeded on
                retry (the buffered pages are kept), the storage is not open, or a field of
                ``page`` is not of its declared type.
        """
        self._check_writable()
        await self._wait_for_room()
        keep = self._keep_body
        if page.link_scores and not self._keep_link_scores:
            page = dataclasses.replace(page, link_scores=())
        entry = pending_page(
            page,
            run_id=run_id,
            body=body if keep else None,
            headers=headers if keep else None,
        )
        self._buffer.add_page(entry)
        if self._hashes is not None and entry.page.content_hash is not None:
            self._hashes.add(clean(entry.page.content_hash))
        if self._buffer.page_count >= self._batch_size:
            self._wake.set()
        await self._let_writer_run()

    async def save_failure(self, failure: FetchFailure, *, run_id: int) -> None:
        """Buffer a failed fetch for writing.

        Raises:
            StorageError: as for :meth:`save_page`.
        """
        self._check_writable()
        # Built now only to refuse a failure that cannot be stored; the batch builds it again.
        try:
            failure_row(failure, run_id=run_id)
        except (TypeError, ValueError, AttributeError) as exc:
            raise StorageError(f"failure for {failure.url!r} cannot be stored: {exc}") from exc
        await self._wait_for_room()
        self._buffer.add_failure(failure, run_id)
        if self._buffer.failure_count >= self._batch_size:
            self._wake.set()
        await self._let_writer_run()

    def save_sample(self, row: Mapping[str, Any]) -> None:
        """Buffer a live sample row (``run_samples``, see topicrawl.engine.samples); the
        background writer writes it with the next batch. Past :data:`_MAX_SAMPLES` unwritten
        samples (the database is away) the oldest is dropped.

        Raises:
            StorageError: the storage is not open or is read-only.
        """
        self._check_open()
        if self._read_only:
            raise StorageError(f"storage {self._target.display} was opened read-only")
        if len(self._samples) >= _MAX_SAMPLES:
            del self._samples[0]
        self._samples.append(dict(row))

    async def _let_writer_run(self) -> None:
        # Saving builds the page's row on the loop (~1 us a link). A caller saving in a tight
        # loop (an import, a benchmark) would hold the loop for a whole batch (30-50 ms at 200
        # links a page) and keep the background writer's steps from running until the buffer
        # is full. Yielding about once a millisecond bounds both, and lets row building
        # overlap with the database's work on the last batch.
        if time.perf_counter() - self._last_yield >= _YIELD_EVERY:
            await asyncio.sleep(0)
            # Counted from the resumption: the caller gets a full turn, however long others ran.
            self._last_yield = time.perf_counter()

    async def flush(self) -> None:
        """Write everything buffered so far, one transaction per batch.

        Raises:
            StorageError: a batch could not be written; it stays buffered for a later flush.
        """
        self._check_open()
        await self._drain()

    async def _drain_through_locks(self, seconds: float) -> None:
        """Drain, trying again for ``seconds`` while a lock holds the SQLite file (the last
        write of a crawl must not be lost to a lock another connection holds a while)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                await self._drain()
                return
            except DatabaseLocked as exc:
                if time.monotonic() >= deadline:
                    raise
                _log.warning("storage: closing waits for a lock: %s", exc)
                await asyncio.sleep(min(self._flush_interval, 1.0))

    def _full(self) -> bool:
        return (
            self._buffer.page_count >= self._max_buffered
            or self._buffer.failure_count >= self._max_buffered
        )

    async def _wait_for_room(self) -> None:
        """Wait, when the buffer is full (or others wait already), until the background writer
        has taken enough out of it; savers go on in the order they came.

        A saver that found the buffer full used to flush it itself, each in turn: the flush
        of a saver in the queue wrote everything buffered when its turn came, while later
        savers went through whenever the buffer had room. On a loaded machine (a buffer's
        flush ~2 minutes) a page so waited for 9-30 minutes behind a convoy of flushes, its
        lease expired and its URL was fetched and stored again (the scale benchmark).
        """
        if not (self._full() or self._room_waiters):
            return
        if self._flusher is None or self._flusher.done() or self._stopping:
            await self._flush_through_locks()  # no background writer to wait for
            return
        if not self._room_waiters:  # once a wait, not once a saver
            why = f": {self._error}" if self._error is not None else ""
            _log.warning(
                "storage: the buffer is full (%d pages); saves wait for the writer%s",
                self._buffer.page_count,
                why,
            )
        waiting = asyncio.get_running_loop().create_future()
        self._room_waiters.append(waiting)
        self._wake.set()
        try:
            await waiting
        finally:
            if not waiting.done():  # cancelled: out of the queue
                waiting.cancel()
                with contextlib.suppress(ValueError):
                    self._room_waiters.remove(waiting)

    def _let_waiters_in(self, *, everyone: bool = False) -> None:
        """Wake the savers waiting for room, first come first, as many as there is room for
        (``everyone``: all of them, e.g. when the writer stopped)."""
        room = self._max_buffered - max(self._buffer.page_count, self._buffer.failure_count)
        while self._room_waiters and (everyone or room > 0):
            waiting = self._room_waiters.popleft()
            if not waiting.done():
                waiting.set_result(None)
                room -= 1

    async def _flush_through_locks(self) -> None:
        """Flush a full buffer; while another connection holds a SQLite file past the busy
        timeout (the frontier's writer, a user's shell), wait and try again: the caller waits,
        as it would for a slow disk, and the crawl does not end on a transient lock."""
        while True:
            try:
                await self.flush()
                return
            except DatabaseLocked as exc:
                _log.warning("storage: the buffer is full and %s; trying again", exc)
                await asyncio.sleep(self._flush_interval)

    def _check_open(self) -> None:
        if self._closed or self._engine is None:
            raise self._not_open()

    def _not_open(self) -> StorageError:
        state = "is closed" if self._closed else "is not open: call open() first"
        return StorageError(f"storage {self._target.display} {state}")

    def _check_writable(self) -> None:
        self._check_open()
        if self._read_only:
            raise StorageError(f"storage {self._target.display} was opened read-only")
        if self._flusher is not None and self._flusher.done() and not self._stopping:
            # It died of an unexpected error (logged and recorded by _flusher_done).
            self._start_flusher()
        # A locked SQLite file is transient: the background writer retries, and a full
        # buffer makes the saver wait (_flush_through_locks) instead of failing its page.
        if self._error is not None and not isinstance(self._error, DatabaseLocked):
            raise type(self._error)(
                f"an earlier write failed and is being retried ({self._buffer.page_count} "
                f"pages buffered): {self._error}"
            )

    # Not _check_open: close() still writes through these while refusing new saves.
    def _write_engine(self) -> AsyncEngine:
        if self._writer is None:
            raise self._not_open()
        return self._writer

    def _read_engine(self) -> AsyncEngine:
        if self._reader is None:
            raise self._not_open()
        return self._reader

    async def _flush_loop(self) -> None:
        while not self._stopping:
            try:
                async with asyncio.timeout(self._flush_interval):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            if self._stopping or not (self._buffer or self._samples):
                continue
            try:
                await self._drain()
            except DatabaseLocked as exc:
                # Transient, and logged without a traceback: a rich traceback on every retry
                # of a long lock costs the event loop more than the retry itself.
                self._error = exc
                _log.warning(
                    "storage write put off, %d pages buffered: %s", self._buffer.page_count, exc
                )
                await asyncio.sleep(self._flush_interval)
            except StorageError as exc:
                self._error = exc
                _log.error(
                    "storage write failed; %d pages and %d failures stay buffered and will be "
                    "retried: %s",
                    self._buffer.page_count,
                    self._buffer.failure_count,
                    exc,
                    exc_info=exc,
                )
                # Wait a full interval before trying again, even if batches are full.
                await asyncio.sleep(self._flush_interval)

    def _flusher_done(self, task: asyncio.Task[None]) -> None:
        self._let_waiters_in(everyone=True)  # nobody left to make room for them
        if task.cancelled():
            self._error = StorageError("the storage background writer was cancelled")
            return
        exc = task.exception()
        if exc is not None:
            _log.error("the storage background writer stopped", exc_info=exc)
            self._error = StorageError(f"the storage background writer stopped: {exc!r}")

    async def _drain(self) -> None:
        """Write the batches buffered now, preparing each batch's rows (in a worker thread,
        when bodies need compressing) while the one before it is written."""
        async with self._lock:
            # Only what is buffered now: under a steady stream of saves a flush still ends.
            rounds = max(
                math.ceil(self._buffer.page_count / self._batch_size),
                math.ceil(self._buffer.failure_count / self._batch_size),
            )
            current = self._take_batch() if rounds else None
            rounds -= 1
            while current is not None:
                upcoming = None
                try:
                    if rounds > 0:
                        upcoming = self._take_batch()
                        rounds -= 1
                    await self._write_taken(current)
                except BaseException:
                    # Back in front, in order: the unwritten batch, then the one after it.
                    if upcoming is not None:
                        upcoming.discard()
                        self._buffer.restore(upcoming.pages, upcoming.failures)
                    self._buffer.restore(current.pages, current.failures)
                    raise
                current = upcoming
            await self._write_samples()
            self._error = None
            if self.wal is not None and self._engine is not None:
                # Not the writer's engine: that one begins a write transaction, inside which
                # no checkpoint can run.
                await self.wal.check(self._engine)

    async def _write_samples(self) -> None:
        """Write the live samples no page batch took along, in one statement (under the
        writer's lock)."""
        if not self._samples:
            return
        taken, self._samples = self._samples, []

        async def write() -> None:
            async with self._write_engine().begin() as connection:
                await connection.execute(insert(run_samples), taken)

        try:
            await self._attempt(f"writing {len(taken)} live samples", write)
        except BaseException:
            self._samples[0:0] = taken
            del self._samples[: max(0, len(self._samples) - _MAX_SAMPLES)]
            raise

    def _take_batch(self) -> _TakenBatch:
        """Take the next batch from the buffer and start preparing its rows.

        A preparation error is delivered through the batch's future, like a write error.
        """
        pages_taken, failures_taken = self._buffer.take(self._batch_size)
        self._let_waiters_in()
        preparing: asyncio.Future[PreparedBatch]
        if any(entry.body is not None for entry in pages_taken):
            preparing = asyncio.ensure_future(
                asyncio.to_thread(prepare_batch, pages_taken, failures_taken)
            )
        else:
            # Rows were built when saved: nothing here is worth a thread hop.
            preparing = asyncio.get_running_loop().create_future()
            try:
                preparing.set_result(prepare_batch(pages_taken, failures_taken))
            except Exception as exc:
                preparing.set_exception(exc)
            except BaseException:
                self._buffer.restore(pages_taken, failures_taken)
                raise
        return _TakenBatch(
            pages=pages_taken,
            failures=failures_taken,
            preparing=preparing,
            started=time.perf_counter(),
        )

    async def _write_taken(self, taken: _TakenBatch) -> None:
        batch = await taken.preparing
        await self._attempt(
            f"writing {len(taken.pages)} pages and {len(taken.failures)} failures",
            partial(self._write_batch, batch),
        )
        elapsed = time.perf_counter() - taken.started
        self._buffer.committed(taken.pages)
        self._pages_written += len(batch.page_rows)
        self._failures_written += len(taken.failures)
        self._batches += 1
        self._last_flush = elapsed
        self._max_flush = max(self._max_flush, elapsed)
        self._total_flush += elapsed

    async def _write_batch(self, batch: PreparedBatch) -> None:
        statements = self._statements
        assert statements is not None
        # Buffered live samples ride along in the batch's transaction: no commit of their own
        # (an extra commit per checkpoint let distributed workers overshoot max_pages more).
        samples, self._samples = self._samples, []
        try:
            async with self._write_engine().begin() as connection:
                if batch.media_rows:
                    self._media_rows_exist = True
                await write_batch(
                    connection, statements, batch, media_rows_exist=self._media_rows_exist
                )
                if samples:
                    await connection.execute(insert(run_samples), samples)
        except BaseException:
            self._samples[0:0] = samples
            del self._samples[: max(0, len(self._samples) - _MAX_SAMPLES)]
            raise

    # -- reads -----------------------------------------------------------------------------

    async def find_content_hash(self, content_hash: str) -> str | None:
        """The URL of the first page stored (or buffered) with ``content_hash``, if any.

        When that page is itself marked a duplicate, the page it duplicates is returned.
        """
        self._check_open()
        holder = self._buffer.hash_holder(content_hash)
        if holder is not None:
            return holder
        if self._hashes is not None and clean(content_hash) not in self._hashes:
            return None
        statements = self._statements
        assert statements is not None
        parameters = (clean(content_hash),)

        async def read() -> str | None:
            # Driver SQL compiled once: this runs once per crawled page.
            async with self._read_engine().connect() as connection:
                result = await connection.exec_driver_sql(statements.find_hash, parameters)
                row = result.first()
            if row is None:
                return None
            return str(row.duplicate_of or row.url)

        async with self._lookups:
            return await self._attempt("looking up a content hash", read)

    async def get_run(self, run_id: int) -> StoredRun | None:
        """The stored run ``run_id``, or ``None`` when there is none."""
        statement = select(runs).where(runs.c.id == run_id)
        rows = await self._attempt(f"reading run {run_id}", partial(self._read, statement))
        return run_from_row(rows[0]._mapping) if rows else None

    async def count_pages(self, *, run_id: int | None = None) -> int:
        """How many pages are stored, of run ``run_id`` only when given (after writing what
        is buffered)."""
        await self.flush()
        statement = select(func.count(pages.c.id))
        if run_id is not None:
            statement = statement.where(pages.c.run_id == run_id)

        async def read() -> int:
            async with self._read_engine().connect() as connection:
                return int((await connection.execute(statement)).scalar_one())

        return await self._attempt("counting pages", read)

    async def iter_pages(self, *, with_links: bool = False) -> AsyncIterator[Page]:
        """Every stored page in fetch order, read in chunks (after writing what is buffered)."""
        async for page, _ in self._iter_page_rows(with_links=with_links, with_body=False):
            yield page

    async def iter_archived(self) -> AsyncIterator[ArchivedPage]:
        """Every stored page in fetch order with its kept raw body and headers, if any."""
        async for page, row in self._iter_page_rows(with_links=False, with_body=True):
            yield ArchivedPage(
                page=page, body=decode_body(row["body"]), headers=headers_from_row(row)
            )

    async def iter_failures(self) -> AsyncIterator[FetchFailure]:
        """Every stored failure in the order saved (after writing what is buffered)."""
        await self.flush()
        last_id = 0
        while True:
            statement = (
                select(failures)
                .where(failures.c.id > last_id)
                .order_by(failures.c.id)
                .limit(_READ_CHUNK)
            )
            rows = await self._attempt("reading failures", partial(self._read, statement))
            if not rows:
                return
            for row in rows:
                yield failure_from_row(row._mapping)
            last_id = rows[-1].id

    async def _iter_page_rows(
        self, *, with_links: bool, with_body: bool
    ) -> AsyncIterator[tuple[Page, Mapping[Any, Any]]]:
        await self.flush()
        columns: list[Any] = list(_PAGE_FIELDS)
        if with_links:
            columns.append(pages.c.links)
        if with_body:
            columns += [pages.c.body, pages.c.headers]
        source: Any = pages
        if self._has_media:
            columns += _MEDIA_FIELDS
            source = pages.outerjoin(page_media, page_media.c.url == pages.c.url)
        last_id = 0
        while True:
            statement = (
                select(*columns)
                .select_from(source)
                .where(pages.c.id > last_id)
                .order_by(pages.c.id)
                .limit(_READ_CHUNK)
            )
            rows = await self._attempt("reading pages", partial(self._read, statement))
            if not rows:
                return
            for row in rows:
                mapping = row._mapping
                page = page_from_row(mapping, with_links=with_links)
                if self._has_media and mapping["video_class"] is not None:
                    page = dataclasses.replace(page, video=video_from_row(mapping))
                yield page, mapping
            last_id = rows[-1].id

    async def _read(self, statement: Executable) -> Sequence[Row[Any]]:
        async with self._read_engine().connect() as connection:
            return (await connection.execute(statement)).all()

    # -- errors ----------------------------------------------------------------------------

    async def _attempt(
        self, doing: str, operation: Callable[[], Awaitable[_T]], *, retries: int | None = None
    ) -> _T:
        return await with_retries(
            operation,
            target=self._target,
            doing=doing,
            retries=self._retries if retries is None else retries,
            backoff=self._retry_backoff,
            attempt_timeout=self._attempt_timeout if retries is None else None,
        )
