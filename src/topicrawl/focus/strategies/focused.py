"""The focused strategy: its construction, saved state, seeds and ``on_page`` (the parts
it is built from are in ``focused_parts``, ``focused_links`` and ``focused_learning``).
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from topicrawl.core.errors import ConfigError
from topicrawl.core.lazy import LazyModule
from topicrawl.core.models import Link, LinkScore, Page, Request, StrategyResult
from topicrawl.focus.compounds import CompoundWords
from topicrawl.focus.families import UrlDirectories, UrlFamilies, WaitingLinks
from topicrawl.focus.learner import LinkLearner
from topicrawl.focus.links import (
    CandidatePool,
    InboundEvidence,
    TemplateBlocks,
    TemplateHindsight,
    block_sizes,
    block_texts,
    hub_score,
    inherited_score,
    link_priority,
    on_topic_links,
    page_importance,
    relative_to_best,
)
from topicrawl.focus.options import FocusedOptions
from topicrawl.focus.probes import HubProbe
from topicrawl.focus.promotion import SeedPromotion
from topicrawl.focus.relevance import (
    TopicProfile,
)
from topicrawl.focus.roles import RoleAnchors
from topicrawl.focus.siblings import BlockYield
from topicrawl.focus.state import LearnedState, TopicHistory
from topicrawl.focus.strategies.base import SEED_SCORE, _host_of, _topic_of
from topicrawl.focus.strategies.focused_learning import _Learning
from topicrawl.focus.strategies.focused_links import _LinkEvidence
from topicrawl.focus.strategies.focused_parts import _Recent
from topicrawl.focus.threshold import ThresholdController
from topicrawl.text.vectors import SparseVector

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # only the focused strategy's topic update needs it

log = logging.getLogger(__name__)


class FocusedStrategy(_LinkEvidence, _Learning):
    """The focused strategy: link blocks, inherited scores, hub importance, a relevance
    threshold that adapts to sampled precision, and (``evolve``, off by default: it did not
    help held out) a topic vector updated by GA + Rocchio.

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
        self.scorer.smooth_text_idf = options.smooth_link_idf
        self.scorer.topic_df_cap = options.topic_df_cap
        self.scorer.page_df_cap = options.page_df_cap
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
        self.inbound = (
            InboundEvidence(ceiling=options.inbound_evidence) if options.inbound_evidence else None
        )
        self.compounds = CompoundWords(
            (k for t in topics for k in t.keywords), min_length=options.compound_words
        )
        self.hindsight = TemplateHindsight()
        self.roles = RoleAnchors(min_pages=options.role_anchors) if options.role_anchors else None
        self.siblings = (
            BlockYield(prior=options.sibling_prior)
            if options.sibling_yield > 0.0 or options.sibling_blame > 0.0
            else None
        )
        self.probe = (
            HubProbe(every=options.hub_probe, limit=options.hub_probe_limit)
            if options.hub_probe
            else None
        )
        self._lowered: list[tuple[str, float]] = []  # by a topic update, for the frontier
        self._rescore_from = 0  # where the next budgeted re-scoring of waiting links starts
        self._update = options.update_settings()
        self._random = random.Random(options.seed)
        self._ga_random = np.random.default_rng(options.seed)
        self._recent: deque[_Recent] = deque(maxlen=options.window)
        self._feedback = [deque[SparseVector](maxlen=options.window) for _ in self.scorer.topics]
        self._relevant_since_update = [0] * len(self.scorer.topics)
        self._most_on_topic = 0.0
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
        vector = scorer.page_weights(counts)
        relevance = scorer.relevance(vector)
        similarity = relevance.score
        relevant = similarity >= self.threshold
        if page.duplicate_of is None:  # a duplicate's text is already counted
            scorer.model.add_document(counts, weight=self._document_weight(relevant=relevant))
        links = list(self._links(page))
        texts, sizes = block_texts(links), block_sizes(links)
        host = _host_of(page)
        template = self.templates.observe(host, texts, sizes)
        roles = self._role_links(host, links)
        anchors, block_parts = self._anchor_scores(links, texts, sizes, template, roles)
        on_topic = on_topic_links(
            anchors.values(), above=o.on_topic_anchor, weighted=o.hub_weighted
        )
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
            parent_relevant=relevant or (o.seed_inherits and "seed" in page.reasons),
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
        menu = o.menu_score if "seed" in page.reasons else 0.0
        scored: list[tuple[Link, Request]] = []
        for link in links:
            anchor = anchors[link.url]
            template_passed_on = inherited * o.template_inherited
            passed_on = template_passed_on if link.block in template else inherited
            directory = 1.0 if self.directories is None else self.directories.factor(link.url)
            passed_on *= directory
            if self.inbound is not None:
                passed_on = self._inbound_evidence(page, link.url, passed_on, relevant=relevant)
            family = self._family_yield(link.url, template=link.block in template)
            siblings = self._sibling_yield(link.url)
            blame = self._sibling_blame(link.url)
            score = link_priority(
                inherited=passed_on * blame,
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
            if o.sibling_yield > 0.0:
                reasons["siblings"] = siblings
            if o.sibling_blame > 0.0:
                reasons["blame"] = blame
            if self.directories is not None:
                reasons["directory"] = directory
            if link.block in template:
                reasons["template"] = 1.0
            if in_menu:
                reasons["menu"] = menu
            if link.url in roles:
                reasons["role"] = 1.0
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
        if self.probe is not None:
            self._probe_hub(page, links, requests)
        rescored = self._hindsight(host, links, texts) if o.template_hindsight else ()
        if learned:
            requests.extend(self._rescore_learned())
        if page.duplicate_of is None:
            requests.extend(self._learn(page, vector, relevance, relevant=relevant))
        if self._lowered:
            rescored, self._lowered = (*rescored, *self._lowered), []
        return StrategyResult(
            similarity,
            tuple(requests),
            relevant=relevant,
            rescored=rescored,
            topic=_topic_of(scorer, relevance),
            # All of them; storage keeps the best few hundred (storage.link_scores).
            link_scores=tuple(LinkScore(r.url, r.score, r.reasons) for r in blended),
        )
