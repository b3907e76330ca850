"""Recognition: the KB gazetteer, jieba's tags for Chinese names, English span rules."""

from __future__ import annotations

import pickle

from topicrawl.kg.kbfile import parse_kb
from topicrawl.kg.model import KnowledgeBase
from topicrawl.kg.recognise import PERSON_MARGIN, Recogniser, person_margin
from topicrawl.text.tokenize import Tokenizer, _segment_memo


def surfaces(recogniser: Recogniser, text: str) -> list[tuple[str, str]]:
    return [(span.surface, span.source) for span in recogniser.spans(text)]


def test_a_chinese_name_jieba_splits_is_found_whole_through_the_kb(
    kb: KnowledgeBase,
) -> None:
    text = "今天李白杨是一名工程师。"
    # jieba alone cuts the person 李白杨 into the poet 李白 and 杨.
    alone = Recogniser(KnowledgeBase(), english=False)
    assert surfaces(alone, text) == [("李白", "pos")]
    # With the KB: jieba's words are still the term counts' (李白 + 杨), but the gazetteer
    # finds the whole name and its span wins the overlap.
    tagged = Recogniser(kb, english=False)
    assert ("李白", "person") in {(span.surface, span.type) for span in tagged._pos_names(text)}
    assert surfaces(tagged, text) == [("李白杨", "kb")]


def test_chinese_is_segmented_once_for_the_term_counts_and_the_names() -> None:
    text = "张小凡和陆雪琪去了青云山。"
    _segment_memo.cache_clear()
    Tokenizer()(text)
    misses = _segment_memo.cache_info().misses
    spans = Recogniser(KnowledgeBase(), english=False).spans(text)
    assert [s.surface for s in spans] == ["张小凡", "陆雪琪", "青云山"]
    assert _segment_memo.cache_info().misses == misses  # the names' cut was a lookup
    assert _segment_memo.cache_info().hits >= 1


def test_jieba_tags_unknown_chinese_names_with_their_types() -> None:
    spans = Recogniser(KnowledgeBase(), english=False).spans("张小凡和陆雪琪去了青云山。")
    assert [(s.surface, s.type) for s in spans] == [
        ("张小凡", "person"),
        ("陆雪琪", "person"),
        ("青云山", "place"),
    ]


def test_gazetteer_matches_whole_words_and_respects_capitals(kb: KnowledgeBase) -> None:
    recogniser = Recogniser(kb, english=False)
    text = "A List holds items; a list in prose is not one. Lists and ArrayList.add differ."
    assert surfaces(recogniser, text) == [("List", "kb"), ("ArrayList", "kb")]


def test_gazetteer_offsets_survive_characters_that_lower_to_two() -> None:
    text = "İİ then ArrayList"
    spans = Recogniser(KnowledgeBase(), chinese=False, english=False).spans(text) + Recogniser(
        _one("ArrayList"), english=False
    ).spans(text)
    assert [(s.start, s.end, text[s.start : s.end]) for s in spans] == [(8, 17, "ArrayList")]


def _one(name: str) -> KnowledgeBase:
    from topicrawl.kg.model import Entity  # noqa: PLC0415

    return KnowledgeBase(entities=(Entity(key=name, name=name, type="class"),))


def test_english_span_rules(kb: KnowledgeBase) -> None:
    recogniser = Recogniser(KnowledgeBase(), chinese=False)
    text = (
        "Yesterday the Bank of England met. The meeting ran late. "
        "Then Warner Bros signed Kip Thorne, and iPhone sales fell in New York."
    )
    assert [s.surface for s in recogniser.spans(text)] == [
        "Bank of England",
        "Warner Bros",
        "Kip Thorne",
        "New York",
    ]


def test_a_sentence_start_alone_is_no_name_but_camel_case_is() -> None:
    recogniser = Recogniser(KnowledgeBase(), chinese=False)
    assert [s.surface for s in recogniser.spans("Returns the HashMap. Returns nothing.")] == [
        "HashMap"
    ]


