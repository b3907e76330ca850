"""Linking: candidates, an ambiguous alias resolved by context, NIL, coherence."""

from __future__ import annotations

import pickle

from topicrawl.kg.analyse import EntityAnalyzer
from topicrawl.kg.link import Linker
from topicrawl.kg.model import KnowledgeBase


def linked(kb: KnowledgeBase, text: str) -> list[tuple[str, str]]:
    return [(m.surface, m.entity) for m in EntityAnalyzer(kb)("", text).mentions]


def test_an_ambiguous_alias_is_resolved_by_context(kb: KnowledgeBase) -> None:
    fruit = "The orchard harvest was good: every Apple tree gave sweet fruit to eat."
    company = "Apple released a new iPhone and Mac software in Cupertino."
    assert ("Apple", "apple-fruit") in linked(kb, fruit)
    assert ("Apple", "apple-inc") in linked(kb, company)


def test_no_good_candidate_is_nil_and_becomes_a_found_entity(kb: KnowledgeBase) -> None:
    # Apple Records is neither the company nor the fruit: the context fits neither.
    mentions = EntityAnalyzer(kb)("", "Apple Records released the album in London.").mentions
    apple = next(m for m in mentions if m.surface == "Apple")
    assert apple.entity == "found:unknown:apple"
    assert apple.score < 0.3
    assert ("London", "found:unknown:london") in [(m.surface, m.entity) for m in mentions]


def test_candidates_exact_fuzzy_and_by_token(kb: KnowledgeBase) -> None:
    linker = Linker(kb)
    exact = linker.candidates("apple")
    assert {c.key for c in exact} == {"apple-inc", "apple-fruit"}
    assert [c.how for c in exact] == ["exact", "exact"]
    assert abs(sum(c.prior for c in exact) - 1.0) < 1e-9
    fuzzy = linker.candidates("Christofer Nolan")
    assert fuzzy[0].key == "nolan"
    assert fuzzy[0].how == "fuzzy"
    by_token = linker.candidates("Mr Christopher Nolan")
    assert by_token[0].key == "nolan"
    assert linker.candidates("Kip Thorne") == ()


def test_coherence_links_a_name_with_its_neighbour_on_the_page(kb: KnowledgeBase) -> None:
    alone = EntityAnalyzer(kb)("", "We watched the film Inception.").mentions
    text = "We watched the film Inception by Christopher Nolan."
    together = EntityAnalyzer(kb)("", text).mentions
    score_alone = next(m.score for m in alone if m.entity == "inception")
    score_together = next(m.score for m in together if m.entity == "inception")
    assert score_together > score_alone


def test_the_analyzer_pickles_small_and_answers_the_same(kb: KnowledgeBase) -> None:
    analyzer = EntityAnalyzer(kb)
    text = "盗梦空间的导演是诺兰。Apple released a new iPhone."
    copy = pickle.loads(pickle.dumps(analyzer))
    assert copy("Title", text) == analyzer("Title", text)


def test_a_lone_candidate_the_page_gives_no_word_for_is_nil(kb: KnowledgeBase) -> None:
    # Inception is the KB's only entity of that name, but this page is about a band.
    band = linked(kb, "Inception played metal songs in Oslo last night.")
    assert ("Inception", "found:unknown:inception") in band
    film = linked(kb, "Inception is a science fiction film.")
    assert ("Inception", "inception") in film
    from topicrawl.kg.link import LinkWeights  # noqa: PLC0415

    trusting = EntityAnalyzer(kb, weights=LinkWeights(lone_needs_page=False))
    mentions = trusting("", "Inception played metal songs in Oslo last night.").mentions
    assert (mentions[0].surface, mentions[0].entity) == ("Inception", "inception")
