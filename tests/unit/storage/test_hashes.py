"""The content-hash Bloom filter: never forgets a hash, rarely claims one it never saw."""

from __future__ import annotations

import pytest

from topicrawl.storage.hashes import HashFilter


def test_every_added_hash_is_found_even_past_capacity() -> None:
    hashes = HashFilter(capacity=100, error_rate=1e-4)
    added = [f"{n:016x}" for n in range(1000)]

    for content_hash in added:
        hashes.add(content_hash)

    assert len(hashes) == 1000
    assert all(content_hash in hashes for content_hash in added)


def test_unseen_hashes_are_almost_never_claimed() -> None:
    hashes = HashFilter(capacity=100, error_rate=1e-4)
    for n in range(1000):
        hashes.add(f"seen-{n}")

    claimed = sum(f"unseen-{n}" in hashes for n in range(5000))

    # Expected about 5000 * (a few filters) * 1e-4, i.e. around 2.
    assert claimed <= 20


@pytest.mark.parametrize(("capacity", "error_rate"), [(0, 0.1), (10, 0.0), (10, 1.0)])
def test_bad_sizes_are_refused(capacity: int, error_rate: float) -> None:
    with pytest.raises(ValueError, match="capacity"):
        HashFilter(capacity=capacity, error_rate=error_rate)