def test_recogniser_pickles_without_its_built_parts(kb: KnowledgeBase) -> None:
    recogniser = Recogniser(kb)
    recogniser.spans("李白杨 uses an ArrayList")
    copy = pickle.loads(pickle.dumps(recogniser))
    assert len(pickle.dumps(recogniser)) < 2_000
    assert copy.spans("李白杨 uses an ArrayList") == recogniser.spans("李白杨 uses an ArrayList")


def test_a_latin_name_right_beside_chinese_is_found() -> None:
    kb = parse_kb('{"id": "dr", "name": "DocumentRoot", "type": "directive"}\n', fmt="jsonl")
    recogniser = Recogniser(kb, english=False)
    assert surfaces(recogniser, "使用DocumentRoot指令设置目录。") == [("DocumentRoot", "kb")]
    assert surfaces(recogniser, "MyDocumentRoot 与 DocumentRoots 不是它。") == []


def test_gazetteer_spellings_of_a_name_and_a_lone_letter_is_no_name() -> None:
    kb = parse_kb(
        '{"id": "jc", "name": "Julia Child", "type": "person"}\n'
        '{"id": "ic", "name": "ice cream", "type": "food"}\n',
        fmt="jsonl",
    )
    recogniser = Recogniser(kb, chinese=False)
    text = "JULIA CHILD wrote it. Ice Cream and ice cream, not julia child. A List<T> of T."
    assert surfaces(recogniser, text) == [
        ("JULIA CHILD", "kb"),
        ("Ice Cream", "kb"),
        ("ice cream", "kb"),
        ("List", "caps"),
    ]


def test_common_words_jieba_tags_as_names_are_dropped_by_their_shape() -> None:
    # jieba's dictionary tags 香浓 ("rich", of a taste) a person and 美味 ("tasty") another
    # name; neither starts nor ends the way names of its type do. 杭州 (a place ending in 州)
    # and 张小凡 (an unknown word after the surname 张) keep theirs.
    text = "在杭州，张小凡尝了香浓的火锅，还有美味的点心。"
    unfiltered = Recogniser(KnowledgeBase(), english=False, name_shape=0.0, person_margin=None)
    assert [s.surface for s in unfiltered.spans(text)] == ["杭州", "张小凡", "香浓", "美味"]
    spans = Recogniser(KnowledgeBase(), english=False).spans(text)
    assert [(s.surface, s.type) for s in spans] == [("杭州", "place"), ("张小凡", "person")]


def test_name_shape_reads_how_names_of_the_type_start_and_end() -> None:
    tagger = Recogniser(KnowledgeBase(), english=False)._tagger_ready()
    # Places end in 州 far more often than names of a kind end in 味.
    assert tagger.name_shape("杭州", "place") > 0.5 > 0.25 > tagger.name_shape("美味", "other")
    # A name the dictionary lacks is judged by the same counts, nothing left out.
    assert tagger.name_shape("青云山", "place") > 0.25


def test_common_words_jieba_tags_as_persons_are_dropped_by_the_tagging_model() -> None:
    # jieba's dictionary tags 安静 ("quiet") and 明星 ("star") as persons, and their first
    # characters start enough names to pass the name shape; jieba's part-of-speech model
    # reads their characters as an adjective's and a noun's. 李白 and 刘德华 (in the
    # dictionary) and 张小凡 (not: after the surname 张) stay persons.
    text = "李白很安静。明星刘德华见了张小凡。"
    unchecked = Recogniser(KnowledgeBase(), english=False, person_margin=None)
    assert [(s.surface, s.type) for s in unchecked.spans(text)] == [
        ("李白", "person"),
        ("安静", "person"),
        ("明星", "person"),
        ("刘德华", "person"),
        ("张小凡", "person"),
    ]
    spans = Recogniser(KnowledgeBase(), english=False).spans(text)
    assert [s.surface for s in spans] == ["李白", "刘德华", "张小凡"]


def test_person_margin_compares_the_persons_tags_with_the_best_other_tag() -> None:
    assert person_margin("刘德华") > 5 > PERSON_MARGIN > 1.0 > person_margin("明星")
    assert person_margin("安静") < 0.5
    assert person_margin("杭州") < 0  # a place: its characters are no person's
