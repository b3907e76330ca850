"""Seeds that improve themselves: the relevant, link-rich pages of a focused crawl, kept to
seed its next session."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["SeedPromotion"]


class SeedPromotion:
    """The best ``capacity`` pages judged relevant whose hub score (on-topic links over the
    most seen on a page) is at least ``min_hub``, ranked by their importance ``pu``; each URL
    once, at its best."""

    def __init__(self, *, capacity: int, min_hub: float) -> None:
        if capacity < 0 or not 0.0 <= min_hub <= 1.0:
            raise ValueError("capacity must be >= 0 and min_hub in [0, 1]")
        self._capacity = capacity
        self._min_hub = min_hub
        self._best: dict[str, float] = {}

    def consider(self, url: str, *, relevant: bool, hub: float, importance: float) -> bool:
        """Count a crawled page; returns whether it is promoted now."""
        if not relevant or hub < self._min_hub or self._capacity == 0:
            return False
        if importance <= self._best.get(url, -1.0):
            return False
        if url not in self._best and len(self._best) >= self._capacity:
            worst = min(self._best, key=lambda u: (self._best[u], u))
            if self._best[worst] >= importance:
                return False
            del self._best[worst]
        self._best[url] = importance
        return True

    @property
    def promoted(self) -> tuple[tuple[str, float], ...]:
        """(URL, importance) of the promoted pages, best first."""
        return tuple(sorted(self._best.items(), key=lambda item: (-item[1], item[0])))

    def restore(self, promoted: Iterable[tuple[str, float]]) -> None:
        """Continue from a saved list (a resumed crawl keeps promoting into it)."""
        for url, importance in promoted:
            self.consider(url, relevant=True, hub=1.0, importance=importance)
