"""The crawl's live time series (table ``run_samples``): the read side.

# TEMPORARY: replaced by the obs branch at merge. This stand-in implements only the read side
# of the interface shared with helper "obs" (the crawl writes the samples there); on a database
# without the ``run_samples`` table it reads no samples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["RunSample", "read_samples"]


@dataclass(frozen=True, slots=True)
class RunSample:
    """The crawl's counters at one moment (cumulative ones since its start)."""

    run_id: int
    at: float
    pages: int
    failures: int
    bytes: int
    queued: int
    in_flight: int
    parse_backlog: int
    failures_by_kind: Mapping[str, int] = field(default_factory=dict)
    waits: Mapping[str, int] = field(default_factory=dict)
    node: str | None = None


def _object(value: Any) -> dict[str, int]:
    try:
        decoded = json.loads(value) if value else {}
    except ValueError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {str(k): int(v) for k, v in decoded.items() if isinstance(v, int | float)}


async def read_samples(
    engine: AsyncEngine, run_id: int, *, since: float | None = None, limit: int = 2000
) -> list[RunSample]:
    """The run's samples, oldest first (the newest ``limit`` of those after ``since``)."""
    async with engine.connect() as connection:
        if not await connection.run_sync(lambda sync: inspect(sync).has_table("run_samples")):
            return []
        rows = (
            await connection.execute(
                text(
                    "SELECT run_id, at, pages, failures, bytes, queued, in_flight, parse_backlog,"
                    " failures_by_kind, waits, node FROM run_samples"
                    " WHERE run_id = :run AND at > :since ORDER BY at DESC LIMIT :limit"
                ),
                {"run": run_id, "since": since if since is not None else -1.0, "limit": limit},
            )
        ).all()
    return [
        RunSample(
            run_id=int(r.run_id),
            at=float(r.at),
            pages=int(r.pages),
            failures=int(r.failures),
            bytes=int(r.bytes),
            queued=int(r.queued),
            in_flight=int(r.in_flight),
            parse_backlog=int(r.parse_backlog),
            failures_by_kind=_object(r.failures_by_kind),
            waits=_object(r.waits),
            node=r.node,
        )
        for r in reversed(rows)
    ]
