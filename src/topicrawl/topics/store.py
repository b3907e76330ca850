"""Persistence of topic tracking: posts, topics, topic words, heat, forecasts, allocations.

One :class:`TopicStore` writes each tracked period in one transaction (:meth:`save_period`), so
a crash leaves whole periods only, and reads everything back for ``topicrawl topics show`` and
for resuming a tracking run (:meth:`load_topics`). It shares the crawl database (SQLite file or
PostgreSQL URL, :mod:`topicrawl.storage.target`) and its migrations (schema version 3 holds
these tables, :mod:`topicrawl.storage.schema`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sqlalchemy import Table, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from topicrawl.core.errors import StorageError
from topicrawl.storage.opening import SideStore
from topicrawl.storage.schema import (
    allocations,
    heat_forecasts,
    posts,
    topic_heat,
    topic_words,
    tracked_topics,
    tracking_periods,
)
from topicrawl.storage.target import WRITE_OPTION
from topicrawl.topics.ahp import HeatWeights
from topicrawl.topics.allocation import TopicAllocation
from topicrawl.topics.forecast import HeatForecast
from topicrawl.topics.table import TrackedTopic

__all__ = [
    "COMBINED",
    "ForecastRecord",
    "PeriodRecord",
    "PostRecord",
    "StoredAllocation",
    "StoredHeat",
    "StoredPeriod",
    "StoredTopic",
    "TopicStore",
    "TrackingHistory",
    "read_history",
]

COMBINED = "combined"  # the method name of the entropy-weighted combination
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class PostRecord:
    """A collected post as stored: its source's id, engagement, heat and topic (if any)."""

    source: str
    post_id: str
    period: int
    created_at: float
    author: str
    text: str
    url: str
    reposts: int
    likes: int
    comments: int
    heat: float
    topic_id: int | None = None
    links: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    lang: str | None = None


@dataclass(frozen=True, slots=True)
class PeriodRecord:
    """Everything one tracked period produced.

    ``heats`` maps each active topic to (heat, number of its posts); ``forecasts`` to its
    forecast of the next period's heat; ``allocations`` to its crawl resources.
    """

    period: int
    started_at: float
    finished_at: float
    keywords: tuple[str, ...]
    heat_weights: HeatWeights
    posts: Sequence[PostRecord]
    topics: Sequence[TrackedTopic]
    heats: Mapping[int, tuple[float, int]] = field(compare=False)
    forecasts: Mapping[int, HeatForecast] = field(compare=False)
    allocations: Mapping[int, TopicAllocation] = field(compare=False)
    cpu_total: float | None = None
    cpu_used_by_others: float | None = None


@dataclass(frozen=True, slots=True)
class StoredTopic:
    topic_id: int
    words: Mapping[str, float] = field(compare=False)
    first_seen: int
    last_seen: int
    retired_at: int | None


@dataclass(frozen=True, slots=True)
class StoredHeat:
    period: int
    heat: float
    posts: int


@dataclass(frozen=True, slots=True)
class ForecastRecord:
    """One method's forecast of a topic's heat in ``target_period`` and its entropy weight."""

    topic_id: int
    target_period: int
    method: str
    made_at_period: int
    value: float
    weight: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class StoredAllocation:
    period: int
    heat: float
    cpu_cap: float
    processes: int


@dataclass(frozen=True, slots=True)
class StoredPeriod:
    period: int
    started_at: float
    finished_at: float
    keywords: tuple[str, ...]
    posts: int
    cpu_total: float | None
    cpu_used_by_others: float | None


@dataclass(frozen=True, slots=True)
class TrackingHistory:
    """A whole tracking history, by topic id."""

    periods: tuple[StoredPeriod, ...]
    topics: tuple[StoredTopic, ...]
    heat: Mapping[int, tuple[StoredHeat, ...]] = field(compare=False)
    forecasts: Mapping[int, tuple[ForecastRecord, ...]] = field(compare=False)
    allocations: Mapping[int, tuple[StoredAllocation, ...]] = field(compare=False)


async def _read_rows(engine: AsyncEngine, statement: Any) -> list[Any]:
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(statement)).all())
    except (OperationalError, DBAPIError) as exc:
        raise StorageError(f"reading topic storage failed: {exc}") from exc


def _finite(value: float) -> float:
    return float(value) if math.isfinite(value) else 0.0


def _post_row(post: PostRecord) -> dict[str, Any]:
    return {
        "source": post.source[:500],
        "post_id": post.post_id[:200],
        "period": post.period,
        "created_at": _finite(post.created_at),
        "author": post.author[:500],
        "text": post.text,
        "url": post.url[:4000],
        "links": json.dumps(list(post.links), ensure_ascii=False),
        "tags": json.dumps(list(post.tags), ensure_ascii=False),
        "lang": post.lang,
        "reposts": post.reposts,
        "likes": post.likes,
        "comments": post.comments,
        "heat": _finite(post.heat),
        "topic_id": post.topic_id,
    }


