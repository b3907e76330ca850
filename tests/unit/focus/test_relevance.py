from __future__ import annotations

import dataclasses
import math
import pickle
from collections import Counter

import pytest

from tests.pages import fetched_page
from topicrawl.core.errors import ConfigError
from topicrawl.focus import TopicProfile, TopicScorer, page_relevance, parse_topic, relevance
from topicrawl.focus.relevance import topic_weights
from topicrawl.focus.stemming import PageTerms
from topicrawl.text import Tokenizer, Vocabulary
from topicrawl.text.vectors import OOV, TfidfModel


def test_parse_topic_reads_keywords_and_description() -> None:
    topic = parse_topic("web crawler, spider；爬虫、frontier | programs that fetch the web")
    assert topic.keywords == ("web crawler", "spider", "爬虫", "frontier")
    assert topic.description == "programs that fetch the web"
    assert topic.name == "web crawler, spider, 爬虫, frontier"


def test_topic_without_keywords_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        parse_topic(" , ;| just a description")


def test_keywords_weigh_one_and_description_words_less() -> None:
    vocabulary = Vocabulary()
    profile = TopicProfile(name="t", keywords=("crawler",), description="crawler fetches pages")
    weights = topic_weights(
        profile, tokenizer=Tokenizer(), vocabulary=vocabulary, description_weight=0.5
    )
    named = {vocabulary.term(t): w for t, w in weights.items()}
    assert named == {"crawler": 1.0, "fetch": 0.5, "page": 0.5}


def test_stopword_only_topic_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="stopwords"):
        TopicScorer(topics=[parse_topic("the, and")])


def test_page_relevance_is_the_best_topic_hand_computed() -> None:
    page = {0: 0.6, 1: 0.8}
    topics = [{0: 1.0}, {1: 1.0, 2: 1.0}, {3: 1.0}]
    relevance = page_relevance(page, topics)
    assert relevance.scores == pytest.approx((0.6, 0.8 / math.sqrt(2), 0.0))
    assert relevance.topic == 0
    assert relevance.score == pytest.approx(0.6)
    assert page_relevance(page, []).topic == -1


def test_scorer_on_the_first_page_is_a_plain_tf_cosine() -> None:
    # With one document every idf is log(1.01), so the cosine is the tf cosine:
    # page (crawler: 2, spider: 1) against topic (crawler: 1) -> 2 / sqrt(5).
    scorer = TopicScorer(topics=[parse_topic("crawler")])
    vector = scorer.page_vector(fetched_page("http://a/", "crawler crawler spider"), learn=True)
    assert scorer.relevance(vector).score == pytest.approx(2 / math.sqrt(5))
    assert scorer.model.documents == 1


def test_title_counts_toward_relevance() -> None:
    scorer = TopicScorer(topics=[parse_topic("crawler")])
    with_title = scorer.page_vector(
        fetched_page("http://a/", "spider", title="Crawler"), learn=False
    )
    assert scorer.relevance(with_title).score == pytest.approx(1 / math.sqrt(2))


def test_chinese_keywords_are_kept_whole_in_pages() -> None:
    scorer = TopicScorer(topics=[parse_topic("机器学习")])
    assert "机器学习" in scorer.tokenizer.user_words
    vector = scorer.page_vector(fetched_page("http://a/", "我们研究机器学习"), learn=True)
    assert scorer.relevance(vector).score > 0.5


def test_multi_topic_relevance_names_the_best_topic() -> None:
    scorer = TopicScorer(topics=[parse_topic("cooking, pasta"), parse_topic("crawler")])
    vector = scorer.page_vector(fetched_page("http://a/", "a crawler and a spider"), learn=True)
    relevance = scorer.relevance(vector)
    assert relevance.topic == 1
    assert relevance.scores[0] == 0.0


def test_topic_vector_keeps_its_history() -> None:
    scorer = TopicScorer(topics=[parse_topic("crawler, spider")])
    topic = scorer.topics[0]
    assert topic.history[0].weights == (("crawler", 1.0), ("spider", 1.0))
    web = scorer.model.vocabulary.id_of("web")
    topic.update({**topic.weights, web: 0.5}, pages=20, threshold=0.12)
    assert len(topic.history) == 2
    assert topic.history[-1].pages == 20
    assert topic.history[-1].threshold == 0.12
    assert ("web", 0.5) in topic.history[-1].weights
    assert topic.terms()[-1] == ("web", 0.5)
    with pytest.raises(ValueError, match="zeros"):
        topic.update({}, pages=21, threshold=None)


def test_text_relevance_of_empty_text_is_zero() -> None:
    scorer = TopicScorer(topics=[parse_topic("crawler")])
    assert scorer.text_relevance("   ") == 0.0
    assert scorer.text_relevance("crawler") == pytest.approx(1.0)


def test_text_relevance_against_the_initial_vector_too() -> None:
    scorer = TopicScorer(topics=[parse_topic("crawler")])
    topic = scorer.topics[0]
    assert not topic.updated
    web = scorer.model.vocabulary.id_of("web")
    topic.update({**topic.weights, web: 1.0}, pages=20, threshold=None)
    assert topic.updated
    # One word of a two-word vector of equal weights: cosine 1 / sqrt(2).
    assert scorer.text_relevance("crawler") == pytest.approx(2**-0.5)
    # The user's vector was "crawler" alone: the better of the two counts.
    assert scorer.text_relevance("crawler", initial=True) == pytest.approx(1.0)
    # A learned word scores as against the current vector (the initial one lacks it).
    assert scorer.text_relevance("web", initial=True) == pytest.approx(2**-0.5)
    assert scorer.text_relevance("  ", initial=True) == 0.0


class _CountingTokenizer(Tokenizer):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def tokens(self, text: str) -> list[str]:
        self.texts.append(text)
        return super().tokens(text)


