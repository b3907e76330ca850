"""Entity preference: which links a preferred entity (or a neighbour) raises, and by how much."""

from __future__ import annotations

import pytest

from topicrawl.core.models import EntityMention, Link, Page, PageEntities, RelationMention
from topicrawl.engine.kg import preferred_keys
from topicrawl.focus import make_strategy
from topicrawl.kg.model import KnowledgeBase
from topicrawl.kg.preference import EntityPreference, KgStrategy, normalise_for_match

BASE = "http://site.test"


def page(*links: Link, entities: PageEntities | None = None, path: str = "/") -> Page:
    return Page(
        url=f"{BASE}{path}",
        final_url=f"{BASE}{path}",
        status=200,
        depth=0,
        fetched_at=0.0,
        content_type="text/html",
        title="t",
        text="some text",
        links=links,
        entities=entities,
    )


def boosts(strategy: KgStrategy, visited: Page) -> dict[str, float]:
    result = strategy.on_page(visited)
    return {r.url.removeprefix(BASE): r.reasons.get("kg", 0.0) for r in result.requests}


def test_anchor_block_url_and_page_mentions_raise_links(kb: KnowledgeBase) -> None:
    kb, keys = preferred_keys(kb, ("Christopher Nolan",))
    assert keys == ["nolan"]
    strategy = KgStrategy(
        make_strategy("bfs", topics=()), preference=EntityPreference(kb, keys, radius=0), boost=2.0
    )
    links = (
        Link(f"{BASE}/a", "Films by Nolan"),
        Link(f"{BASE}/b", "more", 1, "more | Christopher Nolan interview"),
        Link(f"{BASE}/wiki/Christopher_Nolan", "read"),
        Link(f"{BASE}/c", "unrelated"),
        Link(f"{BASE}/d", "Nolanism"),  # not the name: a longer word
    )
    assert boosts(strategy, page(*links)) == {
        "/a": 2.0,
        "/b": pytest.approx(2.0 * 0.6),
        "/wiki/Christopher_Nolan": pytest.approx(2.0 * 0.8),
        "/c": 0.0,
        "/d": 0.0,
    }
    result = strategy.on_page(page(*links))
    by_url = {r.url: r for r in result.requests}
    assert by_url[f"{BASE}/a"].score == pytest.approx(-1.0 + 2.0)  # bfs: -depth, plus the boost
    # A page that mentions the entity raises all its links.
    mentioned = PageEntities((EntityMention("nolan", "Nolan", "person", 0, 5, 0.9),), ())
    assert boosts(strategy, page(Link(f"{BASE}/c", "unrelated"), entities=mentioned)) == {
        "/c": pytest.approx(2.0 * 0.5)
    }


def test_neighbours_count_within_the_radius_and_weaker(kb: KnowledgeBase) -> None:
    kb, keys = preferred_keys(kb, ("nolan",))
    links = (Link(f"{BASE}/i", "Inception"), Link(f"{BASE}/n", "Nolan"))
    near = KgStrategy(
        make_strategy("bfs", topics=()), preference=EntityPreference(kb, keys, radius=1), boost=1.0
    )
    assert boosts(near, page(*links)) == {"/i": 0.5, "/n": 1.0}
    only = KgStrategy(
        make_strategy("bfs", topics=()), preference=EntityPreference(kb, keys, radius=0), boost=1.0
    )
    assert boosts(only, page(*links)) == {"/i": 0.0, "/n": 1.0}


