"""Prometheus metrics of what a crawl database holds, for the dashboard's ``/metrics``.

These are gauges read from storage when scraped (pages by HTTP status, failures by kind,
bytes stored, runs running and finished, and the latest live sample of each running run per
node), unlike ``--metrics-port``'s counters of one crawl process
(:mod:`topicrawl.engine.metrics`). Each scrape runs four small aggregate queries and reads
the newest sample per running run and node; reads never block a SQLite writer (WAL).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from sqlalchemy import Row, and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from topicrawl.engine.samples import RunSample, sample_from_row
from topicrawl.storage.schema import failures, pages, run_samples, runs

__all__ = [
    "CONTENT_TYPE",
    "StorageSnapshot",
    "read_storage_snapshot",
    "render_storage_metrics",
    "storage_registry",
]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_PREFIX = "topicrawl_storage_"


@dataclass(frozen=True, slots=True)
class StorageSnapshot:
    """What the database holds now."""

    pages_by_status: dict[int, int] = field(default_factory=dict)
    failures_by_kind: dict[str, int] = field(default_factory=dict)
    page_bytes: int = 0
    runs_running: int = 0
    runs_finished: int = 0
    live: Sequence[RunSample] = ()
    """The latest sample of each running run, per node."""


async def read_storage_snapshot(
    engine: AsyncEngine, *, live_samples: bool = True
) -> StorageSnapshot:
    """Read the counts behind the metrics (one connection, a few aggregate queries); the
    running runs' latest samples too unless ``live_samples`` is False (a database before
    schema 6 has no samples table)."""
    async with engine.connect() as connection:
        by_status = (
            await connection.execute(
                select(
                    pages.c.status, func.count(), func.coalesce(func.sum(pages.c.size), 0)
                ).group_by(pages.c.status)
            )
        ).all()
        by_kind = (
            await connection.execute(
                select(failures.c.kind, func.count()).group_by(failures.c.kind)
            )
        ).all()
        run_rows = (
            await connection.execute(
                select(runs.c.finished_at.is_(None).label("running"), func.count()).group_by(
                    runs.c.finished_at.is_(None)
                )
            )
        ).all()
        running_ids = (
            (await connection.execute(select(runs.c.id).where(runs.c.finished_at.is_(None))))
            .scalars()
            .all()
        )
        latest_rows: Sequence[Row[Any]] = (
            await _latest_samples(connection, running_ids) if live_samples and running_ids else ()
        )
    live = [sample_from_row(row._mapping) for row in latest_rows]
    running = sum(int(count) for flag, count in run_rows if flag)
    finished = sum(int(count) for flag, count in run_rows if not flag)
    return StorageSnapshot(
        pages_by_status={int(status): int(count) for status, count, _ in by_status},
        failures_by_kind={str(kind): int(count) for kind, count in by_kind},
        page_bytes=sum(int(size) for _, _, size in by_status),
        runs_running=running,
        runs_finished=finished,
        live=live,
    )


async def _latest_samples(
    connection: AsyncConnection, running_ids: Sequence[int]
) -> Sequence[Row[Any]]:
    """The newest ``run_samples`` row of each running run and node."""
    newest = (
        select(
            run_samples.c.run_id,
            run_samples.c.node,
            func.max(run_samples.c.at).label("at"),
        )
        .where(run_samples.c.run_id.in_(running_ids))
        .group_by(run_samples.c.run_id, run_samples.c.node)
        .subquery("newest")
    )
    return (
        await connection.execute(
            select(run_samples)
            .join(
                newest,
                and_(
                    run_samples.c.run_id == newest.c.run_id,
                    run_samples.c.node.is_not_distinct_from(newest.c.node),
                    run_samples.c.at == newest.c.at,
                ),
            )
            .order_by(run_samples.c.run_id, run_samples.c.node)
        )
    ).all()


class _SnapshotCollector:
    def __init__(self, snapshot: StorageSnapshot) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        snap = self._snapshot
        stored = GaugeMetricFamily(
            _PREFIX + "pages", "Pages stored, by HTTP status.", labels=["status"]
        )
        for status, count in sorted(snap.pages_by_status.items()):
            stored.add_metric([str(status)], float(count))
        yield stored
        failed = GaugeMetricFamily(
            _PREFIX + "failures", "Failed URLs stored, by kind.", labels=["kind"]
        )
        for kind, count in sorted(snap.failures_by_kind.items()):
            failed.add_metric([kind], float(count))
        yield failed
        yield GaugeMetricFamily(
            _PREFIX + "page_bytes", "Bytes of the stored pages' bodies.", value=snap.page_bytes
        )
        run_count = GaugeMetricFamily(_PREFIX + "runs", "Crawl runs, by state.", labels=["state"])
        run_count.add_metric(["running"], float(snap.runs_running))
        run_count.add_metric(["finished"], float(snap.runs_finished))
        yield run_count
        yield from self._live(snap.live)

    def _live(self, live: Sequence[RunSample]) -> Iterable[Metric]:
        labels = ["run_id", "node"]
        families = {
            name: GaugeMetricFamily(f"topicrawl_run_{name}", documentation, labels=labels)
            for name, documentation in (
                ("pages", "Pages stored by the running run (latest live sample)."),
                ("queued", "URLs queued in the running run's frontier (latest live sample)."),
                ("in_flight", "Leases out in the running run (latest live sample)."),
                ("parse_backlog", "Pages fetched, not yet stored (latest live sample)."),
                ("sample_timestamp_seconds", "When the latest live sample was taken."),
            )
        }
        for sample in live:
            values = [str(sample.run_id), sample.node or ""]
            families["pages"].add_metric(values, float(sample.pages))
            families["queued"].add_metric(values, float(sample.queued))
            families["in_flight"].add_metric(values, float(sample.in_flight))
            families["parse_backlog"].add_metric(values, float(sample.parse_backlog))
            families["sample_timestamp_seconds"].add_metric(values, sample.at)
        yield from families.values()


def storage_registry(snapshot: StorageSnapshot) -> CollectorRegistry:
    """A registry (of its own: no process metrics mixed in) exposing ``snapshot``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snapshot))
    return registry


async def render_storage_metrics(engine: AsyncEngine, *, live_samples: bool = True) -> bytes:
    """The Prometheus text exposition of what the database holds now (see
    :data:`CONTENT_TYPE` for the response's Content-Type)."""
    snapshot = await read_storage_snapshot(engine, live_samples=live_samples)
    return generate_latest(storage_registry(snapshot))
