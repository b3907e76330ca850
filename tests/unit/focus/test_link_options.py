"""Session 15's link options of the focused strategy: a link's own words break ties inside
its block (``own_words_weight``), and a seed's menu links are fetched early
(``menu_score``). Pure: pages in, requests out."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from tests.unit.focus.pages import html_page
from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Link, Request
from topicrawl.focus import FocusedStrategy, make_strategy

SEED = {"seed": 1.0}


def _focused(**options: object) -> FocusedStrategy:
    # Hand-computed with the inherited weight 0.5 (the default until session 18).
    options = {"inherited_weight": 0.5, **options}
    strategy = make_strategy("focused", topics=["crawler"], adaptive=False, **options)
    assert isinstance(strategy, FocusedStrategy)
    return strategy


def _by_url(requests: Sequence[Request]) -> dict[str, Request]:
    return {request.url: request for request in requests}


def _block(names: Sequence[str], block: int = 0) -> list[Link]:
    text = " ".join(names)
    return [Link(f"http://a/{n}.html", n, block=block, block_text=text) for n in names]


def test_own_words_break_the_tie_of_a_block() -> None:
    links = _block(["crawler", "alpha", "beta"])
    page = html_page("http://a/", links)
    off = _by_url(_focused().on_page(page).requests)
    on = _by_url(_focused(own_words_weight=0.25).on_page(page).requests)
    # The block "crawler alpha beta" against "crawler", every IDF equal: 1 / sqrt(3).
    block = 1 / math.sqrt(3)
    # Off: "alpha" and "beta" name nothing of the topic; both take the block's score.
    assert off["http://a/alpha.html"].reasons["anchor"] == pytest.approx(block)
    assert off["http://a/beta.html"].reasons["anchor"] == pytest.approx(block)
    # On: their own words score 0, so (1 - 0.25) * block + 0.25 * 0.
    assert on["http://a/alpha.html"].reasons["anchor"] == pytest.approx(0.75 * block)
    assert on["http://a/alpha.html"].reasons["block"] == pytest.approx(block)
    # The link that names the topic scores its own words (above the block's): unchanged,
    # and now ahead of its block's other links.
    named = on["http://a/crawler.html"]
    assert named.reasons["anchor"] == off["http://a/crawler.html"].reasons["anchor"]
    assert named.reasons["anchor"] > block
    assert named.score > on["http://a/alpha.html"].score


def test_a_seeds_menu_links_are_raised_to_the_menu_score() -> None:
    menu = _block(["home", "docs", "about"])
    long_list = _block([f"n{i}" for i in range(13)], block=1)  # more than menu_links
    named = _block(["news", "crawler"], block=2)
    links = [*menu, *long_list, *named]
    on = _focused(menu_score=0.25)
    queued = _by_url(on.on_page(html_page("http://a/", links, reasons=SEED)).requests)
    for name in ("home", "docs", "about"):
        assert queued[f"http://a/{name}.html"].score == pytest.approx(0.25)
        assert queued[f"http://a/{name}.html"].reasons["menu"] == pytest.approx(0.25)
    # A list of 13 links is content, not a menu: held back as without the option.
    assert "http://a/n0.html" not in queued
    assert "http://a/n0.html" in on.candidates
    # A menu link that scores above the menu score keeps its own score: priority
    # 0.5 * 0 (inherited) + 0.5 * 1 (its own words "crawler").
    assert queued["http://a/crawler.html"].score == pytest.approx(0.5)
    assert "menu" not in queued["http://a/crawler.html"].reasons
    # Off, the menu's links score 0 and are held back.
    off = _focused()
    held = _by_url(off.on_page(html_page("http://a/", links, reasons=SEED)).requests)
    assert "http://a/home.html" not in held


def test_only_a_seeds_menu_is_raised() -> None:
    strategy = _focused(menu_score=0.25)
    page = html_page("http://a/page.html", _block(["home", "docs", "about"]))
    assert "http://a/home.html" not in _by_url(strategy.on_page(page).requests)


def test_the_link_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="own_words_weight"):
        _focused(own_words_weight=1.5)
    with pytest.raises(ConfigError, match="menu_score"):
        _focused(menu_score=-0.1)
    with pytest.raises(ConfigError, match="menu_links"):
        _focused(menu_links=1)


def test_smooth_link_idf_and_topic_df_cap_keep_the_topics_word_in_an_anchor() -> None:
    """Session 17 (django-db): after pages that all contain the topic's word, the plain IDF
    gives it log(1.01) and an anchor naming it scores next to nothing; the smoothed IDF
    keeps it at weight 1 against log((1 + N) / 1) + 1 for a word no page had."""

    def anchor_score(**options: object) -> float:
        strategy = _focused(**options)
        strategy.on_page(html_page("http://a/", text="crawler"))
        link = Link("http://a/b/", "crawler zebra", block=0, block_text="crawler zebra")
        page = html_page("http://a/p.html", [link], text="crawler")
        [request] = strategy.on_page(page).requests
        return request.reasons["anchor"]

    # Two pages counted, both with "crawler" (N = 2, n = 2), "zebra" in none (n = 0). The
    # link's block and own words are "crawler zebra" (its URL "b" a directory, no words of
    # the topic); against the topic "crawler", the cosine is crawler's weight over the norm.
    plain = math.log(1.01) / math.hypot(math.log(1.01), math.log(2.01))
    smooth = 1.0 / math.hypot(1.0, math.log(3.0) + 1.0)
    assert anchor_score(topic_df_cap=1.0) == pytest.approx(plain)
    assert anchor_score(topic_df_cap=1.0, smooth_link_idf=True) == pytest.approx(smooth)
    assert smooth > 30 * plain
    # topic_df_cap (0.5 by default): "crawler" counts as in at most 0.5 * 2 = 1 page, so its
    # IDF is log(2 / 1 + 0.01), the same as "zebra"'s (in none, counted as 1): 1 / sqrt(2).
    assert anchor_score() == pytest.approx(1 / math.sqrt(2))
    assert anchor_score(topic_df_cap=0.5) == anchor_score()


def test_page_df_cap_keeps_the_topics_word_in_a_pages_relevance() -> None:
    """Session 20 (django-forms): after pages that all contain the topic's word, the plain IDF
    gives it log(1.01) and a page about the topic scores next to nothing; ``page_df_cap``
    caps the word's document count as ``topic_df_cap`` does for links."""

    def relevance(**options: object) -> float:
        strategy = _focused(**options)
        strategy.on_page(html_page("http://a/", text="crawler"))
        strategy.on_page(html_page("http://a/1.html", text="crawler"))
        result = strategy.on_page(html_page("http://a/2.html", text="crawler zebra"))
        assert result.relevance is not None
        return result.relevance

    # Scored against the two pages before it (N = 2): "crawler" in both (n = 2), "zebra" in
    # none (counted as 1). Plain: crawler log(2 / 2 + 0.01), zebra log(2 / 1 + 0.01).
    plain = math.log(1.01) / math.hypot(math.log(1.01), math.log(2.01))
    assert relevance() == pytest.approx(plain)
    assert relevance(page_df_cap=1.0) == pytest.approx(plain)
    # Capped at 0.5: "crawler" counts as in at most 0.5 * 2 = 1 page, as "zebra": 1 / sqrt(2).
    assert relevance(page_df_cap=0.5) == pytest.approx(1 / math.sqrt(2))
    with pytest.raises(ConfigError, match="page_df_cap"):
        _focused(page_df_cap=0.0)


