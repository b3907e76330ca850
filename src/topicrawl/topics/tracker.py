"""The topic tracking loop: one iteration per period, from new posts to crawl resources.

Each period :meth:`TopicTracker.run_period`

1. collects the posts published since the last period for the user's keywords (and
   hashtags) from a microblog source;
2. cleans, segments and clusters them into topics (:class:`~topicrawl.topics.TopicDiscoverer`);
3. computes each post's heat with AHP weights and folds the clusters into the topic-word table
   (:class:`~topicrawl.topics.TopicWordTable`), which matches them to known topics; posts left
   out of every cluster join the topic whose words they hold most of, and a topic's heat is the
   mean heat of its posts;
4. forecasts each active topic's next-period heat (DES + BP net, entropy-weighted);
5. allocates CPU caps and process counts in proportion to the forecasts, with the CPU the rest
   of the machine uses measured by psutil, and hands them (and the URLs found in each topic's
   posts) to the crawl supervisor when there is one;
6. saves the period (:class:`~topicrawl.topics.store.TopicStore`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from topicrawl.topics.ahp import (
    HeatWeights,
    PostEngagement,
    default_heat_weights,
    post_heat,
    topic_heat,
)
from topicrawl.topics.allocation import CpuUsage, TopicAllocation, allocate, measure_cpu
from topicrawl.topics.discovery import JiebaTokenizer, TopicDiscoverer, clean_text
from topicrawl.topics.forecast import (
    AlphaRule,
    BpForecaster,
    DesForecaster,
    HeatForecast,
    HeatForecaster,
)
from topicrawl.topics.store import PeriodRecord, PostRecord, TopicStore
from topicrawl.topics.table import PeriodUpdate, TopicWordTable, TrackedTopic

__all__ = [
    "CrawlSupervisor",
    "PeriodReport",
    "PostSource",
    "SourcePost",
    "TopicReport",
    "TopicTracker",
    "TrackerOptions",
]

_log = logging.getLogger(__name__)


class SourcePost(Protocol):
    """What the tracker reads of a post (:class:`topicrawl.sources.microblog.Post` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def created_at(self) -> float: ...
    @property
    def author(self) -> str: ...
    @property
    def reposts(self) -> int: ...
    @property
    def likes(self) -> int: ...
    @property
    def comments(self) -> int: ...
    @property
    def url(self) -> str: ...
    @property
    def links(self) -> tuple[str, ...]: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def lang(self) -> str | None: ...


class PostSource(Protocol):
    """A microblog to collect from (:class:`topicrawl.sources.microblog.MastodonClient`)."""

    @property
    def source(self) -> str: ...

    async def search(
        self, query: str, *, max_posts: int = ..., since_id: str | None = ...
    ) -> Sequence[SourcePost]: ...

    async def hashtag(
        self, tag: str, *, max_posts: int = ..., since_id: str | None = ...
    ) -> Sequence[SourcePost]: ...


class WorkStats(Protocol):
    @property
    def cpu_percent(self) -> float: ...


class CrawlSupervisor(Protocol):
    """Runs each topic's crawler processes within their CPU caps (``topics.supervisor``)."""

    def apply(self, allocations: Mapping[int, TopicAllocation]) -> None: ...

    async def submit(self, topic_id: int, urls: Sequence[str]) -> int: ...

    def stats(self) -> Mapping[int, WorkStats]: ...


@dataclass(frozen=True, slots=True)
class TrackerOptions:
    """How the tracker collects, clusters, forecasts and allocates.

    Args:
        keywords: searched each period; hashtags: hashtag timelines read each period.
        max_posts_per_query: newest posts read per keyword or hashtag and period.
        user_words: words jieba must never split (e.g. entity names); the keywords are added.
        similarity_threshold, word_threshold, min_posts: see :class:`TopicDiscoverer`.
        match_threshold, retire_after: see :class:`TopicWordTable`.
        alpha: DES smoothing rule (a number, ``"auto"`` or ``"volatility"``).
        per_process_cpu: CPU % one crawler process uses; max_processes: per topic.
        cpu_window: seconds over which machine CPU use is measured each period.
    """

    keywords: tuple[str, ...]
    hashtags: tuple[str, ...] = ()
    max_posts_per_query: int = 400
    user_words: tuple[str, ...] = ()
    similarity_threshold: float = 0.1
    word_threshold: float = 0.15
    min_posts: int = 3
    match_threshold: float = 0.3
    retire_after: int = 3
    alpha: AlphaRule = "volatility"
    per_process_cpu: float = 25.0
    max_processes: int = 4
    cpu_window: float = 0.5

    def __post_init__(self) -> None:
        if not self.keywords and not self.hashtags:
            raise ValueError("give at least one keyword or hashtag to track")
        if self.max_posts_per_query < 1 or self.cpu_window <= 0:
            raise ValueError("max_posts_per_query must be >= 1 and cpu_window > 0")


@dataclass(frozen=True, slots=True)
class TopicReport:
    """One active topic after a period."""

    topic_id: int
    words: tuple[str, ...]
    posts: int
    heat: float
    forecast: HeatForecast | None
    allocation: TopicAllocation | None
    new: bool
    urls_submitted: int = 0


@dataclass(frozen=True, slots=True)
class PeriodReport:
    """What one period of tracking found and decided.

    ``post_topics`` maps each new post's id to its topic (None: in no topic).
    """

    period: int
    collected: int
    topics: tuple[TopicReport, ...]
    retired: tuple[int, ...]
    cpu: CpuUsage | None
    seconds: float
    post_topics: Mapping[str, int | None] = field(compare=False)


def _meter(window: float) -> CpuUsage:
    return measure_cpu(window=window)


class TopicTracker:
    """Runs the tracking loop against one source (see the module docstring).

    Args:
        source: where posts come from.
        options: what to track and how.
        store: where each period is saved (``None``: kept in memory only).
        supervisor: the crawl supervisor to hand allocations and URLs to (``None``: none).
        heat_weights: AHP weights of reposts, likes and comments (default judgment if None).
        forecaster: the heat forecaster (default DES with ``options.alpha`` + BP net).
        cpu_meter: measures machine CPU use over a window (psutil by default).
    """

    def __init__(
        self,
        *,
        source: PostSource,
        options: TrackerOptions,
        store: TopicStore | None = None,
        supervisor: CrawlSupervisor | None = None,
        heat_weights: HeatWeights | None = None,
        forecaster: HeatForecaster | None = None,
        cpu_meter: Callable[[float], CpuUsage] = _meter,
    ) -> None:
        self._source = source
        self._options = options
        self._store = store
        self._supervisor = supervisor
        self._weights = heat_weights or default_heat_weights()
        self._forecaster = forecaster or HeatForecaster(
            forecasters=(DesForecaster(alpha=options.alpha), BpForecaster())
        )
        self._cpu_meter = cpu_meter
        words = (*options.user_words, *options.keywords, *options.hashtags)
        self._tokenizer = JiebaTokenizer(user_words=[w.strip("#") for w in words])
        self._discoverer = TopicDiscoverer(
            tokenizer=self._tokenizer,
            similarity_threshold=options.similarity_threshold,
            word_threshold=options.word_threshold,
            min_posts=options.min_posts,
        )
        self._table = TopicWordTable(
            match_threshold=options.match_threshold, retire_after=options.retire_after
        )
        self._since: dict[str, str] = {}
        self._seen: set[str] = set()
        self._next_period = 0

    @property
    def table(self) -> TopicWordTable:
        return self._table

    @property
    def next_period(self) -> int:
        return self._next_period

    async def resume(self) -> None:
        """Continue a history saved in the store: its topics, and posts newer than its newest."""
        if self._store is None:
            return
        last = await self._store.last_period()
        if last is None:
            return
        self._table = TopicWordTable(
            match_threshold=self._options.match_threshold,
            retire_after=self._options.retire_after,
            topics=await self._store.load_topics(),
        )
        self._next_period = last + 1
        newest = await self._store.newest_post_id(self._source.source)
        if newest is not None:
            for query in self._queries():
                self._since[query] = newest

    def _queries(self) -> list[str]:
        return [f"q:{k}" for k in self._options.keywords] + [
            f"tag:{t}" for t in self._options.hashtags
        ]

    # -- one period ----------------------------------------------------------------------------

    async def collect(self) -> list[SourcePost]:
        """The posts new since the last collection, for every keyword and hashtag, deduplicated."""
        found: list[SourcePost] = []
        # Posts of the last collection may come again (a server ignoring since_id, a post
        # found by two keywords); older ones cannot, so only two collections' ids are kept.
        previous, self._seen = self._seen, set()
        for query in self._queries():
            kind, term = query.split(":", 1)
            since = self._since.get(query)
            limit = self._options.max_posts_per_query
            if kind == "q":
                batch = await self._source.search(term, max_posts=limit, since_id=since)
            else:
                batch = await self._source.hashtag(term, max_posts=limit, since_id=since)
            numeric = [int(p.id) for p in batch if p.id.isdigit()]
            if numeric:
                self._since[query] = str(max([*numeric, int(since or 0)]))
            for post in batch:
                if post.id not in self._seen and post.id not in previous:
                    self._seen.add(post.id)
                    found.append(post)
        return found

    async def run_period(self) -> PeriodReport:
        """Collect, discover, heat, forecast, allocate and save one period."""
        started = time.time()
        period = self._next_period
        posts = await self.collect()
        texts = [p.text for p in posts]
        clusters = await asyncio.to_thread(self._discoverer.discover, texts)
        heats = [post_heat(_engagement(p), self._weights) for p in posts]
        update = self._table.update(period, clusters, post_heats=heats)
        members: dict[int, list[int]] = {
            tid: [m for i in indices for m in clusters[i].members]
            for tid, indices in update.assignments.items()
        }
        clustered = {m for ms in members.values() for m in ms}
        leftovers = [i for i in range(len(posts)) if i not in clustered]
        for index, tid in (await asyncio.to_thread(self._assign, texts, leftovers)).items():
            members.setdefault(tid, []).append(index)
        active = self._table.active
        topic_of: dict[int, int] = {m: tid for tid, ms in members.items() for m in ms}
        for topic in active:
            ms = members.get(topic.topic_id, [])
            heat = topic_heat((_engagement(posts[m]) for m in ms), self._weights)
            self._table.record_heat(topic.topic_id, period, heat)
        active = self._table.active
        forecasts = await asyncio.to_thread(self._forecast_all, active)
        cpu, allocations = await self._allocate(forecasts)
        submitted: dict[int, int] = {}
        if self._supervisor is not None and allocations:
            self._supervisor.apply(allocations)
            for tid in allocations:
                urls = sorted({u for m in members.get(tid, ()) for u in posts[m].links})
                if urls:
                    submitted[tid] = await self._supervisor.submit(tid, urls)
        reports = tuple(
            TopicReport(
                topic_id=t.topic_id,
                words=tuple(t.words)[:8],
                posts=len(members.get(t.topic_id, ())),
                heat=t.heat_series[-1] if t.heat_history else 0.0,
                forecast=forecasts.get(t.topic_id),
                allocation=allocations.get(t.topic_id),
                new=t.topic_id in update.new_topics,
                urls_submitted=submitted.get(t.topic_id, 0),
            )
            for t in sorted(active, key=lambda t: -(t.heat_series[-1] if t.heat_history else 0))
        )
        finished = time.time()
        if self._store is not None:
            await self._store.save_period(
                PeriodRecord(
                    period=period,
                    started_at=started,
                    finished_at=finished,
                    keywords=(*self._options.keywords, *(f"#{t}" for t in self._options.hashtags)),
                    heat_weights=self._weights,
                    posts=[
                        _record(self._source.source, p, period, heats[i], topic_of.get(i))
                        for i, p in enumerate(posts)
                    ],
                    topics=[self._table[t] for t in sorted(self._topic_ids_touched(update))],
                    heats=MappingProxyType({r.topic_id: (r.heat, r.posts) for r in reports}),
                    forecasts=MappingProxyType(forecasts),
                    allocations=MappingProxyType(allocations),
                    cpu_total=cpu.total if cpu is not None else None,
                    cpu_used_by_others=cpu.used_by_others if cpu is not None else None,
                )
            )
        self._next_period = period + 1
        return PeriodReport(
            period=period,
            collected=len(posts),
            topics=reports,
            retired=update.retired,
            cpu=cpu,
            seconds=finished - started,
            post_topics=MappingProxyType({p.id: topic_of.get(i) for i, p in enumerate(posts)}),
        )

    def _topic_ids_touched(self, update: PeriodUpdate) -> set[int]:
        return {t.topic_id for t in self._table.active} | set(update.retired)

    def _assign(self, texts: Sequence[str], indices: Sequence[int]) -> dict[int, int]:
        """Posts in no cluster join the active topic whose words they hold most weight of."""
        active = self._table.active
        chosen: dict[int, int] = {}
        for index in indices:
            tokens = set(self._tokenizer(clean_text(texts[index])))
            best, best_score = None, 0.0
            for topic in active:
                score = math.fsum(w for word, w in topic.words.items() if word in tokens)
                if score > best_score:
                    best, best_score = topic.topic_id, score
            if best is not None:
                chosen[index] = best
        return chosen

    def _forecast_all(self, active: Sequence[TrackedTopic]) -> dict[int, HeatForecast]:
        return {
            topic.topic_id: self._forecaster.forecast(topic.heat_series)
            for topic in active
            if topic.heat_history
        }

    async def _allocate(
        self, forecasts: Mapping[int, HeatForecast]
    ) -> tuple[CpuUsage | None, dict[int, TopicAllocation]]:
        if not forecasts:
            return None, {}
        cpu = await asyncio.to_thread(self._cpu_meter, self._options.cpu_window)
        own = 0.0
        if self._supervisor is not None:
            own = math.fsum(s.cpu_percent for s in self._supervisor.stats().values())
        used_by_others = max(0.0, cpu.total - max(own, cpu.own))
        allocations = allocate(
            {tid: max(0.0, f.value) for tid, f in forecasts.items()},
            cores=cpu.capacity / 100.0,
            used_by_others=used_by_others,
            per_process_cpu=self._options.per_process_cpu,
            max_processes=self._options.max_processes,
        )
        return (
            CpuUsage(capacity=cpu.capacity, total=cpu.total, own=cpu.total - used_by_others),
            allocations,
        )

    # -- the loop ------------------------------------------------------------------------------

    async def track(
        self,
        periods: int,
        *,
        period_seconds: float = 0.0,
        before_period: Callable[[int], Awaitable[None] | None] | None = None,
        on_period: Callable[[PeriodReport], None] | None = None,
    ) -> list[PeriodReport]:
        """Run ``periods`` periods, each starting ``period_seconds`` after the one before.

        ``before_period`` runs at the start of each period (the demo advances its clock there);
        ``on_period`` gets each report as soon as the period is done.
        """
        reports: list[PeriodReport] = []
        loop = asyncio.get_running_loop()
        for index in range(periods):
            began = loop.time()
            if before_period is not None:
                waiting = before_period(self._next_period)
                if waiting is not None:
                    await waiting
            report = await self.run_period()
            reports.append(report)
            if on_period is not None:
                on_period(report)
            if index < periods - 1:
                await asyncio.sleep(max(0.0, began + period_seconds - loop.time()))
        return reports


def _engagement(post: SourcePost) -> PostEngagement:
    return PostEngagement(reposts=post.reposts, likes=post.likes, comments=post.comments)


def _record(
    source: str, post: SourcePost, period: int, heat: float, topic_id: int | None
) -> PostRecord:
    return PostRecord(
        source=source,
        post_id=post.id,
        period=period,
        created_at=post.created_at,
        author=post.author,
        text=post.text,
        url=post.url,
        reposts=post.reposts,
        likes=post.likes,
        comments=post.comments,
        heat=heat,
        topic_id=topic_id,
        links=tuple(post.links),
        tags=tuple(post.tags),
        lang=post.lang,
    )
