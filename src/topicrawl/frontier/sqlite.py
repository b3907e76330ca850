"""The durable frontier: SQLite rows behind a compact in-memory index, written behind in batches.

What lives where:

- The table ``frontier_requests`` holds every URL the crawl has seen (one row per fingerprint:
  state queued or done, score, sequence, and the request itself). It is the exact dedupe
  store and the payload store.
- Memory holds only what ordering needs: one integer key per queued URL in its host's heap
  (score, sequence and fingerprint packed together, ~64 bytes with the list slot) and the
  Bloom filter (~4.2 bytes a seen URL at the default error rate). Requests are read back
  from the table when popped. Bounded extras: the write-behind batch (at most
  ``flush_every`` changes, with their requests), a cache of recent duplicate look-ups
  (``cache_size`` entries), the leases out and the acks since the last ``flush()``.
- Leases are never written. A URL that was handed out stays ``queued`` in the table until
  it is acked, so after a crash or a kill every lease that was out is simply queued again.
- ``frontier_due`` holds the due time of URLs queued again by ``revisit``; like an ack, it is
  written by ``flush()`` only, so after a kill an unflushed revisit is simply queued at once.

Writes are collected in memory and committed in one transaction per batch on a dedicated
writer thread. :meth:`SqliteFrontier.flush` commits everything at once. A background task also
commits pushes, score increases and host delays (every ``flush_interval`` seconds, or as soon
as ``flush_every`` of them are pending) but never acks. So the table always holds the state
as of the last ``flush()``, plus possibly later pushes:

- an ack is durable once flushed, and never before: a caller that flushes its own results
  first (the engine stores the page, flushes storage, then flushes the frontier) never has a
  URL durably done whose page is not durably stored;
- every push made before an ack is durable no later than that ack (same or earlier
  transaction);
- after a crash, every lease that was out and every ack not yet flushed is queued again, so
  a URL is fetched twice only if its lease was out or its ack unflushed; pushes made after the
  last commit are lost (they come back when their pages are fetched again).

Committed transactions survive a killed process (WAL mode, ``synchronous=NORMAL``); a power
cut may lose the last ones. The table names all start with ``frontier_``, so the file may be
the one the storage layer uses; a lock file (``<path>-frontier.lock``) keeps a second
frontier from opening the same crawl at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple, Self

from topicrawl.core.errors import ConfigError, FrontierError, FrontierInUse, FrontierLocked
from topicrawl.core.models import EMPTY_REASONS, Request
from topicrawl.core.tasks import cancel_and_wait
from topicrawl.frontier._schedule import (
    Clock,
    FrontierCore,
    Held,
    HostQueues,
    check_bloom_options,
    fp_of,
    make_key,
    seq_of,
)
from topicrawl.frontier.dedupe import SeenUrls
from topicrawl.parse.urls import fingerprint, fingerprints, host_of

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no cross-process lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["SqliteFrontier", "frontier_lock"]

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
QUEUED = 0
DONE = 1

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS frontier_requests (
        fp INTEGER PRIMARY KEY,
        state INTEGER NOT NULL,
        score REAL NOT NULL,
        seq INTEGER NOT NULL,
        host TEXT NOT NULL,
        url TEXT NOT NULL,
        depth INTEGER NOT NULL,
        parent_url TEXT,
        anchor TEXT NOT NULL,
        inherited REAL NOT NULL,
        reasons TEXT
    )""",
    "CREATE TABLE IF NOT EXISTS frontier_hosts ("
    "host TEXT PRIMARY KEY, delay REAL NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS frontier_meta ("
    "name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    # When a queued URL may be handed out again (revisits); ignored once its row is done.
    "CREATE TABLE IF NOT EXISTS frontier_due (fp INTEGER PRIMARY KEY, due REAL NOT NULL)",
)
_COLUMNS = (
    "fp",
    "state",
    "score",
    "seq",
    "host",
    "url",
    "depth",
    "parent_url",
    "anchor",
    "inherited",
    "reasons",
)
_UPSERT = (
    f"INSERT INTO frontier_requests ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * 11)}) "
    "ON CONFLICT(fp) DO UPDATE SET state=excluded.state, score=excluded.score, "
    "seq=excluded.seq, host=excluded.host, url=excluded.url, depth=excluded.depth, "
    "parent_url=excluded.parent_url, anchor=excluded.anchor, inherited=excluded.inherited, "
    f"reasons=excluded.reasons WHERE frontier_requests.state = {QUEUED}"
)
_UPDATE = f"UPDATE frontier_requests SET score=?, seq=? WHERE fp=? AND state={QUEUED}"
_DONE = f"UPDATE frontier_requests SET state={DONE} WHERE fp=?"
_DUE_UPSERT = (
    "INSERT INTO frontier_due (fp, due) VALUES (?, ?) "
    "ON CONFLICT(fp) DO UPDATE SET due=excluded.due"
)
_HOST_UPSERT = (
    "INSERT INTO frontier_hosts (host, delay) VALUES (?, ?) "
    "ON CONFLICT(host) DO UPDATE SET delay=excluded.delay"
)
_ROW = (
    "SELECT state, seq, score, url, depth, parent_url, anchor, inherited, reasons "
    "FROM frontier_requests WHERE fp = ?"
)
# Spilled URLs are read back best first per host (only built when spilling is on).
_SPILL_INDEX = (
    "CREATE INDEX IF NOT EXISTS frontier_requests_spill"
    " ON frontier_requests (host, state, score DESC, seq)"
)
_SPILLED = (
    "SELECT fp, score, seq FROM frontier_requests WHERE host = ? AND state = ?"
    " ORDER BY score DESC, seq LIMIT ?"
)
_SPILLED_AFTER = (
    "SELECT fp, score, seq FROM frontier_requests WHERE host = ? AND state = ?"
    " AND (score < ? OR (score = ? AND seq > ?)) ORDER BY score DESC, seq LIMIT ?"
)
_IN_CHUNK = 256
# journal_size_limit: a write-ahead log this connection starts over is cut back to this size
# (storage's own setting, for a file the two share; else the log keeps its largest size).
_WAL_KEEP_BYTES = 64 * 2**20
_MISSING = object()