def test_own_words_named_keeps_a_blocks_order_among_the_links_that_name_the_topic() -> None:
    """Session 20 (django-forms against httpd-zh-vhosts): with ``own_words_named`` a link's
    own words only say whether it names the topic; the ones that do keep the block's score,
    the ones that do not go after them."""
    names = ["crawler zebra yak wolf", "alpha beta", "crawler zebra yak"]
    text = " ".join(names)
    links = [Link(f"http://a/{i}/", name, block=0, block_text=text) for i, name in enumerate(names)]
    page = html_page("http://a/", links)
    plain = _by_url(_focused(own_words_weight=0.25).on_page(page).requests)
    named = _by_url(_focused(own_words_weight=0.25, own_words_named=True).on_page(page).requests)
    weak, none, strong = (f"http://a/{i}/" for i in range(3))
    block = named[weak].reasons["block"]
    # "crawler zebra yak wolf" names the topic but scores under its block by its own words:
    # lowered by them without the option, kept at the block's score with it.
    assert plain[weak].reasons["anchor"] < block
    assert named[weak].reasons["anchor"] == pytest.approx(block)
    # A link naming nothing of the topic is lowered either way: (1 - 0.25) * block.
    assert named[none].reasons["anchor"] == pytest.approx(0.75 * block)
    assert plain[none].reasons["anchor"] == pytest.approx(0.75 * block)
    # A link whose own words beat the block keeps them.
    assert named[strong].reasons["anchor"] == plain[strong].reasons["anchor"] > block


def test_seed_inherits_passes_on_a_seeds_importance_whatever_its_cosine() -> None:
    """Session 20 (git-syncing): a seed under the threshold passes nothing on unless
    ``seed_inherits``; with it, ``decay`` times its importance ``m1 * cos + (1 - m1) * Hub``."""
    links = [
        Link("http://a/crawler.html", "crawler", block=0, block_text="crawler"),
        Link("http://a/alpha.html", "alpha", block=1, block_text="alpha"),
    ]
    seed = html_page("http://a/", links, reasons=SEED)  # its text names nothing: cosine 0
    on = _by_url(_focused(seed_inherits=True).on_page(seed).requests)
    # One on-topic link, the most seen so far: Hub 1, importance (1 - 0.7) * 1 = 0.3, and
    # every link inherits 0.5 * 0.3; "alpha" (anchor 0) is queued at 0.5 * 0.15.
    assert on["http://a/alpha.html"].reasons["inherited"] == pytest.approx(0.15)
    assert on["http://a/alpha.html"].score == pytest.approx(0.075)
    off = _focused().on_page(seed).requests
    assert _by_url(off)["http://a/crawler.html"].reasons["inherited"] == 0.0
    assert "http://a/alpha.html" not in _by_url(off)
    # Only a seed: the same page reached by a link passes nothing on.
    page = html_page("http://a/", links)
    plain = _by_url(_focused(seed_inherits=True).on_page(page).requests)
    assert plain["http://a/crawler.html"].reasons["inherited"] == 0.0
