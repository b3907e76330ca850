"""Topic profiles, topic vectors (with their history) and page relevance = cosine to a topic."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Page
from topicrawl.core.protocols import TextAnalyzer
from topicrawl.text.tokenize import Tokenizer
from topicrawl.text.vectors import SparseVector, TfidfModel, Vocabulary, cosine, norm

__all__ = [
    "Relevance",
    "TopicProfile",
    "TopicScorer",
    "TopicSnapshot",
    "TopicVector",
    "page_relevance",
    "parse_topic",
    "topic_weights",
    "unsplittable_keywords",
]

TEXT_CACHE_CHARS = 4_000_000
"""How many characters of short texts a :class:`TopicScorer` keeps the term counts of."""

_KEYWORD_SEPARATORS = re.compile(r"[,;，；、\n]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProfile:
    """What a user asks for: a name, keyword phrases (weight 1 each) and an optional description."""

    name: str
    keywords: tuple[str, ...]
    description: str = ""


def parse_topic(text: str) -> TopicProfile:
    """Read a topic string: ``"kw1, kw2; kw3 | optional description"``.

    Keyword phrases are separated by commas, semicolons, ``、`` or new lines (ASCII or
    full-width); what follows the first ``|`` is the description.

    Raises:
        ConfigError: the string has no keywords.
    """
    keyword_part, _, description = text.partition("|")
    keywords = tuple(
        phrase for raw in _KEYWORD_SEPARATORS.split(keyword_part) if (phrase := raw.strip())
    )
    if not keywords:
        raise ConfigError(f"topic {text!r} has no keywords")
    return TopicProfile(
        name=", ".join(keywords), keywords=keywords, description=description.strip()
    )


def unsplittable_keywords(profiles: Iterable[TopicProfile]) -> list[str]:
    """Chinese keyword phrases without spaces, which the tokenizer keeps whole."""
    return [
        keyword
        for profile in profiles
        for keyword in profile.keywords
        if _CJK.search(keyword) and not any(ch.isspace() for ch in keyword)
    ]


def topic_weights(
    profile: TopicProfile,
    *,
    tokenizer: Tokenizer,
    vocabulary: Vocabulary,
    description_weight: float = 0.5,
) -> SparseVector:
    """The initial topic vector: every keyword token weighs 1, description-only tokens less.

    Raises:
        ConfigError: every keyword is a stopword, so the topic would match nothing.
    """
    weights: SparseVector = {}
    for token in tokenizer.tokens(profile.description):
        weights[vocabulary.id_of(token)] = description_weight
    keyword_tokens = tokenizer.tokens("\n".join(profile.keywords))
    if not keyword_tokens:
        raise ConfigError(f"topic {profile.name!r} has only stopwords for keywords")
    for token in keyword_tokens:
        weights[vocabulary.id_of(token)] = 1.0
    return {term_id: weight for term_id, weight in weights.items() if weight > 0.0}


@dataclass(frozen=True, slots=True)
class Relevance:
    """A page's relevance: the best cosine over the topics, which topic, and every topic's."""

    score: float
    topic: int
    scores: tuple[float, ...]


def page_relevance(page: Mapping[int, float], topics: Sequence[Mapping[int, float]]) -> Relevance:
    """Cosine of the page vector to each topic vector; the best wins (the first on ties)."""
    scores = tuple(cosine(page, topic) for topic in topics)
    if not scores:
        return Relevance(0.0, -1, ())
    best = max(range(len(scores)), key=scores.__getitem__)
    return Relevance(scores[best], best, scores)


@dataclass(frozen=True, slots=True)
class TopicSnapshot:
    """One state of a topic vector, for display: its terms by weight, and when it was set."""

    pages: int
    weights: tuple[tuple[str, float], ...]
    threshold: float | None = None


class TopicVector:
    """A topic's term weights, which the topic update moves, and the history of their values."""

    def __init__(
        self,
        *,
        profile: TopicProfile,
        weights: Mapping[int, float],
        vocabulary: Vocabulary,
        keyword_ids: Iterable[int] = (),
        max_history: int = 100,
    ) -> None:
        self.profile = profile
        self._vocabulary = vocabulary
        self._weights: SparseVector = dict(weights)
        self.initial_weights: Mapping[int, float] = MappingProxyType(dict(weights))
        self.keyword_ids = frozenset(keyword_ids)
        self._history: list[TopicSnapshot] = []
        self._max_history = max_history
        self.version = 0  # goes up each time the weights change
        self._snapshot(pages=0, threshold=None)

    @property
    def weights(self) -> Mapping[int, float]:
        """Term id -> weight (read-only view; use :meth:`update` to change)."""
        return MappingProxyType(self._weights)

    @property
    def history(self) -> tuple[TopicSnapshot, ...]:
        """Every value the vector has had, oldest first (the first is the user's profile)."""
        return tuple(self._history)

    @property
    def updated(self) -> bool:
        """Whether the vector has moved from the user's profile (a topic update ran)."""
        return len(self._history) > 1

    def terms(self) -> list[tuple[str, float]]:
        """The weighted terms, heaviest first."""
        return sorted(
            ((self._vocabulary.term(t), w) for t, w in self._weights.items()),
            key=lambda item: (-item[1], item[0]),
        )

    def update(self, weights: Mapping[int, float], *, pages: int, threshold: float | None) -> None:
        """Replace the weights (an all-zero vector is refused: the topic would match nothing)."""
        if norm(weights) == 0.0:
            raise ValueError("a topic vector cannot be all zeros")
        self._weights = {t: w for t, w in weights.items() if w > 0.0}
        self.version += 1
        self._snapshot(pages=pages, threshold=threshold)

    def restore(self, history: Sequence[TopicSnapshot]) -> None:
        """Continue from a saved history (a resumed crawl): the weights become the last
        snapshot's (terms looked up in, or added to, this crawl's vocabulary).

        Raises:
            ValueError: the history is empty or its last vector is all zeros.
        """
        if not history:
            raise ValueError("a topic history needs at least one snapshot")
        weights = {self._vocabulary.id_of(term): w for term, w in history[-1].weights if w > 0}
        if norm(weights) == 0.0:
            raise ValueError("a topic vector cannot be all zeros")
        self._weights = weights
        self.version += 1
        self._history = list(history)[-self._max_history :]

    def _snapshot(self, *, pages: int, threshold: float | None) -> None:
        self._history.append(TopicSnapshot(pages, tuple(self.terms()), threshold))
        if len(self._history) > self._max_history:
            # Keep the user's original profile and the most recent values.
            del self._history[1]


