"""Seed 004's system tables (migration 13): videos, their tiers per plan, every revisit; and
the leader's lease (migration 16).

:class:`VideoStore` opens its own engine on the crawl database (applying missing migrations
unless read-only), like :class:`~topicrawl.storage.accountstore.AccountStore`. It also reads
the parser library's records with their schema names (``page_records``), which is what the
system groups into videos.

The leader's lease (which node crawls, plans and ranks accounts; renewed by it, taken over
when it expires) is a row of ``leader_leases`` per source, its times on the system's clock;
each term (a first take or a takeover) is a row of ``leader_terms``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError

from topicrawl.core.errors import StorageError
from topicrawl.revisit.tiers import TierPolicy, period_of
from topicrawl.revisit.videoplan import Video, VideoPlan
from topicrawl.storage.accountstore import upsert_rows
from topicrawl.storage.opening import SideStore
from topicrawl.storage.outlinks import decode_links
from topicrawl.storage.schema import (
    leader_leases,
    leader_terms,
    node_rounds,
    page_records,
    pages,
    split_items,
    system_visits,
    video_tiers,
    videos,
)

__all__ = ["LeaderLease", "LeaderTerm", "VideoStore", "Visit"]

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


@dataclass(frozen=True, slots=True)
class LeaderLease:
    """Who leads a source's system until when (a row of ``leader_leases``)."""

    holder: str
    expires: float
    term: int
    taken_at: float | None
    renewed_at: float | None


