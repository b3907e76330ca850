from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicrawl.core.models import Link, Request
from topicrawl.focus import (
    CandidatePool,
    TemplateBlocks,
    TemplateHindsight,
    block_sizes,
    block_texts,
    diluted_block_score,
    hub_score,
    inherited_score,
    link_priority,
    page_importance,
    shark_potential,
    url_directory_words,
)
from topicrawl.focus.links import split_identifiers, url_word_pair, url_words


def test_block_text_from_parser_or_joined_anchors() -> None:
    links = [
        Link("http://a/1", "web crawler", block=0, block_text="web crawler spider guide"),
        Link("http://a/2", "spider guide", block=0, block_text="web crawler spider guide"),
        Link("http://a/3", "recipes", block=1),
        Link("http://a/4", "", block=1),
        Link("http://a/5", "pasta", block=1),
    ]
    assert block_texts(links) == {0: "web crawler spider guide", 1: "recipes pasta"}


def test_block_sizes_count_each_blocks_links() -> None:
    links = [Link(f"http://a/{i}", "x", block=i % 2) for i in range(5)]
    assert block_sizes(links) == {0: 3, 1: 2}
    assert block_sizes([]) == {}


@pytest.mark.parametrize(
    ("links", "most", "expected"),
    [
        (1, 20, 0.6),  # small blocks keep their score
        (20, 20, 0.6),
        (40, 20, 0.3),  # 0.6 * 20 / 40
        (200, 20, 0.06),
        (200, 0, 0.6),  # 0: never scaled
    ],
)
def test_a_long_blocks_score_is_diluted_over_its_links(
    links: int, most: int, expected: float
) -> None:
    assert diluted_block_score(0.6, links=links, most_links=most) == pytest.approx(expected)


def test_inherited_from_a_relevant_parent_is_decayed_similarity() -> None:
    got = inherited_score(
        parent_similarity=0.8, parent_inherited=0.3, parent_relevant=True, decay=0.5
    )
    assert got == pytest.approx(0.4)


def test_inherited_through_an_irrelevant_parent_decays_its_inheritance() -> None:
    got = inherited_score(
        parent_similarity=0.8, parent_inherited=0.3, parent_relevant=False, decay=0.5
    )
    assert got == pytest.approx(0.15)
    # Three off-topic hops in a row: 0.4 -> 0.2 -> 0.1 -> 0.05.
    score = 0.4
    for _ in range(3):
        score = inherited_score(
            parent_similarity=0.0, parent_inherited=score, parent_relevant=False, decay=0.5
        )
    assert score == pytest.approx(0.05)


def test_link_priority_mixes_inherited_and_anchor() -> None:
    assert link_priority(inherited=0.4, anchor=0.6, inherited_weight=0.3) == pytest.approx(
        0.3 * 0.4 + 0.7 * 0.6
    )
    assert link_priority(inherited=0.4, anchor=0.6, inherited_weight=1.0) == pytest.approx(0.4)


def test_hub_is_on_topic_links_over_the_most_seen() -> None:
    assert hub_score(3, 12) == pytest.approx(0.25)
    assert hub_score(12, 12) == 1.0
    assert hub_score(0, 0) == 0.0


def test_page_importance_weighs_cosine_and_hub() -> None:
    assert page_importance(similarity=0.5, hub=0.25, m1=0.6) == pytest.approx(
        0.6 * 0.5 + 0.4 * 0.25
    )


def test_shark_potential_when_the_anchor_matches() -> None:
    # neighbourhood = 0.8 * 0.5 + 0.2 * 1 = 0.6; potential = 0.5 * 0.2 + 0.5 * 0.6 = 0.4
    got = shark_potential(inherited=0.2, anchor=0.5, context=0.1, beta=0.8, gamma=0.5)
    assert got == pytest.approx(0.4)


def test_shark_potential_falls_back_to_the_context() -> None:
    # neighbourhood = 0.8 * 0 + 0.2 * 0.3 = 0.06; potential = 0.5 * 0.2 + 0.5 * 0.06 = 0.13
    got = shark_potential(inherited=0.2, anchor=0.0, context=0.3, beta=0.8, gamma=0.5)
    assert got == pytest.approx(0.13)


def _request(url: str, score: float) -> Request:
    return Request(url=url, score=score)


def test_pool_keeps_the_best_candidates_within_capacity() -> None:
    pool = CandidatePool(capacity=2)
    pool.add(_request("http://a/1", 0.1))
    pool.add(_request("http://a/2", 0.3))
    pool.add(_request("http://a/3", 0.2))  # evicts 0.1
    pool.add(_request("http://a/4", 0.05))  # worse than everything held: dropped
    assert len(pool) == 2
    assert "http://a/1" not in pool
    assert [r.url for r in pool.take_best(5)] == ["http://a/2", "http://a/3"]
    assert len(pool) == 0


def test_pool_keeps_one_entry_per_url_at_its_best_score() -> None:
    pool = CandidatePool(capacity=10)
    pool.add(_request("http://a/1", 0.1))
    pool.add(_request("http://a/1", 0.4))
    pool.add(_request("http://a/1", 0.2))
    assert len(pool) == 1
    assert pool.take_best(1)[0].score == 0.4


