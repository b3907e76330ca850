"""The "why is it slow or stalled" diagnosis, on hand-made sample series (one per cause)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topicrawl.engine.diagnosis import Finding, diagnose
from topicrawl.engine.samples import WAIT_REASONS, RunSample


def series(
    count: int, step: Callable[[int], dict[str, Any]], *, interval: float = 2.0
) -> list[RunSample]:
    """``count`` samples ``interval`` seconds apart; ``step(i)`` gives sample i's fields and
    its waits (as ``waits``, merged over zeros)."""
    made = []
    for i in range(count):
        fields: dict[str, Any] = {
            "pages": 10 * i,
            "failures": 0,
            "bytes": 10_000 * i,
            "queued": 500,
            "in_flight": 16,
            "parse_backlog": 0,
            "failures_by_kind": {},
        }
        changes = step(i)
        waits = dict.fromkeys(WAIT_REASONS, 0) | changes.pop("waits", {})
        fields.update(changes)
        made.append(RunSample(run_id=1, at=1000.0 + interval * i, waits=waits, **fields))
    return made


def causes(findings: list[Finding]) -> dict[str, str]:
    return {finding.cause: finding.severity for finding in findings}


def test_a_healthy_crawl_has_nothing_to_say() -> None:
    assert diagnose(series(10, lambda i: {})) == []
    assert diagnose([]) == []


def test_a_finished_crawl_is_named_and_nothing_else() -> None:
    samples = series(6, lambda i: {"queued": 0, "in_flight": 0} if i == 5 else {})

    found = diagnose(samples)

    assert causes(found) == {"finished": "info"}
    assert "50 pages" in found[0].message
    recorded = diagnose(series(3, lambda i: {}), finished_at=2000.0)
    assert [(f.cause, f.evidence["pages"]) for f in recorded] == [("finished", 20.0)]
    assert "500 URLs were left queued" in recorded[0].message


def test_hosts_waiting_on_their_delay_slow_the_crawl() -> None:
    # Two hosts with a long Crawl-delay: few requests out, pages trickle in.
    samples = series(10, lambda i: {"pages": i, "in_flight": 1, "waits": {"host_delay": 2}})

    found = causes(diagnose(samples))

    assert found == {"host_delay": "warning"}


def test_delay_waits_with_nothing_stored_are_critical() -> None:
    samples = series(10, lambda i: {"pages": 7, "in_flight": 0, "waits": {"host_delay": 1}})

    assert causes(diagnose(samples)) == {"host_delay": "critical"}


def test_host_delay_with_plenty_in_flight_is_not_the_cause() -> None:
    samples = series(10, lambda i: {"in_flight": 32, "waits": {"host_delay": 3}})

    assert diagnose(samples) == []


def test_robots_refusals_are_named_with_their_share() -> None:
    samples = series(
        10,
        lambda i: {
            "pages": 5 * i,
            "failures": 5 * i,
            "failures_by_kind": {"robots": 5 * i},
            "waits": {"robots_refused": 5 * i},
        },
    )

    found = diagnose(samples)

    assert causes(found) == {"robots_refused": "warning"}
    assert found[0].evidence["robots_refused"] == 45
    assert found[0].evidence["tried"] == 90


def test_retries_and_held_hosts_are_named() -> None:
    samples = series(10, lambda i: {"waits": {"retry_backoff": 12, "held_hosts": 2}})

    found = diagnose(samples)

    assert causes(found) == {"retry_backoff": "warning"}
    assert found[0].evidence == {
        "pages_per_second": 5.0,
        "retry_backoff": 12.0,
        "held_hosts": 2.0,
    }


def test_a_growing_parse_backlog_is_named() -> None:
    samples = series(10, lambda i: {"parse_backlog": 10 + 4 * i, "in_flight": 16})

    assert causes(diagnose(samples)) == {"parse_backlog": "warning"}


def test_a_shrinking_backlog_is_not() -> None:
    samples = series(10, lambda i: {"parse_backlog": 60 - 5 * i})

    assert diagnose(samples) == []


def test_a_dry_frontier_with_links_below_the_threshold() -> None:
    samples = series(
        10,
        lambda i: {"pages": 40, "queued": 0, "in_flight": 2, "waits": {"below_threshold": 800}},
    )

    found = causes(diagnose(samples))

    assert found == {"frontier_dry": "critical", "below_threshold": "critical"}


def test_many_links_held_back_beside_a_short_queue_is_a_warning() -> None:
    samples = series(10, lambda i: {"queued": 20, "waits": {"below_threshold": 3000}})

    assert causes(diagnose(samples)) == {"below_threshold": "warning"}


def test_mostly_failing_fetches_name_the_commonest_kind() -> None:
    samples = series(
        10,
        lambda i: {
            "pages": i,
            "failures": 9 * i,
            "failures_by_kind": {"timeout": 7 * i, "http_5xx": 2 * i},
        },
    )

    found = diagnose(samples)

    assert causes(found) == {"failures": "warning"}
    assert "most of them timeout (63)" in found[0].message


def test_no_progress_without_a_cause_is_a_stall() -> None:
    samples = series(10, lambda i: {"pages": 100})

    assert causes(diagnose(samples)) == {"stalled": "critical"}


def test_newest_samples_weigh_most() -> None:
    # Hosts waited on their delay long ago; for the last 5 samples nothing waits.
    def step(i: int) -> dict[str, Any]:
        if i < 10:
            return {"pages": i, "in_flight": 0, "waits": {"host_delay": 4}}
        return {"pages": 10 + 20 * (i - 10), "in_flight": 16}

    assert diagnose(series(15, step)) == []

    # And the other way round: the wait is what happens now.
    def recent(i: int) -> dict[str, Any]:
        if i < 10:
            return {"pages": 20 * i, "in_flight": 16}
        return {"pages": 180 + (i - 10), "in_flight": 0, "waits": {"host_delay": 4}}

    assert "host_delay" in causes(diagnose(series(15, recent)))


def test_a_series_that_stopped_arriving_is_stale() -> None:
    samples = series(5, lambda i: {})

    assert "no_samples" not in causes(diagnose(samples, now=samples[-1].at + 3))
    found = diagnose(samples, now=samples[-1].at + 60)
    assert causes(found)["no_samples"] == "critical"
    assert found[0].cause == "no_samples"


def test_each_node_is_diagnosed_apart() -> None:
    healthy = series(8, lambda i: {})
    stuck = series(8, lambda i: {"pages": 3, "in_flight": 0, "waits": {"host_delay": 1}})
    tagged = [
        *(RunSample(**{**_fields(s), "node": "a"}) for s in healthy),
        *(RunSample(**{**_fields(s), "node": "b"}) for s in stuck),
    ]

    found = diagnose(tagged)

    assert [(f.cause, f.message.split(":")[0]) for f in found] == [("host_delay", "node b")]


def _fields(sample: RunSample) -> dict[str, Any]:
    return {name: getattr(sample, name) for name in RunSample.__dataclass_fields__}