@dataclass(frozen=True, slots=True)
class LeaderTerm:
    """One term of a lease: its holder, when it began and whose expired lease it took."""

    term: int
    holder: str
    taken_at: float | None
    previous: str | None
    previous_expires: float | None


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
            select(node_rounds).where(node_rounds.c.source == source).order_by(node_rounds.c.at)
        )
        return {row.node: (int(row.items), float(row.seconds)) for row in rows}

    async def lease(self, source: str) -> LeaderLease | None:
        """The leader's lease of ``source`` (None: nobody has taken it yet)."""
        rows = await self._fetch(select(leader_leases).where(leader_leases.c.source == source))
        if not rows:
            return None
        row = rows[0]
        return LeaderLease(
            row.holder, float(row.expires), int(row.term), row.taken_at, row.renewed_at
        )

    async def take_lease(self, source: str, holder: str, until: float, *, now: float) -> bool:
        """Hold (or renew) the leader's lease of ``source`` until ``until`` if nobody else
        holds it at ``now``; whether ``holder`` has it. Atomic: of nodes racing for an expired
        lease, one wins (compare and set on the term and holder as read); a takeover starts a
        new term, logged in ``leader_terms``."""
        current = await self.lease(source)
        if current is None:
            try:
                async with self._write() as connection:
                    await connection.execute(
                        insert(leader_leases).values(
                            source=source, holder=holder, term=1, taken_at=now,
                            renewed_at=now, expires=until,
                        )
                    )  # fmt: skip
                    await connection.execute(
                        insert(leader_terms).values(
                            source=source, term=1, holder=holder, taken_at=now
                        )
                    )
            except StorageError as exc:
                if isinstance(exc.__cause__, IntegrityError):
                    return False  # another node took it first
                raise
            return True
        if current.holder != holder and current.expires > now:
            return False
        taking = current.holder != holder
        term = current.term + 1 if taking else current.term
        async with self._write() as connection:
            result = await connection.execute(
                update(leader_leases)
                .where(
                    leader_leases.c.source == source,
                    leader_leases.c.term == current.term,
                    leader_leases.c.holder == current.holder,
                )
                .values(
                    holder=holder,
                    term=term,
                    taken_at=now if taking else current.taken_at,
                    renewed_at=now,
                    expires=until,
                )
            )
            won = bool(result.rowcount == 1)
            if won and taking:
                await connection.execute(
                    insert(leader_terms).values(
                        source=source, term=term, holder=holder, taken_at=now,
                        previous=current.holder, previous_expires=current.expires,
                    )
                )  # fmt: skip
        return won

    async def lease_terms(self, source: str) -> list[LeaderTerm]:
        """Every term of ``source``'s lease, the first first."""
        rows = await self._fetch(
            select(leader_terms)
            .where(leader_terms.c.source == source)
            .order_by(leader_terms.c.term)
        )
        return [
            LeaderTerm(r.term, r.holder, r.taken_at, r.previous, r.previous_expires) for r in rows
        ]

    async def placed(self, source: str) -> Mapping[str, str]:
        """Each stored video's node."""
        rows = await self._fetch(
            select(videos.c.video, videos.c.node).where(videos.c.source == source)
        )
        return {row.video: row.node for row in rows}

    # -- work split between nodes (schema 18) -------------------------------------------------

    async def split_add(self, source: str, job: str, items: Sequence[str]) -> int:
        """Add ``items`` to ``job`` (those it has already are left as they are); how many were
        new."""
        if not items:
            return 0
        have = {
            row.item
            for row in await self._fetch(
                select(split_items.c.item).where(
                    split_items.c.source == source, split_items.c.job == job
                )
            )
        }
        rows = [
            {"source": source, "job": job, "item": i, "node": None, "expires": None, "done": False}
            for i in dict.fromkeys(items)
            if i not in have
        ]
        added = 0
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start : start + _CHUNK]
            try:
                async with self._write() as connection:
                    await connection.execute(
                        insert(split_items), [{**r, "done": False} for r in chunk]
                    )
                added += len(chunk)
            except StorageError as exc:
                if not isinstance(exc.__cause__, IntegrityError):
                    raise
                for row in chunk:  # another node added some meanwhile: one at a time
                    try:
                        async with self._write() as connection:
                            await connection.execute(insert(split_items).values(**row))
                        added += 1
                    except StorageError as one:
                        if not isinstance(one.__cause__, IntegrityError):
                            raise
        return added

    async def split_claim(
        self, source: str, job: str, node: str, count: int, *, now: float, until: float
    ) -> list[str]:
        """Claim up to ``count`` of ``job``'s open items for ``node`` until ``until``: items
        nobody holds, or whose claim ended before ``now`` (its node died or stalled). Each is
        taken by compare and set, so of nodes racing for one item, one gets it."""
        t = split_items.c
        free = (t.node.is_(None)) | (t.expires < now)
        rows = await self._fetch(
            select(t.item, t.node, t.expires)
            .where(t.source == source, t.job == job, t.done.is_(False), free)
            .order_by(t.item)
            .limit(count * 3)
        )
        taken: list[str] = []
        async with self._write() as connection:
            for row in rows:
                if len(taken) >= count:
                    break
                same = t.node.is_(None) if row.node is None else (t.node == row.node)
                held = t.expires.is_(None) if row.expires is None else (t.expires == row.expires)
                result = await connection.execute(
                    update(split_items)
                    .where(
                        t.source == source, t.job == job, t.item == row.item,
                        t.done.is_(False), same, held,
                    )
                    .values(node=node, expires=until)
                )  # fmt: skip
                if result.rowcount == 1:
                    taken.append(row.item)
        return taken

    async def split_renew(
        self, source: str, job: str, node: str, items: Sequence[str], *, until: float
    ) -> int:
        """Extend ``node``'s claims of ``items`` (those it still holds) until ``until``; how
        many it still holds."""
        t = split_items.c
        async with self._write() as connection:
            result = await connection.execute(
                update(split_items)
                .where(
                    t.source == source, t.job == job, t.node == node,
                    t.item.in_(list(items)), t.done.is_(False),
                )
                .values(expires=until)
            )  # fmt: skip
        return int(result.rowcount)

    async def split_done(
        self, source: str, job: str, node: str, results: Mapping[str, str | None]
    ) -> None:
        """Mark items done by ``node`` with their results (JSON text or None). An item another
        node finished first keeps that node's result."""
        t = split_items.c
        async with self._write() as connection:
            for item, result in results.items():
                await connection.execute(
                    update(split_items)
                    .where(t.source == source, t.job == job, t.item == item, t.done.is_(False))
                    .values(node=node, done=True, result=result, expires=None)
                )

    async def split_left(self, source: str, job: str) -> int:
        """How many of ``job``'s items are not done."""
        t = split_items.c
        rows = await self._fetch(
            select(func.count()).where(t.source == source, t.job == job, t.done.is_(False))
        )
        return int(rows[0][0])

    async def split_open_jobs(self, source: str) -> list[str]:
        """The jobs of ``source`` with items not done, oldest name first."""
        t = split_items.c
        rows = await self._fetch(
            select(t.job).where(t.source == source, t.done.is_(False)).distinct().order_by(t.job)
        )
        return [row.job for row in rows]

    async def split_results(self, source: str, job: str) -> dict[str, str | None]:
        """``job``'s done items and their results."""
        t = split_items.c
        rows = await self._fetch(
            select(t.item, t.result).where(t.source == source, t.job == job, t.done.is_(True))
        )
        return {row.item: row.result for row in rows}

    async def split_counts(self, source: str, prefix: str = "") -> dict[str, int]:
        """Done items by the node that did them, over the jobs whose name starts with
        ``prefix``."""
        t = split_items.c
        rows = await self._fetch(
            select(t.node, func.count())
            .where(t.source == source, t.done.is_(True), t.job.startswith(prefix))
            .group_by(t.node)
        )
        return {str(row[0]): int(row[1]) for row in rows}

    async def page_links(self, urls: Sequence[str]) -> dict[str, list[str]]:
        """The stored outgoing links of those of ``urls`` that are stored pages (and of the
        pages they redirected to)."""
        out: dict[str, list[str]] = {}
        for start in range(0, len(urls), _CHUNK):
            chunk = list(urls[start : start + _CHUNK])
            rows = await self._fetch(
                select(pages.c.url, pages.c.final_url, pages.c.links).where(
                    pages.c.url.in_(chunk) | pages.c.final_url.in_(chunk)
                )
            )
            for row in rows:
                found = [link.url for link in decode_links(row.links)]
                out.setdefault(row.url, []).extend(found)
                out.setdefault(row.final_url, []).extend(found)
        return out
