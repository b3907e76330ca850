"""engine.heldback: the links a strategy held back before a restart, read back from storage."""

from __future__ import annotations

from collections.abc import AsyncIterator

from topicrawl.core.models import Link, Page
from topicrawl.engine.heldback import HeldBackLinks


def _page(url: str, *, at: float, relevance: float | None, links: list[Link]) -> Page:
    return Page(
        url=url,
        final_url=url,
        status=200,
        depth=2,
        fetched_at=at,
        content_type="text/html",
        title="t",
        text="x",
        links=tuple(links),
        relevance=relevance,
    )


class _Storage:
    def __init__(self, pages: list[Page]) -> None:
        self.pages = pages
        self.reads = 0

    async def iter_pages(self, *, with_links: bool = False) -> AsyncIterator[Page]:
        assert with_links
        self.reads += 1
        for page in self.pages:
            yield page


class _Frontier:
    def __init__(self, seen: set[str]) -> None:
        self._seen = seen

    async def seen(self, url: str) -> bool:
        return url in self._seen


async def test_unqueued_links_of_earlier_pages_come_back_best_parent_first_once() -> None:
    storage = _Storage(
        [
            _page(
                "http://h/a",
                at=10.0,
                relevance=0.2,
                links=[Link("http://h/1", "one"), Link("http://h/queued", "q")],
            ),
            _page(
                "http://h/b",
                at=11.0,
                relevance=0.9,
                links=[
                    Link("http://h/2", "two"),
                    Link("http://h/1", "one again"),
                    Link("http://h/ad", "ad", nofollow=True),
                ],
            ),
            _page("http://h/c", at=12.0, relevance=None, links=[Link("http://h/3", "three")]),
            # Fetched by this run: its held-back links are the strategy's own.
            _page("http://h/new", at=50.0, relevance=1.0, links=[Link("http://h/4", "four")]),
        ]
    )
    held = HeldBackLinks(
        storage=storage,  # type: ignore[arg-type]
        frontier=_Frontier({"http://h/queued"}),  # type: ignore[arg-type]
        before=50.0,
    )
    first = await held.take(2)
    assert {(r.url, r.score, r.parent_url) for r in first} == {
        ("http://h/2", 0.9, "http://h/b"),
        ("http://h/1", 0.9, "http://h/b"),  # linked from both: the better parent counts
    }
    assert {r.depth for r in first} == {3}
    rest = await held.take(10)
    assert [(r.url, r.score) for r in rest] == [("http://h/3", 0.0)]
    assert await held.take(10) == []
    assert storage.reads == 1
