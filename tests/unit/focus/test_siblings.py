"""The yield of link blocks (``sibling_yield``), computed by hand."""

from __future__ import annotations

import pytest

from topicrawl.focus.siblings import BlockYield

TOC: tuple[str, int] = ("h", 1)
NAV: tuple[str, int] = ("h", 2)


def test_block_yield_against_the_crawls_relevant_share() -> None:
    blocks = BlockYield(prior=1.0)
    blocks.listed(TOC, ["a", "b", "c", "d"])
    blocks.listed(NAV, ["a", "x", "y"])
    assert blocks.score("b") == 0.0  # nothing crawled yet
    assert set(blocks.crawled({"a"}, relevant=True)) == {TOC, NAV}
    # One page crawled, relevant: base 1 is capped at 0.99; r - n * base = 0.01 over
    # n + prior = 2, over 1 - base = 0.01: 0.5.
    assert blocks.block_yield(TOC) == pytest.approx(0.5)
    assert blocks.crawled({"x"}, relevant=False) == [NAV]
    # Crawl share 1/2. TOC: r=1, n=1: (1 - 0.5) / 2 / 0.5 = 0.5. NAV: r=1, n=2: 0.
    assert blocks.block_yield(TOC) == pytest.approx(0.5)
    assert blocks.block_yield(NAV) == 0.0
    assert blocks.score("y") == 0.0
    blocks.crawled({"b"}, relevant=True)
    # Share 2/3. TOC: r=2, n=2: (2 - 4/3) / 3 / (1/3) = 2/3; "c" takes its best block's.
    assert blocks.block_yield(TOC) == pytest.approx(2 / 3)
    assert blocks.score("c") == pytest.approx(2 / 3)
    # Crawled pages are forgotten: the block's waiting members are the others.
    assert blocks.members(TOC) == ["c", "d"]
    assert blocks.score("a") == 0.0


def test_a_page_not_listed_changes_only_the_crawls_share() -> None:
    blocks = BlockYield(prior=2.0)
    blocks.listed(TOC, ["a", "b"])
    assert blocks.crawled({"z"}, relevant=False) == []
    blocks.crawled({"a"}, relevant=True)
    # Share 1/2; TOC r=1, n=1: (1 - 0.5) / 3 / 0.5 = 1/3.
    assert blocks.score("b") == pytest.approx(1 / 3)


def test_capacity_and_bad_settings() -> None:
    blocks = BlockYield(prior=1.0, capacity=2)
    blocks.listed(TOC, ["a", "b", "c"])
    assert len(blocks) == 2
    assert blocks.members(TOC) == ["a", "b"]
    with pytest.raises(ValueError, match="prior"):
        BlockYield(prior=0.0)


def test_block_share_of_the_parents_credit_by_hand() -> None:
    blocks = BlockYield(prior=1.0)
    blocks.listed(TOC, ["a", "b", "c", "d"])
    blocks.listed(NAV, ["d", "e"])
    assert blocks.share(TOC, prior=2.0) == 1.0  # nothing crawled
    blocks.crawled({"z"}, relevant=True)  # in no block: only the crawl's share moves
    assert blocks.share(TOC, prior=2.0) == 1.0  # no page of the block crawled yet
    blocks.crawled({"a"}, relevant=False)
    # Crawl share base 1/2; TOC r=0, n=1: (0 + 2 * 0.5) / ((1 + 2) * 0.5) = 2/3.
    assert blocks.share(TOC, prior=2.0) == pytest.approx(2 / 3)
    blocks.crawled({"b"}, relevant=False)
    # base 1/3; r=0, n=2: prior / (n + prior) = 2/4, whatever the base.
    assert blocks.share(TOC, prior=2.0) == pytest.approx(0.5)
    assert blocks.share_of("c", prior=2.0) == pytest.approx(0.5)
    # "d" is listed by NAV too, of which nothing is known: it keeps its whole credit.
    assert blocks.share_of("d", prior=2.0) == 1.0
    blocks.crawled({"c"}, relevant=True)
    # base 2/4; TOC r=1, n=3: (1 + 1) / (5 * 0.5) = 0.8.
    assert blocks.share(TOC, prior=2.0) == pytest.approx(0.8)
    blocks.crawled({"e"}, relevant=True)
    # base 3/5; NAV r=1, n=1: over the crawl's share, capped at 1.
    assert blocks.share(NAV, prior=2.0) == 1.0


def test_a_url_some_untracked_context_links_keeps_its_credit() -> None:
    blocks = BlockYield(prior=1.0)
    blocks.listed(TOC, ["a", "b", "c"])
    blocks.unlisted(["c"])
    blocks.crawled({"x"}, relevant=True)
    blocks.crawled({"a"}, relevant=False)
    assert blocks.share_of("b", prior=1.0) == pytest.approx(0.5 * 1 / (2 * 0.5))
    assert blocks.share_of("c", prior=1.0) == 1.0
    assert blocks.share_of("unknown", prior=1.0) == 1.0
