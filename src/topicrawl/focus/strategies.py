"""The crawl strategies (bfs, best-first, shark, focused) and the registry that builds them.

Each is pure: it sees pages and returns scored requests, with no I/O and no event loop.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from topicrawl.core.errors import ConfigError
from topicrawl.core.lazy import LazyModule
from topicrawl.core.models import FetchFailure, Link, Page, Request, StrategyResult
from topicrawl.core.protocols import Strategy, TextAnalyzer
from topicrawl.focus.compounds import CompoundWords
from topicrawl.focus.evolve import update_topic
from topicrawl.focus.families import UrlDirectories, UrlFamilies, WaitingLinks
from topicrawl.focus.learner import LinkLearner, blend
from topicrawl.focus.links import (
    CandidatePool,
    TemplateBlocks,
    TemplateHindsight,
    block_sizes,
    block_texts,
    diluted_block_score,
    hub_score,
    inherited_score,
    link_priority,
    link_words,
    page_importance,
    relative_to_best,
    shark_potential,
    split_identifiers,
    url_directory_words,
    url_word_pair,
)
from topicrawl.focus.options import FocusedOptions, SharkOptions, StrategyOptions, build_options
from topicrawl.focus.promotion import SeedPromotion
from topicrawl.focus.relevance import (
    Relevance,
    TopicProfile,
    TopicScorer,
    TopicVector,
    parse_topic,
    unsplittable_keywords,
)
from topicrawl.focus.siblings import BlockYield
from topicrawl.focus.state import LearnedState, TopicHistory
from topicrawl.focus.stemming import PageTerms
from topicrawl.focus.threshold import ThresholdController, judge_all, sample_precision
from topicrawl.text.vectors import SparseVector, cosine

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # only the focused strategy's topic update needs it

__all__ = [
    "STRATEGY_NAMES",
    "BestFirstStrategy",
    "BfsStrategy",
    "FocusedStrategy",
    "SharkStrategy",
    "make_strategy",
]

log = logging.getLogger(__name__)

SEED_SCORE = 1.0
"""Score of seeds in the scoring strategies: every computed score is at most 1."""


def _inherited_of(page: Page) -> float:
    # The engine copies the request's reasons onto the page; "inherited" is one of them.
    return page.reasons.get("inherited", 0.0)


def _host_of(page: Page) -> str:
    return urlsplit(page.final_url or page.url).netloc.lower()


def _scorer(topics: Sequence[TopicProfile], options: StrategyOptions) -> TopicScorer:
    user_words = [*options.user_words, *unsplittable_keywords(topics)]
    analyzer = PageTerms(stemmer=options.stemmer, user_words=user_words, stem=options.stem)
    return TopicScorer(
        topics=topics,
        tokenizer=analyzer.tokenizer,
        analyzer=analyzer,
        description_weight=options.description_weight,
    )


def _score(scorer: TopicScorer, page: Page) -> tuple[Relevance, SparseVector]:
    # A duplicate's text is already counted in the collection statistics.
    vector = scorer.page_vector(page, learn=page.duplicate_of is None)
    return scorer.relevance(vector), vector


class _Base:
    """What every strategy shares: link filtering, seeds, errors."""

    name: str = ""

    def __init__(self, *, options: StrategyOptions) -> None:
        self.options = options

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        for request in requests:
            yield dataclasses.replace(request, score=SEED_SCORE, reasons={"seed": SEED_SCORE})

    def on_error(self, request: Request, failure: FetchFailure) -> Iterable[Request]:
        return ()

    def on_idle(self, limit: int) -> Iterable[Request]:
        """Nothing is held back by default."""
        return ()

    @property
    def analyzer(self) -> TextAnalyzer | None:
        """What counts a page's terms for this strategy's scorer (the engine's parse workers
        run it), or None when pages are not scored."""
        scorer: TopicScorer | None = getattr(self, "scorer", None)
        return scorer.analyzer if scorer is not None else None

    def _links(self, page: Page) -> Iterator[Link]:
        """Followable links, each URL once, never the page itself."""
        seen = {page.url, page.final_url}
        for link in page.links:
            if link.url in seen or (link.nofollow and not self.options.follow_nofollow):
                continue
            seen.add(link.url)
            yield link

    @staticmethod
    def _request(
        page: Page, link: Link, *, score: float, inherited: float, reasons: Mapping[str, float]
    ) -> Request:
        return Request(
            url=link.url,
            score=score,
            depth=page.depth + 1,
            parent_url=page.final_url or page.url,
            anchor=link.anchor,
            inherited=inherited,
            reasons=reasons,
        )


class BfsStrategy(_Base):
    """Breadth-first: ``score = -depth``, so the frontier's FIFO tie-break does the rest.

    With topics, pages are still scored (for the harvest rate), but links are not.
    """

    name = "bfs"
    # Seen links change nothing for breadth-first (no re-scoring), so the engine drops them.
    follows_known_links = False

    def __init__(self, *, topics: Sequence[TopicProfile], options: StrategyOptions) -> None:
        super().__init__(options=options)
        self.scorer = _scorer(topics, options) if topics else None

    @property
    def topics(self) -> tuple[TopicVector, ...]:
        """The topic vectors, empty when the crawl has no topics."""
        return self.scorer.topics if self.scorer is not None else ()

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        for request in requests:
            yield dataclasses.replace(request, score=-float(request.depth))

    def on_page(self, page: Page) -> StrategyResult:
        depth = page.depth + 1
        requests = tuple(
            self._request(page, link, score=-float(depth), inherited=0.0, reasons={})
            for link in self._links(page)
        )
        if self.scorer is None:
            return StrategyResult(relevance=None, requests=requests)
        score = _score(self.scorer, page)[0].score
        return StrategyResult(score, requests, relevant=score >= self.options.threshold)


class _Scoring(_Base):
    """A strategy that scores pages against at least one topic."""

    def __init__(self, *, topics: Sequence[TopicProfile], options: StrategyOptions) -> None:
        super().__init__(options=options)
        self.scorer = _scorer(topics, options)

    @property
    def topics(self) -> tuple[TopicVector, ...]:
        """The topic vectors, with their history."""
        return self.scorer.topics


class BestFirstStrategy(_Scoring):
    """Best-first: every link of a page is scored by the page's relevance."""

    name = "best-first"

    def on_page(self, page: Page) -> StrategyResult:
        score = _score(self.scorer, page)[0].score
        requests = tuple(
            self._request(page, link, score=score, inherited=score, reasons={"page": score})
            for link in self._links(page)
        )
        return StrategyResult(score, requests, relevant=score >= self.options.threshold)


