"""The crawl graph, the oracle order, and the measures of a fetch order against a relevant set.

The crawl graph is what a complete breadth-first crawl of the site stored: every page it
fetched (a node, named by its final URL after redirects) and the page's followable links
that lead to another fetched page (the edges).

The oracle knows the crawl graph and the relevant set R, and fetches like this (a greedy
order, precisely):

1. It starts with the seed discovered.
2. If a discovered, unfetched page is relevant, it fetches the one discovered first.
3. Otherwise it fetches the discovered, unfetched page closest (in links) to a relevant page
   not yet discovered; ties go to the page discovered first.
4. A fetch discovers the page's links. It stops when every reachable relevant page is fetched.

So it never fetches an irrelevant page while a relevant one is waiting, and between relevant
pages it walks shortest paths. It is a strong order, not a proven optimum (the optimum is a
node-weighted Steiner problem): a crawler may beat it in rare cases, which shows as a ratio
under 1.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "CHECKPOINTS",
    "CrawlGraph",
    "OrderMeasures",
    "geometric_mean",
    "measure_order",
    "oracle_order",
]

CHECKPOINTS: tuple[int, ...] = (100, 200, 500, 1000)
"""The fetch counts N at which recall is reported."""

HARVEST_AT = 200
"""Harvest rate is reported over the first this many fetches (or all, if fewer)."""


@dataclass(frozen=True, slots=True)
class CrawlGraph:
    """The link graph of a complete crawl: nodes are final URLs, in the crawl's fetch order."""

    seed: str
    links: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_pages(cls, seed: str, pages: Iterable[tuple[str, str, Sequence[str]]]) -> CrawlGraph:
        """Build from ``(url, final_url, link urls)`` of every fetched page."""
        rows = list(pages)
        alias = {url: final for url, final, _ in rows}
        alias.update({final: final for _, final, _ in rows})
        links: dict[str, tuple[str, ...]] = {}
        for _, final, out in rows:
            targets = dict.fromkeys(alias[u] for u in out if u in alias and alias[u] != final)
            links[final] = tuple(targets)
        return cls(seed=alias.get(seed, seed), links=links)

    @property
    def pages(self) -> frozenset[str]:
        return frozenset(self.links)

    def reachable(self) -> set[str]:
        """Pages reachable from the seed."""
        seen = {self.seed}
        queue = deque([self.seed])
        while queue:
            for target in self.links.get(queue.popleft(), ()):
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return seen

    def edges(self) -> int:
        return sum(len(out) for out in self.links.values())


def oracle_order(graph: CrawlGraph, relevant: Iterable[str]) -> list[str]:
    """The oracle's fetch order (see the module doc), up to its last relevant fetch."""
    targets = set(relevant) & graph.reachable()
    reverse: dict[str, list[str]] = {}
    for page, out in graph.links.items():
        for target in out:
            reverse.setdefault(target, []).append(page)
    discovered: dict[str, int] = {graph.seed: 0}  # page -> discovery position
    waiting_relevant: deque[str] = deque()
    waiting: set[str] = {graph.seed}
    if graph.seed in targets:
        waiting_relevant.append(graph.seed)
    undiscovered = set(targets) - {graph.seed}
    fetched: list[str] = []
    left = len(targets)
    distance: dict[str, int] = {}
    stale = True
    while left and waiting:
        if waiting_relevant:
            page = waiting_relevant.popleft()
        else:
            if stale:
                distance = _distances(reverse, undiscovered)
                stale = False
            page = min(waiting, key=lambda p: (distance.get(p, math.inf), discovered[p]))
            if page not in distance:
                break  # nothing waiting leads to a relevant page
        waiting.discard(page)
        fetched.append(page)
        if page in targets:
            left -= 1
        for target in graph.links.get(page, ()):
            if target in discovered:
                continue
            discovered[target] = len(discovered)
            waiting.add(target)
            if target in targets:
                waiting_relevant.append(target)
                undiscovered.discard(target)
                stale = True
    return fetched


def _distances(reverse: Mapping[str, list[str]], sources: Iterable[str]) -> dict[str, int]:
    """Links from each page to the nearest of ``sources`` (a BFS over reversed links)."""
    distance = dict.fromkeys(sources, 0)
    queue = deque(distance)
    while queue:
        page = queue.popleft()
        step = distance[page] + 1
        for parent in reverse.get(page, ()):
            if parent not in distance:
                distance[parent] = step
                queue.append(parent)
    return distance


@dataclass(frozen=True, slots=True)
class OrderMeasures:
    """How a fetch order did against a relevant set of ``total`` reachable pages.

    ``to_half`` and ``to_most``: fetches until 50 % and 90 % recall (None: not within the
    ``fetched`` pages of the run).
    """

    fetched: int
    total: int
    harvest: float
    recall: tuple[float, ...]
    to_half: int | None
    to_most: int | None


def measure_order(order: Sequence[str], relevant: Iterable[str]) -> OrderMeasures:
    """Measure a fetch order (final URLs; repeats count as fetches but not as new finds)."""
    wanted = set(relevant)
    total = len(wanted)
    found: set[str] = set()
    curve: list[int] = []  # relevant pages found after each fetch
    for url in order:
        if url in wanted:
            found.add(url)
        curve.append(len(found))
    first = curve[: min(HARVEST_AT, len(curve))]
    harvest = _harvest(order[: len(first)], wanted)
    recall = tuple(
        (curve[min(n, len(curve)) - 1] / total if curve and total else 0.0) for n in CHECKPOINTS
    )
    return OrderMeasures(
        fetched=len(order),
        total=total,
        harvest=harvest,
        recall=recall,
        to_half=_fetches_to(curve, 0.5 * total),
        to_most=_fetches_to(curve, 0.9 * total),
    )


def _harvest(order: Sequence[str], wanted: set[str]) -> float:
    if not order:
        return 0.0
    return len(set(order) & wanted) / len(order)


def _fetches_to(curve: Sequence[int], needed: float) -> int | None:
    goal = math.ceil(needed - 1e-9)
    for index, count in enumerate(curve):
        if count >= goal:
            return index + 1
    return None


def geometric_mean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive values (None for none)."""
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else None
