"""The crawl's live time series: one sample every ``samples_interval`` seconds, in ``run_samples``.

A sample is what the dashboard's live panel plots and what :mod:`topicrawl.engine.diagnosis`
reads to say why a crawl is slow or stalled: cumulative counters (pages, failures, bytes,
failures by kind, robots.txt refusals) and gauges at that moment (queued, in flight, the parse
backlog, hosts waiting on their delay, retries waiting, held hosts, links held back under the
relevance threshold, a frontier with nothing queued).

Taking a sample reads counters the crawl keeps anyway and asks the frontier two counts and
one pass over its hosts; nothing is done per page. The row goes into the storage's write
buffer and is written by its background writer with the next batch, so the crawl never waits
on the database for it. A final sample is taken when the crawl ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.core.errors import StorageError
from topicrawl.core.models import ErrorKind
from topicrawl.core.tasks import cancel_and_wait
from topicrawl.engine.crawl import Crawler
from topicrawl.storage.schema import run_samples

__all__ = [
    "WAIT_REASONS",
    "CrawlSampler",
    "RunSample",
    "SampleSink",
    "read_samples",
    "sample_from_row",
    "sample_row",
    "take_sample",
]

log = logging.getLogger(__name__)

WAIT_REASONS: tuple[str, ...] = (
    "host_delay",
    "robots_refused",
    "retry_backoff",
    "held_hosts",
    "below_threshold",
    "frontier_empty",
)


@dataclass(frozen=True, slots=True)
class RunSample:
    """One point of a crawl's live series (JSON columns decoded).

    ``failures_by_kind`` is cumulative (kind -> count); ``waits`` maps each reason of
    :data:`WAIT_REASONS` to a count now, except ``robots_refused``, cumulative.
    """

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


@runtime_checkable
class FrontierWaits(Protocol):
    """A frontier that can say why queued URLs wait (the in-process frontiers)."""

    def waits(self) -> dict[str, int]: ...


@runtime_checkable
class SampleSink(Protocol):
    """Where samples go: the SQL storage buffers them for its background writer."""

    def save_sample(self, row: Mapping[str, Any]) -> None: ...


def _held_back(strategy: object) -> int:
    """Links a scoring strategy holds back under its relevance threshold (0 for the rest)."""
    candidates = getattr(strategy, "candidates", None)
    try:
        return len(candidates) if candidates is not None else 0
    except TypeError:
        return 0


async def take_sample(
    crawler: Crawler, *, node: str | None = None, clock: Callable[[], float] = time.time
) -> RunSample:
    """The crawl's state now."""
    frontier = crawler.frontier
    stats = crawler.stats
    queued = await frontier.queued()
    in_flight = await frontier.in_flight()
    frontier_waits = frontier.waits() if isinstance(frontier, FrontierWaits) else {}
    errors = dict(stats.errors)
    waits = {
        "host_delay": int(frontier_waits.get("host_delay", 0)),
        "robots_refused": int(errors.get(ErrorKind.ROBOTS.value, 0)),
        "retry_backoff": int(frontier_waits.get("retry_backoff", 0)),
        "held_hosts": len(stats.held),
        "below_threshold": _held_back(crawler.strategy),
        # Nothing queued; URLs queued but not ready (a delay, a host's lease limit) are not
        # "empty": the other reasons say why they wait.
        "frontier_empty": int(queued == 0),
    }
    return RunSample(
        run_id=crawler.run_id,
        at=clock(),
        pages=stats.pages,
        failures=sum(errors.values()),
        bytes=stats.bytes,
        queued=queued,
        in_flight=in_flight,
        parse_backlog=crawler.parse_backlog,
        failures_by_kind=errors,
        waits=waits,
        node=node,
    )


def sample_row(sample: RunSample) -> dict[str, Any]:
    """The ``run_samples`` row of a sample."""
    return {
        "run_id": sample.run_id,
        "at": sample.at,
        "node": sample.node,
        "pages": sample.pages,
        "failures": sample.failures,
        "bytes": sample.bytes,
        "queued": sample.queued,
        "in_flight": sample.in_flight,
        "parse_backlog": sample.parse_backlog,
        "failures_by_kind": json.dumps(dict(sample.failures_by_kind), sort_keys=True),
        "waits": json.dumps(dict(sample.waits), sort_keys=True),
    }


def _counts(raw: str) -> dict[str, int]:
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {str(k): int(v) for k, v in decoded.items() if isinstance(v, int | float)}


async def read_samples(
    engine: AsyncEngine, run_id: int, *, since: float | None = None, limit: int = 2000
) -> list[RunSample]:
    """The run's samples taken after ``since`` (all when None), oldest first; the newest
    ``limit`` of them when there are more (a live chart wants the latest).

    Raises:
        ValueError: ``limit`` is below 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    statement = select(run_samples).where(run_samples.c.run_id == run_id)
    if since is not None:
        statement = statement.where(run_samples.c.at > since)
    statement = statement.order_by(run_samples.c.at.desc(), run_samples.c.id.desc()).limit(limit)
    async with engine.connect() as connection:
        rows = (await connection.execute(statement)).all()
    return [sample_from_row(row._mapping) for row in reversed(rows)]


def sample_from_row(row: Mapping[Any, Any]) -> RunSample:
    """A ``run_samples`` row as a sample (a JSON column that does not decode reads as {})."""
    return RunSample(
        run_id=int(row["run_id"]),
        at=float(row["at"]),
        pages=int(row["pages"]),
        failures=int(row["failures"]),
        bytes=int(row["bytes"]),
        queued=int(row["queued"]),
        in_flight=int(row["in_flight"]),
        parse_backlog=int(row["parse_backlog"]),
        failures_by_kind=_counts(row["failures_by_kind"]),
        waits=_counts(row["waits"]),
        node=row["node"],
    )


class CrawlSampler:
    """Samples a crawl every ``interval`` seconds while :meth:`running`.

    Args:
        crawler: the crawl to sample.
        sink: where rows go (the storage), or None to keep only :attr:`latest` (for the
            metrics endpoint when samples are not stored).
        interval: seconds between samples (> 0).
        node: the distributed worker's id; None for ``topicrawl crawl``.

    Raises:
        ValueError: ``interval`` is not above 0.
    """

    def __init__(
        self,
        *,
        crawler: Crawler,
        sink: SampleSink | None,
        interval: float,
        node: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"the sample interval must be > 0, got {interval}")
        self._crawler = crawler
        self._sink = sink
        self._interval = interval
        self._node = node
        self._clock = clock
        self.latest: RunSample | None = None
        self.written = 0
        self._stopping = False

    async def sample(self) -> RunSample:
        """Take one sample now and hand it to the sink."""
        sample = await take_sample(self._crawler, node=self._node, clock=self._clock)
        self.latest = sample
        if self._sink is not None:
            try:
                self._sink.save_sample(sample_row(sample))
                self.written += 1
            except StorageError as exc:
                # The crawl's own writes report the storage's trouble; a lost sample is not
                # worth stopping a crawl for.
                log.warning("live sample not stored: %s", exc)
        return sample

    async def _loop(self) -> None:
        while not self._stopping:
            await self.sample()
            await asyncio.sleep(self._interval)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CrawlSampler]:
        """Sample in the background; take a last sample on the way out."""
        self._stopping = False
        task = asyncio.create_task(self._loop(), name="topicrawl-samples")
        try:
            yield self
        finally:
            self._stopping = True
            await cancel_and_wait(task)
            try:
                await self.sample()
            except Exception:  # the crawl's own outcome (or error) is what the caller needs
                log.exception("the last live sample could not be taken")