def _forecast_rows(period: int, topic_id: int, forecast: HeatForecast) -> list[dict[str, Any]]:
    target = period + forecast.steps
    rows = [
        {
            "topic_id": topic_id,
            "target_period": target,
            "method": name,
            "made_at_period": period,
            "value": _finite(value),
            "weight": _finite(forecast.weights.get(name, 0.0)),
            "note": forecast.notes.get(name, "")[:1000],
        }
        for name, value in forecast.forecasts.items()
    ]
    rows.append(
        {
            "topic_id": topic_id,
            "target_period": target,
            "method": COMBINED,
            "made_at_period": period,
            "value": _finite(forecast.value),
            "weight": 1.0,
            "note": "",
        }
    )
    return rows


class TopicStore(SideStore):
    """Reads and writes topic tracking data in a crawl database.

    Args:
        url: a SQLite file path or ``postgresql://`` URL (``?schema=`` accepted).
        busy_timeout: seconds a SQLite writer waits for a lock.

    Raises:
        ConfigError: ``url`` is malformed.
    """

    def __init__(self, url: str, *, busy_timeout: float = 10.0) -> None:
        super().__init__(url, what="topic storage", busy_timeout=busy_timeout)

    def _require(self) -> AsyncEngine:
        return self.engine

    # -- writes --------------------------------------------------------------------------------

    async def save_period(self, record: PeriodRecord) -> None:
        """Write one period in one transaction (a period saved again is replaced).

        Raises:
            StorageError: the write failed; nothing of the period was written.
        """
        engine = self._require().execution_options(**{WRITE_OPTION: True})
        try:
            async with engine.begin() as connection:
                await self._write_period(connection, record)
        except (OperationalError, DBAPIError) as exc:
            raise StorageError(f"saving period {record.period} failed: {exc}") from exc

    async def _write_period(self, connection: AsyncConnection, record: PeriodRecord) -> None:
        period = record.period
        for table in (topic_words, topic_heat, allocations):
            await connection.execute(delete(table).where(table.c.period == period))
        await connection.execute(
            delete(heat_forecasts).where(heat_forecasts.c.made_at_period == period)
        )
        await connection.execute(
            delete(tracking_periods).where(tracking_periods.c.period == period)
        )
        weights = record.heat_weights
        await connection.execute(
            tracking_periods.insert().values(
                period=period,
                started_at=record.started_at,
                finished_at=record.finished_at,
                keywords=json.dumps(list(record.keywords), ensure_ascii=False),
                posts=len(record.posts),
                cpu_total=record.cpu_total,
                cpu_used_by_others=record.cpu_used_by_others,
                heat_weights=json.dumps(
                    {
                        "reposts": weights.reposts,
                        "likes": weights.likes,
                        "comments": weights.comments,
                    }
                ),
            )
        )
        rows = [_post_row(p) for p in record.posts]
        for start in range(0, len(rows), _CHUNK):
            await self._upsert(
                connection, posts, rows[start : start + _CHUNK], ("source", "post_id")
            )
        topic_rows = [
            {
                "id": t.topic_id,
                "first_seen": t.first_seen,
                "last_seen": t.last_seen,
                "retired_at": t.retired_at,
                "words": json.dumps(dict(t.words), ensure_ascii=False),
            }
            for t in record.topics
        ]
        if topic_rows:
            await self._upsert(connection, tracked_topics, topic_rows, ("id",))
        word_rows = [
            {"topic_id": t.topic_id, "period": period, "word": w[:200], "weight": _finite(v)}
            for t in record.topics
            if t.active
            for w, v in t.words.items()
        ]
        if word_rows:
            await connection.execute(topic_words.insert(), word_rows)
        heat_rows = [
            {"topic_id": tid, "period": period, "heat": _finite(h), "posts": n}
            for tid, (h, n) in record.heats.items()
        ]
        if heat_rows:
            await connection.execute(topic_heat.insert(), heat_rows)
        forecast_rows = [
            row
            for tid, forecast in record.forecasts.items()
            for row in _forecast_rows(period, tid, forecast)
        ]
        if forecast_rows:
            await self._upsert(
                connection, heat_forecasts, forecast_rows, ("topic_id", "target_period", "method")
            )
        allocation_rows = [
            {
                "topic_id": tid,
                "period": period,
                "heat": _finite(a.heat),
                "cpu_cap": _finite(a.cpu_cap),
                "processes": a.processes,
            }
            for tid, a in record.allocations.items()
        ]
        if allocation_rows:
            await connection.execute(allocations.insert(), allocation_rows)

    async def _upsert(
        self,
        connection: AsyncConnection,
        table: Table,
        rows: list[dict[str, Any]],
        keys: tuple[str, ...],
    ) -> None:
        if not rows:
            return
        dialect = postgresql if self._target.dialect == "postgresql" else sqlite
        statement = dialect.insert(table)
        update = {name: statement.excluded[name] for name in rows[0] if name not in keys}
        await connection.execute(
            statement.on_conflict_do_update(index_elements=list(keys), set_=update), rows
        )

    # -- reads ---------------------------------------------------------------------------------

    async def _rows(self, statement: Any) -> list[Any]:
        return await _read_rows(self._require(), statement)

    async def last_period(self) -> int | None:
        """The latest period saved, or ``None``."""
        rows = await self._rows(select(func.max(tracking_periods.c.period)))
        value = rows[0][0] if rows else None
        return int(value) if value is not None else None

    async def newest_post_id(self, source: str) -> str | None:
        """The newest stored post id of ``source`` (numeric ids compared as numbers)."""
        rows = await self._rows(select(posts.c.post_id).where(posts.c.source == source))
        ids = [r.post_id for r in rows]
        numeric = [int(i) for i in ids if i.isdigit()]
        return str(max(numeric)) if numeric else None

    async def load_topics(self) -> list[TrackedTopic]:
        """Every topic with its heat history, to start a :class:`TopicWordTable` from."""
        history = await self.history()
        return [
            TrackedTopic(
                topic_id=t.topic_id,
                words=t.words,
                first_seen=t.first_seen,
                last_seen=t.last_seen,
                heat_history=tuple((h.period, h.heat) for h in history.heat.get(t.topic_id, ())),
                retired_at=t.retired_at,
            )
            for t in history.topics
        ]

    async def post_topics(self, period: int | None = None) -> dict[tuple[str, str], int | None]:
        """(source, post id) -> topic id of the stored posts (of one period, or all)."""
        statement = select(posts.c.source, posts.c.post_id, posts.c.topic_id)
        if period is not None:
            statement = statement.where(posts.c.period == period)
        return {(r.source, r.post_id): r.topic_id for r in await self._rows(statement)}

    async def history(self) -> TrackingHistory:
        """All periods, topics, heats, forecasts and allocations, in period order."""
        return await read_history(self._require())