class SharkStrategy(_Scoring):
    """Shark-search: the anchor, its context (the link block) and a decayed inherited score.

    A child inherits ``decay * sim(parent)`` from a page with any similarity, else ``decay``
    times the parent's own inherited score.
    """

    name = "shark"

    def __init__(self, *, topics: Sequence[TopicProfile], options: SharkOptions) -> None:
        super().__init__(topics=topics, options=options)
        self.shark = options

    def on_page(self, page: Page) -> StrategyResult:
        similarity = _score(self.scorer, page)[0].score
        o = self.shark
        inherited = inherited_score(
            parent_similarity=similarity,
            parent_inherited=_inherited_of(page),
            parent_relevant=similarity > 0.0,
            decay=o.decay,
        )
        links = list(self._links(page))
        blocks = {b: self.scorer.text_relevance(t) for b, t in block_texts(links).items()}
        anchors: dict[str, float] = {}
        requests = []
        for link in links:
            anchor = anchors.get(link.anchor)
            if anchor is None:
                anchor = anchors[link.anchor] = self.scorer.text_relevance(link.anchor)
            context = blocks[link.block]
            score = shark_potential(
                inherited=inherited,
                anchor=anchor,
                context=context,
                beta=o.anchor_weight,
                gamma=o.inherited_weight,
            )
            reasons = {
                "anchor": anchor,
                "context": context,
                "inherited": inherited,
                "page": similarity,
            }
            requests.append(
                self._request(page, link, score=score, inherited=inherited, reasons=reasons)
            )
        return StrategyResult(similarity, tuple(requests), relevant=similarity >= o.threshold)


_MAX_TEMPLATE_TARGETS = 200_000  # URLs remembered as linked from a template block
_MAX_THRESHOLDS = 1000  # threshold moves kept in the history (the first is always kept)


@dataclass(frozen=True, slots=True)
class _Recent:
    """A recently crawled page, as the threshold and topic update look back at it."""

    page: Page
    vector: SparseVector
    score: float


