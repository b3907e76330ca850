"""Session 18's link options of the focused strategy: Hub(u) weighted by anchor scores
(``hub_weighted``) and what several relevant parents pass on together (``inbound_evidence``).
Pure: pages in, requests out; every number by hand."""

from __future__ import annotations

import pytest

from tests.unit.focus.pages import html_page
from topicrawl.core.models import Link, Page
from topicrawl.focus import FocusedStrategy, make_strategy
from topicrawl.focus.links import InboundEvidence, on_topic_links


def _focused(**options: object) -> FocusedStrategy:
    # The inherited weight named, so the priorities below are computed by hand with it.
    options = {"inherited_weight": 0.5, **options}
    strategy = make_strategy("focused", topics=["crawler"], adaptive=False, **options)
    assert isinstance(strategy, FocusedStrategy)
    return strategy


def test_on_topic_links_counted_or_weighed_by_anchor_score() -> None:
    anchors = [0.04] * 40 + [0.0, 0.5]
    # Counted: 41 links score over 0 (the forty weak ones and the 0.5).
    assert on_topic_links(anchors, above=0.0, weighted=False) == 41.0
    # Weighed: 40 * 0.04 + 0.5 = 2.1, as if two on-topic links.
    assert on_topic_links(anchors, above=0.0, weighted=True) == pytest.approx(2.1)
    # The floor still applies: only the 0.5 is over 0.1.
    assert on_topic_links(anchors, above=0.1, weighted=True) == pytest.approx(0.5)


def test_inbound_evidence_is_a_noisy_or_under_its_ceiling() -> None:
    evidence = InboundEvidence(ceiling=0.5)
    assert evidence.get("u") == 0.0
    assert evidence.add("u", 0.2) == pytest.approx(0.2)
    # 1 - (1 - 0.2) * (1 - 0.2) = 0.36
    assert evidence.add("u", 0.2) == pytest.approx(0.36)
    # 1 - 0.64 * 0.8 = 0.488; then 1 - 0.512 * 0.8 = 0.5904, held at the ceiling 0.5.
    assert evidence.add("u", 0.2) == pytest.approx(0.488)
    assert evidence.add("u", 0.2) == pytest.approx(0.5)
    evidence.crawled("u")
    assert evidence.get("u") == 0.0
    assert len(evidence) == 0


def test_inbound_evidence_keeps_no_more_urls_than_its_capacity() -> None:
    evidence = InboundEvidence(ceiling=1.0, capacity=1)
    evidence.add("a", 0.3)
    # Not kept: its own share comes back, and nothing is remembered.
    assert evidence.add("b", 0.4) == pytest.approx(0.4)
    assert evidence.get("b") == 0.0
    assert evidence.get("a") == pytest.approx(0.3)
    with pytest.raises(ValueError, match="ceiling"):
        InboundEvidence(ceiling=1.5)


# Two relevant pages (their text is the topic's one word: cosine 1) that both link to
# ``toc.html`` with an anchor that names nothing. Hub(u) 0 (no link scores over 0), so
# pu = m1 * 1 = 0.7 and each passes on decay * pu = 0.5 * 0.7 = 0.35.
TOC = "http://a/toc.html"


def _parent(url: str) -> Page:
    return html_page(url, [Link(TOC, "Documentation", block=0)], text="crawler")


def test_a_link_from_two_relevant_pages_inherits_both_shares() -> None:
    on = _focused(inbound_evidence=0.5)
    first = {r.url: r for r in on.on_page(_parent("http://a/p1.html")).requests}
    assert first[TOC].reasons["inherited"] == pytest.approx(0.35)
    second = {r.url: r for r in on.on_page(_parent("http://a/p2.html")).requests}
    # 1 - 0.65 * 0.65 = 0.5775, held at the ceiling 0.5; priority 0.5 * 0.5 + 0.5 * 0.
    assert second[TOC].reasons["inherited"] == pytest.approx(0.5)
    assert second[TOC].score == pytest.approx(0.25)
    # Off: the second parent passes on its own share, no more.
    off = _focused()
    off.on_page(_parent("http://a/p1.html"))
    again = {r.url: r for r in off.on_page(_parent("http://a/p2.html")).requests}
    assert again[TOC].reasons["inherited"] == pytest.approx(0.35)
    assert again[TOC].score == pytest.approx(0.175)


def test_a_page_of_weak_links_is_no_longer_the_best_hub() -> None:
    # The first page: ten links that each name the topic (own words "crawler": anchor 1).
    # The second: forty links whose block names it once among forty other words, every
    # IDF equal: each scores 1 / sqrt(41) = 0.156.
    names = [f"w{i}" for i in range(40)]
    weak = [
        Link(f"http://a/{n}.html", n, block=0, block_text=" ".join([*names, "crawler"]))
        for n in names
    ]
    strong = [Link(f"http://a/s{i}/crawler.html", "crawler", block=i) for i in range(10)]
    hubs = {}
    for weighted in (False, True):
        strategy = _focused(hub_weighted=weighted)
        first = strategy.on_page(html_page("http://a/one.html", strong, text="crawler"))
        assert [s.reasons["anchor"] for s in first.link_scores] == pytest.approx([1.0] * 10)
        second = strategy.on_page(html_page("http://a/two.html", weak, text="crawler"))
        assert second.link_scores[0].reasons["anchor"] == pytest.approx(41**-0.5)
        hubs[weighted] = second.link_scores[0].reasons["hub"]
    # Counted: 40 links over 0 against the first page's 10: hub 1, the best seen.
    assert hubs[False] == 1.0
    # Weighed: 40 * 0.156 = 6.25 against the first page's 10 * 1.0: hub 0.625.
    assert hubs[True] == pytest.approx(40 * 41**-0.5 / 10)


def test_the_default_inherited_weight_is_0_6() -> None:
    # A relevant page (cosine 1, Hub 0: pu = 0.7) links to a page with an anchor that names
    # nothing: inherited 0.5 * 0.7 = 0.35, priority 0.6 * 0.35 + 0.4 * 0 = 0.21 (0.175 with
    # session 17's 0.5).
    strategy = make_strategy("focused", topics=["crawler"], adaptive=False)
    result = strategy.on_page(_parent("http://a/p1.html"))
    [request] = [r for r in result.requests if r.url == TOC]
    assert request.reasons["inherited"] == pytest.approx(0.35)
    assert request.score == pytest.approx(0.21)