def test_pool_releases_what_passes_a_lower_threshold() -> None:
    pool = CandidatePool(capacity=10)
    for index, score in enumerate([0.05, 0.2, 0.12, 0.01]):
        pool.add(_request(f"http://a/{index}", score))
    released = pool.release(0.1)
    assert [r.score for r in released] == [0.2, 0.12]
    assert len(pool) == 2
    pool.discard("http://a/0")
    assert [r.url for r in pool.release(0.0)] == ["http://a/3"]


def test_pool_stays_bounded_under_churn() -> None:
    pool = CandidatePool(capacity=50)
    for index in range(5000):
        pool.add(_request(f"http://a/{index}", (index * 7919 % 1000) / 1000))
    assert len(pool) == 50
    best = pool.take_best(50)
    assert min(r.score for r in best) >= 0.95
    assert len(pool._heap) <= 2 * 50 + 64 + 1


def test_zero_capacity_pool_holds_nothing() -> None:
    pool = CandidatePool(capacity=0)
    pool.add(_request("http://a/1", 0.5))
    assert len(pool) == 0


NAV = "Overview | Package | Use | Tree"


def test_a_block_on_enough_pages_of_a_host_is_template() -> None:
    templates = TemplateBlocks(min_pages=3, min_links=3)
    page = {0: NAV, 1: "Lock | Condition"}
    sizes = {0: 4, 1: 2}
    assert templates.observe("docs", page, sizes) == frozenset()
    assert templates.observe("docs", page, sizes) == frozenset()
    # Third page with the same navigation bar: it is template; the 2-link block never is.
    assert templates.observe("docs", page, sizes) == {0}
    # Another host's pages are counted apart.
    assert templates.observe("other", page, sizes) == frozenset()


def test_template_blocks_say_which_blocks_a_page_made_template() -> None:
    templates = TemplateBlocks(min_pages=2, min_links=3)
    page, sizes = {0: NAV, 1: "a | b | c"}, {0: 4, 1: 3}
    templates.observe("docs", page, sizes)
    assert templates.recognised == ()
    assert templates.observe("docs", page, sizes) == {0, 1}
    assert templates.recognised == (0, 1)
    # Already template on the next page: not recognised again.
    assert templates.observe("docs", page, sizes) == {0, 1}
    assert templates.recognised == ()


def test_hindsight_lowers_the_links_a_template_block_queued() -> None:
    hindsight = TemplateHindsight()
    nav, text = ("docs", 1), ("docs", 2)
    hindsight.saw("http://d/use/A.html", 0.4, block=nav, template_score=0.0)
    hindsight.saw("http://d/tree.html", 0.3, block=nav, template_score=0.05)
    # Also linked from the text of a page, at 0.2: that stays its due.
    hindsight.saw("http://d/tree.html", 0.2, block=text, template_score=0.0)
    # Best from the text (0.6), the bar gave less: the bar becoming template changes nothing.
    hindsight.saw("http://d/Lock.html", 0.6, block=text, template_score=0.0)
    hindsight.saw("http://d/Lock.html", 0.1, block=nav, template_score=0.0)
    # A link already queued from a template block, and a crawled one.
    hindsight.saw("http://d/help.html", 0.0, block=None, template_score=0.0)
    hindsight.saw("http://d/use/B.html", 0.4, block=nav, template_score=0.0)
    hindsight.crawled("http://d/use/B.html")
    lowered = dict(hindsight.recognised(nav))
    assert lowered == {"http://d/use/A.html": 0.0, "http://d/tree.html": 0.2}
    assert hindsight.recognised(nav) == []  # once
    # The text block too (unlikely, but counted): Lock falls back to the bar's 0.1, the
    # score the bar gave it then (other sightings are kept as given, not re-judged).
    assert hindsight.recognised(text) == [("http://d/Lock.html", 0.1)]


def test_hindsight_counts_the_same_block_on_two_pages_as_one_sighting() -> None:
    hindsight = TemplateHindsight()
    nav = ("docs", 1)
    hindsight.saw("http://d/overview.html", 0.25, block=nav, template_score=0.0)
    hindsight.saw("http://d/overview.html", 0.3, block=nav, template_score=0.1)
    # Both scores came from the bar: nothing else vouches for the link.
    assert hindsight.recognised(nav) == [("http://d/overview.html", 0.1)]


def test_hindsight_keeps_the_links_every_copy_of_the_block_has() -> None:
    hindsight = TemplateHindsight()
    crumbs = ("docs", 1)
    hindsight.saw("http://d/numeric.html", 0.4, block=crumbs, template_score=0.0)
    hindsight.saw("http://d/use/A.html", 0.4, block=crumbs, template_score=0.0)
    # The copy that made the breadcrumb template links to the section page again.
    lowered = hindsight.recognised(crumbs, constant={"http://d/numeric.html", "http://d/B"})
    assert lowered == [("http://d/use/A.html", 0.0)]


