"""Seed 004's system tables (migration 13): videos, their tiers per plan, every revisit.

:class:`VideoStore` opens its own engine on the crawl database (applying missing migrations
unless read-only), like :class:`~topicrawl.storage.accountstore.AccountStore`. It also reads
the parser library's records with their schema names (``page_records``), which is what the
system groups into videos.

The leader's lease (which node plans, renewed by it, taken over when it expires) is a reserved
row of ``node_rounds``: node ``""`` (no node has an empty name), ``at`` 0, ``items`` the
holder's index in the run's node list and ``seconds`` when the lease expires on the system's
clock. (A table of its own needs a migration; this row keeps the schema as it is.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import and_, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from topicrawl.core.errors import StorageError
from topicrawl.revisit.tiers import TierPolicy, period_of
from topicrawl.revisit.videoplan import Video, VideoPlan
from topicrawl.storage.accountstore import upsert_rows
from topicrawl.storage.opening import SideStore
from topicrawl.storage.schema import (
    node_rounds,
    page_records,
    system_visits,
    video_tiers,
    videos,
)

__all__ = ["LEASE_NODE", "VideoStore", "Visit"]

LEASE_NODE = ""
"""The ``node_rounds.node`` of the leader's lease row."""

_CHUNK = 400


@dataclass(frozen=True, slots=True)
class Visit:
    """One revisit of a page or an account (a row of ``system_visits``)."""

    kind: str  # page | account
    item: str
    tier: int
    node: str
    due_at: float
    visited_at: float
    status: int
    changed: bool
    found: int


