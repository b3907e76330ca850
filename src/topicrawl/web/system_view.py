"""What the dashboard reads of seed 004's video system (``topicrawl video run``, migration 13).

Videos with their extracted counts, popularity, tier and next due time; the weekly plans;
the microblog accounts with influence, tier and what the LDA filter did to each (and why);
the revisits (due against done, changed / 304 / unchanged); each node's rounds.

Every listing is one page of rows (``offset`` / ``limit``) in an order chosen from a fixed set
of columns, so nothing the user sends reaches the SQL but values. Crawled strings (titles,
names, URLs, display names) are returned as they are stored but capped (:func:`cap`): a
hostile site's megabyte title costs the browser nothing. Each read is a few short
statements on the read-only engine; the same queries run on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    Select,
    and_,
    case,
    cast,
    func,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from topicrawl.storage.schema import (
    account_runs,
    accounts,
    leader_leases,
    leader_terms,
    node_rounds,
    system_visits,
    video_tiers,
    videos,
)

__all__ = [
    "LEADER_SCHEMA",
    "MAX_NAMES",
    "MAX_TEXT",
    "SYSTEM_SCHEMA",
    "Listing",
    "accounts_data",
    "cap",
    "node_rounds_data",
    "plans_data",
    "revisits_data",
    "unavailable",
    "videos_data",
]

SYSTEM_SCHEMA = 13
"""The schema that added the video system's tables (videos, video_tiers, system_visits,
node_rounds)."""
LEADER_SCHEMA = 16
"""The schema that gave the leader's lease its tables (leader_leases, leader_terms)."""
MAX_TEXT = 300
"""Characters of one crawled string shown (the rest is cut and marked)."""
MAX_NAMES = 12
"""Names of a list (directors, actors) shown."""
MAX_PER_PAGE = 200
_DAY = 86_400.0
_MAX_PLANS_COMPARED = 50


