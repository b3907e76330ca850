"""Relations between co-occurring entities, by English and Chinese patterns and by the KB."""

from __future__ import annotations

from topicrawl.kg.analyse import EntityAnalyzer
from topicrawl.kg.model import KnowledgeBase


def relations(kb: KnowledgeBase, text: str) -> set[tuple[str, str, str]]:
    return {(r.subject, r.relation, r.object) for r in EntityAnalyzer(kb)("", text).relations}


def test_english_patterns_both_ways(kb: KnowledgeBase) -> None:
    assert relations(kb, "Inception was directed by Christopher Nolan.") == {
        ("inception", "directed_by", "nolan")
    }
    assert relations(kb, "In 2010 Christopher Nolan directed Inception.") == {
        ("inception", "directed_by", "nolan")
    }
    assert relations(kb, "The class ArrayList implements List for you.") == {
        ("arraylist", "implements", "list")
    }


def test_chinese_patterns(kb: KnowledgeBase) -> None:
    assert relations(kb, "盗梦空间的导演是诺兰。") == {("inception", "directed_by", "nolan")}
    assert relations(kb, "电影盗梦空间由诺兰执导。") == {("inception", "directed_by", "nolan")}


def test_a_qualified_name_with_dots_is_inside_its_sentence(kb: KnowledgeBase) -> None:
    # The dots of java.util.ArrayList do not end a sentence around it.
    found = EntityAnalyzer(kb)("", "First. Then java.util.ArrayList implements List; done")
    assert {(r.subject, r.relation, r.object) for r in found.relations} == {
        ("arraylist", "implements", "list")
    }
    assert [r.evidence for r in found.relations] == ["Then java.util.ArrayList implements List;"]


def test_only_within_one_sentence(kb: KnowledgeBase) -> None:
    assert relations(kb, "Inception was a hit. Christopher Nolan directed Tenet.") == {
        ("found:unknown:tenet", "directed_by", "nolan")
    }


def test_the_kb_types_a_known_pair_without_a_pattern_less_surely(kb: KnowledgeBase) -> None:
    found = EntityAnalyzer(kb)("", "Inception and Christopher Nolan, together again.").relations
    assert [(r.subject, r.relation, r.object) for r in found] == [
        ("inception", "directed_by", "nolan")
    ]
    typed = EntityAnalyzer(kb)("", "Inception was directed by Christopher Nolan.").relations
    assert found[0].confidence < typed[0].confidence


def test_unrelated_entities_in_a_sentence_make_no_relation(kb: KnowledgeBase) -> None:
    assert relations(kb, "Christopher Nolan ate an apple in Cupertino.") == set()


def test_a_declarations_clauses_belong_to_its_subject() -> None:
    from topicrawl.kg.kbfile import parse_kb  # noqa: PLC0415

    names = ("SwingWorker", "Object", "RunnableFuture", "Serializable", "JMenu", "JMenuItem")
    kb = parse_kb(
        "".join(f'{{"id": "{n}", "name": "{n}", "type": "class"}}\n' for n in names), fmt="jsonl"
    )
    text = (
        "public abstract class SwingWorker<T,V> extends Object implements RunnableFuture<T>,"
        " Serializable\nA JMenu extends JMenuItem."
    )
    assert relations(kb, text) == {
        ("SwingWorker", "extends", "Object"),
        # Not "Object implements RunnableFuture": the clause is SwingWorker's.
        ("SwingWorker", "implements", "RunnableFuture"),
        ("SwingWorker", "implements", "Serializable"),
        ("JMenu", "extends", "JMenuItem"),
    }