def test_the_graph_grows_with_relations_and_co_mentions(kb: KnowledgeBase) -> None:
    kb, keys = preferred_keys(kb, ("Kip Thorne",))  # not in the KB: preferred by name
    assert keys == ["found:unknown:kip thorne"]
    preference = EntityPreference(kb, keys, radius=1)
    strategy = KgStrategy(make_strategy("bfs", topics=()), preference=preference, boost=1.0)
    link = Link(f"{BASE}/x", "Interstellar science")
    assert boosts(strategy, page(link)) == {"/x": 0.0}
    seen = PageEntities(
        (
            EntityMention("found:unknown:kip thorne", "Kip Thorne", "", 0, 10, 0.0),
            EntityMention("found:unknown:interstellar", "Interstellar", "", 20, 32, 0.0),
        ),
        (),
    )
    strategy.on_page(page(entities=seen))
    assert boosts(strategy, page(link)) == {"/x": 0.0}  # named together once: chance
    # Named together on a second page: a neighbour now, and the link passed on unraised
    # before, still waiting, is raised (re-scored) at once.
    result = strategy.on_page(page(entities=seen))
    assert result.rescored == ((f"{BASE}/x", -1.0 + 0.5),)
    assert boosts(strategy, page(link)) == {"/x": 0.5}
    # A relation found on a page links a preferred entity to a KB one the same way.
    relation = RelationMention("found:unknown:kip thorne", "works_for", "nolan", 0.8, "...")
    assert preference.learn(PageEntities((), (relation,)))
    assert preference.strengths["nolan"] == 0.5


def test_findings_are_kept_for_the_recorder_and_attributes_pass_through(
    kb: KnowledgeBase,
) -> None:
    inner = make_strategy("best-first", topics=("film director",))
    strategy = KgStrategy(inner, preference=None)
    found = PageEntities((EntityMention("nolan", "Nolan", "person", 0, 5, 0.9),), ())
    result = strategy.on_page(page(Link(f"{BASE}/a", "Nolan"), entities=found))
    assert all("kg" not in r.reasons for r in result.requests)  # nothing preferred
    assert [f.url for f in strategy.take_findings()] == [f"{BASE}/"]
    assert strategy.take_findings() == []
    assert strategy.analyzer is inner.analyzer
    assert strategy.name == "best-first"


def test_match_forms(kb: KnowledgeBase) -> None:
    assert normalise_for_match("/wiki/Julia_Child?x=1") == " wiki julia child x 1 "
    kb, keys = preferred_keys(kb, ("诺兰",))
    preference = EntityPreference(kb, keys, radius=0)
    assert preference.strength_in("诺兰的新电影") == 1.0  # no spaces around Chinese names
    assert preference.strength_in("/films/christopher-nolan/") == 1.0
    assert preference.strength_in("Nolanesque films") == 0.0
    assert normalise_for_match("看Christopher Nolan的电影") == " 看 christopher nolan 的电影 "
    kb, keys = preferred_keys(kb, ("Christopher Nolan",))
    preference = EntityPreference(kb, keys, radius=0)
    assert preference.strength_in("看Christopher Nolan的电影") == 1.0  # Latin beside Chinese


def test_an_entity_on_every_page_is_no_neighbour(kb: KnowledgeBase) -> None:
    kb, keys = preferred_keys(kb, ("Kip Thorne",))
    preference = EntityPreference(kb, keys, radius=1)
    site = EntityMention("found:unknown:daily orbit", "Daily Orbit", "", 0, 11, 0.0)
    kip = EntityMention("found:unknown:kip thorne", "Kip Thorne", "", 20, 30, 0.0)
    film = EntityMention("found:unknown:interstellar", "Interstellar", "", 40, 52, 0.0)
    for _ in range(2):
        preference.learn(PageEntities((site, kip, film), ()))
    for _ in range(30):  # the site's name is in every page's template
        preference.learn(PageEntities((site,), ()))
    preference.learn(PageEntities((site, kip, film), ()))
    assert preference.strength_in("Interstellar") == 0.5
    assert preference.strength_in("Daily Orbit home") == 0.0


