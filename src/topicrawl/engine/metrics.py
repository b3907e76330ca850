"""The crawl process's own Prometheus metrics (``--metrics-port`` of ``crawl`` and ``worker``).

Nothing is counted for Prometheus on the crawl's path: a collector reads, at scrape time,
the counters the crawl keeps anyway (:class:`~topicrawl.core.models.CrawlStats`, the fetch
latency histogram and strategy time of :class:`~topicrawl.engine.crawl.Crawler`) and the
latest live sample (queued, in flight, why URLs wait), which
:class:`~topicrawl.engine.samples.CrawlSampler` refreshes every few seconds. The endpoint is
prometheus-client's own HTTP server in a daemon thread, on 127.0.0.1 unless told otherwise,
with a registry of its own (no process-wide default collectors mixed in).

prometheus-client comes with the ``web`` extra; without it ``--metrics-port`` is refused with
a message saying what to install.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from topicrawl.core.errors import ConfigError

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from topicrawl.engine.crawl import Crawler
    from topicrawl.engine.samples import CrawlSampler

__all__ = ["CrawlCollector", "serve_metrics"]

_PREFIX = "topicrawl_"


class CrawlCollector:
    """Prometheus metrics of one running crawl, read when scraped.

    Args:
        crawler: the crawl.
        sampler: its live sampler (for the frontier's gauges), or None.
        node: the worker id, added as a ``node`` label when given.
    """

    def __init__(
        self, crawler: Crawler, sampler: CrawlSampler | None, *, node: str | None = None
    ) -> None:
        self._crawler = crawler
        self._sampler = sampler
        self._labels: dict[str, str] = {} if node is None else {"node": node}

    def collect(self) -> Iterable[Metric]:
        from prometheus_client.core import (  # noqa: PLC0415 - optional dependency
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        names = list(self._labels)
        values = list(self._labels.values())
        stats = self._crawler.stats
        counters = (
            ("pages", "Pages fetched and stored (resumed runs included).", stats.pages),
            ("relevant_pages", "Pages judged relevant to the topic.", stats.relevant),
            ("duplicate_pages", "Pages whose text duplicates an earlier page.", stats.duplicates),
            ("fetched_bytes", "Bytes of bodies fetched and stored.", stats.bytes),
            (
                "strategy_seconds",
                "Seconds spent in the strategy scoring pages.",
                self._crawler.strategy_seconds,
            ),
        )
        for name, documentation, value in counters:
            family = CounterMetricFamily(_PREFIX + name, documentation, labels=names)
            family.add_metric(values, float(value))
            yield family
        errors = CounterMetricFamily(
            _PREFIX + "errors", "Failed fetches by kind.", labels=[*names, "kind"]
        )
        for kind, count in sorted(dict(stats.errors).items()):
            errors.add_metric([*values, kind], float(count))
        yield errors
        snapshot = self._crawler.fetch_latency.snapshot()
        latency = HistogramMetricFamily(
            _PREFIX + "fetch_duration_seconds",
            "Seconds per fetch (connection, redirects and body), failures included.",
            labels=names,
        )
        latency.add_metric(
            values,
            [
                (_bound(bound), float(count))
                for bound, count in zip(snapshot.bounds, snapshot.cumulative, strict=True)
            ],
            snapshot.total,
        )
        yield latency
        backlog = GaugeMetricFamily(
            _PREFIX + "parse_backlog",
            "Pages fetched and waiting for or going through parsing, scoring and storing.",
            labels=names,
        )
        backlog.add_metric(values, float(self._crawler.parse_backlog))
        yield backlog
        yield from self._sampled(names, values)

    def _sampled(self, names: list[str], values: list[str]) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily  # noqa: PLC0415

        sample = None if self._sampler is None else self._sampler.latest
        if sample is None:
            return
        for name, documentation, value in (
            ("frontier_queued", "URLs queued in the frontier.", sample.queued),
            (
                "frontier_in_flight",
                "Leases out (URLs being fetched or processed).",
                sample.in_flight,
            ),
        ):
            gauge = GaugeMetricFamily(_PREFIX + name, documentation, labels=names)
            gauge.add_metric(values, float(value))
            yield gauge
        waits = GaugeMetricFamily(
            _PREFIX + "waits",
            "Why URLs wait, by reason (robots_refused is cumulative); as of the last sample.",
            labels=[*names, "reason"],
        )
        for reason, count in sorted(sample.waits.items()):
            waits.add_metric([*values, reason], float(count))
        yield waits
        age = GaugeMetricFamily(
            _PREFIX + "sample_timestamp_seconds",
            "When the frontier gauges were read (Unix time).",
            labels=names,
        )
        age.add_metric(values, sample.at)
        yield age


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


@contextlib.contextmanager
def serve_metrics(
    collector: CrawlCollector, *, port: int, address: str = "127.0.0.1"
) -> Iterator[int]:
    """Serve ``collector`` at ``http://address:port/metrics`` until the block ends; yields the
    port (the one the system chose when ``port`` is 0).

    Raises:
        ConfigError: prometheus-client is not installed, or the port cannot be listened on.
    """
    try:
        from prometheus_client import CollectorRegistry, start_http_server  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigError(
            "--metrics-port needs prometheus-client: pip install 'topicrawl[web]'"
        ) from exc
    if not 0 <= port <= 65535:
        raise ConfigError(f"--metrics-port must be between 0 and 65535, got {port}")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        server, thread = start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        raise ConfigError(f"cannot serve metrics on {address}:{port}: {exc.strerror}") from exc
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