def test_a_short_text_is_tokenized_once_and_scored_with_the_current_weights() -> None:
    tokenizer = _CountingTokenizer()
    scorer = TopicScorer(topics=[parse_topic("crawler")], tokenizer=tokenizer)
    tokenizer.texts.clear()
    assert scorer.text_relevance("web crawler") == pytest.approx(2**-0.5)
    # The collection changes (IDF): the remembered counts are weighed anew.
    scorer.model.add_document(scorer.model.counts(["web", "page"]))
    scorer.model.add_document(scorer.model.counts(["crawler"]))
    web_idf, crawler_idf = (
        scorer.model.idf(scorer.model.vocabulary.id_of(w)) for w in ("web", "crawler")
    )
    expected = crawler_idf / math.hypot(web_idf, crawler_idf)
    assert scorer.text_relevance("web crawler") == pytest.approx(expected)
    assert scorer.text_vector("web crawler") == scorer.model.weigh(
        scorer.text_counts("web crawler")
    )
    assert tokenizer.texts == ["web crawler"]


def test_a_text_with_no_topic_term_scores_zero_until_an_update_brings_one_in() -> None:
    scorer = TopicScorer(topics=[parse_topic("crawler")])
    assert scorer.text_relevance("web page") == 0.0
    topic = scorer.topics[0]
    web = scorer.model.vocabulary.id_of("web")
    topic.update({**topic.weights, web: 1.0}, pages=20, threshold=None)
    # "web page" against crawler 1, web 1: (1 * 1) / (sqrt(2) * sqrt(2)).
    assert scorer.text_relevance("web page") == pytest.approx(0.5)


def test_the_remembered_texts_are_bounded_in_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relevance, "TEXT_CACHE_CHARS", 10_000)
    tokenizer = _CountingTokenizer()
    scorer = TopicScorer(topics=[parse_topic("crawler")], tokenizer=tokenizer)
    texts = [f"crawler number{i:04d} xxxx" for i in range(1000)]  # 23 characters each
    for text in texts:
        scorer.text_relevance(text)
    tokenizer.texts.clear()
    scorer.text_relevance(texts[-1])  # among the last 10,000 // 23 = 434: remembered
    scorer.text_relevance(texts[0])  # dropped long ago
    huge = "crawler " * 13  # 104 characters: over 1 % of the bound, never kept
    scorer.text_relevance(huge)
    scorer.text_relevance(huge)
    assert tokenizer.texts == [texts[0], huge, huge]


def test_page_terms_pickle_as_their_settings_and_count_the_same() -> None:
    analyzer = PageTerms(stemmer="snowball", user_words=["机器学习"], stem=True)
    copy = pickle.loads(pickle.dumps(analyzer))
    title, text = "Concurrent crawlers", "Concurrency: 机器学习 and crawling, concurrently."
    assert copy(title, text) == analyzer(title, text)
    assert list(copy(title, text)) == ["concurr", "crawler", "机器学习", "crawl"]


def test_a_pages_terms_counted_elsewhere_replace_tokenizing_its_text() -> None:
    analyzer = PageTerms(stemmer="snowball", user_words=[], stem=True)
    scorer = TopicScorer(
        topics=[parse_topic("comet")], tokenizer=analyzer.tokenizer, analyzer=analyzer
    )
    page = fetched_page("http://a.test/", "comets and tails", title="Comets")
    tokenized = scorer.page_terms(page)
    counted = scorer.page_terms(dataclasses.replace(page, terms=analyzer(page.title, page.text)))
    assert counted == tokenized
    assert list(counted) == list(tokenized)
    # The counts are taken as given (the engine's worker made them with this analyzer) ...
    vocabulary = scorer.model.vocabulary
    given = scorer.page_terms(dataclasses.replace(page, terms={"comet": 5}))
    assert given == {vocabulary.id_of("comet"): 5}
    # ... but only by a scorer that has an analyzer: another's counts could differ.
    plain = TopicScorer(topics=[parse_topic("comet")])
    ids = plain.model.vocabulary
    assert plain.page_terms(dataclasses.replace(page, terms={"comet": 5})) == {
        ids.id_of("comet"): 2,
        ids.id_of("tail"): 1,
    }


def test_counts_of_term_counts_equal_the_counts_of_the_tokens() -> None:
    tokens = ["b", "a", "c", "b", "d", "a", "e", "b"]
    for size in (100, 3):  # 3: "d" and "e" find the vocabulary full and share its OOV id
        by_tokens = TfidfModel(vocabulary=Vocabulary(max_size=size)).counts(tokens)
        by_terms = TfidfModel(vocabulary=Vocabulary(max_size=size)).counts_of(Counter(tokens))
        assert by_terms == by_tokens
        assert list(by_terms.items()) == list(by_tokens.items())
    assert by_terms[OOV] == 2


def test_a_weighted_title_counts_as_often_with_or_without_counted_terms() -> None:
    analyzer = PageTerms(stemmer="snowball", user_words=[], stem=True)
    page = fetched_page("http://a.test/", "Comets have tails; a tail of dust.", title="Comet tails")
    expected = TopicScorer(topics=[parse_topic("comet")], tokenizer=analyzer.tokenizer)
    tokens = analyzer.tokenizer.tokens
    by_tokens = expected.model.counts([*tokens(page.title) * 3, *tokens(page.text)])
    for terms in (None, analyzer(page.title, page.text)):
        scorer = TopicScorer(
            topics=[parse_topic("comet")], tokenizer=analyzer.tokenizer, analyzer=analyzer
        )
        counts = scorer.page_terms(dataclasses.replace(page, terms=terms), title_weight=3)
        assert list(counts.items()) == list(by_tokens.items())
