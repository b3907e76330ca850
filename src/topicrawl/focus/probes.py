"""A bounded exploration budget for a site's hubs: now and then, one fetch for the page that
the most crawled pages link to and nobody fetched yet.

A topic's pages may sit behind a generic hub: a table of contents linked from every page's
header as "Documentation" or "Contents", whose anchor says nothing of the topic and whose
parents' relevance says little (every page links to it, relevant or not). Neither the anchor
score nor the inherited score ever lifts it, and the crawl's own judge sees nothing wrong
while it harvests pages it takes for relevant. A link that many pages carry is the site's
navigation, and a site's navigation leads to its indexes; a fixed share of the fetches (one
in ``every``) goes to them, the most linked first. Nothing here names a site or a word.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

__all__ = ["HubProbe"]

_MIN_PAGES = 2  # a URL one page links to is that page's choice, not the site's navigation


class HubProbe:
    """Counts, for each URL not crawled yet, how many crawled pages link to it; every
    ``every`` crawled pages :meth:`due` names the most linked one (at least two pages; ties:
    the first seen), once, at most ``limit`` times in all (0: no limit). At most ``capacity``
    URLs are counted (past it, new ones are not).
    """

    def __init__(self, *, every: int, limit: int = 0, capacity: int = 200_000) -> None:
        if every < 1 or limit < 0 or capacity < 0:
            raise ValueError("every must be >= 1, limit and capacity >= 0")
        self._every = every
        self._left = limit or -1  # probes left (-1: no limit)
        self._capacity = capacity
        self._pages = 0
        self._probed_at = 0  # the page count of the last probe (one per period)
        self._linked: dict[str, tuple[int, int]] = {}  # url -> pages linking to it, first seen
        self._heap: list[tuple[int, int, str]] = []  # (-pages, first seen, url); stale skipped
        self._done: set[str] = set()  # crawled or probed: never named again
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._linked)

    def page(self, urls: Iterable[str], links: Iterable[str]) -> None:
        """A page was crawled (``urls``: its address and final address) with ``links``."""
        self._pages += 1
        for url in urls:
            self._forget(url)
        for url in dict.fromkeys(links):
            if url in self._done:
                continue
            held = self._linked.get(url)
            if held is None:
                if len(self._linked) >= self._capacity:
                    continue
                held = (0, next(self._sequence))
            held = (held[0] + 1, held[1])
            self._linked[url] = held
            if held[0] >= _MIN_PAGES:
                heapq.heappush(self._heap, (-held[0], held[1], url))
        if len(self._heap) > 4 * len(self._linked) + 64:
            self._heap = [(-n, s, u) for u, (n, s) in self._linked.items() if n >= _MIN_PAGES]
            heapq.heapify(self._heap)

    def due(self) -> tuple[str, int] | None:
        """The URL to probe now and how many pages link to it, if a probe is due (after every
        ``every`` pages) and some URL two pages or more link to waits; it is not named again."""
        if self._pages % self._every or self._pages == self._probed_at or not self._left:
            return None
        self._probed_at = self._pages
        while self._heap:
            pages, first, url = heapq.heappop(self._heap)
            if self._linked.get(url) == (-pages, first):
                self._forget(url)
                self._left -= self._left > 0
                return url, -pages
        return None

    def _forget(self, url: str) -> None:
        self._linked.pop(url, None)
        if len(self._done) < self._capacity:
            self._done.add(url)
