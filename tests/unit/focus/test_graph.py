"""A synthetic web (pure Python, no network): focused strategies reach the on-topic pages in
fewer fetches than breadth-first. The frontier is simulated with a heap."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import pytest

from topicrawl.core.models import Link, Page, Request
from topicrawl.core.protocols import Strategy
from topicrawl.focus import FocusedStrategy, make_strategy

TOPIC = "web crawler, spider, frontier | programs that fetch web pages politely"

OFF_TOPICS = {
    "sport": "football league match goal score team player stadium season",
    "food": "pasta sauce recipe cooking kitchen oven garlic tomato basil",
    "travel": "hotel flight beach island museum passport luggage tour",
    "music": "guitar concert album song band drummer melody chorus",
    "film": "movie actor director cinema scene trailer premiere studio",
    "money": "stock market bank loan interest investor bond dividend",
    "garden": "rose soil seed flower compost tree lawn hedge",
}
ON_TOPIC = [
    "web crawler fetches pages and follows links from a frontier queue",
    "a spider respects robots rules and politeness delays per host",
    "focused crawler ranks the frontier by topic relevance of links",
    "crawler frontier uses priority queues leases and dedupe of urls",
    "spider traps and canonical urls trouble every web crawler",
]


@dataclass(frozen=True)
class Node:
    text: str
    links: tuple[Link, ...]
    relevant: bool


def _words(text: str, i: int) -> str:
    words = text.split()
    return " ".join(words[i % len(words) :] + words[: i % len(words)])


def build_web() -> dict[str, Node]:
    """A portal with eight sections, each a tree of 1 + 4 + 16 pages; one is on topic."""
    web: dict[str, Node] = {}
    sections: list[tuple[str, str, bool]] = [(n, t, False) for n, t in OFF_TOPICS.items()]
    sections.insert(4, ("crawl", " ".join(ON_TOPIC), True))
    home_links = []
    for block, (name, text, relevant) in enumerate(sections):
        anchor = " ".join(text.split()[:2])
        home_links.append(Link(f"http://{name}.test/", anchor, block=block))
        pool = ON_TOPIC if relevant else [_words(text, i) for i in range(5)]
        for level, prefix in ((2, "p"), (1, "s"), (0, "")):
            count = 4**level
            for i in range(count):
                url = f"http://{name}.test/{prefix}{i}" if prefix else f"http://{name}.test/"
                children: list[Link] = []
                if prefix != "p":
                    child_prefix = "p" if prefix == "s" else "s"
                    base = i * 4 if prefix == "s" else 0
                    children = [
                        Link(
                            f"http://{name}.test/{child_prefix}{base + j}",
                            _words(pool[(i + j) % len(pool)], j)[:30],
                            block=j,
                        )
                        for j in range(4)
                    ]
                back = Link("http://portal.test/", "home portal", block=9)
                web[url] = Node(pool[(i + level) % len(pool)], (*children, back), relevant)
    web["http://portal.test/"] = Node(
        "welcome to the portal with news and sections", tuple(home_links), False
    )
    return web


def crawl(strategy: Strategy, web: dict[str, Node], *, limit: int) -> list[str]:
    """Fetch in the strategy's priority order until ``limit`` pages; return the fetch order."""
    heap: list[tuple[float, int, Request]] = []
    order = itertools.count()
    seen: set[str] = set()

    def push(requests: tuple[Request, ...] | list[Request]) -> None:
        for request in requests:
            if request.url not in seen:
                seen.add(request.url)
                heapq.heappush(heap, (-request.score, next(order), request))

    push(list(strategy.seeds([Request(url="http://portal.test/")])))
    fetched: list[str] = []
    while heap and len(fetched) < limit:
        _, _, request = heapq.heappop(heap)
        node = web[request.url]
        page = Page(
            url=request.url,
            final_url=request.url,
            status=200,
            depth=request.depth,
            fetched_at=0.0,
            content_type="text/html",
            text=node.text,
            links=node.links,
            parent_url=request.parent_url,
            score=request.score,
            reasons=request.reasons,
        )
        fetched.append(request.url)
        push(strategy.on_page(page).requests)
        if not heap and isinstance(strategy, FocusedStrategy):
            push(list(strategy.on_idle(100)))
    return fetched


def fetches_to_reach_all_relevant(strategy: Strategy, web: dict[str, Node]) -> int:
    relevant = {url for url, node in web.items() if node.relevant}
    fetched = crawl(strategy, web, limit=len(web))
    found = 0
    for step, url in enumerate(fetched, start=1):
        found += web[url].relevant
        if found == len(relevant):
            return step
    return len(web) + 1


def test_the_synthetic_web_is_what_the_comparison_assumes() -> None:
    web = build_web()
    assert len(web) == 8 * 21 + 1
    assert sum(node.relevant for node in web.values()) == 21
    assert len(crawl(make_strategy("bfs", topics=[]), web, limit=1000)) == len(web)


@pytest.mark.parametrize("name", ["best-first", "shark", "focused"])
def test_topical_strategies_reach_relevant_pages_sooner_than_bfs(name: str) -> None:
    web = build_web()
    bfs = fetches_to_reach_all_relevant(make_strategy("bfs", topics=[TOPIC]), web)
    topical = fetches_to_reach_all_relevant(make_strategy(name, topics=[TOPIC]), web)
    assert topical < bfs


def test_focused_harvest_beats_bfs_early_in_the_crawl() -> None:
    web = build_web()
    budget = 30

    def harvest(strategy: Strategy) -> int:
        return sum(web[url].relevant for url in crawl(strategy, web, limit=budget))

    focused = harvest(make_strategy("focused", topics=[TOPIC]))
    bfs = harvest(make_strategy("bfs", topics=[TOPIC]))
    assert focused >= 2 * bfs
    assert focused >= 18
