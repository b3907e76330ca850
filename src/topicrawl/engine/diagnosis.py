"""Why a crawl is slow or stalled, named from its live samples (pure: no I/O, no clock).

:func:`diagnose` reads the newest samples of a run (see :mod:`topicrawl.engine.samples`),
weighting each by its age (the newest counts most: a weight that halves every
:data:`HALF_LIFE` samples back), and returns findings, the most severe first. Each names one
cause, says it in a sentence a user can act on, and carries the numbers it stands on.

Causes: the crawl is finished (nothing queued, nothing in hand); the frontier is running dry;
hosts wait on their delay or robots.txt Crawl-delay; robots.txt refuses many URLs; requests
wait to be retried after servers asked us to slow down, or hosts are held after errors; the
parse backlog (pages fetched but not yet parsed, scored and stored) grows; links are held
back under the relevance threshold; most fetches fail; no sample arrived for a while (the
process stopped or is stuck). A cause that goes with a crawl storing no pages at all is
``critical``; one that only slows it is a ``warning``; a finished crawl is ``info``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from topicrawl.engine.samples import RunSample

__all__ = ["HALF_LIFE", "WINDOW", "Finding", "Severity", "diagnose"]

Severity = Literal["info", "warning", "critical"]

WINDOW = 15  # newest samples read (30 s at the default interval)
HALF_LIFE = 3.0  # samples back at which a sample's weight halves
_ORDER = {"critical": 0, "warning": 1, "info": 2}

# Thresholds; each is the least a user would want to hear about.
_STALLED_RATE = 0.05  # pages/s below which nothing is being stored
_SHARE = 0.5  # weighted share of samples in which a condition holds
_ROBOTS_SHARE = 0.2  # robots.txt refusals among the URLs tried in the window
_FAILURE_SHARE = 0.5
_BACKLOG_MIN = 8  # pages waiting to be parsed before a backlog is worth naming
_STALE_INTERVALS = 5  # samples missed before the series is called stale


@dataclass(frozen=True, slots=True)
class Finding:
    """One named cause, how serious it is, a sentence saying it, and the numbers behind it."""

    cause: str
    severity: Severity
    message: str
    evidence: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Window:
    samples: Sequence[RunSample]
    weights: Sequence[float]

    @property
    def latest(self) -> RunSample:
        return self.samples[-1]

    def mean(self, values: Sequence[float]) -> float:
        return sum(w * v for w, v in zip(self.weights, values, strict=True)) / sum(self.weights)

    def share(self, flags: Sequence[bool]) -> float:
        return self.mean([1.0 if flag else 0.0 for flag in flags])

    def gauge(self, name: str) -> float:
        return self.mean([float(s.waits.get(name, 0)) for s in self.samples])

    def rate(self, counter: str) -> float:
        """Per second over the window, newer intervals weighted more (0 with one sample)."""
        pairs = list(zip(self.samples, self.samples[1:], strict=False))
        if not pairs:
            return 0.0
        rates, weights = [], []
        for (before, after), weight in zip(pairs, self.weights[1:], strict=True):
            span = after.at - before.at
            if span <= 0:
                continue
            grown = int(getattr(after, counter)) - int(getattr(before, counter))
            rates.append(max(0.0, grown / span))
            weights.append(weight)
        if not weights:
            return 0.0
        return sum(w * r for w, r in zip(weights, rates, strict=True)) / sum(weights)

    def increase(self, counter: str) -> int:
        return max(0, int(getattr(self.latest, counter)) - int(getattr(self.samples[0], counter)))

    def wait_increase(self, name: str) -> int:
        first, last = self.samples[0].waits.get(name, 0), self.latest.waits.get(name, 0)
        return max(0, last - first)

    def interval(self) -> float:
        spans = [b.at - a.at for a, b in zip(self.samples, self.samples[1:], strict=False)]
        spans = [s for s in spans if s > 0]
        return sorted(spans)[len(spans) // 2] if spans else 0.0


def _window(samples: Sequence[RunSample]) -> _Window:
    newest = sorted(samples, key=lambda s: s.at)[-WINDOW:]
    count = len(newest)
    weights = [0.5 ** ((count - 1 - i) / HALF_LIFE) for i in range(count)]
    return _Window(newest, weights)


def diagnose(
    samples: Sequence[RunSample],
    *,
    now: float | None = None,
    finished_at: float | None = None,
) -> list[Finding]:
    """Findings about the crawl these samples come from, most severe first.

    Samples of several nodes (distributed workers) are diagnosed node by node, each finding's
    message naming its node. ``now`` (epoch seconds), when given, lets a series that stopped
    arriving be called stale. ``finished_at``: when the run is recorded as finished (then that
    is the one finding: a finished crawl is not slow).
    """
    if finished_at is not None:
        latest = max(samples, key=lambda s: s.at) if samples else None
        left = f"; {latest.queued} URLs were left queued" if latest and latest.queued else ""
        pages = f" with {latest.pages} pages" if latest else ""
        return [
            Finding(
                "finished",
                "info",
                f"the crawl finished{pages}{left}",
                {"pages": float(latest.pages if latest else 0), "finished_at": finished_at},
            )
        ]
    by_node: dict[str | None, list[RunSample]] = {}
    for sample in samples:
        by_node.setdefault(sample.node, []).append(sample)
    findings: list[Finding] = []
    for node, series in sorted(by_node.items(), key=lambda item: item[0] or ""):
        found = _diagnose_one(_window(series), now=now)
        if len(by_node) > 1:
            found = [
                Finding(f.cause, f.severity, f"node {node or 'local'}: {f.message}", f.evidence)
                for f in found
            ]
        findings += found
    return sorted(findings, key=lambda f: _ORDER[f.severity])


def _diagnose_one(window: _Window, *, now: float | None) -> list[Finding]:
    latest = window.latest
    pages_rate = window.rate("pages")
    stalled = len(window.samples) > 1 and pages_rate < _STALLED_RATE
    slow: Severity = "critical" if stalled else "warning"
    base = {"pages_per_second": round(pages_rate, 3)}
    findings: list[Finding] = []
    stale = _stale(window, now)
    if stale is not None:
        findings.append(stale)
    if latest.queued == 0 and latest.in_flight == 0 and latest.parse_backlog == 0:
        held = latest.waits.get("below_threshold", 0)
        findings.append(
            Finding(
                "finished",
                "info",
                f"nothing is queued or in hand: the crawl has finished ({latest.pages} pages)"
                + (f"; {held} links were left under the relevance threshold" if held else ""),
                {**base, "pages": float(latest.pages), "below_threshold": float(held)},
            )
        )
        return findings
    findings += _frontier_findings(window, base, slow)
    findings += _politeness_findings(window, base, slow)
    findings += _work_findings(window, base, slow)
    if stalled and not any(f.severity == "critical" for f in findings):
        findings.append(
            Finding(
                "stalled",
                "critical",
                f"no page stored in the last {latest.at - window.samples[0].at:.0f} s with "
                f"{latest.queued} URLs queued and {latest.in_flight} in flight, and no "
                "waiting cause in the samples: the fetches may be hanging (see the fetch "
                "latency and the log)",
                {**base, "queued": float(latest.queued), "in_flight": float(latest.in_flight)},
            )
        )
    return findings


def _stale(window: _Window, now: float | None) -> Finding | None:
    interval = window.interval()
    if now is None or interval <= 0:
        return None
    silent = now - window.latest.at
    if silent <= _STALE_INTERVALS * interval:
        return None
    return Finding(
        "no_samples",
        "critical",
        f"no live sample for {silent:.0f} s (one was due every {interval:.0f} s): the crawl "
        "process stopped, was killed, or is stuck",
        {"seconds_silent": round(silent, 1), "interval": interval},
    )


def _frontier_findings(window: _Window, base: dict[str, float], slow: Severity) -> list[Finding]:
    latest = window.latest
    findings: list[Finding] = []
    empty_share = window.share([s.queued == 0 for s in window.samples])
    held_back = window.gauge("below_threshold")
    if empty_share >= _SHARE:
        findings.append(
            Finding(
                "frontier_dry",
                slow,
                f"the frontier is running dry: nothing queued, {latest.in_flight} URLs in "
                "flight; the crawl ends when they are done unless their pages bring new links",
                {**base, "empty_share": round(empty_share, 2), "in_flight": latest.in_flight},
            )
        )
    if held_back > 0 and (
        empty_share >= _SHARE
        or held_back >= max(1.0, window.mean([float(s.queued) for s in window.samples]))
    ):
        findings.append(
            Finding(
                "below_threshold",
                slow if empty_share >= _SHARE else "warning",
                f"{held_back:.0f} links are held back under the relevance threshold, more than "
                f"are queued ({latest.queued}): the crawl found little on topic; lower the "
                "threshold or give seeds nearer the topic",
                {**base, "below_threshold": round(held_back, 1), "queued": latest.queued},
            )
        )
    return findings


def _politeness_findings(window: _Window, base: dict[str, float], slow: Severity) -> list[Finding]:
    latest = window.latest
    findings: list[Finding] = []
    waiting_hosts = window.gauge("host_delay")
    # Politeness sets the pace when more hosts wait on their delay than requests are out.
    delay_share = window.share(
        [0 < s.waits.get("host_delay", 0) >= s.in_flight for s in window.samples]
    )
    if delay_share >= _SHARE:
        findings.append(
            Finding(
                "host_delay",
                slow,
                f"{waiting_hosts:.0f} hosts wait on their delay or robots.txt Crawl-delay, with "
                f"{latest.in_flight} requests in flight: politeness sets the pace; crawl more "
                "hosts at once (or lower politeness.delay where you may)",
                {**base, "hosts_waiting": round(waiting_hosts, 1), "in_flight": latest.in_flight},
            )
        )
    refused = window.wait_increase("robots_refused")
    tried = window.increase("pages") + window.increase("failures")
    if refused and tried and refused / tried >= _ROBOTS_SHARE:
        findings.append(
            Finding(
                "robots_refused",
                slow,
                f"robots.txt refused {refused} of the last {tried} URLs tried: much of what "
                "is queued is disallowed for our user agent (see scope.include/exclude)",
                {**base, "robots_refused": float(refused), "tried": float(tried)},
            )
        )
    retrying = window.gauge("retry_backoff")
    held_hosts = window.gauge("held_hosts")
    if retrying >= 1 or held_hosts >= 1:
        findings.append(
            Finding(
                "retry_backoff",
                slow,
                f"{retrying:.0f} requests wait to be retried and {held_hosts:.0f} hosts are "
                "held after errors or requests to slow down (429, 503, Retry-After, robots.txt "
                "unreadable)",
                {**base, "retry_backoff": round(retrying, 1), "held_hosts": round(held_hosts, 1)},
            )
        )
    return findings


def _work_findings(window: _Window, base: dict[str, float], slow: Severity) -> list[Finding]:
    latest = window.latest
    findings: list[Finding] = []
    backlog = window.mean([float(s.parse_backlog) for s in window.samples])
    in_flight = window.mean([float(s.in_flight) for s in window.samples])
    growing = latest.parse_backlog >= window.samples[0].parse_backlog
    if backlog >= _BACKLOG_MIN and backlog >= in_flight / 2 and growing:
        findings.append(
            Finding(
                "parse_backlog",
                "warning",
                f"{backlog:.0f} fetched pages wait to be parsed, scored and stored: the CPU, "
                "not the network, sets the pace (give parse_workers, or lower concurrency)",
                {**base, "parse_backlog": round(backlog, 1), "in_flight": round(in_flight, 1)},
            )
        )
    # robots.txt refusals have their own finding.
    first = window.samples[0].failures_by_kind
    grown = {
        kind: max(0, count - first.get(kind, 0))
        for kind, count in latest.failures_by_kind.items()
        if kind != "robots"
    }
    failed = sum(grown.values())
    tried = failed + window.increase("pages")
    if tried and failed / tried >= _FAILURE_SHARE:
        kind, count = max(grown.items(), key=lambda item: item[1])
        findings.append(
            Finding(
                "failures",
                slow,
                f"{failed} of the last {tried} fetches failed, most of them {kind} ({count})",
                {**base, "failed": float(failed), "tried": float(tried)},
            )
        )
    return findings
