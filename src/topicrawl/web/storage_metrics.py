"""Prometheus text exposition of what a crawl database holds, for the dashboard's /metrics.

# TEMPORARY: replaced by the obs branch at merge.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.storage.schema import failures, pages, runs

__all__ = ["render_storage_metrics"]


async def render_storage_metrics(engine: AsyncEngine) -> bytes:
    """Pages, bytes, failures by kind and runs stored, as Prometheus text."""
    async with engine.connect() as connection:
        page_count, size = (
            await connection.execute(
                select(func.count(pages.c.id), func.coalesce(func.sum(pages.c.size), 0))
            )
        ).one()
        by_kind = (
            await connection.execute(
                select(failures.c.kind, func.count(failures.c.id)).group_by(failures.c.kind)
            )
        ).all()
        run_count = (await connection.execute(select(func.count()).select_from(runs))).scalar()
    registry = CollectorRegistry()
    Gauge("topicrawl_stored_pages", "Pages stored.", registry=registry).set(page_count)
    Gauge("topicrawl_stored_bytes", "Bytes of the stored pages' bodies.", registry=registry).set(
        size
    )
    kinds = Gauge(
        "topicrawl_stored_failures", "Failed URLs stored, by kind.", ["kind"], registry=registry
    )
    for kind, count in by_kind:
        kinds.labels(kind=kind).set(count)
    Gauge("topicrawl_runs", "Crawl runs stored.", registry=registry).set(run_count or 0)
    return generate_latest(registry)
