"""Microblog accounts in the crawl's own database (tables ``account_*``, migration 10).

:class:`AccountStore` opens its own engine on the storage URL (applying missing migrations
unless read-only). A run's results are written in one transaction, so a run that fails part
way leaves the previous run's accounts as they were (its ``account_runs`` row says failed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Table, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from topicrawl.core.errors import StorageError
from topicrawl.storage.opening import SideStore
from topicrawl.storage.schema import (
    account_follows,
    account_posts,
    account_runs,
    account_tiers,
    accounts,
)

__all__ = ["AccountRecord", "AccountStore", "PostRecord", "RunRecord", "upsert_rows"]

_CHUNK = 400  # rows per statement (SQLite binds at most 32,766 parameters)


@dataclass(frozen=True, slots=True)
class AccountRecord:
    """One account's row (see ``storage.schema.accounts``)."""

    account_id: str
    username: str
    display_name: str
    followers: int
    following: int
    statuses: int
    hop: int | None
    match_name: str | None
    match_step: int | None
    match_score: float | None
    domain_score: float | None
    kept: bool
    activity: float
    influence: float | None
    tier: int | None
    revisit_days: float | None
    next_visit_at: float | None
    node: str | None
    thread: int | None


@dataclass(frozen=True, slots=True)
class PostRecord:
    """A status on an account's timeline (``original_id`` for a repost)."""

    account_id: str
    post_id: str
    original_id: str | None
    author: str
    text: str
    created_at: float
    reposts: int
    likes: int
    comments: int
    url: str


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A row of ``account_runs``."""

    id: int
    source: str
    started_at: float
    finished_at: float | None
    status: str
    entities: int
    matched: int
    accounts: int
    edges: int
    kept: int
    settings: str
    error: str | None


class AccountStore(SideStore):
    """Reads and writes the account tables of one crawl database.

    Args:
        url: the storage URL (SQLite path or ``postgresql://...``).
        read_only: only read (the database must exist with a schema that has the tables).
    """

    def __init__(self, url: str, *, read_only: bool = False, busy_timeout: float = 30.0) -> None:
        super().__init__(
            url, what="the account tables", busy_timeout=busy_timeout, read_only=read_only
        )

    # -- runs ---------------------------------------------------------------------------------

    async def start_run(self, source: str, *, entities: int, settings: Mapping[str, Any]) -> int:
        """A new run row (status running); returns its id. Runs on ``source`` still marked
        running (their process was killed) become ``abandoned``: one run a source at a time."""
        row = {
            "source": source,
            "started_at": time.time(),
            "status": "running",
            "entities": entities,
            "matched": 0,
            "accounts": 0,
            "edges": 0,
            "kept": 0,
            "settings": json.dumps(dict(settings), sort_keys=True, default=str),
        }
        async with self._write() as connection:
            await connection.execute(
                update(account_runs)
                .where(account_runs.c.source == source, account_runs.c.status == "running")
                .values(status="abandoned", error="a later run started before it finished")
            )
            result = await connection.execute(insert(account_runs).values(**row))
            key = result.inserted_primary_key
        if key is None:
            raise StorageError("the database gave no id for the new account run")
        return int(key[0])

    async def finish_run(
        self, run_id: int, *, status: str, counts: Mapping[str, int], error: str | None = None
    ) -> None:
        values = {
            k: int(v) for k, v in counts.items() if k in {"matched", "accounts", "edges", "kept"}
        }
        async with self._write() as connection:
            await connection.execute(
                update(account_runs)
                .where(account_runs.c.id == run_id)
                .values(status=status, finished_at=time.time(), error=error, **values)
            )

    async def last_done(self, source: str) -> float | None:
        """When the last successful run on ``source`` started (None: never)."""
        rows = await self._fetch(
            select(account_runs.c.started_at)
            .where(account_runs.c.source == source, account_runs.c.status == "done")
            .order_by(account_runs.c.started_at.desc())
            .limit(1)
        )
        return float(rows[0].started_at) if rows else None

    async def runs(self, *, limit: int = 20) -> list[RunRecord]:
        rows = await self._fetch(
            select(account_runs).order_by(account_runs.c.id.desc()).limit(limit)
        )
        return [RunRecord(**row._mapping) for row in rows]

    # -- results ------------------------------------------------------------------------------

    async def record(
        self,
        run_id: int,
        source: str,
        found: Sequence[AccountRecord],
        edges: Iterable[tuple[str, str]],
        posts: Sequence[PostRecord],
    ) -> None:
        """Write a run's accounts, edges, posts and tiers in one transaction."""
        now = time.time()
        account_rows = [
            {**asdict(r), "source": source, "run_id": run_id, "updated_at": now} for r in found
        ]
        edge_rows = [
            {"source": source, "follower": a, "followee": b, "run_id": run_id} for a, b in edges
        ]
        post_rows = [{**asdict(p), "source": source, "run_id": run_id} for p in posts]
        tier_rows = [
            {
                "run_id": run_id,
                "source": source,
                "account_id": r.account_id,
                "influence": r.influence,
                "tier": r.tier,
            }
            for r in found
            if r.influence is not None
        ]
        async with self._write() as connection:
            await upsert_rows(connection, accounts, account_rows)
            await upsert_rows(connection, account_follows, edge_rows)
            await upsert_rows(connection, account_posts, post_rows)
            await upsert_rows(connection, account_tiers, tier_rows)

    async def add_posts(self, source: str, run_id: int, posts: Sequence[PostRecord]) -> None:
        """Store posts a revisit found (a post already stored is replaced by its new counts)."""
        rows = [{**asdict(p), "source": source, "run_id": run_id} for p in posts]
        async with self._write() as connection:
            await upsert_rows(connection, account_posts, rows)

    async def post_ids(self, source: str) -> dict[str, set[str]]:
        """The ids of the posts stored for each account of ``source``."""
        rows = await self._fetch(
            select(account_posts.c.account_id, account_posts.c.post_id).where(
                account_posts.c.source == source
            )
        )
        out: dict[str, set[str]] = {}
        for row in rows:
            out.setdefault(row.account_id, set()).add(row.post_id)
        return out

    async def set_next_visits(self, source: str, due: Mapping[str, float]) -> None:
        """Set ``next_visit_at`` of these accounts (after a revisit or a re-plan)."""
        async with self._write() as connection:
            for account_id, when in due.items():
                await connection.execute(
                    update(accounts)
                    .where(accounts.c.source == source, accounts.c.account_id == account_id)
                    .values(next_visit_at=when)
                )

    async def accounts(
        self, *, source: str | None = None, kept_only: bool = False, limit: int | None = 50
    ) -> list[dict[str, Any]]:
        """Accounts, most influential first (then by domain score; ``limit`` None: all)."""
        query = select(accounts)
        if source is not None:
            query = query.where(accounts.c.source == source)
        if kept_only:
            query = query.where(accounts.c.kept.is_(True))
        query = query.order_by(
            accounts.c.influence.desc().nulls_last(), accounts.c.domain_score.desc().nulls_last()
        ).limit(limit)
        return [dict(row._mapping) for row in await self._fetch(query)]

    async def counts(self) -> dict[str, int]:
        """Rows in each account table."""
        out = {}
        for table in (accounts, account_follows, account_posts, account_tiers, account_runs):
            rows = await self._fetch(select(func.count()).select_from(table))
            out[table.name] = int(rows[0][0])
        return out


async def upsert_rows(
    connection: AsyncConnection, table: Table, rows: Sequence[Mapping[str, object]]
) -> None:
    """Insert rows; a row whose primary key exists already is replaced."""
    if not rows:
        return
    keys = [c.name for c in table.primary_key]
    insert_of = postgresql.insert if connection.dialect.name == "postgresql" else sqlite.insert
    for start in range(0, len(rows), _CHUNK):
        statement = insert_of(table)
        names = [c.name for c in table.columns if c.name not in keys]
        statement = statement.on_conflict_do_update(
            index_elements=keys, set_={n: statement.excluded[n] for n in names}
        )
        await connection.execute(statement, list(rows[start : start + _CHUNK]))
