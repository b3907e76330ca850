"""The topic-word table: topics that keep their identity and heat history from period to period.

Each period the clusters found by :class:`~topicrawl.topics.discovery.TopicDiscoverer` are
matched against the table's active topics by the similarity of their topic words. A cluster
close enough to a topic continues it (several clusters may continue one topic: a topic split
in two this period stays one topic); a cluster close to none starts a new topic; a topic no
cluster continued for ``retire_after`` periods retires and is no longer matched.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from topicrawl.topics.discovery import DiscoveredTopic

__all__ = [
    "PeriodUpdate",
    "TopicWordTable",
    "TrackedTopic",
    "WordSimilarity",
    "word_similarity",
]


class WordSimilarity(enum.StrEnum):
    """How two topics' words are compared."""

    COSINE = "cosine"  # over the words' weights
    JACCARD = "jaccard"  # over the sets of words


def word_similarity(
    a: Mapping[str, float], b: Mapping[str, float], kind: WordSimilarity = WordSimilarity.COSINE
) -> float:
    """Similarity in [0, 1] of two weighted word sets; 0 when either is empty."""
    if not a or not b:
        return 0.0
    if kind is WordSimilarity.JACCARD:
        return len(a.keys() & b.keys()) / len(a.keys() | b.keys())
    dot = math.fsum(a[w] * b[w] for w in a.keys() & b.keys())
    norm = math.sqrt(math.fsum(v * v for v in a.values())) * math.sqrt(
        math.fsum(v * v for v in b.values())
    )
    return min(1.0, max(0.0, dot / norm)) if norm > 0.0 else 0.0


@dataclass(frozen=True, slots=True)
class TrackedTopic:
    """A topic as the table knows it.

    ``heat_history`` holds ``(period, heat)`` pairs in period order: one for every period the
    topic was active once heats are being recorded (0 for a period in which no post of it was
    seen). ``retired_at`` is the period in which it retired, or ``None`` while it is active.
    """

    topic_id: int
    words: Mapping[str, float] = field(compare=False, hash=False)
    first_seen: int
    last_seen: int
    heat_history: tuple[tuple[int, float], ...] = ()
    retired_at: int | None = None

    @property
    def active(self) -> bool:
        return self.retired_at is None

    @property
    def heat_series(self) -> tuple[float, ...]:
        """The heats alone, oldest first: what a forecaster takes."""
        return tuple(heat for _, heat in self.heat_history)


@dataclass(frozen=True, slots=True)
class PeriodUpdate:
    """What one :meth:`TopicWordTable.update` did.

    ``assignments`` maps each continued or new topic to the indices of the period's clusters
    that make it up; ``heats`` the heat recorded for each active topic this period (empty when
    no post heats were given).
    """

    period: int
    assignments: Mapping[int, tuple[int, ...]] = field(compare=False, hash=False)
    new_topics: tuple[int, ...]
    continued: tuple[int, ...]
    retired: tuple[int, ...]
    heats: Mapping[int, float] = field(compare=False, hash=False)


def _top_words(words: Mapping[str, float], limit: int) -> Mapping[str, float]:
    ranked = sorted(((w, v) for w, v in words.items() if v > 0.0), key=lambda wv: (-wv[1], wv[0]))
    return MappingProxyType(dict(ranked[:limit]))