def test_links_the_focused_strategy_holds_back_are_queued_when_they_name_the_entity(
    kb: KnowledgeBase,
) -> None:
    kb, keys = preferred_keys(kb, ("Christopher Nolan",))
    links = (
        Link(f"{BASE}/films/nolan", "Christopher Nolan"),
        Link(f"{BASE}/other", "unrelated"),
        Link(f"{BASE}/later", "Memento"),
    )
    off_topic = page(*links)
    # Alone, the focused strategy holds both links of an off-topic page back.
    alone = make_strategy("focused", topics=["telescope, comet"])
    assert not alone.on_page(off_topic).requests
    assert len(alone.candidates) == 3  # type: ignore[attr-defined]
    inner = make_strategy("focused", topics=["telescope, comet"])
    strategy = KgStrategy(inner, preference=EntityPreference(kb, keys, radius=1), boost=1.0)
    result = strategy.on_page(off_topic)
    assert [r.url for r in result.requests] == [f"{BASE}/films/nolan"]
    assert result.requests[0].reasons["kg_held"] == pytest.approx(1.0)
    assert f"{BASE}/films/nolan" not in inner.candidates  # type: ignore[attr-defined]
    assert f"{BASE}/other" in inner.candidates  # type: ignore[attr-defined]
    assert strategy.released_links == 1
    # The graph grows: Memento becomes a neighbour, and its held-back link is queued.
    grown = PageEntities(
        (
            EntityMention("nolan", "Nolan", "person", 0, 5, 0.9),
            EntityMention("memento", "Memento", "work", 10, 17, 0.9),
        ),
        (RelationMention("memento", "directed_by", "nolan", 0.9, "e"),),
    )
    again = strategy.on_page(page(entities=grown, path="/x"))
    assert f"{BASE}/later" in {r.url for r in again.requests}
    assert f"{BASE}/later" not in inner.candidates  # type: ignore[attr-defined]


def test_a_page_mention_counts_less_for_links_in_a_block_of_many(kb: KnowledgeBase) -> None:
    kb, keys = preferred_keys(kb, ("nolan",))
    mentioned = PageEntities((EntityMention("nolan", "Nolan", "person", 0, 5, 0.9),), ())
    navigation = [Link(f"{BASE}/nav{i}", f"Section {i}", 0, "sections") for i in range(4)]
    links = (*navigation, Link(f"{BASE}/story", "the story", 1, "the story"))

    def with_exponent(exponent: float) -> dict[str, float]:
        strategy = KgStrategy(
            make_strategy("bfs", topics=()),
            preference=EntityPreference(kb, keys, radius=0),
            boost=1.0,
            block_exponent=exponent,
        )
        return boosts(strategy, page(*links, entities=mentioned))

    flat = with_exponent(0.0)
    assert list(flat.values()) == pytest.approx([0.5] * 5)  # every link of the page alike
    shared = with_exponent(1.0)
    assert shared["/story"] == pytest.approx(0.5)  # alone in its block
    assert shared["/nav0"] == pytest.approx(0.5 / 4)  # one of a block of four
    with pytest.raises(ValueError, match="block_exponent"):
        with_exponent(-1.0)


def test_a_waiting_link_is_raised_when_a_later_page_names_the_entity_in_its_anchor(
    kb: KnowledgeBase,
) -> None:
    kb, keys = preferred_keys(kb, ("Christopher Nolan",))
    bfs = make_strategy("bfs", topics=())
    assert not bfs.follows_known_links
    strategy = KgStrategy(bfs, preference=EntityPreference(kb, keys, radius=0), boost=2.0)
    assert strategy.follows_known_links  # known links must reach it to be raised
    assert not KgStrategy(bfs, preference=None).follows_known_links
    first = strategy.on_page(page(Link(f"{BASE}/privacy", "Privacy"), path="/"))
    assert first.rescored == ()
    # Another page links the same URL, its anchor naming the entity: the queued one is
    # re-filed with the boost on its first score (-1: linked from depth 0).
    later = strategy.on_page(page(Link(f"{BASE}/privacy", "Christopher Nolan"), path="/x"))
    assert dict(later.rescored) == {f"{BASE}/privacy": pytest.approx(-1.0 + 2.0)}
    # Once fetched, a link to it is never waiting again.
    strategy.on_page(page(path="/y"))
    strategy.on_page(page(Link(f"{BASE}/y", "Other"), path="/z"))
    again = strategy.on_page(page(Link(f"{BASE}/y", "Christopher Nolan"), path="/w"))
    assert again.rescored == ()
