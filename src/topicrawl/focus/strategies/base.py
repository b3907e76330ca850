"""What every strategy shares (seeds, link filtering, the page scorer), and the strategies
that need nothing more: bfs, best-first and shark.

Each is pure: it sees pages and returns scored requests, with no I/O and no event loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from topicrawl.core.models import (
    FetchFailure,
    Link,
    LinkScore,
    Page,
    Request,
    StrategyResult,
)
from topicrawl.core.protocols import TextAnalyzer
from topicrawl.focus.links import (
    block_texts,
    inherited_score,
    shark_potential,
)
from topicrawl.focus.options import SharkOptions, StrategyOptions
from topicrawl.focus.relevance import (
    Relevance,
    TopicProfile,
    TopicScorer,
    TopicVector,
    unsplittable_keywords,
)
from topicrawl.focus.stemming import PageTerms
from topicrawl.text.vectors import SparseVector

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


def _topic_of(scorer: TopicScorer, relevance: Relevance) -> str:
    """The name of the topic a page is most about (stored as ``pages.topic``)."""
    return scorer.topics[relevance.topic].profile.name


def _link_scores(requests: Iterable[Request]) -> tuple[LinkScore, ...]:
    """Each request's priority and components, for the page's stored link scores (storage keeps
    the best few hundred: storage.link_scores)."""
    return tuple(LinkScore(r.url, r.score, r.reasons) for r in requests)


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
        relevance = _score(self.scorer, page)[0]
        score = relevance.score
        return StrategyResult(
            score,
            requests,
            relevant=score >= self.options.threshold,
            topic=_topic_of(self.scorer, relevance),
        )


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
        relevance = _score(self.scorer, page)[0]
        score = relevance.score
        requests = tuple(
            self._request(page, link, score=score, inherited=score, reasons={"page": score})
            for link in self._links(page)
        )
        return StrategyResult(
            score,
            requests,
            relevant=score >= self.options.threshold,
            topic=_topic_of(self.scorer, relevance),
            link_scores=_link_scores(requests),
        )


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
        relevance = _score(self.scorer, page)[0]
        similarity = relevance.score
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
        return StrategyResult(
            similarity,
            tuple(requests),
            relevant=similarity >= o.threshold,
            topic=_topic_of(self.scorer, relevance),
            link_scores=_link_scores(requests),
        )
