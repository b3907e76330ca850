"""SeenUrls and FingerprintSet: exact answers whatever the Bloom filter says."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topicrawl.core.errors import ConfigError
from topicrawl.frontier import FingerprintSet, SeenUrls

FPS = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


@given(st.lists(st.lists(FPS, max_size=300), max_size=30), st.lists(FPS, max_size=50))
@settings(max_examples=60, deadline=None)
def test_fingerprint_set_answers_like_a_set(batches: list[list[int]], probes: list[int]) -> None:
    exact = FingerprintSet()
    model: set[int] = set()
    for batch in batches:
        exact.add_many(batch)
        model.update(batch)
        assert len(exact) == len(model)
    wanted = probes + list(model)[:100]
    assert exact.contains_many(wanted) == [fp in model for fp in wanted]


def test_fingerprint_set_stays_exact_across_merges() -> None:
    exact = FingerprintSet(range(0, 30_000, 3))  # merges into the sorted array several times
    exact.add_many(list(range(1, 30_000, 3)))
    assert len(exact) == 20_000
    probes = list(range(-5, 30_005))
    assert exact.contains_many(probes) == [0 <= p < 30_000 and p % 3 != 2 for p in probes]
    assert 3 in exact
    assert 2 not in exact
    assert "3" not in exact


def test_a_bloom_false_positive_never_drops_a_new_url() -> None:
    # A filter sized for 1 item at a 50% error rate says "maybe" to most fingerprints.
    seen = SeenUrls(capacity=1, error_rate=0.5)
    first = list(range(0, 2000, 2))
    assert all(seen.filter_new(first))
    later = list(range(1, 2000, 2))
    assert all(seen.filter_new(later))
    assert seen.false_positives > 0
    assert not any(seen.filter_new(first + later))
    assert seen.contains(10)
    assert not seen.contains(5000)


def test_a_batch_repeating_a_url_marks_only_its_first_occurrence_new() -> None:
    seen = SeenUrls(capacity=100, error_rate=0.01)
    assert seen.filter_new([7, 8, 7, 9, 8]) == [True, True, False, True, False]
    assert seen.filter_new([9, 10, 10]) == [False, True, False]


@given(st.lists(st.lists(FPS, max_size=40), max_size=20))
@settings(max_examples=50, deadline=None)
def test_filter_new_is_exact_while_the_bloom_grows(batches: list[list[int]]) -> None:
    seen = SeenUrls(capacity=8, error_rate=0.3)  # grows into a chain of filters
    model: set[int] = set()
    for batch in batches:
        expected = []
        for fp in batch:
            expected.append(fp not in model)
            model.add(fp)
        assert seen.filter_new(batch) == expected
    assert all(seen.contains(fp) for fp in model)


def test_bloom_memory_is_about_four_bytes_a_url_at_the_default_rate() -> None:
    seen = SeenUrls(capacity=1_000_000, error_rate=1e-7)
    assert 4_000_000 <= seen.bloom_bytes <= 4_400_000


@pytest.mark.parametrize(("capacity", "rate"), [(0, 0.1), (10, 0.0), (10, 1.0)])
def test_bad_bloom_settings_are_config_errors(capacity: int, rate: float) -> None:
    with pytest.raises(ConfigError):
        SeenUrls(capacity=capacity, error_rate=rate)