def test_hindsight_capacity_and_compaction() -> None:
    assert len(TemplateHindsight(capacity=0)) == 0
    full = TemplateHindsight(capacity=1)
    full.saw("http://d/1", 0.5, block=("d", 1), template_score=0.0)
    full.saw("http://d/2", 0.5, block=("d", 1), template_score=0.0)  # past capacity
    assert len(full) == 1
    with pytest.raises(ValueError, match="capacity"):
        TemplateHindsight(capacity=-1)
    many = TemplateHindsight(capacity=2)
    for i in range(3000):  # each crawled at once: their index entries are compacted away
        many.saw(f"http://d/{i}", 0.5, block=("d", i % 7), template_score=0.0)
        many.crawled(f"http://d/{i}")
    many.saw("http://d/last", 0.5, block=("d", 3), template_score=0.0)
    assert many.recognised(("d", 3)) == [("http://d/last", 0.0)]
    assert sum(len(urls) for urls in many._by_block.values()) < 2 * 2 + 1024


def test_template_blocks_need_enough_links_and_a_text() -> None:
    templates = TemplateBlocks(min_pages=1, min_links=3)
    assert templates.observe("docs", {0: NAV, 1: "", 2: "a | b"}, {0: 3, 1: 5, 2: 2}) == {0}


def test_template_detection_off_or_full() -> None:
    off = TemplateBlocks(min_pages=0)
    assert off.observe("docs", {0: NAV}, {0: 4}) == frozenset()
    full = TemplateBlocks(min_pages=2, capacity=1)
    full.observe("docs", {0: NAV, 1: "a | b | c"}, {0: 4, 1: 3})  # only NAV fits
    assert full.observe("docs", {0: NAV, 1: "a | b | c"}, {0: 4, 1: 3}) == {0}
    with pytest.raises(ValueError, match="min_links"):
        TemplateBlocks(min_pages=2, min_links=0)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://h/api/java/util/concurrent/ReentrantLock.html", "api java util concurrent"),
        ("http://h/web-crawler/", "web crawler"),
        ("http://h/guides/WebCrawler/intro.html", "guides Web Crawler"),
        ("http://h/index.html", ""),
        ("http://h", ""),
    ],
)
def test_url_directory_words_leave_out_the_file(url: str, words: str) -> None:
    assert url_directory_words(url) == words
    assert url_word_pair(url) == (url_words(url), words)


@given(st.text(alphabet="abcXYZ019/_-.%~?#éЖ中", max_size=60))
def test_url_directory_words_split_each_part_s_identifiers(path: str) -> None:
    url = f"http://h/{path}"
    directory = unquote(urlsplit(url).path)
    parts = [part for part in re.split(r"[^\w]+|_", directory[: directory.rfind("/") + 1]) if part]
    assert url_directory_words(url) == " ".join(split_identifiers(part) for part in parts)
    assert url_word_pair(url) == (url_words(url), url_directory_words(url))


def test_a_variant_of_a_known_template_block_is_template_at_once() -> None:
    templates = TemplateBlocks(min_pages=2, min_links=3, similarity=0.8)
    nav = "Overview | Package | Use | Tree | Help"
    templates.observe("docs", {0: nav}, {0: 5})
    assert templates.observe("docs", {0: nav}, {0: 5}) == {0}  # confirmed on 2 pages
    # A package page's bar lacks "Package": 4 anchors shared of 5 = 0.8, template at once.
    assert templates.observe("docs", {0: "Overview | Use | Tree | Help"}, {0: 4}) == {0}
    # "Class" instead of "Package": 4 shared of 6 = 0.67, not template (first page).
    assert templates.observe("docs", {0: "Overview | Class | Use | Tree | Help"}, {0: 5}) == set()
    # Exact texts only (similarity 1): the variant waits for its own 2 pages.
    exact = TemplateBlocks(min_pages=2, min_links=3)
    exact.observe("docs", {0: nav}, {0: 5})
    exact.observe("docs", {0: nav}, {0: 5})
    assert exact.observe("docs", {0: "Overview | Use | Tree | Help"}, {0: 4}) == set()


def test_remembered_url_words_are_the_computed_ones() -> None:
    from topicrawl.focus import links  # noqa: PLC0415 - its private cache is under test

    urls = [
        "http://h/api/java/util/concurrent/ReentrantLock.html",
        "http://h/lib/asyncio-task.html?x=1",
        "http://[::1/x.html",
        "http://h/" + "Dir/" * 200 + "LongName.html",  # longer than URL_MEMO_CHARS: not kept
    ]
    computed = [links._url_word_pair.__wrapped__(url) for url in urls]
    assert [url_word_pair(url) for url in urls] == computed
    assert [url_word_pair(url) for url in urls] == computed
    assert [url_words(url) for url in urls] == [words for words, _ in computed]
    kept = links._url_word_pair.cache_info().currsize
    url_word_pair("http://h/" + "Other/" * 200 + "Name.html")
    assert links._url_word_pair.cache_info().currsize == kept
