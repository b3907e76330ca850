"""The adaptive relevance threshold: sampled precision, judged by a pluggable judge, moves it."""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from topicrawl.core.errors import ConfigError
from topicrawl.core.models import Page
from topicrawl.focus.relevance import TopicScorer
from topicrawl.text.tokenize import CJK_LETTER
from topicrawl.text.vectors import SparseVector, cosine, normalized

__all__ = [
    "BatchJudge",
    "HumanJudge",
    "Judge",
    "ProfileJudge",
    "ThresholdController",
    "ThresholdMove",
    "ThresholdSettings",
    "judge_all",
    "sample_precision",
]


@runtime_checkable
class Judge(Protocol):
    """Says whether a page really is on topic: a person, a stronger model, a labelled set.

    A judge slow enough to hold up a crawl whose work releases the GIL (a neural model) may
    say so with a true ``heavy`` attribute: the focused strategy then has the engine judge
    in a worker thread (:attr:`FocusedStrategy.runs_in_thread`).
    """

    def is_relevant(self, page: Page) -> bool: ...


@runtime_checkable
class BatchJudge(Judge, Protocol):
    """A judge that is cheaper asked about several pages at once (a model that encodes a
    batch)."""

    def judge_all(self, pages: Sequence[Page]) -> list[bool]: ...


def judge_all(judge: Judge, pages: Sequence[Page]) -> list[bool]:
    """``judge.is_relevant`` of each page, in one call where the judge takes batches."""
    if isinstance(judge, BatchJudge):
        return judge.judge_all(pages)
    return [judge.is_relevant(page) for page in pages]


class ThresholdMove(enum.StrEnum):
    """What one precision measurement did to the threshold."""

    HOLD = "hold"
    DOWN = "down"
    UP = "up"


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdSettings:
    """How the threshold adapts.

    Args:
        initial: the starting threshold (a cosine).
        minimum, maximum: it never leaves this range.
        step: how far one measurement moves it.
        error: precision may fluctuate by less than this between two measurements and still
            count as stable.
        min_precision: a stable precision under this does not lower the threshold (a steadily
            bad crawl should not be given a lower bar).
        every: pages between two measurements.
        sample_size: pages judged per measurement.
    """

    initial: float = 0.1
    minimum: float = 0.01
    maximum: float = 0.8
    step: float = 0.01
    error: float = 0.05
    min_precision: float = 0.5
    every: int = 50
    sample_size: int = 10

    def __post_init__(self) -> None:
        if not 0.0 <= self.minimum <= self.initial <= self.maximum <= 1.0:
            raise ConfigError("threshold settings need 0 <= minimum <= initial <= maximum <= 1")
        if self.step <= 0.0 or self.error < 0.0 or not 0.0 <= self.min_precision <= 1.0:
            raise ConfigError("threshold step must be > 0, error >= 0, min_precision in [0, 1]")
        if self.every < 1 or self.sample_size < 1:
            raise ConfigError("threshold every and sample_size must be at least 1")


class ThresholdController:
    """Moves the relevance threshold from measured precision.

    While two successive precisions differ by less than ``error`` (and precision is at least
    ``min_precision``) the threshold steps down, to gain coverage; when precision swings, or
    is steadily too low, it steps up. The first measurement only sets the baseline.
    """

    def __init__(self, *, settings: ThresholdSettings) -> None:
        self.settings = settings
        self._value = settings.initial
        self._precisions: list[float] = []

    @property
    def value(self) -> float:
        """The current threshold."""
        return self._value

    @property
    def precisions(self) -> tuple[float, ...]:
        """Every precision measured so far, oldest first."""
        return tuple(self._precisions)

    def observe(self, precision: float) -> ThresholdMove:
        """Take one precision measurement and move the threshold accordingly."""
        if not 0.0 <= precision <= 1.0:
            raise ValueError(f"precision {precision} is not in [0, 1]")
        previous = self._precisions[-1] if self._precisions else None
        self._precisions.append(precision)
        if previous is None:
            return ThresholdMove.HOLD
        s = self.settings
        stable = abs(precision - previous) < s.error
        if stable and precision >= s.min_precision:
            return self._move(-s.step)
        return self._move(s.step)

    def restore(self, *, value: float, precisions: Sequence[float]) -> None:
        """Continue from a saved state (a resumed crawl): the threshold and the precisions
        measured so far (the last one is the baseline of the next measurement)."""
        if any(not 0.0 <= p <= 1.0 for p in precisions):
            raise ValueError("a saved precision is not in [0, 1]")
        self._value = self._clamp(value)
        self._precisions = list(precisions)

    def retune(self, scores: Sequence[float], *, keep_fraction: float) -> float:
        """Set the threshold so that ``keep_fraction`` of ``scores`` pass it (after the topic
        vector changed, so the same share of recent pages stays relevant); returns it."""
        if scores and keep_fraction > 0.0:
            ranked = sorted(scores, reverse=True)
            index = min(math.ceil(keep_fraction * len(ranked)), len(ranked)) - 1
            self._value = self._clamp(ranked[index])
        return self._value

    def calibrate(self, judged: Sequence[tuple[float, bool]]) -> float:
        """Set the threshold where it best agrees with a judge on pages of every score:
        ``judged`` holds (page score, the judge's verdict) pairs; the new threshold is the
        midpoint between two neighbouring scores that classifies the most pages as the judge
        did (the highest such midpoint on ties: the stepwise adaptation lowers it for
        coverage afterwards, while precision holds). Unchanged when the judge found
        every page relevant or none (nothing to separate). Returns the threshold."""
        verdicts = {v for _, v in judged}
        if len(verdicts) < 2:
            return self._value
        ranked = sorted(judged, key=lambda item: item[0])
        relevant_above = sum(1 for _, v in ranked if v)  # all pass a threshold under the lowest
        best_agreement, best = relevant_above, ranked[0][0]
        agreement = relevant_above
        for i in range(len(ranked) - 1):
            agreement += -1 if ranked[i][1] else 1  # page i falls under the threshold
            if ranked[i + 1][0] > ranked[i][0] and agreement >= best_agreement:
                best_agreement, best = agreement, (ranked[i][0] + ranked[i + 1][0]) / 2
        self._value = self._clamp(best)
        return self._value

    def _move(self, delta: float) -> ThresholdMove:
        before = self._value
        self._value = self._clamp(before + delta)
        if self._value < before:
            return ThresholdMove.DOWN
        if self._value > before:
            return ThresholdMove.UP
        return ThresholdMove.HOLD

    def _clamp(self, value: float) -> float:
        return min(max(value, self.settings.minimum), self.settings.maximum)


