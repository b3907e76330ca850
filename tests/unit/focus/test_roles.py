"""Role anchors (session 16): a short anchor seen on several pages of a host, each time
pointing elsewhere, names the link's role; such a link's own words give no anchor credit
(``role_anchors``). Pure: pages in, requests out."""

from __future__ import annotations

import math

import pytest

from tests.unit.focus.pages import html_page
from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Link
from topicrawl.focus import FocusedStrategy, make_strategy
from topicrawl.focus.roles import RoleAnchors, anchor_key


def test_anchor_key_is_a_short_label_or_nothing() -> None:
    assert anchor_key("  Use ") == "use"
    assert anchor_key("Next  Page") == "next page"
    assert anchor_key("") is None
    assert anchor_key("one two three four") is None  # a sentence, not a label
    assert anchor_key("x" * 41) is None


def test_a_role_anchor_needs_its_pages_and_its_distinct_targets() -> None:
    roles = RoleAnchors(min_pages=3)
    for i in range(3):
        roles.observe(
            "h",
            [
                Link(f"http://h/class-use/C{i}.html", "Use"),
                Link("http://h/download.html", "Download"),  # the same target every time
            ],
        )
        if i < 2:
            assert not roles.is_role("h", "use")  # two pages are not enough
    assert roles.is_role("h", "USE")
    assert not roles.is_role("h", "Download")  # a menu link, not a role
    assert not roles.is_role("other-host", "Use")  # per host


def test_an_anchor_counts_once_a_page() -> None:
    roles = RoleAnchors(min_pages=2)
    roles.observe("h", [Link("http://h/a", "next"), Link("http://h/b", "next")])
    assert not roles.is_role("h", "next")  # one page, however many links
    roles.observe("h", [Link("http://h/c", "next")])
    assert roles.is_role("h", "next")


def test_min_pages_is_checked() -> None:
    with pytest.raises(ValueError, match="min_pages"):
        RoleAnchors(min_pages=1)
    with pytest.raises(ConfigError, match="role_anchors"):
        make_strategy("focused", topics=["crawler"], role_anchors=1)


def _focused(**options: object) -> FocusedStrategy:
    strategy = make_strategy("focused", topics=["crawler"], adaptive=False, **options)
    assert isinstance(strategy, FocusedStrategy)
    return strategy


def test_a_role_links_url_words_give_no_anchor_credit() -> None:
    """Three pages of one host, each with a "Use" link whose URL names the topic
    (``crawler/class-use/...``) and a link whose anchor names it. With ``role_anchors=3``
    the third page's "Use" link scores its block's 0 instead of its URL words'."""
    on, off = _focused(role_anchors=3), _focused()
    for i in range(3):
        links = [
            Link(f"http://h/crawler/class-use/P{i}.html", "Use", block=0, block_text="Use"),
            Link(f"http://h/c{i}.html", "crawler", block=1, block_text="crawler"),
        ]
        page = html_page(f"http://h/crawler/P{i}.html", links)
        with_roles = {r.url: r for r in on.on_page(page).link_scores}
        without = {r.url: r for r in off.on_page(page).link_scores}
    use = "http://h/crawler/class-use/P2.html"
    # Without: the URL's directory words "crawler class use" name the topic: 1 / sqrt(3).
    assert without[use].reasons["anchor"] == pytest.approx(1 / math.sqrt(3))
    assert "role" not in without[use].reasons
    # With: a role link; its block ("Use") names nothing, so its anchor part is 0.
    assert with_roles[use].reasons["anchor"] == 0.0
    assert with_roles[use].reasons["role"] == 1.0
    assert with_roles[use].score < without[use].score
    # The "crawler" links are role links too (one label, three targets), but a role link
    # keeps its block's score, and that block names the topic: 1.
    named = "http://h/c2.html"
    assert with_roles[named].reasons["role"] == 1.0
    assert with_roles[named].reasons["anchor"] == pytest.approx(1.0)