class FocusedStrategy(_Scoring):
    """The focused strategy: link blocks, inherited scores, hub importance, a relevance
    threshold that adapts to sampled precision, and a topic vector updated by GA + Rocchio.

    For each page: relevance ``cos`` = best cosine to the topics; ``Hub(u)`` = its on-topic
    links over the most seen on a page; ``pu = m1 * cos' + (1 - m1) * Hub(u)`` with ``cos'`` the
    cosine over the best seen so far, or over ``relative_floor`` times the threshold when that is
    higher (``relative_similarity``; else the raw cosine); each child
    inherits ``a * pu`` if the page is relevant (``cos >= threshold``), else ``a`` times the
    page's own inherited score; a link's priority is ``c * inherited + (1 - c) * anchor`` with
    ``anchor`` the cosine of its block's extended anchor text (scaled down in a block of more
    than ``block_links`` links), or (``link_words``) of the link's own anchor and URL words, or
    (``directory_words``) of its URL's directories alone, whichever is highest, each scored
    against the learned and (``anchor_initial``) the user's own topic vector. A link in a
    block of the site's template (the same block text on ``template_pages`` pages of the host)
    gets no anchor score and passes on ``template_inherited`` of the inherited score. With
    ``family_yield`` a link's anchor score is at least its URL family's yield (what the
    crawl learned from the pages it fetched that are named like the target). A page
    counts in the collection's document frequencies in full if judged off-topic, as
    ``relevant_df_weight`` of a page if relevant (after the first ``df_warmup`` pages), so the
    topic's own words do not become the commonest. Links under ``link_ratio * threshold`` wait
    in a bounded candidate pool and are queued when the threshold comes down (or on
    :meth:`on_idle`). Every ``update_every`` relevant pages of a topic, its vector is updated
    (GA + Rocchio), and with ``rescore_waiting`` the links still waiting are scored again
    with the new vector; :meth:`learned_state` and :meth:`restore` carry the vectors and the
    threshold across a resumed crawl.
    """

    name = "focused"
    holds_back_links = True  # its candidate pool lives in memory (see engine.heldback)

    def __init__(self, *, topics: Sequence[TopicProfile], options: FocusedOptions) -> None:
        super().__init__(topics=topics, options=options)
        self.focused = options
        self.controller = ThresholdController(settings=options.threshold_settings())
        self.judge = options.judge or options.automatic_judge(self.scorer)
        self.candidates = CandidatePool(capacity=options.max_candidates)
        self.templates = TemplateBlocks(
            min_pages=options.template_pages,
            min_links=options.template_links,
            similarity=options.template_similarity,
        )
        self.families = UrlFamilies(prior=options.family_prior)
        self.directories = (
            UrlDirectories(prior=options.directory_prior) if options.directory_prior else None
        )
        self.waiting = WaitingLinks()
        self.compounds = CompoundWords(
            (k for t in topics for k in t.keywords), min_length=options.compound_words
        )
        self.hindsight = TemplateHindsight()
        self.siblings = (
            BlockYield(prior=options.sibling_prior) if options.sibling_yield > 0.0 else None
        )
        self._lowered: list[tuple[str, float]] = []  # by a topic update, for the frontier
        self._rescore_from = 0  # where the next budgeted re-scoring of waiting links starts
        self._update = options.update_settings()
        self._random = random.Random(options.seed)
        self._ga_random = np.random.default_rng(options.seed)
        self._recent: deque[_Recent] = deque(maxlen=options.window)
        self._feedback = [deque[SparseVector](maxlen=options.window) for _ in self.scorer.topics]
        self._relevant_since_update = [0] * len(self.scorer.topics)
        self._most_on_topic = 0
        self._template_targets: set[str] = set()
        self._most_similar = 0.0
        self._pages = 0
        self._thresholds: list[tuple[int, float]] = [(0, self.controller.value)]
        self.learner = LinkLearner(options.learner_settings()) if options.learner else None
        self._learner_from = 0  # where the next re-scoring after a model update starts
        self.promotion = SeedPromotion(capacity=options.promote_seeds, min_hub=options.promote_hub)
        self._restored_seeds: tuple[tuple[str, float], ...] = ()
        self.seeded: tuple[str, ...] = ()
        """The pages promoted by the crawl's last session that this session was seeded with."""

    @property
    def threshold(self) -> float:
        """The current page relevance threshold."""
        return self.controller.value

    @property
    def runs_in_thread(self) -> bool:
        """Whether the engine should run the next ``on_page`` in a worker thread: when the
        judge is heavy (see :class:`Judge`) and the next page is one the judge looks back
        from (calibration, a precision sample), so the crawl goes on fetching meanwhile.
        Every other page is scored on the event loop, where a thread would only cost."""
        o = self.focused
        if not (o.adaptive and o.judge_thread and getattr(self.judge, "heavy", False)):
            return False
        upcoming = self._pages + 1
        return upcoming == o.calibrate_after or upcoming % self.controller.settings.every == 0

    @property
    def link_threshold(self) -> float:
        """The priority a link needs to be queued now."""
        return self.focused.link_ratio * self.controller.value

    def learned_state(self) -> LearnedState:
        """What the crawl has learned so far, for storage (see :meth:`restore`)."""
        return LearnedState(
            pages=self._pages,
            threshold=self.threshold,
            thresholds=tuple(self._thresholds),
            precisions=self.controller.precisions,
            topics=tuple(
                TopicHistory(topic=t.profile.name, snapshots=t.history) for t in self.topics
            ),
            learner=None if self.learner is None else self.learner.state(),
            promoted=self.promotion.promoted,
            seeded=self.seeded,
        )

    def restore(self, state: LearnedState) -> None:
        """Continue from a saved state: threshold, precisions, topic vectors and their history.

        Raises:
            ConfigError: the state was saved for other topics.
        """
        names = [t.profile.name for t in self.topics]
        if list(state.topic_names()) != names:
            raise ConfigError(
                f"the saved focused-crawl state is for topics {list(state.topic_names())}, "
                f"not {names}"
            )
        for topic, history in zip(self.topics, state.topics, strict=True):
            topic.restore(history.snapshots)
        self.controller.restore(value=state.threshold, precisions=state.precisions)
        self._thresholds = list(state.thresholds) or [(state.pages, state.threshold)]
        self._pages = state.pages
        if self.learner is not None and state.learner is not None:
            try:
                self.learner.restore(state.learner)
            except ValueError as exc:
                raise ConfigError(f"the saved link learner cannot be continued: {exc}") from exc
        self.promotion.restore(state.promoted)
        self._restored_seeds = state.promoted

    def seeds(self, requests: Iterable[Request]) -> Iterable[Request]:
        """The given seeds, and the pages the crawl's last session promoted (see
        :class:`~topicrawl.focus.promotion.SeedPromotion`)."""
        given = list(super().seeds(requests))
        known = {r.url for r in given}
        promoted = [(url, value) for url, value in self._restored_seeds if url not in known]
        self.seeded = tuple(url for url, _ in promoted)
        if promoted:
            log.warning(
                "seeding with %d pages the last session promoted: %s",
                len(promoted),
                ", ".join(url for url, _ in promoted[:5]) + (" ..." if len(promoted) > 5 else ""),
            )
        promoted_requests = [
            Request(url=url, score=SEED_SCORE, reasons={"seed": SEED_SCORE, "promoted": value})
            for url, value in promoted
        ]
        return [*given, *promoted_requests]

    def on_idle(self, limit: int) -> tuple[Request, ...]:
        """The best held-back links, for an engine whose frontier ran dry."""
        return tuple(self.candidates.take_best(limit))

    def on_page(self, page: Page) -> StrategyResult:
        scorer, o = self.scorer, self.focused
        # Scored against the collection as it was, then counted in it with a weight that
        # depends on the verdict (see ``relevant_df_weight``).
        counts = scorer.page_terms(page)
        vector = scorer.model.weigh(counts)
        relevance = scorer.relevance(vector)
        similarity = relevance.score
        relevant = similarity >= self.threshold
        if page.duplicate_of is None:  # a duplicate's text is already counted
            scorer.model.add_document(counts, weight=self._document_weight(relevant=relevant))
        links = list(self._links(page))
        texts, sizes = block_texts(links), block_sizes(links)
        template = self.templates.observe(_host_of(page), texts, sizes)
        anchors, block_parts = self._anchor_scores(links, texts, sizes, template)
        on_topic = sum(1 for link in links if anchors[link.url] > o.on_topic_anchor)
        self._most_on_topic = max(self._most_on_topic, on_topic)
        hub = hub_score(on_topic, self._most_on_topic)
        self._most_similar = max(self._most_similar, similarity)
        if o.relative_similarity:
            # On the scale of Hub(u) and of anchor scores: the best page so far scores 1.
            importance = page_importance(
                similarity=relative_to_best(
                    similarity, max(self._most_similar, o.relative_floor * self.threshold)
                ),
                hub=hub,
                m1=o.m1,
            )
        else:
            importance = page_importance(similarity=similarity, hub=hub, m1=o.m1)
        inherited = inherited_score(
            parent_similarity=importance,
            parent_inherited=self._inherited_through_template(page, links, template),
            parent_relevant=relevant,
            decay=o.decay,
        )
        learned = self._observe_outcome(page, relevant=relevant)
        requests: list[Request] = []
        if self.siblings is not None:
            requests.extend(self._siblings_of(page, links, texts, template, relevant=relevant))
        if page.duplicate_of is None and "seed" not in page.reasons:  # a seed is one already
            self.promotion.consider(
                page.final_url or page.url, relevant=relevant, hub=hub, importance=importance
            )
        self._count_family(page, similarity)
        host = _host_of(page)
        menu = o.menu_score if "seed" in page.reasons else 0.0
        scored: list[tuple[Link, Request]] = []
        for link in links:
            anchor = anchors[link.url]
            template_passed_on = inherited * o.template_inherited
            passed_on = template_passed_on if link.block in template else inherited
            directory = 1.0 if self.directories is None else self.directories.factor(link.url)
            passed_on *= directory
            family = self._family_yield(link.url, template=link.block in template)
            siblings = self._sibling_yield(link.url)
            score = link_priority(
                inherited=passed_on,
                anchor=max(anchor, family, siblings),
                inherited_weight=o.inherited_weight,
            )
            in_menu = menu > score and 2 <= sizes[link.block] <= o.menu_links
            if in_menu:
                score = menu
            reasons = {
                "anchor": anchor,
                "block": block_parts[link.url],
                "inherited": passed_on,
                "hub": hub,
                "importance": importance,
                "page": similarity,
            }
            if o.family_yield:
                reasons["family"] = family
            if self.siblings is not None:
                reasons["siblings"] = siblings
            if self.directories is not None:
                reasons["directory"] = directory
            if link.block in template:
                reasons["template"] = 1.0
            if in_menu:
                reasons["menu"] = menu
            if len(self.topics) > 1:
                reasons["topic"] = float(relevance.topic)
            request = self._request(page, link, score=score, inherited=passed_on, reasons=reasons)
            scored.append((link, request))
        blended = self._blended([request for _, request in scored])
        for (link, _), request in zip(scored, blended, strict=True):
            score = request.score
            if self._queue(request, requests) and o.template_hindsight:
                eligible = link.block not in template and sizes[link.block] >= o.template_links
                self.hindsight.saw(
                    link.url,
                    score,
                    block=(host, hash(texts[link.block])) if eligible else None,
                    template_score=link_priority(
                        inherited=template_passed_on,
                        anchor=0.0,
                        inherited_weight=o.inherited_weight,
                    ),
                )
        rescored = self._hindsight(host, links, texts) if o.template_hindsight else ()
        if learned:
            requests.extend(self._rescore_learned())
        if page.duplicate_of is None:
            requests.extend(self._learn(page, vector, relevance, relevant=relevant))
        if self._lowered:
            rescored, self._lowered = (*rescored, *self._lowered), []
        return StrategyResult(similarity, tuple(requests), relevant=relevant, rescored=rescored)

    def _hindsight(
        self, host: str, links: Sequence[Link], texts: Mapping[int, str]
    ) -> tuple[tuple[str, float], ...]:
        """The links that the blocks this page made template queued earlier, at their template
        scores (lower now); the waiting-link store learns them too."""
        lowered: list[tuple[str, float]] = []
        for block in self.templates.recognised:
            constant = {link.url for link in links if link.block == block}
            key = (host, hash(texts[block]))
            for url, score in self.hindsight.recognised(key, constant=constant):
                self.waiting.lower(url, score)
                lowered.append((url, score))
        return tuple(lowered)

    def _observe_outcome(self, page: Page, *, relevant: bool) -> bool:
        """The link that led to ``page`` (as it waited: its features) is an example for the
        link learner, labelled with the page's verdict. Returns whether the model was updated."""
        if self.learner is None or page.duplicate_of is not None or "seed" in page.reasons:
            return False
        request = self.waiting.get(page.url) or Request(
            url=page.url, score=page.score, depth=page.depth, reasons=page.reasons
        )
        return self.learner.observe(request, relevant=relevant)

    def _blended(self, requests: Sequence[Request]) -> Sequence[Request]:
        """With the link learner, each request's score is its prior blended with the model's
        probability that it leads to a relevant page (``reasons``: ``prior``, ``model`` and
        the blend weight ``learned``; a link kept for exploration has weight 0)."""
        learner = self.learner
        if learner is None or not requests:
            return requests
        weight = learner.weight
        if weight == 0.0:
            return [
                dataclasses.replace(
                    r, reasons={**r.reasons, "prior": r.reasons.get("prior", r.score)}
                )
                for r in requests
            ]
        chances = learner.probabilities(requests)
        blended = []
        for request, chance in zip(requests, chances.tolist(), strict=True):
            prior = request.reasons.get("prior", request.score)
            share = 0.0 if learner.explores(request.url) else weight
            reasons = {**request.reasons, "prior": prior, "model": chance, "learned": share}
            score = blend(prior, chance, share)
            blended.append(dataclasses.replace(request, score=score, reasons=reasons))
        return blended

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

    def _queue(self, request: Request, requests: list[Request]) -> bool:
        """Queue ``request`` if it clears the link threshold (``True``), else hold it back."""
        if self.focused.rescore_waiting or self.learner is not None or self.siblings is not None:
            self.waiting.wait(request)
        if request.score >= self.link_threshold:
            self.candidates.discard(request.url)
            requests.append(request)
            return True
        self.candidates.add(request)
        return False

    def _count_family(self, page: Page, similarity: float) -> None:
        """The page no longer waits; it counts in its URL family (``family_yield``) and its
        URL directory (``directory_prior``)."""
        for url in {page.url, page.final_url}:
            self.waiting.crawled(url)
            self.hindsight.crawled(url)
        if page.duplicate_of is not None:
            return
        if self.focused.family_yield:
            self.families.observe(page.final_url or page.url, similarity)
        if self.directories is not None:
            self.directories.observe(page.final_url or page.url, similarity)

    def _sibling_yield(self, url: str) -> float:
        """``sibling_yield`` times the yield of the blocks that list ``url`` (0: off)."""
        if self.siblings is None:
            return 0.0
        return self.focused.sibling_yield * self.siblings.score(url)

    def _siblings_of(
        self,
        page: Page,
        links: Sequence[Link],
        texts: Mapping[int, str],
        template: frozenset[int],
        *,
        relevant: bool,
    ) -> list[Request]:
        """The page's verdict counts for the blocks that listed it, and its own blocks (not
        template, two links or more) list its links. Returns the waiting links of those
        blocks whose priority the block's new yield raised."""
        siblings = self.siblings
        assert siblings is not None
        host = _host_of(page)
        members: dict[int, list[str]] = {}
        for link in links:
            if link.block not in template:
                members.setdefault(link.block, []).append(link.url)
        for block, urls in members.items():
            if 2 <= len(urls) <= self.focused.sibling_links and texts[block]:
                siblings.listed((host, hash(texts[block])), urls)
        if page.duplicate_of is not None or "seed" in page.reasons:
            return []
        o = self.focused
        raised: list[Request] = []
        for key in siblings.crawled({page.url, page.final_url}, relevant=relevant):
            lift = o.sibling_yield * siblings.block_yield(key)
            if lift <= 0.0:
                continue
            for url in siblings.members(key):
                held = self.waiting.get(url)
                if held is None or "template" in held.reasons:
                    continue
                reasons = held.reasons
                if lift <= reasons.get("siblings", 0.0):
                    continue
                anchor = max(reasons.get("anchor", 0.0), reasons.get("family", 0.0), lift)
                score = link_priority(
                    inherited=reasons.get("inherited", 0.0),
                    anchor=anchor,
                    inherited_weight=o.inherited_weight,
                )
                updated = {**reasons, "siblings": lift}
                if self.learner is not None:
                    updated["prior"] = score
                new = dataclasses.replace(held, score=score, reasons=updated)
                if score > held.score:
                    self._queue(new, raised)
                else:
                    self.waiting.set(new)
        return raised

    def _family_yield(self, url: str, *, template: bool) -> float:
        """The yield of the link's URL family (0 for a template link: its target is the
        site's, not the page author's choice)."""
        if not self.focused.family_yield or template:
            return 0.0
        return self.families.score(url)

    def _inherited_through_template(
        self, page: Page, links: Sequence[Link], template: frozenset[int]
    ) -> float:
        """The page's inherited score, times ``template_inherited`` if a template block
        links to it: a page queued through a template link before the block was known as
        template (the first pages of a host) passes on no more than one queued after."""
        targets = self._template_targets
        for link in links:
            if link.block in template and len(targets) < _MAX_TEMPLATE_TARGETS:
                targets.add(link.url)
        inherited = _inherited_of(page)
        if page.url in targets or page.final_url in targets:
            return inherited * self.focused.template_inherited
        return inherited

    def _anchor_scores(
        self,
        links: Sequence[Link],
        texts: Mapping[int, str],
        sizes: Mapping[int, int],
        template: frozenset[int],
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Each link's anchor score: its block's extended anchor text, scored once for the
        block (scaled down for a block of more than ``block_links`` links), or with
        ``link_words`` the link's own anchor and URL words when they score higher (a block of
        many links dilutes the one that names the topic). A link in a ``template`` block
        scores 0: its words are the site's, not the page author's. Returns the anchor scores
        and, apart, each link's block part of it (what a topic update cannot score again:
        the block's text is not kept)."""
        scorer, most = self.scorer, self.focused.block_links
        initial, expand = self.focused.anchor_initial, self.compounds.expand
        blocks = {
            b: 0.0
            if b in template
            else diluted_block_score(
                scorer.text_relevance(expand(split_identifiers(t)), initial=initial),
                links=sizes[b],
                most_links=most,
            )
            for b, t in texts.items()
        }
        of_block = {link.url: blocks[link.block] for link in links}
        if not self.focused.link_words:
            return of_block, of_block
        own: dict[str, float] = {}
        scores: dict[str, float] = {}
        for link in links:
            if link.block in template:
                scores[link.url] = 0.0
                continue
            words = expand(link_words(link))
            score = own.get(words)
            if score is None:
                score = own[words] = scorer.text_relevance(words, initial=initial)
            if self.focused.directory_words:
                directory = url_directory_words(link.url)
                in_directory = own.get(directory)
                if in_directory is None:
                    in_directory = own[directory] = scorer.text_relevance(
                        directory, initial=initial
                    )
                score = max(score, in_directory)
            best = max(blocks[link.block], score)
            scores[link.url] = best - self.focused.own_words_weight * (best - score)
        return scores, of_block

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
                inherited=reasons.get("inherited", 0.0),
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