class TopicWordTable:
    """Topics with stable ids, their current words and their heat history.

    Args:
        match_threshold: a cluster continues the most similar active topic when their word
            similarity is at least this.
        similarity: cosine over word weights (default) or Jaccard over word sets.
        retire_after: a topic that no cluster continued for this many periods retires.
        word_memory: a continued topic's words become ``word_memory * old +
            (1 - word_memory) * new``, so topics may drift slowly without losing identity.
        max_words: words kept per topic.
        topics: topics to start from (for example loaded from storage).
    """

    def __init__(
        self,
        *,
        match_threshold: float = 0.3,
        similarity: WordSimilarity = WordSimilarity.COSINE,
        retire_after: int = 3,
        word_memory: float = 0.5,
        max_words: int = 20,
        topics: Iterable[TrackedTopic] = (),
    ) -> None:
        if not 0.0 < match_threshold <= 1.0:
            raise ValueError("match_threshold must be in (0, 1]")
        if retire_after < 1 or max_words < 1:
            raise ValueError("retire_after and max_words must be >= 1")
        if not 0.0 <= word_memory < 1.0:
            raise ValueError("word_memory must be in [0, 1)")
        self._match_threshold = match_threshold
        self._similarity = similarity
        self._retire_after = retire_after
        self._word_memory = word_memory
        self._max_words = max_words
        self._topics: dict[int, TrackedTopic] = {}
        for topic in topics:
            if topic.topic_id in self._topics:
                raise ValueError(f"topic id {topic.topic_id} appears twice")
            self._topics[topic.topic_id] = topic
        self._next_id = max(self._topics, default=0) + 1
        self._last_period: int | None = max(
            (max(t.last_seen, t.retired_at or t.last_seen) for t in self._topics.values()),
            default=None,
        )

    @property
    def last_period(self) -> int | None:
        """The latest period the table has seen, or ``None`` before the first update."""
        return self._last_period

    @property
    def active(self) -> tuple[TrackedTopic, ...]:
        return tuple(t for t in self._topics.values() if t.active)

    @property
    def retired(self) -> tuple[TrackedTopic, ...]:
        return tuple(t for t in self._topics.values() if not t.active)

    def __getitem__(self, topic_id: int) -> TrackedTopic:
        return self._topics[topic_id]

    def __contains__(self, topic_id: object) -> bool:
        return topic_id in self._topics

    def __len__(self) -> int:
        return len(self._topics)

    def update(
        self,
        period: int,
        clusters: Sequence[DiscoveredTopic],
        *,
        post_heats: Sequence[float] | None = None,
    ) -> PeriodUpdate:
        """Fold one period's clusters into the table.

        Args:
            period: the period number; it must be later than any period seen before.
            clusters: the period's topics from discovery.
            post_heats: each post's heat, indexed like the clusters' ``members``; when given,
                every active topic records the mean heat of its posts this period (0 if none).
        """
        if self._last_period is not None and period <= self._last_period:
            raise ValueError(f"period {period} is not after the last period {self._last_period}")
        heats_of_posts = _check_heats(post_heats, clusters)
        candidates = self.active
        assignments: dict[int, list[int]] = {}
        new_topics: list[int] = []
        for index, cluster in enumerate(clusters):
            best: TrackedTopic | None = None
            best_score = -1.0
            for topic in candidates:
                score = word_similarity(cluster.words, topic.words, self._similarity)
                if score > best_score:
                    best, best_score = topic, score
            if best is not None and best_score >= self._match_threshold:
                assignments.setdefault(best.topic_id, []).append(index)
            else:
                topic_id = self._next_id
                self._next_id += 1
                new_topics.append(topic_id)
                assignments[topic_id] = [index]
        for topic_id, indices in assignments.items():
            words = _merged_words([clusters[i] for i in indices])
            if topic_id in self._topics:
                old = self._topics[topic_id]
                keep = self._word_memory
                blended = {
                    w: keep * old.words.get(w, 0.0) + (1.0 - keep) * words.get(w, 0.0)
                    for w in old.words.keys() | words.keys()
                }
                self._topics[topic_id] = replace(
                    old, words=_top_words(blended, self._max_words), last_seen=period
                )
            else:
                self._topics[topic_id] = TrackedTopic(
                    topic_id=topic_id,
                    words=_top_words(words, self._max_words),
                    first_seen=period,
                    last_seen=period,
                )
        retired: list[int] = []
        for topic in self.active:
            if topic.topic_id not in assignments and period - topic.last_seen >= self._retire_after:
                self._topics[topic.topic_id] = replace(topic, retired_at=period)
                retired.append(topic.topic_id)
        heats: dict[int, float] = {}
        if heats_of_posts is not None:
            for topic in self.active:
                members = [
                    m for i in assignments.get(topic.topic_id, ()) for m in clusters[i].members
                ]
                heat = (
                    math.fsum(heats_of_posts[m] for m in members) / len(members) if members else 0.0
                )
                heats[topic.topic_id] = heat
                self.record_heat(topic.topic_id, period, heat)
        self._last_period = period
        return PeriodUpdate(
            period=period,
            assignments=MappingProxyType({t: tuple(ix) for t, ix in assignments.items()}),
            new_topics=tuple(new_topics),
            continued=tuple(t for t in assignments if t not in new_topics),
            retired=tuple(retired),
            heats=MappingProxyType(heats),
        )

    def record_heat(self, topic_id: int, period: int, heat: float) -> None:
        """Set a topic's heat for a period (replacing any heat recorded for it before)."""
        if not math.isfinite(heat) or heat < 0.0:
            raise ValueError(f"heat must be finite and >= 0, got {heat!r}")
        topic = self._topics[topic_id]
        history = dict(topic.heat_history)
        history[period] = float(heat)
        self._topics[topic_id] = replace(topic, heat_history=tuple(sorted(history.items())))


def _merged_words(clusters: Sequence[DiscoveredTopic]) -> dict[str, float]:
    """Word weights of several clusters, averaged with their post counts as weights."""
    total = sum(len(c.members) for c in clusters)
    merged: dict[str, float] = {}
    for cluster in clusters:
        share = len(cluster.members) / total if total else 1.0 / len(clusters)
        for word, weight in cluster.words.items():
            merged[word] = merged.get(word, 0.0) + share * weight
    return merged


def _check_heats(
    post_heats: Sequence[float] | None, clusters: Sequence[DiscoveredTopic]
) -> tuple[float, ...] | None:
    if post_heats is None:
        return None
    heats = tuple(float(h) for h in post_heats)
    for i, heat in enumerate(heats):
        if not math.isfinite(heat) or heat < 0.0:
            raise ValueError(f"post_heats[{i}] is {heat!r}; post heats must be finite and >= 0")
    needed = max((m for c in clusters for m in c.members), default=-1) + 1
    if len(heats) < needed:
        raise ValueError(f"clusters refer to post {needed - 1} but only {len(heats)} heats given")
    return heats