async def read_history(engine: AsyncEngine) -> TrackingHistory:
    """All periods, topics, heats, forecasts and allocations of a database, in period order.

    Reads only (the dashboard calls it with a read-only engine).

    Raises:
        StorageError: the database cannot be read.
    """

    async def rows(statement: Any) -> list[Any]:
        return await _read_rows(engine, statement)

    period_rows = await rows(select(tracking_periods).order_by(tracking_periods.c.period))
    topic_rows = await rows(select(tracked_topics).order_by(tracked_topics.c.id))
    heat_rows = await rows(select(topic_heat).order_by(topic_heat.c.period))
    forecast_rows = await rows(
        select(heat_forecasts).order_by(heat_forecasts.c.target_period, heat_forecasts.c.method)
    )
    allocation_rows = await rows(select(allocations).order_by(allocations.c.period))
    heat: dict[int, list[StoredHeat]] = {}
    for r in heat_rows:
        heat.setdefault(r.topic_id, []).append(StoredHeat(r.period, r.heat, r.posts))
    forecasts: dict[int, list[ForecastRecord]] = {}
    for r in forecast_rows:
        forecasts.setdefault(r.topic_id, []).append(
            ForecastRecord(
                r.topic_id,
                r.target_period,
                r.method,
                r.made_at_period,
                r.value,
                r.weight,
                r.note,
            )
        )
    allocs: dict[int, list[StoredAllocation]] = {}
    for r in allocation_rows:
        allocs.setdefault(r.topic_id, []).append(
            StoredAllocation(r.period, r.heat, r.cpu_cap, r.processes)
        )
    return TrackingHistory(
        periods=tuple(
            StoredPeriod(
                r.period,
                r.started_at,
                r.finished_at,
                tuple(json.loads(r.keywords)),
                r.posts,
                r.cpu_total,
                r.cpu_used_by_others,
            )
            for r in period_rows
        ),
        topics=tuple(
            StoredTopic(
                r.id,
                MappingProxyType({str(k): float(v) for k, v in json.loads(r.words).items()}),
                r.first_seen,
                r.last_seen,
                r.retired_at,
            )
            for r in topic_rows
        ),
        heat=MappingProxyType({k: tuple(v) for k, v in heat.items()}),
        forecasts=MappingProxyType({k: tuple(v) for k, v in forecasts.items()}),
        allocations=MappingProxyType({k: tuple(v) for k, v in allocs.items()}),
    )
