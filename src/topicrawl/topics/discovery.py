"""Topic discovery from short texts: clean, segment, TF-IDF, agglomerative clustering.

A period's posts are cleaned (:func:`clean_text`), cut into words by an injected tokenizer
(:class:`JiebaTokenizer` by default, which handles Chinese and space-separated languages),
vectorised by TF-IDF and clustered bottom-up with average linkage on cosine distance until no
two clusters are more similar than ``similarity_threshold``. A cluster's topic words are the
features whose mean TF-IDF weight over its posts exceeds ``word_threshold``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import jieba
import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_STOPWORDS",
    "DiscoveredTopic",
    "JiebaTokenizer",
    "Tokenizer",
    "TopicDiscoverer",
    "clean_text",
    "is_chinese",
]

Tokenizer = Callable[[str], list[str]]

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_CHAR = re.compile(f"[{_HAN}]")
_NOT_HAN = re.compile(f"[^{_HAN}]+")
_HTML_TAG = re.compile(r"<[^>]{0,500}>")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
# Weibo-style #topic# (no spaces inside, so English "#a b #c" is not swallowed), then #tag.
_PAIRED_HASHTAG = re.compile(r"#[^#\s]{1,60}#")
_HASHTAG = re.compile(r"#[\w\-]+")
# @user, @user@instance.social (Mastodon), @用户名 (Weibo).
_MENTION = re.compile(r"@[\w.\-]+(?:@[\w.\-]+)?")
# Weibo bracket emoticons such as [哈哈] and [doge].
_BRACKET_EMOTICON = re.compile(r"\[[^\[\]\s]{1,8}\]")
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\U00002600-\U000027bf\U00002b00-\U00002bff"
    "\U0001f1e6-\U0001f1ff\ufe0f\u200d\u20e3]+"
)
_SPACE = re.compile(r"\s+")
_WORDLIKE = re.compile(r"[^\W\d_]")  # a token must hold at least one letter (any script)

_STOPWORD_TEXT = """
    a about after all also an and any are as at be been but by can could did do does for from
    had has have he her here him his how i if in into is it its just me more most my no not of
    on or our out over she so some than that the their them then there these they this those
    to up us very was we were what when which who will with would you your rt via amp
    的 了 是 在 和 与 及 或 就 都 而 也 很 还 又 把 被 让 给 对 从 到 上 中 下 着 过 吗 呢 吧 啊
    呀 哦 嗯 我 你 他 她 它 我们 你们 他们 她们 自己 这 那 这个 那个 这些 那些 这样 那样 什么
    怎么 为什么 一个 一些 没有 不是 就是 还是 但是 因为 所以 如果 已经 可以 非常 真的 还有 然后
    今天 现在 大家 一下 这么 那么 有 不 会 要 说 看 去 来 好