class TopicScorer:
    """The text pipeline of one crawl: tokenizer, TF-IDF collection statistics, topic vectors.

    Args:
        topics: the crawl's topics (at least one).
        user_words: extra words the tokenizer must not split (Chinese keyword phrases of the
            topics are added automatically).
        tokenizer: use this tokenizer instead of building one (``user_words`` is then ignored).
        analyzer: counts a page's terms as ``tokenizer`` would (the engine runs it in its
            parse workers); only with it are a page's ``terms`` used instead of its text.
        description_weight: initial weight of terms that appear only in a topic's description.
        stem: fold English plurals.
    """

    def __init__(
        self,
        *,
        topics: Sequence[TopicProfile],
        user_words: Iterable[str] = (),
        tokenizer: Tokenizer | None = None,
        analyzer: TextAnalyzer | None = None,
        description_weight: float = 0.5,
        stem: bool = True,
    ) -> None:
        if not topics:
            raise ConfigError("at least one topic is needed to score relevance")
        self.tokenizer = tokenizer or Tokenizer(
            user_words=[*user_words, *unsplittable_keywords(topics)], stem=stem
        )
        self.analyzer = analyzer
        self.smooth_text_idf = False
        """Short texts (anchors, URL words, link blocks) weighed with the smoothed IDF (see
        :meth:`~topicrawl.text.vectors.TfidfModel.weigh`); pages always with the plain one."""
        self.topic_df_cap = 1.0
        """In short texts, a term of a topic's vector counts as contained in at most this
        share of the pages seen (its IDF at least ``log(1 / cap + 0.01)``); 1: as counted."""
        self.page_df_cap = 1.0
        """The same for a crawled page's vector (:meth:`page_weights`); 1: the plain IDF."""
        self.model = TfidfModel()
        vocabulary = self.model.vocabulary
        self.topics = tuple(
            TopicVector(
                profile=profile,
                weights=topic_weights(
                    profile,
                    tokenizer=self.tokenizer,
                    vocabulary=vocabulary,
                    description_weight=description_weight,
                ),
                vocabulary=vocabulary,
                keyword_ids=[
                    vocabulary.id_of(token)
                    for token in self.tokenizer.tokens("\n".join(profile.keywords))
                ],
            )
            for profile in topics
        )
        self._text_counts: dict[str, Counter[int]] = {}  # oldest first
        self._cached_chars = 0
        self._terms: frozenset[int] = frozenset()
        self._terms_key: tuple[int, ...] | None = None

    def page_terms(self, page: Page, *, title_weight: int = 1) -> Counter[int]:
        """The term counts of a page's title and text (new terms join the vocabulary), the
        title's counted ``title_weight`` times: the text's are those the engine's parse
        worker counted with :attr:`analyzer`, if it did."""
        if page.terms is not None and self.analyzer is not None:
            counts = self.model.counts_of(page.terms)
        else:
            counts = self.model.counts(self.tokenizer.tokens(f"{page.title}\n{page.text}"))
        if title_weight > 1:
            for term_id, count in self.model.counts(self.tokenizer.tokens(page.title)).items():
                counts[term_id] += count * (title_weight - 1)
        return counts

    def page_vector(self, page: Page, *, learn: bool) -> SparseVector:
        """The TF-IDF vector of a page's title and text; ``learn`` first adds it to the
        collection."""
        counts = self.page_terms(page)
        if learn:
            self.model.add_document(counts)
        return self.model.weigh(counts)

    def page_weights(self, counts: Mapping[int, int]) -> SparseVector:
        """The TF-IDF vector of a crawled page's term counts, the topic's terms capped at
        :attr:`page_df_cap` of the pages seen (not added to the collection)."""
        cap = self.page_df_cap
        if cap >= 1.0:
            return self.model.weigh(counts)
        return self.model.weigh(counts, capped=self._topic_terms(), cap=cap)

    def text_counts(self, text: str) -> Mapping[int, int]:
        """The term counts of a short text (an anchor block, a link's words; new terms join the
        vocabulary), remembered: the same anchors and URL words come back on page after page
        and at every re-scoring of the waiting links, and a term's id never changes. Texts
        are kept up to :data:`TEXT_CACHE_CHARS` characters in all, the first seen dropped
        first."""
        counts = self._text_counts.get(text)
        if counts is None:
            counts = self.model.counts(self.tokenizer.tokens(text))
            self._remember(text, counts)
        return counts

    def text_vector(self, text: str) -> SparseVector:
        """The TF-IDF vector of a short text (an anchor block), not added to the collection."""
        return self.model.weigh(self.text_counts(text))

    def relevance(self, vector: Mapping[int, float]) -> Relevance:
        """The vector's relevance to the crawl's topics."""
        return page_relevance(vector, [topic.weights for topic in self.topics])

    def text_relevance(self, text: str, *, initial: bool = False) -> float:
        """The best cosine of a short text to any topic (0 for empty text); with ``initial``,
        to the user's own vectors too (a topic update cannot make a text score lower)."""
        if not text.strip():
            return 0.0
        counts = self.text_counts(text)
        if self._topic_terms().isdisjoint(counts):
            return 0.0  # no term in common with any topic vector: every cosine is 0
        cap = self.topic_df_cap
        vector = self.model.weigh(
            counts,
            smooth=self.smooth_text_idf,
            capped=self._topic_terms() if cap < 1.0 else (),
            cap=cap,
        )
        score = self.relevance(vector).score
        moved = [t.initial_weights for t in self.topics if t.updated] if initial else []
        if moved:
            score = max(score, page_relevance(vector, moved).score)
        return score

    def _remember(self, text: str, counts: Counter[int]) -> None:
        if len(text) > TEXT_CACHE_CHARS // 100:
            return  # one huge text would push out hundreds of short ones
        self._text_counts[text] = counts
        self._cached_chars += len(text)
        while self._cached_chars > TEXT_CACHE_CHARS:
            oldest = next(iter(self._text_counts))
            del self._text_counts[oldest]
            self._cached_chars -= len(oldest)

    def _topic_terms(self) -> frozenset[int]:
        """Every term of every topic's current and initial vector."""
        key = tuple(topic.version for topic in self.topics)
        if key != self._terms_key:
            self._terms = frozenset(
                term
                for topic in self.topics
                for vector in (topic.weights, topic.initial_weights)
                for term in vector
            )
            self._terms_key = key
        return self._terms