def sample_precision(
    pages: Sequence[Page], judge: Judge, *, size: int, rng: random.Random
) -> float | None:
    """The share of a random sample of ``pages`` (those the crawl called relevant) that the
    judge agrees with; ``None`` when there is nothing to sample."""
    if not pages:
        return None
    sample = rng.sample(list(pages), min(size, len(pages)))
    return sum(judge_all(judge, sample)) / len(sample)


class ProfileJudge:
    """An unattended judge: full text (title counted ``title_weight`` times) against an
    expanded profile (keywords, description, and the topic vector's current terms), plus
    keyword coverage.

    A page is relevant when, for some topic, ``0.5 * cosine + 0.5 * coverage >= threshold``,
    where coverage is the share of the topic's keyword tokens found in the page (of its
    Chinese/Japanese/Korean keywords or of the others, whichever is higher, when it has both).
    Being a different scorer (title weight, coverage, description) from the crawl's own
    cosine, it catches pages that match the topic vector by accident.
    """

    def __init__(
        self, *, scorer: TopicScorer, threshold: float = 0.25, title_weight: int = 2
    ) -> None:
        self._scorer = scorer
        self._threshold = threshold
        self._title_weight = title_weight

    def score(self, page: Page) -> float:
        """The judge's score of ``page`` (best over the topics)."""
        counts = self._scorer.page_terms(page, title_weight=self._title_weight)
        vector = self._scorer.model.weigh(counts)
        best = 0.0
        for topic in self._scorer.topics:
            coverage = self._coverage(topic.keyword_ids, counts)
            profile = _expanded(topic.initial_weights, topic.weights)
            best = max(best, 0.5 * cosine(vector, profile) + 0.5 * coverage)
        return best

    def _coverage(self, keywords: Collection[int], counts: Mapping[int, int]) -> float:
        """The share of the keyword tokens in the page; for a topic with keywords in both
        Chinese/Japanese/Korean script and another, the better of the two groups' shares (a
        page is written in one language, so it could never cover both halves of a bilingual
        keyword list)."""
        vocabulary = self._scorer.model.vocabulary
        groups: dict[bool, list[int]] = {}
        for term_id in keywords:
            groups.setdefault(bool(CJK_LETTER.search(vocabulary.term(term_id))), []).append(term_id)
        return max(
            (sum(1 for t in group if t in counts) / len(group) for group in groups.values()),
            default=0.0,
        )

    def is_relevant(self, page: Page) -> bool:
        return self.score(page) >= self._threshold


def _expanded(initial: Mapping[int, float], current: Mapping[int, float]) -> SparseVector:
    # The user's own profile stays in, whatever the topic update did; learned terms join it.
    merged = dict(normalized(initial))
    for term_id, weight in normalized(current).items():
        merged[term_id] = max(merged.get(term_id, 0.0), weight)
    return merged


class HumanJudge:
    """A person's yes/no labels (``topicrawl label``), by page URL; pages nobody labelled go
    to the ``fallback`` judge (or count as not relevant when there is none).

    Args:
        labels: page URL -> whether a person said it is on topic ("skip" answers are left
            out by the caller).
        fallback: judges the unlabelled pages, e.g. a :class:`ProfileJudge`.
    """

    def __init__(self, labels: Mapping[str, bool], *, fallback: Judge | None = None) -> None:
        self._labels = dict(labels)
        self._fallback = fallback
        self.asked = 0
        self.answered = 0

    def __len__(self) -> int:
        return len(self._labels)

    @property
    def heavy(self) -> bool:
        """Whether the fallback judge is (see :class:`Judge`)."""
        return bool(getattr(self._fallback, "heavy", False))

    def is_relevant(self, page: Page) -> bool:
        return self.judge_all([page])[0]

    def judge_all(self, pages: Sequence[Page]) -> list[bool]:
        """The labels of ``pages``; the unlabelled ones go to the fallback in one batch."""
        self.asked += len(pages)
        labels = [self._label(page) for page in pages]
        self.answered += sum(1 for label in labels if label is not None)
        unlabelled = [page for page, label in zip(pages, labels, strict=True) if label is None]
        if self._fallback is None or not unlabelled:
            fallback: list[bool] = [False] * len(unlabelled)
        else:
            fallback = judge_all(self._fallback, unlabelled)
        answers = iter(fallback)
        return [next(answers) if label is None else label for label in labels]

    def _label(self, page: Page) -> bool | None:
        for url in (page.url, page.final_url):
            label = self._labels.get(url)
            if label is not None:
                return label
        return None
