"""The Topics page's data: each tracked topic's heat, forecasts, allocations and words."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.storage.schema import topic_words
from topicrawl.topics.store import read_history

__all__ = ["topics_data"]

_WORDS_PER_PERIOD = 8


async def topics_data(engine: AsyncEngine) -> dict[str, Any]:
    """Periods (with the machine's CPU), and per topic: heat by period, each method's
    forecasts (DES, BP, combined) with their entropy weights, CPU caps and processes, and
    the topic's top words in each period."""
    history = await read_history(engine)
    statement = select(topic_words).order_by(
        topic_words.c.topic_id, topic_words.c.period, topic_words.c.weight.desc()
    )
    words: dict[int, dict[int, list[tuple[str, float]]]] = {}
    async with engine.connect() as connection:
        for row in (await connection.execute(statement)).all():
            period_words = words.setdefault(row.topic_id, {}).setdefault(row.period, [])
            if len(period_words) < _WORDS_PER_PERIOD:
                period_words.append((row.word, row.weight))
    topics = []
    for topic in history.topics:
        forecasts: dict[str, list[dict[str, Any]]] = {}
        for record in history.forecasts.get(topic.topic_id, ()):
            forecasts.setdefault(record.method, []).append(
                {
                    "target_period": record.target_period,
                    "made_at_period": record.made_at_period,
                    "value": record.value,
                    "weight": record.weight,
                    "note": record.note,
                }
            )
        topics.append(
            {
                "id": topic.topic_id,
                "words": sorted(topic.words.items(), key=lambda item: -item[1])[:12],
                "first_seen": topic.first_seen,
                "last_seen": topic.last_seen,
                "retired_at": topic.retired_at,
                "heat": [
                    {"period": h.period, "heat": h.heat, "posts": h.posts}
                    for h in history.heat.get(topic.topic_id, ())
                ],
                "forecasts": forecasts,
                "allocations": [
                    {
                        "period": a.period,
                        "heat": a.heat,
                        "cpu_cap": a.cpu_cap,
                        "processes": a.processes,
                    }
                    for a in history.allocations.get(topic.topic_id, ())
                ],
                "words_by_period": [
                    {"period": period, "words": items}
                    for period, items in sorted(words.get(topic.topic_id, {}).items())
                ],
            }
        )
    return {
        "periods": [
            {
                "period": p.period,
                "started_at": p.started_at,
                "finished_at": p.finished_at,
                "posts": p.posts,
                "keywords": list(p.keywords),
                "cpu_total": p.cpu_total,
                "cpu_used_by_others": p.cpu_used_by_others,
            }
            for p in history.periods
        ],
        "topics": topics,
    }
