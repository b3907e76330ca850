"""Sparse TF-IDF vectors over a growing collection, with IDF = log(N / n_k + 0.01)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import cast

__all__ = [
    "OOV",
    "SparseVector",
    "TfidfModel",
    "Vocabulary",
    "centroid",
    "combine",
    "cosine",
    "dot",
    "norm",
    "normalized",
]

SparseVector = dict[int, float]
"""A sparse vector: term id -> weight. Missing ids weigh 0."""

OOV = -1
"""The id every new term gets once the vocabulary is full."""


class Vocabulary:
    """Term <-> id mapping that only grows, up to ``max_size`` terms.

    The cap keeps memory bounded on hostile input (pages of random tokens): past it, new
    terms share the id :data:`OOV`, so they still count in vector norms.
    """

    def __init__(self, *, max_size: int = 2_000_000) -> None:
        if max_size < 1:
            raise ValueError("a vocabulary needs room for at least one term")
        self._ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._max_size = max_size

    def __len__(self) -> int:
        return len(self._terms)

    def __contains__(self, term: object) -> bool:
        return term in self._ids

    def id_of(self, term: str) -> int:
        """Return the id of ``term``, adding it if there is room (else :data:`OOV`)."""
        term_id = self._ids.get(term)
        if term_id is not None:
            return term_id
        if len(self._terms) >= self._max_size:
            return OOV
        term_id = len(self._terms)
        self._ids[term] = term_id
        self._terms.append(term)
        return term_id

    def ids_of(self, terms: Sequence[str]) -> list[int]:
        """``[id_of(term) for term in terms]``, new terms added in the order they come, with
        one dictionary lookup a term when all are known (the common case)."""
        ids = list(map(self._ids.get, terms))
        if None not in ids:
            return cast("list[int]", ids)
        id_of = self.id_of
        pairs = zip(ids, terms, strict=True)
        return [id_of(term) if known is None else known for known, term in pairs]

    def get(self, term: str) -> int | None:
        """Return the id of ``term`` or ``None``, without adding it."""
        return self._ids.get(term)

    def term(self, term_id: int) -> str:
        """Return the term with id ``term_id`` (``"<oov>"`` for :data:`OOV`)."""
        return "<oov>" if term_id == OOV else self._terms[term_id]


class TfidfModel:
    """Document frequencies kept up to date as pages arrive, and the TF-IDF weights they give.

    A term's weight in a document is ``tf * log(N / n_k + 0.01)`` (``tf`` its count in the
    document, ``N`` the documents seen, ``n_k`` those containing the term), and vectors are
    L2-normalised. A term no document has contained yet counts as ``n_k = 1``, and ``N`` is
    at least ``n_k``, so every IDF is at least ``log(1.01)`` and never undefined. A document
    may be added with a weight (1 by default): it then counts as that fraction of a document
    in ``N`` and in the ``n_k`` of its terms.
    """

    def __init__(self, *, vocabulary: Vocabulary | None = None) -> None:
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        self._df: dict[int, float] = {}
        self._documents = 0.0

    @property
    def documents(self) -> float:
        """``N``: the documents added, each counted with its weight."""
        return self._documents

    def df(self, term_id: int) -> float:
        """``n_k``: the added documents that contain the term, each counted with its weight."""
        return self._df.get(term_id, 0.0)

    def idf(self, term_id: int) -> float:
        """``log(N / n_k + 0.01)`` for the term, under the conventions above."""
        containing = max(self._df.get(term_id, 0.0), 1.0)
        return math.log(max(self._documents, containing) / containing + 0.01)

    def counts(self, tokens: Iterable[str]) -> Counter[int]:
        """Term-id counts of a token sequence (new terms join the vocabulary)."""
        if not isinstance(tokens, Sequence):
            tokens = list(tokens)
        return Counter(self.vocabulary.ids_of(tokens))

    def counts_of(self, terms: Mapping[str, int]) -> Counter[int]:
        """Term-id counts of term counts (new terms join the vocabulary): equal to
        :meth:`counts` of the tokens ``terms`` counted, in the same order when ``terms`` is
        in the order the terms first occur."""
        ids = self.vocabulary.ids_of(list(terms))
        counts: Counter[int] = Counter()
        dict.update(counts, zip(ids, terms.values(), strict=True))
        if len(counts) < len(ids):  # terms past a full vocabulary share its OOV id: add them up
            counts.clear()
            for term_id, count in zip(ids, terms.values(), strict=True):
                counts[term_id] += count
        return counts

    def add_document(self, counts: Mapping[int, int], *, weight: float = 1.0) -> None:
        """Count one more document containing the terms of ``counts``, as ``weight`` of a
        document (0 leaves the counts as they are).

        Raises:
            ValueError: ``weight`` is negative or not finite.
        """
        if not (math.isfinite(weight) and weight >= 0.0):
            raise ValueError(f"a document's weight must be finite and >= 0, not {weight}")
        if weight == 0.0:
            return
        df = self._df
        for term_id in counts:
            df[term_id] = df.get(term_id, 0.0) + weight
        self._documents += weight

    def weigh(
        self,
        counts: Mapping[int, int],
        *,
        smooth: bool = False,
        capped: Container[int] = (),
        cap: float = 1.0,
    ) -> SparseVector:
        """The L2-normalised TF-IDF vector of a document's term counts.

        With ``smooth``, the IDF is ``log((1 + N) / (1 + n_k)) + 1``: at least 1, so a term
        every document so far contains still counts (the plain IDF gives it ``log(1.01)``,
        about a hundredth of a rare term's), and at most ``1 + log(1 + N)`` times that.
        Otherwise the terms in ``capped`` count as contained in at most ``cap`` of the
        documents (``n_k <= cap * N``, and never under 1): their IDF is at least
        ``log(1 / cap + 0.01)``.
        """
        documents = self._documents
        df = self._df
        weights: SparseVector = {}
        if smooth:
            for term_id, tf in counts.items():
                weights[term_id] = tf * (
                    math.log((1.0 + documents) / (1.0 + df.get(term_id, 0.0))) + 1.0
                )
            return normalized(weights)
        most = max(cap * documents, 1.0)
        for term_id, tf in counts.items():
            containing = max(df.get(term_id, 0.0), 1.0)
            if containing > most and term_id in capped:
                containing = most
            weights[term_id] = tf * math.log(max(documents, containing) / containing + 0.01)
        return normalized(weights)

    def vectorize(self, tokens: Iterable[str], *, add: bool = False) -> SparseVector:
        """The TF-IDF vector of ``tokens``; with ``add`` the document first joins the counts."""
        counts = self.counts(tokens)
        if add:
            self.add_document(counts)
        return self.weigh(counts)


def dot(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    """Inner product of two sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(weight * b.get(term_id, 0.0) for term_id, weight in a.items())


def norm(vector: Mapping[int, float]) -> float:
    """Euclidean length."""
    return math.sqrt(sum(weight * weight for weight in vector.values()))


def normalized(vector: Mapping[int, float]) -> SparseVector:
    """The vector scaled to length 1 (an all-zero vector stays empty)."""
    length = norm(vector)
    if length == 0.0:
        return {}
    return {term_id: weight / length for term_id, weight in vector.items() if weight != 0.0}


def cosine(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    """Cosine similarity; 0 when either vector is all zeros."""
    lengths = norm(a) * norm(b)
    return dot(a, b) / lengths if lengths > 0.0 else 0.0


def centroid(vectors: Sequence[Mapping[int, float]]) -> SparseVector:
    """The mean of the vectors (empty for no vectors)."""
    if not vectors:
        return {}
    return combine((1.0 / len(vectors), vector) for vector in vectors)


def combine(terms: Iterable[tuple[float, Mapping[int, float]]]) -> SparseVector:
    """The linear combination ``sum(coefficient * vector)``."""
    out: SparseVector = {}
    for coefficient, vector in terms:
        for term_id, weight in vector.items():
            out[term_id] = out.get(term_id, 0.0) + coefficient * weight
    return out
