"""What the focused strategy tells the dashboard: a page's topic and every link's priority."""

from __future__ import annotations

import pytest

from tests.unit.focus.pages import html_page
from topicrawl.core.models import Link
from topicrawl.focus import FocusedStrategy, make_strategy


def test_a_page_is_filed_under_its_best_topic_with_each_links_priority() -> None:
    strategy = make_strategy("focused", topics=["web crawler, spider", "cooking recipe, soup"])
    assert isinstance(strategy, FocusedStrategy)
    links = tuple(
        Link(url=f"http://a.test/{n}", anchor=anchor, block=n % 2)
        for n, anchor in enumerate(["tomato soup recipe", "web crawler", "contact", "about us"])
    )

    result = strategy.on_page(
        html_page(
            "http://a.test/",
            links,
            text="a cooking recipe for soup: cooking soup, recipe by recipe",
        )
    )
    other = strategy.on_page(
        html_page("http://b.test/", (), text="a web crawler is a spider; the crawler fetches pages")
    )

    assert result.topic == "cooking recipe, soup"
    assert other.topic == "web crawler, spider"
    # Every link the strategy scored, queued or held back, with its components.
    scored = {s.url: s for s in result.link_scores}
    assert set(scored) == {link.url for link in links}
    queued = {request.url: request for request in result.requests}
    for url, score in scored.items():
        assert {"anchor", "block", "inherited", "page"} <= set(score.reasons)
        if url in queued:
            assert score.score == queued[url].score
    assert scored["http://a.test/0"].reasons["anchor"] > scored["http://a.test/2"].reasons["anchor"]


@pytest.mark.parametrize("name", ["bfs", "best-first", "shark"])
def test_other_strategies_with_topics_file_the_page_too(name: str) -> None:
    strategy = make_strategy(name, topics=["web crawler, spider", "cooking recipe, soup"])

    result = strategy.on_page(
        html_page("http://a.test/", (), text="cooking soup: a recipe for soup")
    )

    assert result.topic == "cooking recipe, soup"


def test_bfs_without_topics_files_nothing() -> None:
    result = make_strategy("bfs", topics=[]).on_page(html_page("http://a.test/", (), text="words"))
    assert result.topic is None


@pytest.mark.parametrize(
    ("name", "components"),
    [("best-first", {"page"}), ("shark", {"anchor", "context", "inherited", "page"})],
)
def test_best_first_and_shark_give_each_links_priority_too(name: str, components: set[str]) -> None:
    strategy = make_strategy(name, topics=["web crawler, spider", "cooking recipe, soup"])
    links = tuple(
        Link(url=f"http://a.test/{n}", anchor=anchor, block=n % 2)
        for n, anchor in enumerate(["tomato soup recipe", "contact", "tomato soup recipe"])
    )
    page = html_page("http://a.test/", links, text="cooking soup: a recipe for soup")

    result = strategy.on_page(page)

    queued = {request.url: request for request in result.requests}
    scored = {s.url: s for s in result.link_scores}
    assert set(scored) == set(queued) == {link.url for link in links}
    for url, score in scored.items():
        assert score.score == queued[url].score
        assert set(score.reasons) == components
    if name == "shark":  # the anchor counts: a recipe link ranks above "contact"
        assert scored["http://a.test/0"].score > scored["http://a.test/1"].score


def test_bfs_gives_no_link_priorities() -> None:
    strategy = make_strategy("bfs", topics=["web crawler, spider"])
    links = (Link(url="http://a.test/1", anchor="web crawler", block=0),)

    result = strategy.on_page(html_page("http://a.test/", links, text="a web crawler"))

    assert result.link_scores == ()