_Factory = Callable[[Sequence[TopicProfile], Mapping[str, object]], Strategy]


def _bfs(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return BfsStrategy(topics=topics, options=build_options(StrategyOptions, options))


def _best_first(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return BestFirstStrategy(topics=topics, options=build_options(StrategyOptions, options))


def _shark(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return SharkStrategy(topics=topics, options=build_options(SharkOptions, options))


def _focused(topics: Sequence[TopicProfile], options: Mapping[str, object]) -> Strategy:
    return FocusedStrategy(topics=topics, options=build_options(FocusedOptions, options))


_REGISTRY: dict[str, _Factory] = {
    "bfs": _bfs,
    "best-first": _best_first,
    "shark": _shark,
    "focused": _focused,
}
STRATEGY_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make_strategy(
    name: str, *, topics: Sequence[str | TopicProfile], **options: object
) -> Strategy:
    """Build the strategy called ``name`` for ``topics`` (strings as :func:`parse_topic` reads
    them, or profiles), with its keyword options.

    Raises:
        ConfigError: the name is unknown, a scoring strategy has no topics, a topic has no
            keywords, or an option is unknown or invalid.
    """
    key = name.strip().lower().replace("_", "-")
    factory = _REGISTRY.get(key)
    if factory is None:
        raise ConfigError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGY_NAMES)}")
    profiles = [t if isinstance(t, TopicProfile) else parse_topic(t) for t in topics]
    if not profiles and key != "bfs":
        raise ConfigError(f"strategy {key!r} needs at least one topic")
    return factory(profiles, options)