class _Rec(NamedTuple):
    """A queued URL changed since the last commit (``request`` when its row is not written)."""

    score: float
    seq: int
    request: Request | None


class _StoredSeen:
    """The exact store behind the Bloom filter: pending changes, a cache, then the table."""

    def __init__(self, frontier: SqliteFrontier) -> None:
        self._frontier = frontier

    def contains_many(self, fps: Sequence[int]) -> list[bool]:
        return self._frontier._known_many(fps)

    def add_many(self, fps: Sequence[int]) -> None:
        """The frontier writes the rows of new URLs itself, in the same push."""


class SqliteFrontier(FrontierCore):
    """A durable, resumable frontier in a SQLite file (see the module docstring).

    Use ``async with SqliteFrontier(path) as frontier:`` or ``await frontier.open()`` ...
    ``await frontier.close()``.

    Args:
        path: the SQLite file (created if missing; may be shared with the storage layer).
        default_delay, max_per_host, lease_headroom, lease_ttl, bloom_capacity,
        bloom_error_rate, clock:
            as for :class:`~topicrawl.frontier.MemoryFrontier`.
        flush_interval: seconds between background commits.
        flush_every: pending changes that trigger a commit before the interval is up.
        cache_size: recent duplicate look-ups remembered, to skip the table for them.
        busy_timeout: seconds to wait for another connection's write lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        default_delay: float = 0.0,
        max_per_host: int = 8,
        lease_headroom: int = 0,
        lease_ttl: float = 300.0,
        bloom_capacity: int = 1_000_000,
        bloom_error_rate: float = 1e-7,
        clock: Clock = time.time,
        flush_interval: float = 0.5,
        flush_every: int = 5000,
        cache_size: int = 65536,
        busy_timeout: float = 10.0,
        spill_limit: int = 0,
        spill_total: int = 0,
    ) -> None:
        super().__init__(
            default_delay=default_delay,
            max_per_host=max_per_host,
            lease_headroom=lease_headroom,
            lease_ttl=lease_ttl,
            clock=clock,
        )
        check_bloom_options(bloom_capacity, bloom_error_rate)
        if not flush_interval > 0:
            raise ConfigError(f"flush_interval must be > 0, got {flush_interval}")
        if flush_every < 1 or cache_size < 2:
            raise ConfigError("flush_every must be >= 1 and cache_size >= 2")
        if not busy_timeout >= 0:
            raise ConfigError(f"busy_timeout must be >= 0, got {busy_timeout}")
        if spill_limit < 0 or spill_limit == 1:
            raise ConfigError(f"spill_limit must be 0 (off) or at least 2, got {spill_limit}")
        if spill_total < 0 or (spill_total and not spill_limit):
            raise ConfigError(
                f"spill_total must be 0 (off), or >= 1 with spill_limit on, got {spill_total}"
            )
        self._spill_limit = spill_limit
        self._spill_total = spill_total
        self._queues = self._new_queues()
        self._path = Path(path)
        if str(path) == ":memory:" or str(path).startswith("file:"):
            raise ConfigError("SqliteFrontier needs a file path (use MemoryFrontier otherwise)")
        self._bloom_capacity = bloom_capacity
        self._bloom_error_rate = bloom_error_rate
        self._flush_interval = flush_interval
        self._flush_every = flush_every
        self._cache_half = cache_size // 2
        self._busy_timeout = busy_timeout
        # Replaced by open(), sized by the stored rows; the table is its exact store from the
        # start (an in-memory one would load numpy for nothing).
        self._seen = SeenUrls(capacity=1, error_rate=bloom_error_rate, exact=_StoredSeen(self))
        self._dirty: dict[int, _Rec] = {}
        self._dirty_hosts: dict[str, float] = {}
        self._committing: dict[int, _Rec] = {}
        self._acked: set[int] = set()  # acks are committed by flush() only
        self._committing_acked: set[int] = set()
        self._dues: dict[int, float] = {}  # revisit due times, committed like acks
        # Set aside by seal_acks(), committed by flush_sealed() (the engine's checkpoint).
        self._sealed_acked: set[int] = set()
        self._sealed_dues: dict[int, float] = {}
        self._leased: set[int] = set()
        self._cache_young: dict[int, float | None] = {}
        self._cache_old: dict[int, float | None] = {}
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._commit_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._flusher: asyncio.Task[None] | None = None
        self._opened = False

    # -- life cycle

    async def open(self) -> Self:
        """Open (or create) the file and rebuild the queues from it.

        Raises:
            FrontierError: the file is not a usable database, is locked, or is in use by
                another frontier.
        """
        if self._opened:
            return self
        if self._closed:
            raise FrontierError("the frontier is closed")
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="topicrawl-frontier")
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._open_sync)
        except BaseException:
            executor.submit(self._close_sync).result()
            executor.shutdown(wait=True)
            raise
        self._executor = executor
        self._opened = True
        self._flusher = asyncio.create_task(self._flush_in_background(), name="frontier-flush")
        return self

    async def close(self) -> None:
        """Commit what is pending and close the file. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if not self._opened:
            return
        if self._flusher is not None:
            await cancel_and_wait(self._flusher)
        executor = self._executor
        try:
            await self._commit()
        finally:
            if executor is not None:
                await asyncio.get_running_loop().run_in_executor(executor, self._close_sync)
                executor.shutdown(wait=True)

    async def flush(self) -> None:
        """Commit every change so far, acks included (background commits leave acks out).

        Raises:
            FrontierError: the write failed; the changes stay pending and are tried again.
        """
        self._check_usable()
        await self._commit()

    def seal_acks(self) -> None:
        """Set aside the acks (and revisit times) made so far: :meth:`flush_sealed` commits
        them and no later one.

        The engine's checkpoint seals, flushes its storage, then calls :meth:`flush_sealed`:
        every sealed ack's page was saved before the storage flush began, so no URL is durably
        done whose page is not durably stored. Acks made meanwhile free their leases at once
        (the checkpoint need not hold them back, where a long one made them expire and their
        URLs be fetched again) and wait for the next seal.
        """
        self._check_usable()
        self._sealed_acked |= self._acked
        self._sealed_dues.update(self._dues)
        self._acked, self._dues = set(), {}

    async def flush_sealed(self) -> None:
        """Commit every change so far except the acks made since :meth:`seal_acks`.

        Raises:
            FrontierError: the write failed; the changes stay pending (the sealed acks wait
                for the next seal).
        """
        self._check_usable()
        await self._commit(sealed=True)

    def known(self, urls: Sequence[str]) -> list[bool]:
        """For each URL, whether it was ever pushed in this crawl, this run or an earlier one."""
        self._check_usable()
        return self._seen.contains_many(fingerprints(urls))

    async def seen(self, url: str) -> bool:
        """Whether the URL was ever pushed in this crawl, this run or an earlier one."""
        self._check_usable()
        return self._seen.contains(fingerprint(url))

    def _check_usable(self) -> None:
        super()._check_usable()
        if not self._opened:
            raise FrontierError("the frontier is not open: await open() or use `async with`")

    # -- opening and closing (writer thread)

    def _open_sync(self) -> None:
        self._lock_fd = _lock(self._path)
        try:
            self._writer = self._connect()
            self._reader = self._connect()
            mode = self._writer.execute("PRAGMA journal_mode=WAL").fetchall()[0][0]
            if str(mode).lower() != "wal":
                raise FrontierError(f"{self._path}: cannot switch the database to WAL mode")
            for statement in _SCHEMA:
                self._writer.execute(statement)
            if self._spill_limit:
                self._writer.execute(_SPILL_INDEX)
            self._check_schema()
            self._load()
        except sqlite3.Error as exc:
            raise _frontier_error(exc, self._path, "open the frontier") from exc

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute("PRAGMA synchronous=NORMAL")
        # Storage may share the file: a log this connection starts over is cut back too.
        conn.execute(f"PRAGMA journal_size_limit={_WAL_KEEP_BYTES}")
        return conn

    def _check_schema(self) -> None:
        assert self._writer is not None
        conn = self._writer
        conn.execute(
            "INSERT OR IGNORE INTO frontier_meta (name, value) VALUES ('schema', ?)",
            (SCHEMA_VERSION,),
        )
        version = conn.execute("SELECT value FROM frontier_meta WHERE name='schema'").fetchall()
        if version[0][0] != SCHEMA_VERSION:
            raise FrontierError(
                f"{self._path}: frontier schema version {version[0][0]} is not supported "
                f"(this topicrawl writes version {SCHEMA_VERSION})"
            )
        columns = {row[1] for row in conn.execute("PRAGMA table_info(frontier_requests)")}
        if not set(_COLUMNS) <= columns:
            raise FrontierError(
                f"{self._path}: table frontier_requests has unexpected columns {sorted(columns)}"
            )

    def _load(self) -> None:
        assert self._writer is not None
        conn = self._writer
        now = self._clock()
        self._queues = self._new_queues()  # empty, even if an earlier open() failed
        for host, delay in conn.execute("SELECT host, delay FROM frontier_hosts").fetchall():
            self._queues.set_delay(host, float(delay), now)
        rows = conn.execute("SELECT count(*) FROM frontier_requests").fetchall()[0][0]
        self._seen = SeenUrls(
            capacity=max(self._bloom_capacity, 2 * rows),
            error_rate=self._bloom_error_rate,
            exact=_StoredSeen(self),
        )
        dues = dict(conn.execute("SELECT fp, due FROM frontier_due WHERE due > ?", (now,)))
        per_host: dict[str, list[int]] = {}
        spilled: dict[str, tuple[int, int]] = {}  # host -> (URLs left in the store, best key)
        limit = self._spill_limit
        last_seq = 0
        cursor = conn.execute("SELECT fp, state, score, seq, host FROM frontier_requests")
        while batch := cursor.fetchmany(20000):
            fps = []
            for fp, state, score, seq, host in batch:
                fps.append(fp)
                last_seq = max(last_seq, seq)
                if state == QUEUED and fp in dues:
                    self._queues.defer(host, fp, make_key(score, seq, fp), dues[fp])
                elif state == QUEUED:
                    keys = per_host.get(host)
                    if keys is None:
                        keys = per_host[host] = []
                    keys.append(make_key(score, seq, fp))
            self._seen.load(fps)
            if limit:  # keep the best half of the limit per host; count the rest
                for host, keys in per_host.items():
                    if len(keys) > limit:
                        keys.sort()
                        cut = keys[limit // 2]
                        count, best = spilled.get(host, (0, cut))
                        spilled[host] = (count + len(keys) - limit // 2, min(best, cut))
                        del keys[limit // 2 :]
        for host, keys in per_host.items():
            self._queues.load(host, keys, now)
        for host, (count, best) in spilled.items():
            self._queues.load_spilled(host, count, best)
        self._seq = last_seq

    def _close_sync(self) -> None:
        for conn in (self._reader, self._writer):
            if conn is not None:
                conn.close()
        self._reader = self._writer = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    # -- writing behind

    async def _wrote(self) -> None:
        pending = len(self._dirty)
        if pending >= self._flush_every:
            if pending >= 4 * self._flush_every:
                try:
                    await self._commit(with_acks=False)  # the writer is far behind: wait for it
                except FrontierLocked:
                    # Another connection holds the file (the storage's writer, a user's
                    # shell): the changes stay pending and the background commits retry.
                    logger.warning("frontier: the file is locked; %d changes wait", pending)
            else:
                self._wake.set()

    async def _flush_in_background(self) -> None:
        while not self._closed:
            # asyncio.timeout, not wait_for: wait_for can swallow a cancellation (close()).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._flush_interval):
                    await self._wake.wait()
            self._wake.clear()
            if self._dirty or self._dirty_hosts:
                try:
                    await self._commit(with_acks=False)
                except FrontierLocked as exc:
                    logger.warning("frontier: background commit waits for a lock: %s", exc)
                except FrontierError:
                    logger.exception("frontier: background commit failed; retrying later")

    async def _commit(self, *, with_acks: bool = True, sealed: bool = False) -> None:
        """Write the pending changes in one transaction.

        Background commits leave acks out: an ack becomes durable at ``flush()`` (all of them)
        or ``flush_sealed()`` (those sealed) and never before, so a caller that flushes its own
        results first (the engine's checkpoint) never has a URL durably done whose page is not
        durably stored. Acks that fail to commit go back with the unsealed ones (committing an
        ack later is always safe, earlier never).
        """
        async with self._commit_lock:
            if sealed:
                acked, dues = self._sealed_acked, self._sealed_dues
            elif with_acks:
                acked = self._acked | self._sealed_acked
                dues = {**self._sealed_dues, **self._dues}
            else:
                acked, dues = set(), {}
            if not (self._dirty or self._dirty_hosts or acked or dues) or self._executor is None:
                return
            batch, hosts = self._dirty, self._dirty_hosts
            self._committing, self._committing_acked = batch, acked
            self._dirty, self._dirty_hosts = {}, {}
            if sealed or with_acks:
                self._sealed_acked, self._sealed_dues = set(), {}
            if with_acks and not sealed:
                self._acked, self._dues = set(), {}
            try:
                await asyncio.get_running_loop().run_in_executor(
                    self._executor, self._commit_sync, batch, hosts, acked, dues
                )
            except BaseException:
                # Keep the batch, under anything changed since (committing it twice is
                # harmless: every statement sets absolute values).
                merged = dict(batch)
                merged.update(self._dirty)
                self._dirty = merged
                self._dirty_hosts = hosts | self._dirty_hosts
                self._acked |= acked
                self._dues = dues | self._dues
                raise
            finally:
                self._committing, self._committing_acked = {}, set()
            for fp, rec in batch.items():
                self._cache_put(fp, rec.score)
            for fp in acked:
                self._cache_put(fp, None)
            if self._spill_limit:
                self._queues.spill(self._written)

    def _commit_sync(
        self,
        batch: dict[int, _Rec],
        hosts: dict[str, float],
        acked: set[int],
        dues: dict[int, float],
    ) -> None:
        conn = self._writer
        if conn is None:
            raise FrontierError("the frontier's database is closed")
        upserts: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        for fp, rec in batch.items():
            request = rec.request
            if request is None:
                updates.append((rec.score, rec.seq, fp))
                continue
            reasons = (
                json.dumps(dict(request.reasons), separators=(",", ":"))
                if request.reasons
                else None
            )
            upserts.append(
                (
                    fp,
                    QUEUED,
                    rec.score,
                    rec.seq,
                    host_of(request.url),
                    request.url,
                    request.depth,
                    request.parent_url,
                    request.anchor,
                    request.inherited,
                    reasons,
                )
            )
        # Rows in key order: a batch then walks the table's B-tree once instead of at random.
        upserts.sort(key=_first)
        updates.sort(key=_last)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if upserts:
                    conn.executemany(_UPSERT, upserts)
                if updates:
                    conn.executemany(_UPDATE, updates)
                if acked:  # after the inserts: a URL may be pushed and acked in one batch
                    conn.executemany(_DONE, [(fp,) for fp in sorted(acked)])
                if dues:
                    conn.executemany(_DUE_UPSERT, sorted(dues.items()))
                if hosts:
                    conn.executemany(_HOST_UPSERT, list(hosts.items()))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
        except sqlite3.Error as exc:
            raise _frontier_error(exc, self._path, "write the frontier") from exc

    # -- reading (event-loop thread; point reads of a primary key take microseconds)

    def _known_many(self, fps: Sequence[int]) -> list[bool]:
        known = [False] * len(fps)
        ask: list[int] = []
        dirty, committing = self._dirty, self._committing
        young, old = self._cache_young, self._cache_old
        for i, fp in enumerate(fps):
            # Acked URLs are always in dirty, committing or the table as well.
            if fp in dirty or fp in committing or fp in young or fp in old:
                known[i] = True
            else:
                ask.append(i)
        if ask:
            states = self._select_states([fps[i] for i in ask])
            for i in ask:
                fp = fps[i]
                state = states.get(fp)
                if state is not None:
                    known[i] = True
                    self._cache_put(fp, state[1] if state[0] == QUEUED else None)
        return known

    def _select_states(self, fps: list[int]) -> dict[int, tuple[int, float]]:
        found: dict[int, tuple[int, float]] = {}
        reader = self._db_reader()
        for start in range(0, len(fps), _IN_CHUNK):
            chunk = fps[start : start + _IN_CHUNK]
            # Pad to a power of two so only a handful of statements are ever prepared.
            size = 1 << (len(chunk) - 1).bit_length()
            chunk.extend([chunk[-1]] * (size - len(chunk)))
            sql = (
                "SELECT fp, state, score FROM frontier_requests WHERE fp IN "
                f"({','.join('?' * size)})"
            )
            try:
                rows = reader.execute(sql, chunk).fetchall()
            except sqlite3.Error as exc:
                raise _frontier_error(exc, self._path, "read the frontier") from exc
            for fp, state, score in rows:
                found[fp] = (state, score)
        return found

    def _read_row(self, fp: int) -> tuple[Any, ...] | None:
        try:
            rows = self._db_reader().execute(_ROW, (fp,)).fetchall()
        except sqlite3.Error as exc:
            raise _frontier_error(exc, self._path, "read the frontier") from exc
        return rows[0] if rows else None

    def _new_queues(self) -> HostQueues:
        queues = self._queues
        return HostQueues(
            default_delay=queues.default_delay,
            max_per_host=queues.max_per_host,
            lease_headroom=queues.lease_headroom,
            spill_limit=self._spill_limit,
            spill_total=self._spill_total,
            refill=self._read_spilled if self._spill_limit else None,
        )

    def _written(self, fp: int) -> bool:
        """Whether the URL's row is in the table as queued now (so its key may leave memory)."""
        return fp not in self._dirty and fp not in self._committing

    def _read_spilled(self, host: str, count: int, slack: int) -> tuple[list[int], int | None]:
        """The best ``count`` queued keys of the host in the table (see ``Refill``).

        Rows whose URL is leased, acked, deferred or has a change not yet written (its live
        key is in memory: such keys are never spilled) are skipped, reading on past them.
        """
        reader = self._db_reader()
        deferred = self._queues.is_deferred
        keys: list[int] = []
        page = count + slack
        last: tuple[int, float, int] | None = None
        while True:
            try:
                if last is None:
                    rows = reader.execute(_SPILLED, (host, QUEUED, page)).fetchall()
                else:
                    _, score, seq = last
                    rows = reader.execute(
                        _SPILLED_AFTER, (host, QUEUED, score, score, seq, page)
                    ).fetchall()
            except sqlite3.Error as exc:
                raise _frontier_error(exc, self._path, "read the frontier") from exc
            for fp, score, seq in rows:
                last = (fp, score, seq)
                if self._not_queued(fp) or deferred(fp) or self._pending(fp) is not None:
                    continue
                keys.append(make_key(score, seq, fp))
                if len(keys) == count:
                    return keys, make_key(score, seq, fp)
            if len(rows) < page:
                return keys, None

    def _db_reader(self) -> sqlite3.Connection:
        if self._reader is None:
            raise FrontierError("the frontier is not open")
        return self._reader

    def _not_queued(self, fp: int) -> bool:
        """Leased, or acked since the last flush (the table still says queued)."""
        return (
            fp in self._leased
            or fp in self._acked
            or fp in self._sealed_acked
            or fp in self._committing_acked
        )

    def _pending(self, fp: int) -> _Rec | None:
        rec = self._dirty.get(fp)
        return self._committing.get(fp) if rec is None else rec

    def _cache_put(self, fp: int, score: float | None) -> None:
        young = self._cache_young
        young[fp] = score
        if len(young) >= self._cache_half:
            self._cache_old = young
            self._cache_young = {}

    # -- hooks

    def _filter_new(self, fps: Sequence[int]) -> list[bool]:
        return self._seen.filter_new(fps)

    def _store_new(self, fp: int, key: int, request: Request) -> None:
        self._dirty[fp] = _Rec(request.score, seq_of(key), request)

    def _queued_score(self, fp: int) -> float | None:
        if self._not_queued(fp):
            return None
        rec = self._pending(fp)
        if rec is not None:
            return rec.score
        cached = self._cache_young.get(fp, _MISSING)
        if cached is _MISSING:
            cached = self._cache_old.get(fp, _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        states = self._select_states([fp])
        state = states.get(fp)
        if state is None:
            return None
        score = state[1] if state[0] == QUEUED else None
        self._cache_put(fp, score)
        return score

    def _store_rekey(self, fp: int, key: int, score: float, replacement: Request | None) -> None:
        request = replacement
        if request is None:
            rec = self._pending(fp)
            if rec is not None and rec.request is not None:
                request = replace(rec.request, score=score)
        self._dirty[fp] = _Rec(score, seq_of(key), request)

    def _resolve(self, key: int) -> Request | None:
        if self._queues.is_deferred(fp_of(key)):
            return None
        return self._lookup(key)

    def _lookup(self, key: int) -> Request | None:
        fp = fp_of(key)
        if self._not_queued(fp):
            return None
        seq = seq_of(key)
        rec = self._pending(fp)
        if rec is not None:
            if rec.seq != seq:
                return None
            if rec.request is not None:
                return rec.request
            row = self._read_row(fp)
            if row is None:
                logger.error("frontier: row of a queued URL is missing (fp=%d)", fp)
                return None
            return _request_from_row(row, rec.score)
        row = self._read_row(fp)
        if row is None or row[0] != QUEUED or row[1] != seq:
            return None
        return _request_from_row(row, row[2])

    def _on_leased(self, fp: int) -> None:
        self._leased.add(fp)

    def _on_done(self, held: Held) -> None:
        self._leased.discard(held.fp)
        self._acked.add(held.fp)

    def _on_returned(self, held: Held) -> None:
        self._leased.discard(held.fp)

    def _on_rescheduled(self, held: Held, due: float) -> None:
        self._leased.discard(held.fp)
        self._dues[held.fp] = due

    def _on_host_delay(self, host: str, delay: float) -> None:
        self._dirty_hosts[host] = delay


def _first(row: tuple[Any, ...]) -> Any:
    return row[0]


def _last(row: tuple[Any, ...]) -> Any:
    return row[-1]


def _request_from_row(row: tuple[Any, ...], score: float) -> Request:
    _state, _seq, _score, url, depth, parent_url, anchor, inherited, reasons = row
    return Request(
        url=url,
        score=score,
        depth=depth,
        parent_url=parent_url,
        anchor=anchor,
        inherited=inherited,
        reasons=MappingProxyType(json.loads(reasons)) if reasons else EMPTY_REASONS,
    )


@contextlib.contextmanager
def frontier_lock(path: Path) -> Iterator[None]:
    """Hold the lock a :class:`SqliteFrontier` on ``path`` holds, without opening its tables:
    a crawl keeping its frontier elsewhere (in memory) on the same database takes it, so two
    crawls of one database are refused whichever frontier each uses.

    Raises:
        FrontierInUse: another frontier or crawl holds it.
        FrontierError: the lock file cannot be created.
    """
    fd = _lock(path)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _lock(path: Path) -> int | None:
    """Take the frontier's cross-process lock, or raise if another frontier holds it."""
    if fcntl is None:  # pragma: no cover
        return None
    lock_path = path.with_name(path.name + "-frontier.lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise FrontierError(f"cannot create the frontier lock file {lock_path}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise FrontierInUse(
            f"{path} is in use by another frontier (it holds {lock_path}); "
            "stop the other crawl or use another file"
        ) from exc
    return fd


def _frontier_error(exc: sqlite3.Error, path: Path, doing: str) -> FrontierError:
    message = str(exc)
    lowered = message.lower()
    if "locked" in lowered or "busy" in lowered:
        return FrontierLocked(
            f"could not {doing}: {path} is locked by another connection ({message}); "
            "stop the other process or use another file"
        )
    if isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered
    ):
        return FrontierError(
            f"could not {doing}: {path} is not a usable SQLite database ({message}); "
            "restore it from a backup or remove it to start a new crawl"
        )
    return FrontierError(f"could not {doing} in {path}: {message}")