"""
DEFAULT_STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def is_chinese(text: str) -> bool:
    """Whether ``text`` holds any Han character."""
    return _HAN_CHAR.search(text) is not None


def clean_text(text: str, *, chinese_only: bool | None = None) -> str:
    """Strip what carries no topic from a post: HTML tags, URLs, mentions, hashtags, emoji.

    Chinese text (``chinese_only`` true, or ``None`` and the cleaned text holds Han
    characters) keeps only its Han characters, runs of anything else becoming one space.
    """
    text = _HTML_TAG.sub(" ", text)
    text = _URL.sub(" ", text)
    text = _MENTION.sub(" ", text)
    text = _PAIRED_HASHTAG.sub(" ", text)
    text = _HASHTAG.sub(" ", text)
    text = _BRACKET_EMOTICON.sub(" ", text)
    text = _EMOJI.sub(" ", text)
    if chinese_only is None:
        chinese_only = is_chinese(text)
    if chinese_only:
        text = _NOT_HAN.sub(" ", text)
    return _SPACE.sub(" ", text).strip()


@lru_cache(maxsize=16)
def _segmenter_with(user_words: frozenset[str]) -> jieba.Tokenizer:
    segmenter = jieba.Tokenizer()
    for word in sorted(user_words):
        segmenter.add_word(word)
    return segmenter


class JiebaTokenizer:
    """Segments text with jieba (Chinese words; other scripts split at spaces and punctuation).

    Tokens are lower-cased; stopwords, tokens without a letter and tokens shorter than
    ``min_length`` characters are dropped. ``user_words`` are never split (for example the
    names of the topic's entities). User words go into a jieba dictionary of topicrawl's own,
    never jieba's global one; tokenizers with the same user words share it. It is loaded on
    first use (one to two seconds).
    """

    def __init__(
        self,
        *,
        user_words: Iterable[str] = (),
        stopwords: Iterable[str] = DEFAULT_STOPWORDS,
        min_length: int = 2,
    ) -> None:
        self._user_words = tuple(word for word in (w.strip() for w in user_words) if word)
        self._stopwords = frozenset(word.lower() for word in stopwords)
        self._min_length = min_length
        self._jieba: jieba.Tokenizer | None = None

    def _segmenter(self) -> jieba.Tokenizer:
        if self._jieba is None:
            self._jieba = _segmenter_with(frozenset(self._user_words))
        return self._jieba

    def __call__(self, text: str) -> list[str]:
        tokens: list[str] = []
        for piece in self._segmenter().lcut(text):
            token = piece.strip().lower()
            if (
                len(token) >= self._min_length
                and token not in self._stopwords
                and _WORDLIKE.search(token)
            ):
                tokens.append(token)
        return tokens


@dataclass(frozen=True, slots=True)
class DiscoveredTopic:
    """One cluster of a period's posts.

    ``words`` maps each topic word to its mean TF-IDF weight in the cluster, strongest first;
    ``members`` are the indices of the cluster's posts in the texts given to
    :meth:`TopicDiscoverer.discover`.
    """

    words: Mapping[str, float] = field(compare=False, hash=False)
    members: tuple[int, ...]


class TopicDiscoverer:
    """Finds the topics of one period's posts.

    Args:
        tokenizer: text -> words; default a :class:`JiebaTokenizer`.
        similarity_threshold: clusters merge while their average cosine similarity is above
            this (the clustering's distance threshold is ``1 - similarity_threshold``).
        word_threshold: a feature is a topic word when its mean TF-IDF weight in the cluster
            exceeds this. A cluster with no such feature keeps its single strongest one.
        min_posts: smaller clusters are noise, not topics.
        max_words: at most this many topic words per topic.
        chinese_only: passed to :func:`clean_text` (``None``: decide per post).

    Clustering needs the ``n x n`` distance matrix: memory grows with the square of the posts
    per period (10,000 posts take 800 MB), so sample large periods before discovery.
    """

    def __init__(
        self,
        *,
        tokenizer: Tokenizer | None = None,
        similarity_threshold: float = 0.1,
        word_threshold: float = 0.15,
        min_posts: int = 2,
        max_words: int = 10,
        chinese_only: bool | None = None,
    ) -> None:
        if not 0.0 <= similarity_threshold < 1.0:
            raise ValueError("similarity_threshold must be in [0, 1)")
        if min_posts < 1 or max_words < 1:
            raise ValueError("min_posts and max_words must be >= 1")
        self._tokenizer: Tokenizer = tokenizer if tokenizer is not None else JiebaTokenizer()
        self._similarity_threshold = similarity_threshold
        self._word_threshold = word_threshold
        self._min_posts = min_posts
        self._max_words = max_words
        self._chinese_only = chinese_only

    def discover(self, texts: Sequence[str]) -> tuple[DiscoveredTopic, ...]:
        """Cluster ``texts`` into topics, largest first; posts in no topic are left out."""
        cleaned = [clean_text(text, chinese_only=self._chinese_only) for text in texts]
        tokens = [self._tokenizer(text) for text in cleaned]
        kept = [i for i, words in enumerate(tokens) if words]
        if len(kept) < self._min_posts:
            return ()
        # scikit-learn takes seconds to import: only pay for it when there is work to do.
        from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: PLC0415

        vectorizer = TfidfVectorizer(
            analyzer=lambda doc: doc,  # documents arrive already as token lists
            lowercase=False,
        )
        matrix = vectorizer.fit_transform([tokens[i] for i in kept])
        features = vectorizer.get_feature_names_out()
        labels = self._cluster(matrix)
        topics: list[DiscoveredTopic] = []
        for label in np.unique(labels):
            rows = np.flatnonzero(labels == label)
            if len(rows) < self._min_posts:
                continue
            mean = np.asarray(matrix[rows].mean(axis=0)).ravel()
            order = np.argsort(-mean, kind="stable")
            chosen = [k for k in order[: self._max_words] if mean[k] > self._word_threshold]
            if not chosen:
                chosen = [int(order[0])]
            words = {str(features[k]): float(mean[k]) for k in chosen}
            members = tuple(kept[int(r)] for r in rows)
            topics.append(DiscoveredTopic(words=MappingProxyType(words), members=members))
        topics.sort(key=lambda topic: (-len(topic.members), topic.members[0]))
        return tuple(topics)

    def _cluster(self, matrix: Any) -> npt.NDArray[np.intp]:
        """Cluster labels of the rows of a sparse TF-IDF matrix."""
        if matrix.shape[0] == 1:
            return np.zeros(1, dtype=np.intp)
        from sklearn.cluster import AgglomerativeClustering  # noqa: PLC0415
        from sklearn.metrics.pairwise import cosine_distances  # noqa: PLC0415

        # Cosine distances computed once from the sparse matrix (the clustering would otherwise
        # densify the whole TF-IDF matrix); rounding can leave tiny negatives and a non-zero
        # diagonal, which are cleaned up.
        distances = np.clip(cosine_distances(matrix), 0.0, 2.0)
        np.fill_diagonal(distances, 0.0)
        clustering = AgglomerativeClustering(
            n_clusters=None,
            metric="precomputed",
            linkage="average",
            distance_threshold=1.0 - self._similarity_threshold,
        )
        labels: npt.NDArray[np.intp] = np.asarray(clustering.fit_predict(distances), dtype=np.intp)
        return labels
