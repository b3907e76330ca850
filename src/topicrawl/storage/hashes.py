"""A Bloom filter over the content hashes in the database, so most lookups skip the database.

A crawl asks "was this content stored before?" once per page and the answer is almost always
no. The filter answers that "no" from memory; a "maybe" still asks the database, so a false
positive costs one query and is never a wrong answer.
"""

from __future__ import annotations

from rbloom import Bloom

__all__ = ["HashFilter"]


class HashFilter:
    """Content hashes that may be stored; ``h not in filter`` means certainly not stored.

    It grows by adding a filter twice the size of the last whenever the last is full, so its
    false-positive rate stays near ``error_rate`` however many hashes it holds.

    Args:
        capacity: hashes the first filter is sized for.
        error_rate: the false-positive rate of each filter when full.
    """

    def __init__(self, *, capacity: int = 1_000_000, error_rate: float = 1e-4) -> None:
        if capacity < 1 or not 0 < error_rate < 1:
            raise ValueError("capacity must be >= 1 and error_rate between 0 and 1")
        self._error_rate = error_rate
        self._capacity = capacity
        self._filters = [Bloom(capacity, error_rate)]
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __contains__(self, content_hash: object) -> bool:
        return any(content_hash in bloom for bloom in self._filters)

    def add(self, content_hash: str) -> None:
        if self._count >= self._capacity:
            self._capacity *= 2
            self._filters.append(Bloom(self._capacity // 2, self._error_rate))
        self._filters[-1].add(content_hash)
        self._count += 1
