"""The crawl's lock-free fetch latency histogram."""

from __future__ import annotations

import math

import pytest

from topicrawl.core.metrics import LatencyHistogram


def test_observations_fall_in_their_buckets_cumulatively() -> None:
    histogram = LatencyHistogram([0.1, 1.0])
    for seconds in (0.05, 0.1, 0.5, 1.0, 7.0):
        histogram.observe(seconds)

    snapshot = histogram.snapshot()

    assert snapshot.bounds == (0.1, 1.0, math.inf)
    # A value on a bound is in that bound's bucket (Prometheus buckets are "le").
    assert snapshot.cumulative == (2, 4, 5)
    assert snapshot.count == 5
    assert snapshot.total == pytest.approx(8.65)


def test_a_snapshot_does_not_change_with_later_observations() -> None:
    histogram = LatencyHistogram()
    histogram.observe(0.2)
    before = histogram.snapshot()
    histogram.observe(0.3)

    assert before.count == 1
    assert histogram.snapshot().count == 2


@pytest.mark.parametrize("buckets", [[], [1.0, 1.0], [2.0, 1.0]])
def test_bad_buckets_are_refused(buckets: list[float]) -> None:
    with pytest.raises(ValueError, match="strictly increasing"):
        LatencyHistogram(buckets)
