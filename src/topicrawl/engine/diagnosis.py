"""Why a crawl is slow or stalled, named from its samples (pure policy, no I/O).

# TEMPORARY: replaced by the obs branch at merge. A small stand-in for the interface shared
# with helper "obs": it reads only the newest sample and the change since the one before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from topicrawl.engine.samples import RunSample

__all__ = ["Finding", "diagnose"]

Severity = Literal["info", "warning", "critical"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One cause of slowness, how bad it is, a sentence for a person, and the numbers behind it."""

    cause: str
    severity: Severity
    message: str
    evidence: dict[str, float] = field(default_factory=dict)


def diagnose(samples: Sequence[RunSample]) -> list[Finding]:
    """The causes the newest samples show, worst first."""
    if not samples:
        return []
    last = samples[-1]
    before = samples[-2] if len(samples) > 1 else None
    waits = last.waits
    findings: list[Finding] = []
    if waits.get("frontier_empty", 0) and last.in_flight == 0:
        findings.append(
            Finding(
                "frontier_empty",
                "critical",
                "nothing is queued: the frontier ran dry",
                {"queued": float(last.queued)},
            )
        )
    if waits.get("host_delay", 0):
        findings.append(
            Finding(
                "host_delay",
                "warning",
                f"{waits['host_delay']} hosts are waiting on their delay or Crawl-delay",
                {"hosts": float(waits["host_delay"])},
            )
        )
    refused = waits.get("robots_refused", 0) - (
        before.waits.get("robots_refused", 0) if before else 0
    )
    if refused > 0:
        findings.append(
            Finding(
                "robots_refused",
                "info",
                f"robots.txt refused {refused} URLs lately",
                {"refused": float(refused)},
            )
        )
    if waits.get("retry_backoff", 0):
        findings.append(
            Finding(
                "retry_backoff",
                "warning",
                f"{waits['retry_backoff']} requests are waiting to retry after errors",
                {"waiting": float(waits["retry_backoff"])},
            )
        )
    if last.parse_backlog > max(8, last.in_flight):
        findings.append(
            Finding(
                "parse_backlog",
                "warning",
                f"{last.parse_backlog} fetched pages wait for the parser",
                {"backlog": float(last.parse_backlog)},
            )
        )
    if waits.get("below_threshold", 0):
        findings.append(
            Finding(
                "below_threshold",
                "info",
                f"{waits['below_threshold']} links are held back under the relevance threshold",
                {"links": float(waits["below_threshold"])},
            )
        )
    order = {"critical": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: order[f.severity])
