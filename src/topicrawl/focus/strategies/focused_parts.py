"""The focused strategy's state and the few methods every part of it uses (see
:class:`~topicrawl.focus.strategies.focused.FocusedStrategy`): queueing a link or holding it
back, and blending a priority with the link learner's.
"""

from __future__ import annotations

import dataclasses
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topicrawl.core.lazy import LazyModule
from topicrawl.core.models import Page, Request
from topicrawl.focus.compounds import CompoundWords
from topicrawl.focus.evolve import UpdateSettings
from topicrawl.focus.families import UrlDirectories, UrlFamilies, WaitingLinks
from topicrawl.focus.learner import LinkLearner, blend, lift_blend
from topicrawl.focus.links import (
    CandidatePool,
    InboundEvidence,
    TemplateBlocks,
    TemplateHindsight,
)
from topicrawl.focus.options import FocusedOptions
from topicrawl.focus.probes import HubProbe
from topicrawl.focus.promotion import SeedPromotion
from topicrawl.focus.roles import RoleAnchors
from topicrawl.focus.siblings import BlockYield
from topicrawl.focus.strategies.base import _Scoring
from topicrawl.focus.threshold import Judge, ThresholdController
from topicrawl.text.vectors import SparseVector

if TYPE_CHECKING:
    import numpy as np
else:
    np = LazyModule("numpy")  # only the focused strategy's topic update needs it

_MAX_TEMPLATE_TARGETS = 200_000  # URLs remembered as linked from a template block
_MAX_THRESHOLDS = 1000  # threshold moves kept in the history (the first is always kept)


@dataclass(frozen=True, slots=True)
class _Recent:
    """A recently crawled page, as the threshold and topic update look back at it."""

    page: Page
    vector: SparseVector
    score: float


class _Parts(_Scoring):
    """The focused strategy's attributes (set in ``FocusedStrategy.__init__``) and the
    methods its link-evidence and learning parts share."""

    focused: FocusedOptions
    controller: ThresholdController
    judge: Judge
    candidates: CandidatePool
    templates: TemplateBlocks
    families: UrlFamilies
    directories: UrlDirectories | None
    waiting: WaitingLinks
    inbound: InboundEvidence | None
    compounds: CompoundWords
    hindsight: TemplateHindsight
    roles: RoleAnchors | None
    siblings: BlockYield | None
    probe: HubProbe | None
    learner: LinkLearner | None
    promotion: SeedPromotion
    _lowered: list[tuple[str, float]]
    _rescore_from: int
    _learner_from: int
    _update: UpdateSettings
    _random: random.Random
    _ga_random: np.random.Generator
    _recent: deque[_Recent]
    _feedback: list[deque[SparseVector]]
    _relevant_since_update: list[int]
    _most_on_topic: float
    _template_targets: set[str]
    _most_similar: float
    _pages: int
    _thresholds: list[tuple[int, float]]

    @property
    def threshold(self) -> float:
        """The current page relevance threshold."""
        return self.controller.value

    @property
    def link_threshold(self) -> float:
        """The priority a link needs to be queued now."""
        return self.focused.link_ratio * self.controller.value

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
        lift, base = self.focused.learner_lift, learner.base_rate
        blended = []
        for request, chance in zip(requests, chances.tolist(), strict=True):
            prior = request.reasons.get("prior", request.score)
            share = 0.0 if learner.explores(request.url) else weight
            reasons = {**request.reasons, "prior": prior, "model": chance, "learned": share}
            score = (
                lift_blend(prior, chance, share, base=base) if lift else blend(prior, chance, share)
            )
            blended.append(dataclasses.replace(request, score=score, reasons=reasons))
        return blended

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

    def _family_yield(self, url: str, *, template: bool) -> float:
        """The yield of the link's URL family (0 for a template link: its target is the
        site's, not the page author's choice)."""
        if not self.focused.family_yield or template:
            return 0.0
        return self.families.score(url)
