"""An LDA filter: keep the accounts (or sources) whose posts are about a domain.

Each account's posts are one document (tokenised by :class:`~topicrawl.text.tokenize.Tokenizer`:
jieba for Chinese, the domain's names kept whole as user words). scikit-learn's
:class:`~sklearn.decomposition.LatentDirichletAllocation` is fitted on all the documents.
The domain is a set of words (the user's words plus the site's entity names), and similarity
is measured in the model's own topic space, no downloaded model:

- a word's vector is its column of the topic-word matrix (how much each topic uses it);
- the domain's vector is the normalised sum of its words' vectors;
- a topic's similarity to the domain is the mean cosine of its top ``M`` words to the domain
  vector, weighted by the words' probabilities in the topic;
- an account's score is the sum over its top ``N`` topics of its share of the topic times that
  topic's similarity (so it is between 0 and 1).

Accounts under ``threshold`` are dropped, except those the caller says to keep (the name
matches of the strict steps). Defaults: N = 5, M = 20.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer

from topicrawl.core.errors import ConfigError
from topicrawl.text.tokenize import Tokenizer

__all__ = ["DomainScore", "LdaFilter", "LdaSettings"]

_MAX_DOC_CHARS = 200_000  # an account's posts joined are cut here


@dataclass(frozen=True, slots=True)
class LdaSettings:
    """The LDA filter's knobs (see the module docstring)."""

    topics: int = 20
    top_topics: int = 5
    top_words: int = 20
    threshold: float = 0.3
    max_features: int = 20_000
    max_iter: int = 30
    seed: int = 0

    def __post_init__(self) -> None:
        if self.topics < 1 or self.top_topics < 1 or self.top_words < 1:
            raise ConfigError("topics, top_topics and top_words must be >= 1")
        if not (0.0 <= self.threshold <= 1.0 and math.isfinite(self.threshold)):
            raise ConfigError(f"threshold must be in [0, 1], got {self.threshold}")
        if self.max_features < 1 or self.max_iter < 1:
            raise ConfigError("max_features and max_iter must be >= 1")


@dataclass(frozen=True, slots=True)
class DomainScore:
    """An account's domain score, its top topics (ids) and the top words of its first one."""

    account: str
    score: float
    topics: tuple[int, ...]
    words: tuple[str, ...]
    kept: bool


class LdaFilter:
    """Scores documents against a domain with LDA (see the module docstring).

    Args:
        domain_words: the domain: user words and entity names, English or Chinese.
        settings: the filter's knobs.
    """

    def __init__(self, domain_words: Iterable[str], *, settings: LdaSettings | None = None) -> None:
        words = sorted({w.strip() for w in domain_words if w and w.strip()})
        if not words:
            raise ConfigError("the LDA filter needs at least one domain word")
        self.settings = settings or LdaSettings()
        self._tokenizer = Tokenizer(user_words=[w for w in words if len(w) <= 40])
        self._domain = sorted({t for w in words for t in self._tokenizer.tokens(w)})
        self.domain_hits = 0  # domain tokens found in the last fit's vocabulary

    def score(
        self, documents: Mapping[str, str], *, keep: Collection[str] = ()
    ) -> dict[str, DomainScore]:
        """Each document's :class:`DomainScore`; ``kept`` is score >= threshold or in ``keep``.

        With no word in common between the documents and the domain every score is 0; so is
        the score of a document with no word.
        """
        ids = sorted(documents)
        texts = [documents[i][:_MAX_DOC_CHARS] for i in ids]
        s = self.settings
        vectorizer = CountVectorizer(
            analyzer=self._tokenizer.tokens, max_features=s.max_features, dtype=np.float64
        )
        try:
            counts = vectorizer.fit_transform(texts)
        except ValueError:  # no token in any document
            return {i: DomainScore(i, 0.0, (), (), i in keep) for i in ids}
        vocab = vectorizer.get_feature_names_out()
        lda = LatentDirichletAllocation(
            n_components=s.topics, max_iter=s.max_iter, random_state=s.seed, learning_method="batch"
        )
        theta = lda.fit_transform(counts)  # documents x topics, rows sum to 1
        phi = lda.components_ / lda.components_.sum(axis=1, keepdims=True)  # topics x words
        topic_sim, top_words = self._topic_similarity(phi, list(vocab))
        out: dict[str, DomainScore] = {}
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        for row, account in enumerate(ids):
            if lengths[row] == 0:  # no word: LDA would give it the prior, not evidence
                out[account] = DomainScore(account, 0.0, (), (), account in keep)
                continue
            order = np.argsort(-theta[row], kind="stable")[: s.top_topics]
            value = float(sum(theta[row, t] * topic_sim[t] for t in order))
            value = min(1.0, max(0.0, value))
            first = top_words[int(order[0])] if len(order) else ()
            kept = value >= s.threshold or account in keep
            topics = tuple(int(t) for t in order)
            out[account] = DomainScore(account, value, topics, first, kept)
        return out

    def _topic_similarity(
        self, phi: np.ndarray, vocab: list[str]
    ) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Each topic's similarity to the domain, and each topic's top words."""
        index = {word: k for k, word in enumerate(vocab)}
        hits = [index[w] for w in self._domain if w in index]
        self.domain_hits = len(hits)
        norms = np.linalg.norm(phi, axis=0)
        word_vectors = phi / np.where(norms > 0, norms, 1.0)  # topics x words, unit columns
        top = np.argsort(-phi, axis=1, kind="stable")[:, : self.settings.top_words]
        top_words = [tuple(vocab[k] for k in row) for row in top]
        if not hits:
            return np.zeros(phi.shape[0]), top_words
        domain = word_vectors[:, hits].sum(axis=1)
        domain = domain / (np.linalg.norm(domain) or 1.0)
        cosines = domain @ word_vectors  # one per word, in [0, 1]
        sims = np.empty(phi.shape[0])
        for t in range(phi.shape[0]):
            weights = phi[t, top[t]]
            sims[t] = float(weights @ cosines[top[t]] / (weights.sum() or 1.0))
        return sims, top_words
