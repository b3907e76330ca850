"""What the focused strategy learns while it crawls: the adaptive threshold, the topic
vector update (GA + Rocchio) and re-scoring the waiting links after it, and the online link
learner's examples and re-scoring.
"""

from __future__ import annotations

import dataclasses
from collections import deque

from topicrawl.core.models import Page, Request
from topicrawl.focus.evolve import update_topic
from topicrawl.focus.links import (
    link_priority,
    split_identifiers,
    url_word_pair,
)
from topicrawl.focus.relevance import (
    Relevance,
)
from topicrawl.focus.strategies.focused_parts import _MAX_THRESHOLDS, _Parts, _Recent
from topicrawl.focus.threshold import judge_all, sample_precision
from topicrawl.text.vectors import SparseVector, cosine


class _Learning(_Parts):
    """The focused strategy's learning from the pages it crawled."""

    def _observe_outcome(self, page: Page, *, relevant: bool) -> bool:
        """The link that led to ``page`` (as it waited: its features) is an example for the
        link learner, labelled with the page's verdict. Returns whether the model was updated."""
        if self.learner is None or page.duplicate_of is not None or "seed" in page.reasons:
            return False
        request = self.waiting.get(page.url) or Request(
            url=page.url, score=page.score, depth=page.depth, reasons=page.reasons
        )
        return self.learner.observe(request, relevant=relevant)

    def _rescore_learned(self) -> list[Request]:
        """After a model update: the next ``learner_rescore`` waiting links, blended with the
        new model; returns those whose priority rose (those that fell are lowered in the
        frontier through ``rescored``)."""
        waiting = list(self.waiting)
        budget = self.focused.learner_rescore
        if not waiting or not budget:
            return []
        start = self._learner_from % len(waiting)
        self._learner_from = start + budget
        turn = waiting[start : start + budget]
        if len(turn) < budget:
            turn += waiting[: min(budget - len(turn), start)]
        raised: list[Request] = []
        for old, new in zip(turn, self._blended(turn), strict=True):
            if new.score > old.score:
                self._queue(new, raised)
            elif new.score < old.score:
                self.waiting.set(new)
                self._lowered.append((new.url, new.score))
        return raised

    def _learn(
        self, page: Page, vector: SparseVector, relevance: Relevance, *, relevant: bool
    ) -> list[Request]:
        """Look back at recent pages: adapt the threshold, update topic vectors. Returns the
        held-back links a lower threshold lets through."""
        o = self.focused
        self._pages += 1
        self._recent.append(_Recent(dataclasses.replace(page, links=()), vector, relevance.score))
        before = self.threshold
        if relevant:
            self._feedback[relevance.topic].append(vector)
            self._relevant_since_update[relevance.topic] += 1
        if o.adaptive and o.calibrate_after and self._pages == o.calibrate_after:
            self._calibrate()
        if o.adaptive and self._pages % self.controller.settings.every == 0:
            self._measure_precision()
        raised: list[Request] = []
        if o.evolve and self._relevant_since_update[relevance.topic] >= o.update_every:
            self._update_topic(relevance.topic)
            if o.rescore_waiting:
                raised = self._rescore_waiting()
        if self.threshold != before:
            self._thresholds.append((self._pages, self.threshold))
            del self._thresholds[1:-_MAX_THRESHOLDS]
        if self.threshold < before:
            raised.extend(self.candidates.release(self.link_threshold))
        return raised

    def _rescore_waiting(self) -> list[Request]:
        """After a topic update: score the waiting links' own words (anchor, URL, URL
        directories) again with the new vector; return those whose priority rose. With
        ``rescore_lower``, those whose priority fell are lowered in the frontier too (their
        words scored lower with the new vector; the block part stays as it was scored). At
        most ``rescore_budget`` links, taken in turn across updates."""
        scorer, o = self.scorer, self.focused
        own: dict[str, float] = {}

        def relevance_of(text: str) -> float:
            score = own.get(text)
            if score is None:
                score = own[text] = scorer.text_relevance(text, initial=o.anchor_initial)
            return score

        raised: list[Request] = []
        turn: list[tuple[Request, Request]] = []
        for request in self._rescore_turn():
            reasons = request.reasons
            if "template" in reasons:
                continue
            path_words, directory_words = url_word_pair(request.url)
            words = relevance_of(
                self.compounds.expand(f"{split_identifiers(request.anchor)} {path_words}")
            )
            if o.directory_words:
                words = max(words, relevance_of(directory_words))
            if o.rescore_lower and "block" in reasons:
                anchor = max(reasons["block"], words)
            else:
                anchor = max(reasons.get("anchor", 0.0), words)
            family = self._family_yield(request.url, template=False)
            score = link_priority(
                inherited=reasons.get("inherited", 0.0) * reasons.get("blame", 1.0),
                anchor=max(anchor, family),
                inherited_weight=o.inherited_weight,
            )
            updated = {**reasons, "anchor": anchor}
            if o.family_yield:
                updated["family"] = family
            if self.learner is not None:
                updated["prior"] = score
            turn.append((request, dataclasses.replace(request, score=score, reasons=updated)))
        news = self._blended([new for _, new in turn])
        for (request, _), new in zip(turn, news, strict=True):
            if new.score > request.score:
                self._queue(new, raised)
            elif o.rescore_lower and new.score < request.score:
                self.waiting.set(new)
                self._lowered.append((request.url, new.score))
        return raised

    def _rescore_turn(self) -> list[Request]:
        """The waiting links this update re-scores: all of them, or the next
        ``rescore_budget`` from where the last update stopped (oldest first, wrapping)."""
        waiting = list(self.waiting)
        budget = self.focused.rescore_budget
        if not budget or len(waiting) <= budget:
            return waiting
        start = self._rescore_from % len(waiting)
        self._rescore_from = start + budget
        turn = waiting[start : start + budget]
        return turn + waiting[: budget - len(turn)]  # wrapping round to the oldest

    def _document_weight(self, *, relevant: bool) -> float:
        o = self.focused
        if relevant and self._pages >= o.df_warmup:
            return o.relevant_df_weight
        return 1.0

    def _document_share(self, term_id: int) -> float:
        """The (weighted) share of the crawled pages that contain the term."""
        model = self.scorer.model
        return model.df(term_id) / model.documents if model.documents else 0.0

    def _calibrate(self) -> None:
        """Put the threshold on the topic's own cosine scale: the judge labels the recent
        pages, whatever their score, and the threshold goes where it agrees with it best."""
        recent = list(self._recent)
        verdicts = judge_all(self.judge, [r.page for r in recent])
        self.controller.calibrate([(r.score, v) for r, v in zip(recent, verdicts, strict=True)])

    def _measure_precision(self) -> None:
        accepted = [r.page for r in self._recent if r.score >= self.threshold]
        settings = self.controller.settings
        precision = sample_precision(
            accepted, self.judge, size=settings.sample_size, rng=self._random
        )
        if precision is not None:
            self.controller.observe(precision)

    def _update_topic(self, index: int) -> None:
        o = self.focused
        self._relevant_since_update[index] = 0
        topic = self.scorer.topics[index]
        ranked = sorted(self._feedback[index], key=lambda v: cosine(v, topic.weights), reverse=True)
        positives = ranked[: o.feedback]
        negatives = sorted(
            (r for r in self._recent if r.score < self.threshold), key=lambda r: r.score
        )[: o.feedback]
        update = update_topic(
            topic.weights,
            positives,
            [r.vector for r in negatives],
            keyword_ids=topic.keyword_ids,
            settings=self._update,
            rng=self._ga_random,
            background=self._document_share,
            initial=topic.initial_weights,
        )
        # Re-tune: the same share of recent pages as before stays over the threshold.
        others = [t.weights for t in self.scorer.topics]
        others[index] = update.weights
        kept = sum(1 for r in self._recent if r.score >= self.threshold) / max(len(self._recent), 1)
        rescored = [
            _Recent(r.page, r.vector, max(cosine(r.vector, w) for w in others))
            for r in self._recent
        ]
        self._recent = deque(rescored, maxlen=self._recent.maxlen)
        self.controller.retune([r.score for r in rescored], keep_fraction=kept)
        topic.update(update.weights, pages=self._pages, threshold=self.threshold)
