"""URL dedupe: a Bloom filter in front of an exact store, so a false positive drops nothing.

A Bloom miss means the URL is new for certain: it is added without asking the exact store. A
Bloom hit is only a maybe: the exact store decides. The duplicate path (most links of a crawl:
menus, footers) therefore costs one Bloom probe plus one exact look-up per URL, batched.

Memory per seen URL:

- Bloom filter: ``-ln(p) / ln(2)^2`` bits, 33.5 bits (4.2 bytes) at the default
  ``p = 1e-7``. It is sized for ``capacity`` URLs up front; past that a new filter twice as
  big with half the error rate is chained on (a *scalable* Bloom filter), so the combined
  false-positive rate stays under ``2 p`` however many URLs come.
- :class:`FingerprintSet` (the in-memory exact store): a sorted ``numpy`` array of 64-bit
  fingerprints (8 bytes each) plus a Python ``set`` of recent additions (about 70 bytes each)
  merged into the array when it reaches 1/8 of it: 8 to 18 bytes a URL, ~12 on average.
  A plain ``set[int]`` would take ~75.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Protocol

from rbloom import Bloom

from topicrawl.core.errors import ConfigError
from topicrawl.core.lazy import LazyModule

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # only the in-memory exact store needs it

__all__ = ["ExactStore", "FingerprintSet", "SeenUrls"]

_MIN_RECENT = 4096


class ExactStore(Protocol):
    """The authority behind the Bloom filter: which fingerprints were really seen."""

    def contains_many(self, fps: Sequence[int]) -> list[bool]: ...

    def add_many(self, fps: Sequence[int]) -> None: ...


class FingerprintSet:
    """An exact in-memory set of signed 64-bit fingerprints, compact for millions of URLs."""

    __slots__ = ("_base", "_recent")

    def __init__(self, fps: Iterable[int] = ()) -> None:
        self._base = np.empty(0, dtype=np.int64)
        self._recent: set[int] = set()
        self.add_many(list(fps))

    def __len__(self) -> int:
        return len(self._base) + len(self._recent)

    def __contains__(self, fp: object) -> bool:
        if not isinstance(fp, int):
            return False
        return self.contains_many([fp])[0]

    def contains_many(self, fps: Sequence[int]) -> list[bool]:
        recent = self._recent
        found = [fp in recent for fp in fps]
        base = self._base
        if len(base) and fps:
            wanted = np.fromiter(fps, dtype=np.int64, count=len(fps))
            at = np.searchsorted(base, wanted)
            np.minimum(at, len(base) - 1, out=at)
            in_base: list[bool] = (base[at] == wanted).tolist()
            found = [a or b for a, b in zip(found, in_base, strict=True)]
        return found

    def add_many(self, fps: Sequence[int]) -> None:
        base = self._base
        if len(base):
            fps = [fp for fp, known in zip(fps, self.contains_many(fps), strict=True) if not known]
        self._recent.update(fps)
        if len(self._recent) > max(_MIN_RECENT, len(base) // 8):
            self._merge()

    def _merge(self) -> None:
        fresh = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
        fresh.sort()
        self._base = np.insert(self._base, np.searchsorted(self._base, fresh), fresh)
        self._recent = set()


class SeenUrls:
    """Which URL fingerprints a crawl has seen: a scalable Bloom filter over an exact store.

    Args:
        capacity: URLs the first Bloom filter is sized for.
        error_rate: its false-positive rate (the exact store makes it a cost, never a loss).
        exact: the store that settles Bloom hits; an in-memory :class:`FingerprintSet` when
            omitted.
    """

    def __init__(
        self,
        *,
        capacity: int = 1_000_000,
        error_rate: float = 1e-7,
        exact: ExactStore | None = None,
    ) -> None:
        if capacity < 1:
            raise ConfigError(f"Bloom capacity must be at least 1, got {capacity}")
        if not 0.0 < error_rate < 1.0:
            raise ConfigError(f"Bloom error rate must be between 0 and 1, got {error_rate}")
        self._capacity = capacity
        self._error_rate = error_rate
        self._blooms = [Bloom(capacity, error_rate)]
        self._room = capacity  # additions left before the newest filter is full
        self._exact: ExactStore = exact if exact is not None else FingerprintSet()
        self.bloom_hits = 0
        self.false_positives = 0

    @property
    def bloom_bytes(self) -> int:
        """Memory held by the Bloom filters."""
        return sum(b.size_in_bits for b in self._blooms) // 8

    def filter_new(self, fps: Sequence[int]) -> list[bool]:
        """For each fingerprint, whether it is new; marks every one seen.

        A fingerprint repeated within the batch is new only at its first occurrence.
        """
        fresh = [False] * len(fps)
        batch_new: set[int] = set()
        maybe: list[int] = []
        might_contain = self._might_contain
        for i, fp in enumerate(fps):
            if fp in batch_new:
                continue
            if might_contain(fp):
                maybe.append(i)
            else:
                fresh[i] = True
                batch_new.add(fp)
        if maybe:
            self.bloom_hits += len(maybe)
            known = self._exact.contains_many([fps[i] for i in maybe])
            for i, is_known in zip(maybe, known, strict=True):
                fp = fps[i]
                if is_known or fp in batch_new:
                    continue
                self.false_positives += 1
                fresh[i] = True
                batch_new.add(fp)
        if batch_new:
            new = list(batch_new)
            self._add_to_blooms(new)
            self._exact.add_many(new)
        return fresh

    def contains_many(self, fps: Sequence[int]) -> list[bool]:
        """For each fingerprint, whether it was seen (exact); marks nothing."""
        known = [False] * len(fps)
        blooms = self._blooms
        if len(blooms) == 1:  # the usual case: the Bloom filter's own test, mapped in C
            maybe = list(compress(range(len(fps)), map(blooms[0].__contains__, fps)))
        else:
            maybe = [i for i, fp in enumerate(fps) if self._might_contain(fp)]
        if maybe:
            exact = self._exact.contains_many([fps[i] for i in maybe])
            for i, is_known in zip(maybe, exact, strict=True):
                known[i] = is_known
        return known

    def contains(self, fp: int) -> bool:
        """Whether the fingerprint was seen (exact)."""
        if not self._might_contain(fp):
            return False
        return self._exact.contains_many([fp])[0]

    def load(self, fps: Sequence[int]) -> None:
        """Add fingerprints the exact store already holds (rebuilding after a restart)."""
        self._add_to_blooms(fps)

    def _might_contain(self, fp: int) -> bool:
        blooms = self._blooms
        if len(blooms) == 1:  # the usual case, on the hot path of every push
            return fp in blooms[0]
        return any(fp in bloom for bloom in blooms)

    def _add_to_blooms(self, fps: Sequence[int]) -> None:
        start = 0
        while start < len(fps):
            if self._room <= 0:
                self._capacity *= 2
                self._error_rate /= 2
                self._blooms.append(Bloom(self._capacity, self._error_rate))
                self._room = self._capacity
            chunk = fps[start : start + self._room]
            self._blooms[-1].update(chunk)
            self._room -= len(chunk)
            start += len(chunk)