class VideoStore(SideStore):
    """Reads and writes the system's tables of one crawl database."""

    def __init__(self, url: str, *, read_only: bool = False, busy_timeout: float = 30.0) -> None:
        super().__init__(
            url, what="the video system's tables", busy_timeout=busy_timeout, read_only=read_only
        )

    async def records(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Every page record: URL -> (schema name, record)."""
        rows = await self._fetch(
            select(page_records.c.url, page_records.c.schema_name, page_records.c.record)
        )
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        for row in rows:
            try:
                record = json.loads(row.record)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                out[row.url] = (row.schema_name, record)
        return out

    async def save_plan(
        self,
        source: str,
        found: Sequence[Video],
        plan: VideoPlan,
        policy: TierPolicy,
        *,
        planned_at: float,
    ) -> None:
        """Write every video at this plan and the plan's tiers (history), in one transaction."""
        rows = [
            {
                "source": source,
                "video": v.key,
                "title": v.title,
                "kind": v.kind,
                "directors": json.dumps(list(v.directors), ensure_ascii=False),
                "actors": json.dumps(list(v.actors), ensure_ascii=False),
                "pages": json.dumps(list(v.pages), ensure_ascii=False),
                "counts": json.dumps(dict(v.counts), sort_keys=True),
                "partial": v.partial,
                "popularity": plan.popularity[v.key],
                "tier": plan.tiers[v.key],
                "revisit_days": period_of(plan.tiers[v.key], policy) / 86_400.0,
                "node": plan.nodes[v.key],
                "planned_at": planned_at,
            }
            for v in found
        ]
        history = [
            {
                "source": source,
                "planned_at": planned_at,
                "video": v.key,
                "popularity": plan.popularity[v.key],
                "tier": plan.tiers[v.key],
            }
            for v in found
        ]
        async with self._write() as connection:
            await upsert_rows(connection, videos, rows)
            await upsert_rows(connection, video_tiers, history)

    async def add_visits(self, source: str, visits: Sequence[Visit]) -> None:
        """Append revisits."""
        if not visits:
            return
        rows = [{**asdict(v), "source": source} for v in visits]
        async with self._write() as connection:
            for start in range(0, len(rows), _CHUNK):
                await connection.execute(insert(system_visits), rows[start : start + _CHUNK])

    async def videos(
        self, *, source: str | None = None, limit: int | None = 50
    ) -> list[dict[str, Any]]:
        """Videos, most popular first (``limit`` None: all)."""
        query = select(videos)
        if source is not None:
            query = query.where(videos.c.source == source)
        query = query.order_by(videos.c.popularity.desc(), videos.c.video).limit(limit)
        return [dict(row._mapping) for row in await self._fetch(query)]

    async def visits(
        self, *, source: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Revisits in the order made."""
        query = select(system_visits)
        if source is not None:
            query = query.where(system_visits.c.source == source)
        query = query.order_by(system_visits.c.id)
        if limit is not None:
            query = query.limit(limit)
        return [dict(row._mapping) for row in await self._fetch(query)]

    async def plans(self, source: str) -> dict[float, dict[str, int]]:
        """Each plan's tiers: plan time -> video -> tier."""
        rows = await self._fetch(
            select(video_tiers.c.planned_at, video_tiers.c.video, video_tiers.c.tier).where(
                video_tiers.c.source == source
            )
        )
        out: dict[float, dict[str, int]] = {}
        for row in rows:
            out.setdefault(float(row.planned_at), {})[row.video] = int(row.tier)
        return out

    async def counts(self) -> dict[str, int]:
        """Rows in each of the system's tables, and visits by kind."""
        out: dict[str, int] = {}
        for table in (videos, video_tiers, system_visits):
            rows = await self._fetch(select(func.count()).select_from(table))
            out[table.name] = int(rows[0][0])
        rows = await self._fetch(
            select(system_visits.c.kind, func.count()).group_by(system_visits.c.kind)
        )
        out.update((f"visits.{row[0]}", int(row[1])) for row in rows)
        return out

    async def add_rounds(
        self, source: str, at: float, rounds: Mapping[str, tuple[int, float]]
    ) -> None:
        """Record each node's round that a plan at ``at`` closed: (items, seconds)."""
        rows = [
            {"source": source, "node": node, "at": at, "items": items, "seconds": seconds}
            for node, (items, seconds) in rounds.items()
        ]
        async with self._write() as connection:
            await upsert_rows(connection, node_rounds, rows)

    async def last_rounds(self, source: str) -> dict[str, tuple[int, float]]:
        """Each node's latest measured round (nodes of every process on this database)."""
        rows = await self._fetch(
            select(node_rounds)
            .where(node_rounds.c.source == source, node_rounds.c.node != LEASE_NODE)
            .order_by(node_rounds.c.at)
        )
        return {row.node: (int(row.items), float(row.seconds)) for row in rows}

    async def lease(self, source: str) -> tuple[int, float] | None:
        """The leader's lease of ``source``: the holder's node index and when it expires."""
        rows = await self._fetch(select(node_rounds.c["items"], node_rounds.c.seconds).where(
            self._lease_row(source)
        ))  # fmt: skip
        return (int(rows[0][0]), float(rows[0][1])) if rows else None

    async def take_lease(self, source: str, holder: int, until: float, *, now: float) -> bool:
        """Hold (or renew) the leader's lease of ``source`` until ``until`` if nobody else
        holds it at ``now``; whether this holder has it. Atomic: of nodes racing for an
        expired lease, one wins (compare and set on the row as read)."""
        current = await self.lease(source)
        if current is None:
            row = {"source": source, "node": LEASE_NODE, "at": 0.0, "items": holder,
                   "seconds": until}  # fmt: skip
            try:
                async with self._write() as connection:
                    await connection.execute(insert(node_rounds), [row])
            except StorageError as exc:
                if isinstance(exc.__cause__, IntegrityError):
                    return False  # another node inserted it first
                raise
            return True
        was, expires = current
        if was != holder and expires > now:
            return False
        async with self._write() as connection:
            result = await connection.execute(
                update(node_rounds)
                .where(
                    self._lease_row(source),
                    node_rounds.c["items"] == was,
                    node_rounds.c.seconds == expires,
                )
                .values(items=holder, seconds=until)
            )
        return bool(result.rowcount == 1)

    @staticmethod
    def _lease_row(source: str) -> Any:
        return and_(
            node_rounds.c.source == source, node_rounds.c.node == LEASE_NODE, node_rounds.c.at == 0
        )

    async def placed(self, source: str) -> Mapping[str, str]:
        """Each stored video's node."""
        rows = await self._fetch(
            select(videos.c.video, videos.c.node).where(videos.c.source == source)
        )
        return {row.video: row.node for row in rows}