def cap(value: object, limit: int = MAX_TEXT) -> str:
    """A crawled string cut to ``limit`` characters (an ellipsis marks the cut)."""
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def unavailable(version: int) -> dict[str, Any] | None:
    """Why the video system's pages are empty for a database of schema ``version`` (None when
    the tables are there)."""
    if version >= SYSTEM_SCHEMA:
        return None
    return {
        "available": False,
        "message": (
            f"this database has schema version {version}; the video system's tables (videos, "
            f"tiers, revisits, node rounds) came with version {SYSTEM_SCHEMA}: run "
            "`topicrawl video run` on it (which migrates it) to fill them"
        ),
    }


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a sorted listing: the sort key (one of the listing's own), its direction,
    the 1-based page and rows per page."""

    sort: str
    descending: bool = True
    page: int = 1
    per: int = 50

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per

    def check(self, allowed: Sequence[str]) -> None:
        """Raises ValueError when the sort key or the page is not one this listing has."""
        if self.sort not in allowed:
            raise ValueError(
                f"sort must be one of {', '.join(allowed)}; got {cap(self.sort, 40)!r}"
            )
        if self.page < 1 or not 1 <= self.per <= MAX_PER_PAGE:
            raise ValueError(f"page must be >= 1 and per 1-{MAX_PER_PAGE}")

    def paging(self, total: int) -> dict[str, Any]:
        pages = max(1, -(-total // self.per))
        return {
            "total": total,
            "page": self.page,
            "per": self.per,
            "pages": pages,
            "sort": self.sort,
            "order": "desc" if self.descending else "asc",
        }


def _ordered(statement: Select[Any], key: ColumnElement[Any], listing: Listing) -> Select[Any]:
    return statement.order_by(key.desc() if listing.descending else key.asc())


def _json_list(raw: str | None) -> list[str]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _json_object(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _names(raw: str | None) -> dict[str, Any]:
    found = _json_list(raw)
    return {
        "shown": [cap(n, 120) for n in found[:MAX_NAMES]],
        "more": max(0, len(found) - MAX_NAMES),
    }


async def _count(connection: AsyncConnection, statement: Select[Any]) -> int:
    found = await connection.execute(select(func.count()).select_from(statement.subquery()))
    return int(found.scalar_one())


# -- videos -------------------------------------------------------------------------------------

VIDEO_SORTS = ("popularity", "next_due", "tier", "title", "kind", "node", "plays", "planned_at")


def _video_next_due() -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    """A video's last revisit (of its detail page) and its next due time, as the system sets it:
    ``max(plan time, last visit + period)``, or plan time + period before any visit."""
    last = (
        select(func.max(system_visits.c.visited_at))
        .where(
            system_visits.c.source == videos.c.source,
            system_visits.c.kind == "page",
            system_visits.c.item == videos.c.video,
        )
        .scalar_subquery()
    )
    period = videos.c.revisit_days * _DAY
    due = case(
        (last.is_(None), videos.c.planned_at + period),
        (last + period > videos.c.planned_at, last + period),
        else_=videos.c.planned_at,
    )
    return last, due


async def videos_data(
    engine: AsyncEngine,
    listing: Listing,
    *,
    source: str | None = None,
    tier: int | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """One page of videos: counts, popularity, tier, revisit period, node, last and next visit.

    Raises:
        ValueError: a sort key or page this listing does not have.
    """
    listing.check(VIDEO_SORTS)
    last, due = _video_next_due()
    filters = []
    if source is not None:
        filters.append(videos.c.source == source)
    if tier is not None:
        filters.append(videos.c.tier == tier)
    if kind is not None:
        filters.append(videos.c.kind == kind)
    keys: dict[str, ColumnElement[Any]] = {
        "popularity": videos.c.popularity,
        "next_due": due,
        "tier": videos.c.tier,
        "title": videos.c.title,
        "kind": videos.c.kind,
        "node": videos.c.node,
        "planned_at": videos.c.planned_at,
        "plays": func.coalesce(_json_number(videos.c.counts, "plays", engine.dialect.name), -1.0),
    }
    base = select(videos, last.label("last_visit"), due.label("next_due")).where(*filters)
    statement = _ordered(base, keys[listing.sort], listing).order_by(videos.c.video)
    async with engine.connect() as connection:
        total = await _count(connection, select(videos.c.video).where(*filters))
        rows = (await connection.execute(statement.offset(listing.offset).limit(listing.per))).all()
        tiers = (
            await connection.execute(
                select(videos.c.tier, func.count()).where(*filters).group_by(videos.c.tier)
            )
        ).all()
        sources = (await connection.execute(select(videos.c.source).distinct().limit(50))).all()
    return {
        "available": True,
        "paging": listing.paging(total),
        "tiers": {int(t): int(n) for t, n in tiers},
        "sources": [cap(s[0]) for s in sources],
        "videos": [
            {
                "video": cap(r.video),
                "source": cap(r.source),
                "title": cap(r.title),
                "kind": cap(r.kind, 40),
                "directors": _names(r.directors),
                "actors": _names(r.actors),
                "pages": len(_json_list(r.pages)),
                "counts": _counts(r.counts),
                "partial": bool(r.partial),
                "popularity": float(r.popularity),
                "tier": int(r.tier),
                "revisit_days": float(r.revisit_days),
                "node": cap(r.node, 80),
                "planned_at": float(r.planned_at),
                "last_visit": None if r.last_visit is None else float(r.last_visit),
                "next_due": float(r.next_due),
            }
            for r in rows
        ],
    }


def _json_number(column: ColumnElement[Any], key: str, dialect: str) -> ColumnElement[Any]:
    """The number at ``key`` of ``column``'s JSON object (text), in SQL, on both databases."""
    if dialect == "postgresql":
        return cast(cast(column, JSONB)[key].astext, Float)
    return cast(func.json_extract(column, f"$.{key}"), Float)


def _counts(raw: str | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in _json_object(raw).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[cap(key, 40)] = float(value)
    return out


# -- plans --------------------------------------------------------------------------------------


async def plans_data(
    engine: AsyncEngine, *, source: str | None = None, page: int = 1, per: int = 20
) -> dict[str, Any]:
    """The weekly plans, newest first: videos per tier, mean popularity, how many videos moved
    up or down a tier since the plan before, and the node rounds the plan closed.

    Raises:
        ValueError: a page out of range.
    """
    listing = Listing("planned_at", page=page, per=per)
    listing.check(("planned_at",))
    where = [] if source is None else [video_tiers.c.source == source]
    times = select(video_tiers.c.source, video_tiers.c.planned_at).where(*where).distinct()
    async with engine.connect() as connection:
        total = await _count(connection, times)
        shown = (
            await connection.execute(
                times.order_by(video_tiers.c.planned_at.desc(), video_tiers.c.source)
                .offset(listing.offset)
                .limit(listing.per)
            )
        ).all()
        plans: list[dict[str, Any]] = []
        for plan_source, at in shown:
            plans.append(await _plan(connection, plan_source, float(at)))
    return {"available": True, "paging": listing.paging(total), "plans": plans}


async def _plan(connection: AsyncConnection, source: str, at: float) -> dict[str, Any]:
    same = video_tiers.c.source == source
    tiers = (
        await connection.execute(
            select(video_tiers.c.tier, func.count(), func.avg(video_tiers.c.popularity))
            .where(same, video_tiers.c.planned_at == at)
            .group_by(video_tiers.c.tier)
        )
    ).all()
    before = (
        await connection.execute(
            select(func.max(video_tiers.c.planned_at)).where(same, video_tiers.c.planned_at < at)
        )
    ).scalar()
    moves: Counter[str] = Counter()
    if before is not None:
        now_tier = video_tiers.alias("now_tier")
        old = video_tiers.alias("old_tier")
        change = case(
            (now_tier.c.tier < old.c.tier, "up"),
            (now_tier.c.tier > old.c.tier, "down"),
            else_="same",
        )
        found = await connection.execute(
            select(change, func.count())
            .select_from(
                now_tier.join(
                    old, and_(old.c.source == now_tier.c.source, old.c.video == now_tier.c.video)
                )
            )
            .where(now_tier.c.source == source, now_tier.c.planned_at == at)
            .where(old.c.planned_at == before)
            .group_by(change)
        )
        moves.update({str(k): int(n) for k, n in found})
        moves["new"] = int(
            (
                await connection.execute(
                    select(func.count())
                    .select_from(video_tiers)
                    .where(same, video_tiers.c.planned_at == at)
                )
            ).scalar_one()
        ) - sum(moves.values())
    rounds = (
        await connection.execute(
            select(node_rounds).where(node_rounds.c.source == source, node_rounds.c.at == at)
        )
    ).all()
    return {
        "source": cap(source),
        "planned_at": at,
        "previous": None if before is None else float(before),
        "videos": sum(int(n) for _, n, _ in tiers),
        "tiers": {
            int(t): {"videos": int(n), "mean_popularity": float(p or 0.0)} for t, n, p in tiers
        },
        "moves": dict(moves) if before is not None else None,
        "rounds": [_round(r) for r in rounds],
    }


def _round(row: Any) -> dict[str, Any]:
    seconds = float(row.seconds)
    return {
        "node": cap(row.node, 80),
        "at": float(row.at),
        "items": int(row.items),
        "seconds": seconds,
        "items_per_second": int(row.items) / seconds if seconds > 0 else None,
    }


# -- accounts -----------------------------------------------------------------------------------

ACCOUNT_SORTS = (
    "influence",
    "tier",
    "domain_score",
    "followers",
    "activity",
    "next_visit_at",
    "username",
    "hop",
    "match_step",
)
_STEPS = {1: "exact", 2: "affix", 3: "fuzzy"}


async def accounts_data(
    engine: AsyncEngine,
    listing: Listing,
    *,
    source: str | None = None,
    kept: bool | None = None,
    tier: int | None = None,
) -> dict[str, Any]:
    """One page of accounts: influence, tier, next visit, and whether the LDA filter kept each
    and why (its domain score against the run's threshold, or the match step that keeps it).

    Raises:
        ValueError: a sort key or page this listing does not have.
    """
    listing.check(ACCOUNT_SORTS)
    filters = []
    if source is not None:
        filters.append(accounts.c.source == source)
    if kept is not None:
        filters.append(accounts.c.kept == kept)
    if tier is not None:
        filters.append(accounts.c.tier == tier)
    key = accounts.c[listing.sort]
    # NULLs (no tier, no influence: dropped accounts) last whatever the direction.
    statement = _ordered(select(accounts).where(*filters).order_by(key.is_(None)), key, listing)
    statement = statement.order_by(accounts.c.source, accounts.c.account_id)
    async with engine.connect() as connection:
        total = await _count(connection, select(accounts.c.account_id).where(*filters))
        rows = (await connection.execute(statement.offset(listing.offset).limit(listing.per))).all()
        split = (
            await connection.execute(
                select(accounts.c.kept, func.count()).where(*filters).group_by(accounts.c.kept)
            )
        ).all()
        run_ids = {int(r.run_id) for r in rows}
        settings = {
            int(r.id): _json_object(r.settings)
            for r in (
                await connection.execute(
                    select(account_runs.c.id, account_runs.c.settings).where(
                        account_runs.c.id.in_(run_ids)
                    )
                )
            )
        }
    counted = {bool(k): int(n) for k, n in split}
    return {
        "available": True,
        "paging": listing.paging(total),
        "kept": counted.get(True, 0),
        "dropped": counted.get(False, 0),
        "accounts": [_account(r, settings.get(int(r.run_id), {})) for r in rows],
    }


def _account(row: Any, settings: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "source": cap(row.source),
        "account_id": cap(row.account_id, 80),
        "username": cap(row.username, 120),
        "display_name": cap(row.display_name, 120),
        "followers": int(row.followers),
        "following": int(row.following),
        "statuses": int(row.statuses),
        "hop": row.hop,
        "match": None
        if row.match_step is None
        else {
            "name": cap(row.match_name, 120),
            "step": int(row.match_step),
            "how": _STEPS.get(int(row.match_step), "?"),
            "score": row.match_score,
        },
        "domain_score": row.domain_score,
        "kept": bool(row.kept),
        "why": why_kept(row.kept, row.domain_score, row.match_step, row.hop, settings),
        "activity": float(row.activity),
        "influence": row.influence,
        "tier": row.tier,
        "revisit_days": row.revisit_days,
        "next_visit_at": row.next_visit_at,
        "node": None if row.node is None else cap(row.node, 80),
        "thread": row.thread,
        "run_id": int(row.run_id),
    }


def why_kept(
    kept: bool,
    score: float | None,
    step: int | None,
    hop: int | None,
    settings: Mapping[str, Any],
) -> str:
    """In words, why the LDA filter kept or dropped an account, from its run's settings."""
    lda = settings.get("lda") if isinstance(settings.get("lda"), dict) else {}
    threshold = lda.get("threshold") if isinstance(lda, dict) else None
    keep_steps = settings.get("keep_steps") or []
    against = f" (threshold {threshold:g})" if isinstance(threshold, int | float) else ""
    shown = "no score" if score is None else f"domain score {score:.3f}"
    how = f"a step-{step} ({_STEPS.get(step, '?')}) match" if step is not None else None
    if kept and step is not None and step in keep_steps:
        return f"kept: {how} is kept whatever its posts; {shown}{against}"
    if kept:
        return f"kept: {shown} at or above the threshold{against}"
    came = how or f"added at hop {hop}"
    return f"dropped: {came} with {shown} under the threshold{against}"


# -- revisits -----------------------------------------------------------------------------------

VISIT_SORTS = ("visited_at", "due_at", "late", "tier", "status", "kind", "node", "found")
OUTCOMES = ("changed", "not_modified", "unchanged", "failed")


def _outcome() -> ColumnElement[str]:
    status = system_visits.c.status
    return case(
        (status == 304, "not_modified"),
        (or_(status == 0, status >= 400), "failed"),
        (system_visits.c.changed.is_(True), "changed"),
        else_="unchanged",
    )


def _day(column: ColumnElement[Any], origin: float, dialect: str) -> ColumnElement[Any]:
    """Whole days from ``origin`` (floor), on both databases."""
    days = (column - origin) / _DAY
    if dialect == "postgresql":
        return cast(func.floor(days), Integer)
    return cast(days, Integer)  # SQLite's cast truncates: the same for days >= 0


async def revisits_data(
    engine: AsyncEngine,
    listing: Listing,
    *,
    source: str | None = None,
    kind: str | None = None,
    outcome: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The revisits: by kind and tier (done, changed / 304 / unchanged / failed, lateness), by
    day (due against done), what is due and not yet done, and one page of single visits.

    Raises:
        ValueError: a sort key, outcome or page this listing does not have.
    """
    listing.check(VISIT_SORTS)
    if outcome is not None and outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}")
    if kind is not None and kind not in {"page", "account"}:
        raise ValueError("kind must be page or account")
    where = [] if source is None else [system_visits.c.source == source]
    chosen = list(where)
    if kind is not None:
        chosen.append(system_visits.c.kind == kind)
    if outcome is not None:
        chosen.append(_outcome() == outcome)
    late = system_visits.c.visited_at - system_visits.c.due_at
    keys: dict[str, ColumnElement[Any]] = {
        name: system_visits.c[name] for name in VISIT_SORTS if name != "late"
    }
    keys["late"] = late
    result = _outcome()
    async with engine.connect() as connection:
        dialect = connection.dialect.name
        summary = (
            await connection.execute(
                select(
                    system_visits.c.kind,
                    system_visits.c.tier,
                    result.label("outcome"),
                    func.count(),
                    func.avg(late),
                    func.max(late),
                )
                .where(*where)
                .group_by(system_visits.c.kind, system_visits.c.tier, result)
            )
        ).all()
        span = (
            await connection.execute(
                select(
                    func.min(system_visits.c.due_at), func.max(system_visits.c.visited_at)
                ).where(*where)
            )
        ).one()
        origin = float(span[0]) if span[0] is not None else 0.0
        days = await _by_day(connection, where, origin, dialect) if span[0] is not None else []
        as_of = max(now if now is not None else time.time(), float(span[1] or 0.0))
        pending = await _pending(connection, source, as_of)
        total = await _count(connection, select(system_visits.c.id).where(*chosen))
        statement = _ordered(
            select(system_visits, late.label("late"), result.label("outcome")).where(*chosen),
            keys[listing.sort],
            listing,
        ).order_by(system_visits.c.id.desc())
        rows = (await connection.execute(statement.offset(listing.offset).limit(listing.per))).all()
    return {
        "available": True,
        "as_of": as_of,
        "origin": origin,
        "summary": _summary(summary),
        "days": days,
        "pending": pending,
        "paging": listing.paging(total),
        "visits": [
            {
                "id": int(r.id),
                "source": cap(r.source),
                "kind": r.kind,
                "item": cap(r.item),
                "tier": int(r.tier),
                "node": cap(r.node, 80),
                "due_at": float(r.due_at),
                "visited_at": float(r.visited_at),
                "late": float(r.late),
                "status": int(r.status),
                "changed": bool(r.changed),
                "outcome": r.outcome,
                "found": int(r.found),
            }
            for r in rows
        ],
    }


def _summary(rows: Sequence[Any]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for kind, tier, outcome, count, mean_late, max_late in rows:
        group = groups.setdefault(
            (str(kind), int(tier)),
            {
                "kind": str(kind),
                "tier": int(tier),
                "done": 0,
                **dict.fromkeys(OUTCOMES, 0),
                "mean_late": 0.0,
                "max_late": 0.0,
            },
        )
        n = int(count)
        group["mean_late"] = (group["mean_late"] * group["done"] + float(mean_late or 0) * n) / (
            group["done"] + n
        )
        group["done"] += n
        group[str(outcome)] += n
        group["max_late"] = max(group["max_late"], float(max_late or 0.0))
    return [groups[key] for key in sorted(groups)]


async def _by_day(
    connection: AsyncConnection, where: list[ColumnElement[bool]], origin: float, dialect: str
) -> list[dict[str, Any]]:
    """Per day since the first due time: visits that fell due that day, visits made that day,
    and what those found."""
    due_day = _day(system_visits.c.due_at, origin, dialect)
    done_day = _day(system_visits.c.visited_at, origin, dialect)
    due = (
        await connection.execute(select(due_day, func.count()).where(*where).group_by(due_day))
    ).all()
    result = _outcome()
    done = (
        await connection.execute(
            select(done_day, result, func.count()).where(*where).group_by(done_day, result)
        )
    ).all()
    out: dict[int, dict[str, Any]] = {}

    def day(n: int) -> dict[str, Any]:
        return out.setdefault(n, {"day": n, "due": 0, "done": 0, **dict.fromkeys(OUTCOMES, 0)})

    for n, count in due:
        day(int(n))["due"] += int(count)
    for n, outcome, count in done:
        entry = day(int(n))
        entry["done"] += int(count)
        entry[str(outcome)] += int(count)
    return [out[n] for n in sorted(out)]


async def _pending(connection: AsyncConnection, source: str | None, as_of: float) -> dict[str, int]:
    """Videos and kept accounts whose next visit is due at ``as_of`` and not yet made."""
    _, due = _video_next_due()
    video_where = [due <= as_of]
    account_where = [accounts.c.kept.is_(True), accounts.c.next_visit_at <= as_of]
    if source is not None:
        video_where.append(videos.c.source == source)
    videos_due = (
        await connection.execute(select(func.count()).select_from(videos).where(*video_where))
    ).scalar_one()
    accounts_due = (
        await connection.execute(select(func.count()).select_from(accounts).where(*account_where))
    ).scalar_one()
    return {"videos": int(videos_due), "accounts": int(accounts_due)}


# -- node rounds --------------------------------------------------------------------------------


async def node_rounds_data(
    engine: AsyncEngine,
    *,
    source: str | None = None,
    page: int = 1,
    per: int = 50,
    leaders: bool = True,
) -> dict[str, Any]:
    """Each node: its rounds (items revisited and the real seconds they took, per plan), and
    what it holds now (videos, accounts) and has done (visits); with ``leaders`` (a database
    of schema 16 or later) each source's leader lease and its terms, newest first.

    Raises:
        ValueError: a page out of range.
    """
    listing = Listing("at", page=page, per=per)
    listing.check(("at",))
    where = []
    if source is not None:
        where.append(node_rounds.c.source == source)
    async with engine.connect() as connection:
        total = await _count(connection, select(node_rounds.c.node).where(*where))
        rows = (
            await connection.execute(
                select(node_rounds)
                .where(*where)
                .order_by(node_rounds.c.at.desc(), node_rounds.c.node)
                .offset(listing.offset)
                .limit(listing.per)
            )
        ).all()
        nodes: dict[str, dict[str, Any]] = {}

        def node(name: str) -> dict[str, Any]:
            return nodes.setdefault(
                name,
                {"node": cap(name, 80), "videos": 0, "accounts": 0, "visits": 0, "rounds": 0,
                 "items": 0, "seconds": 0.0},
            )  # fmt: skip

        video_where = [] if source is None else [videos.c.source == source]
        for name, n in await connection.execute(
            select(videos.c.node, func.count()).where(*video_where).group_by(videos.c.node)
        ):
            node(str(name))["videos"] = int(n)
        for name, n in await connection.execute(
            select(accounts.c.node, func.count())
            .where(accounts.c.node.is_not(None))
            .group_by(accounts.c.node)
        ):
            node(str(name))["accounts"] = int(n)
        visit_where = [] if source is None else [system_visits.c.source == source]
        for name, n in await connection.execute(
            select(system_visits.c.node, func.count())
            .where(*visit_where)
            .group_by(system_visits.c.node)
        ):
            node(str(name))["visits"] = int(n)
        for name, n, items, seconds in await connection.execute(
            select(
                node_rounds.c.node,
                func.count(),
                func.sum(node_rounds.c["items"]),
                func.sum(node_rounds.c.seconds),
            )
            .where(*where)
            .group_by(node_rounds.c.node)
        ):
            entry = node(str(name))
            entry.update(rounds=int(n), items=int(items or 0), seconds=float(seconds or 0.0))
        held = await _leaders(connection, source) if leaders else []
    for entry in nodes.values():
        entry["items_per_second"] = (
            entry["items"] / entry["seconds"] if entry["seconds"] > 0 else None
        )
    return {
        "available": True,
        "paging": listing.paging(total),
        "nodes": [nodes[k] for k in sorted(nodes)],
        "rounds": [_round(r) for r in rows],
        "leaders": held,
    }


# A source's terms shown at most (a takeover a lease period at worst: a long run has many).
_TERMS_SHOWN = 20


async def _leaders(connection: AsyncConnection, source: str | None) -> list[dict[str, Any]]:
    """Each source's leader lease: holder, term, expiry, and its latest terms."""
    where = [] if source is None else [leader_leases.c.source == source]
    leases = (
        await connection.execute(
            select(leader_leases).where(*where).order_by(leader_leases.c.source)
        )
    ).all()
    out: list[dict[str, Any]] = []
    for lease in leases:
        terms = await connection.execute(
            select(leader_terms)
            .where(leader_terms.c.source == lease.source)
            .order_by(leader_terms.c.term.desc())
            .limit(_TERMS_SHOWN)
        )
        out.append(
            {
                "source": cap(lease.source, 200),
                "holder": cap(lease.holder, 80),
                "term": int(lease.term),
                "taken_at": lease.taken_at,
                "renewed_at": lease.renewed_at,
                "expires": float(lease.expires),
                "terms": [
                    {
                        "term": int(t.term),
                        "holder": cap(t.holder, 80),
                        "taken_at": t.taken_at,
                        "previous": None if t.previous is None else cap(t.previous, 80),
                        "previous_expires": t.previous_expires,
                    }
                    for t in terms
                ],
            }
        )
    return out
