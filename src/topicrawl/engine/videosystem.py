"""Seed 004 as one system (issue #22 items 3 and 5): ``topicrawl video run``.

1. **Crawl** the video site with the parser library (:func:`~topicrawl.engine.run_crawl` with
   the site's schemas): pages, their records (title, type, directors, actors, plays,
   comments, favourites) and media are stored as in any crawl.
2. **Plan** (:mod:`topicrawl.revisit.videoplan`): the records grouped into videos; each
   video's popularity index from its extracted counts (and their growth since the last plan);
   the 1 / 3 / 7-day tiers; the node of each video. Re-planned every ``recompute_period``
   (weekly) on the clock, from the counts the revisits read.
3. **Accounts** (:func:`~topicrawl.engine.accounts.run_account_pipeline`): the videos'
   entity names (titles, directors, actors) matched to microblog accounts, the follow graph
   grown, the LDA filter, weighted PageRank tiers; recomputed with each plan.
4. **Revisit** pages and accounts when due: a page is fetched with its ``ETag`` (304:
   unchanged), its record re-extracted by the library (which heals across template changes)
   and its fetch kept in ``page_history``; an account's timeline is read again and the posts
   made since are stored. Every revisit is a row of ``system_visits`` with its due time.

Time comes from a :class:`~topicrawl.revisit.clock.Clock`: the system clock, or a simulated
one that jumps from event to event so weeks run in seconds (the demo servers read the same
clock).

**Nodes.** With ``node`` set, this process revisits only the videos and accounts placed on it
(:func:`~topicrawl.revisit.videoplan.video_node`,
:func:`~topicrawl.engine.accounts.account_node`). The first of ``nodes`` leads: it
leads the first crawl (done by every node, see below), plans and runs the account pipeline,
and writes the plan (``videos``) and the accounts' tiers and nodes to the shared database;
every other node follows: it waits for the leader's first plan, revisits its share, and picks
up each new plan and account ranking as the leader writes them (looking every ``follow_poll``
of the clock once a plan is due). Each
node's real time per item in a round (between two plans) is kept in ``node_rounds``; the
leader's next plan places new videos and new accounts by those measured rates (what is placed
stays while its node is listed).

**Leadership is a lease** in the shared database (:meth:`VideoStore.take_lease`, the table
``leader_leases``): the first node takes it at start and renews it every third of
``lease_ttl`` of the clock: a task beside its work renews it whatever the node is doing
(crawling, planning, ranking accounts, revisiting; :meth:`VideoSystem._keep_lease`), and
between revisits on a simulated clock the node wakes for it. A follower
that finds it expired whenever it looks for the leader's work (its first plan, its account
ranking, a later plan) takes it over: before any plan exists it makes the first crawl (which
resumes the dead leader's, on SQLite) and the first plan itself; after one, it continues the
leader's plans from the database (the next one a ``recompute_period`` after the last, so no
week is planned twice) and places the dead leader's videos and accounts on the live nodes. A
lease nobody took (the first node died before it could) is taken the same way once a
``lease_ttl`` has passed since the follower started. A leader that finds the lease taken
(while revisiting, crawling or ranking: that work is cancelled) steps down and follows.
**The work is split** (``split``, on by default with several nodes;
:mod:`topicrawl.engine.videosplit`): the leader's first crawl and its account pipeline's reads
(each hop's following lists, the accounts' posts) are jobs in the shared database that every
live node works on (a task beside its other work claims a few items at a time); the leader
only seeds the crawl, merges, plans, filters and ranks. A node that dies holding items loses
them to the others when its claims end; a leader that dies mid-crawl leaves the crawl's job to
the node that takes its lease over, which continues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

from topicrawl.core.config import CrawlSettings, FetchSettings, PolitenessSettings
from topicrawl.core.errors import ConfigError, FetchError, FrontierInUse, StorageError
from topicrawl.core.models import Request
from topicrawl.core.tasks import cancel_and_wait
from topicrawl.engine.accounts import (
    AccountPipelineSettings,
    AccountRun,
    post_record,
    run_and_store,
)
from topicrawl.engine.parsers import open_parser_library
from topicrawl.engine.videosplit import AccountFetches, SplitSettings, WorkSplit
from topicrawl.fetch.client import HttpFetcher
from topicrawl.fetch.robots import RobotsCache
from topicrawl.parse.content import content_hash
from topicrawl.parse.methods import ParserLibrary, extract
from topicrawl.revisit.clock import Clock
from topicrawl.revisit.estimate import ChangeHistory
from topicrawl.revisit.tiers import DAY, TierPolicy, period_of, tier_of_period
from topicrawl.revisit.videoplan import (
    VideoPlan,
    node_weights,
    plan_videos,
    videos_from_records,
)
from topicrawl.sources.accountsapi import AccountsClient
from topicrawl.storage.accountstore import AccountStore, PostRecord
from topicrawl.storage.history import FetchRecord, PageHistory
from topicrawl.storage.videostore import VideoStore, Visit

__all__ = ["POLICIES", "SystemReport", "VideoSystem", "VideoSystemSettings"]

POLICIES = ("tiers", "change-rate")
"""How pages are revisited (:attr:`VideoSystemSettings.policy`)."""

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

_T = TypeVar("_T")


class _LeaseLost(Exception):
    """Another node holds the leader's lease: this one steps down and follows."""


@dataclass(frozen=True)
class VideoSystemSettings:
    """What ``topicrawl video run`` is given.

    Attributes:
        site: the video site's start URL.
        db: the crawl database (SQLite file or ``postgresql://`` URL).
        parsers: the site's schemas (TOML file) for the parser library.
        detail_schema: the schema of a video's detail page (the one with the counts).
        api: a Mastodon-compatible server for the accounts (None: no accounts).
        days: how long to keep revisiting, in days of the clock, counted from the first plan
            and account ranking (a following node waits at most as long for them).
        tiers: tier shares and periods, and the re-plan period.
        accounts: the account pipeline's settings (its tiers are replaced by ``tiers``).
        nodes: the nodes work is spread over; ``node``: this process's (None: all of them).
        max_pages: pages the first crawl fetches at most (0: all in scope).
        concurrency: requests in flight at once (crawl and revisits).
        delay: seconds between two requests to one host.
        day_seconds: a day's length on the clock, for growth per day.
        follow_poll: seconds of the clock between a following node's looks for the leader's
            next plan (None: a hundredth of ``recompute_period``).
        follow_timeout: seconds of the clock a following node waits for the leader's first
            plan and account ranking (None: ``days``).
        lease_ttl: seconds of the clock the leader's lease lasts unless renewed (None: a
            twentieth of ``recompute_period``, at least a minute); with several nodes only.
        policy: when pages are revisited: ``tiers`` (each video's tier period by popularity)
            or ``change-rate`` (each page's freshness-optimal interval from its estimated
            change rate and its video's plays, at the tiers' budget, re-planned every tier-1
            period and shown as the nearest tier).
        split: with several nodes, every live node does part of the first crawl and of the
            account pipeline's reads (following lists, posts) through the shared database
            (:mod:`topicrawl.engine.videosplit`); off: the leader does them alone.
        split_settings: the split's batches, claim time and poll.
    """

    site: str
    db: str
    parsers: str
    detail_schema: str = "video-detail"
    api: str | None = None
    days: float = 28.0
    tiers: TierPolicy = field(default_factory=TierPolicy)
    accounts: AccountPipelineSettings = field(default_factory=AccountPipelineSettings)
    nodes: tuple[str, ...] = ("local",)
    node: str | None = None
    max_pages: int = 0
    concurrency: int = 4
    delay: float = 0.0
    day_seconds: float = DAY
    follow_poll: float | None = None
    follow_timeout: float | None = None
    lease_ttl: float | None = None
    policy: str = "tiers"
    # Off by default (session 20): a host's delay is kept by each node, not across nodes (N
    # nodes may ask a host N times as often), and on a site that answers at once the split
    # ran about 2x slower than one node on 2 cores (benchmarks/revisit, "Session 20").
    split: bool = False
    split_settings: SplitSettings = field(default_factory=SplitSettings)

    def __post_init__(self) -> None:
        if not self.site.startswith(("http://", "https://")):
            raise ConfigError(f"the video site must be an http(s) URL, got {self.site!r}")
        if not (self.days > 0 and math.isfinite(self.days)):
            raise ConfigError(f"days must be a positive number, got {self.days}")
        if not self.nodes or len(set(self.nodes)) != len(self.nodes):
            raise ConfigError("nodes must be one or more distinct names")
        if self.node is not None and self.node not in self.nodes:
            raise ConfigError(f"node {self.node!r} is not one of {', '.join(self.nodes)}")
        if not 1 <= self.concurrency <= 256 or self.delay < 0 or self.max_pages < 0:
            raise ConfigError("concurrency must be 1-256, delay and max_pages >= 0")
        if not self.day_seconds > 0:
            raise ConfigError("day_seconds must be > 0")
        if self.policy not in POLICIES:
            raise ConfigError(f"policy is one of {', '.join(POLICIES)}, got {self.policy!r}")
        for name in ("follow_poll", "follow_timeout", "lease_ttl"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ConfigError(f"{name} must be a positive number, got {value}")

    def mine(self, node: str | None) -> bool:
        """Whether an item placed on ``node`` is this process's to revisit."""
        return self.node is None or node == self.node

    @property
    def leads(self) -> bool:
        """Whether this process crawls, plans and ranks accounts (the first node, or all)."""
        return self.node is None or self.node == self.nodes[0]

    @property
    def lease(self) -> float:
        """How long the leader's lease lasts unless renewed."""
        return self.lease_ttl or max(self.tiers.recompute_period / 20, 60.0)

    @property
    def poll(self) -> float:
        """A following node's wait between two looks for the leader's next plan."""
        return self.follow_poll or self.tiers.recompute_period / 100


@dataclass
class SystemReport:
    """What a run did (numbers a test or the CLI shows)."""

    started_at: float = 0.0
    ended_at: float = 0.0
    pages_crawled: int = 0
    records: int = 0
    videos: int = 0
    partial: int = 0
    plans: list[dict[str, Any]] = field(default_factory=list)
    page_visits: int = 0
    not_modified: int = 0
    changed_pages: int = 0
    failed_visits: int = 0
    account_visits: int = 0
    new_posts: int = 0
    accounts: dict[str, int] = field(default_factory=dict)
    account_runs: int = 0
    visits_by_tier: dict[str, int] = field(default_factory=dict)
    max_lateness: float = 0.0
    nodes: dict[str, int] = field(default_factory=dict)
    node_weights: dict[str, float] = field(default_factory=dict)
    split: dict[str, int] = field(default_factory=dict)  # job kind -> items this node did


@dataclass(frozen=True)
class _Io:
    """What the revisits read and write through."""

    store: VideoStore
    history: PageHistory
    library: ParserLibrary
    accounts: AccountStore
    client: AccountsClient | None
    fetcher: HttpFetcher


@dataclass
class _Due:
    """An item to revisit: when, in which tier, the node it is on, when last visited."""

    at: float
    tier: int
    node: str
    last: float


class VideoSystem:
    """Runs seed 004's system once through (see the module docstring).

    Args:
        settings: what to run.
        clock: the time source (system or simulated).
        progress: called with a line at each stage (the CLI prints it).
    """

    def __init__(
        self, settings: VideoSystemSettings, *, clock: Clock, progress: Progress | None = None
    ) -> None:
        self.s = settings
        self.clock = clock
        self._say = progress or (lambda _line: None)
        self.source = settings.site
        self.report = SystemReport()
        self._records: dict[str, tuple[str, dict[str, Any]]] = {}
        self._etags: dict[str, str] = {}
        self._hashes: dict[str, str] = {}
        self._pages: dict[str, _Due] = {}
        self._accounts: dict[str, _Due] = {}
        self._plan: VideoPlan | None = None
        self._counts_at_plan: dict[str, Mapping[str, float]] = {}
        self._planned_at = 0.0
        self._run_id = 0
        self._seen_posts: dict[str, set[str]] = {}
        self._host_next: dict[str, float] = {}
        self._round: dict[str, list[float]] = {}  # node -> [items, real seconds] this round
        # The change-rate policy: what each page's revisits saw, its popularity tier (which
        # sets the budget) and its planned interval, re-planned every tier-1 period.
        self._histories: dict[str, ChangeHistory] = {}
        self._page_tiers: dict[str, int] = {}
        self._intervals: dict[str, float] = {}
        self._rates_at = -math.inf
        # Leadership: a lease in the database when several nodes share it.
        self._leading = settings.leads
        self._leased = settings.node is not None and len(settings.nodes) > 1
        self._renew_at = -math.inf
        self._gone: set[str] = set()  # leaders whose lease this node took over
        self.split: WorkSplit | None = None  # with several nodes and ``split`` on

    async def run(self) -> SystemReport:
        """Crawl, plan, rank accounts, then revisit what is due until ``days`` have passed.

        Raises:
            ConfigError: bad schemas, or the crawl found no video.
            StorageError: the database failed.
            FetchError: the microblog server failed beyond the client's retries.
        """
        s, report = self.s, self.report
        start = self.clock.now()
        report.started_at = start
        span = s.days * s.day_seconds
        patience = start + (s.follow_timeout or span)
        async with VideoStore(s.db) as store, contextlib.AsyncExitStack() as stack:
            keeper = asyncio.create_task(self._keep_lease(store)) if self._leased else None
            helper = None
            if self._leased and s.split:
                self.split = await self._open_split(store, stack)
                helper = asyncio.create_task(self.split.help())
            try:
                return await self._run(store, start, patience)
            finally:
                for task in (keeper, helper):
                    if task is not None:
                        task.cancel()
                        await asyncio.wait({task})
                if self.split is not None:
                    report.split = dict(self.split.done)

    async def _open_split(self, store: VideoStore, stack: contextlib.AsyncExitStack) -> WorkSplit:
        """This node's part in the split jobs (with a microblog client of its own)."""
        s = self.s
        assert s.node is not None
        client = None
        if s.api:
            client = AccountsClient(s.api)
            await stack.enter_async_context(client)
        return WorkSplit(
            store,
            source=self.source,
            node=s.node,
            crawl=self._crawl_settings(),
            client=client,
            max_following=s.accounts.max_following,
            max_posts=s.accounts.max_posts,
            settings=s.split_settings,
        )

    async def _run(self, store: VideoStore, start: float, patience: float) -> SystemReport:
        s, report = self.s, self.report
        span = s.days * s.day_seconds
        if not await self._first_plan(store, start, wait_until=patience):
            self._say(f"node {s.node}: no plan from node {s.nodes[0]} in time")
            report.ended_at = self.clock.now()
            return report
        async with (
            PageHistory(s.db) as history,
            open_parser_library(s.parsers, s.db) as library,
            AccountStore(s.db) as accounts,
        ):
            assert library is not None
            client = AccountsClient(s.api) if s.api else None
            try:
                if client is not None:
                    await client.__aenter__()
                    if not await self._first_ranking(client, store, accounts, patience):
                        self._say(f"node {s.node}: no account ranking yet; looking on")
                end = self.clock.now() + span  # the revisits' days count from here
                fetcher = HttpFetcher(settings=FetchSettings())
                polite = PolitenessSettings()
                fetcher.robots = RobotsCache(  # revisits obey robots.txt as the crawl did
                    session=fetcher.session,
                    user_agent=FetchSettings().user_agent,
                    error_ttl=polite.robots_error_ttl,
                    max_crawl_delay=polite.max_crawl_delay,
                )
                fetcher.before_request = self._space
                try:
                    io = _Io(store, history, library, accounts, client, fetcher)
                    await self._revisit_until(end, io)
                finally:
                    await fetcher.close()
            finally:
                if client is not None:
                    await client.__aexit__(None, None, None)
        report.ended_at = self.clock.now()
        return report

    # -- the crawl and the plans --------------------------------------------------------------

    async def _first_plan(self, store: VideoStore, start: float, *, wait_until: float) -> bool:
        """Lead (take the lease, crawl and plan), or follow: wait for the leader's first plan,
        and take the lease over to crawl and plan in the leader's place when it expires
        before there is one. Whether this node has a plan (False: none by ``wait_until``)."""
        s = self.s
        if self._leased and self._leading:
            self._leading = await self._hold(store, start)
            if not self._leading:
                self._say(f"node {s.node}: another node holds the lease; following")
        while True:
            if not self._leading and not await self._await_leader(
                store, lambda: self._follow(store, self.clock.now()), wait_until
            ):
                return False
            if self._plan is not None:
                return True  # a plan to follow, or to lead on from
            try:
                await self._under_lease(self._crawl_and_plan(store))
            except _LeaseLost:
                self._step_down("during the first crawl")
            else:
                return True

    async def _crawl_and_plan(self, store: VideoStore) -> None:
        s, report = self.s, self.report
        # A leader that lost its lease while crawling stops its crawl within a look of its
        # lease keeper (this node may have taken the lease from a live but slow one).
        patience = time.monotonic() + min(s.lease, 60.0) + 10.0
        while True:
            try:
                report.pages_crawled = await self._crawl()
                break
            except FrontierInUse:
                if time.monotonic() > patience:
                    raise
                self._say(f"node {s.node}: another crawl holds the frontier; waiting for it")
                await asyncio.sleep(min(s.lease / 6, 1.0))
        self._records = await store.records()
        report.records = len(self._records)
        await self._replan(store, self.clock.now())
        if not self._plan or not self._plan.tiers:
            raise ConfigError(
                f"the crawl of {s.site} stored no record of schema {s.detail_schema!r}: "
                "check the schemas' domains and paths"
            )

    def _crawl_settings(self) -> CrawlSettings:
        s = self.s
        return CrawlSettings(
            seeds=(s.site,),
            sitemaps=True,
            max_pages=s.max_pages,
            concurrency=s.concurrency,
            parse_workers=1,
            parsers=s.parsers,
            politeness={"per_host": s.concurrency, "delay": s.delay},
            scope={"allowed_domains": (urlsplit(s.site).hostname or "",), "max_depth": 20},
            storage={"url": s.db},
        )

    async def _crawl(self) -> int:
        from topicrawl.engine.build import run_crawl  # noqa: PLC0415 - the crawl's whole stack

        s = self.s
        if self.split is not None:
            return await self._crawl_split(self.split)
        settings = self._crawl_settings()
        self._say(f"crawling {s.site} with the parser library")
        report = await run_crawl(settings)
        self._say(f"crawl: {report.stats.pages} pages")
        return report.stats.pages

    async def _crawl_split(self, split: WorkSplit) -> int:
        """The first crawl with every live node (a dead leader's unfinished one continued);
        how many URLs it took."""
        job = await split.open_crawl_job()
        items: list[str] = []
        if job is None:
            job, items = await split.start_crawl_job()
            self._say(f"crawling {self.s.site} split between the nodes ({len(items)} to start)")
        else:
            self._say(f"node {self.s.node}: continuing the crawl {job} of a node gone")
        done = await split.lead(job, items)
        await split.finish_crawl_job(job, len(done))
        counts = await split.store.split_counts(self.source, job)
        self._say(f"crawl: {len(done)} URLs, by node: {dict(sorted(counts.items()))}")
        return len(done)

    async def _nodes(self, store: VideoStore, now: float) -> dict[str, float]:
        """Each node's weight for new videos: its measured items per second in its last round
        (this process's rounds are written first; other nodes' are read from the database)."""
        if self._round:
            rounds = {n: (int(i), t) for n, (i, t) in self._round.items()}
            await store.add_rounds(self.source, now, rounds)
            self._round = {}
        measured = await store.last_rounds(self.source)
        live = [n for n in self.s.nodes if n not in self._gone]
        weights = node_weights({n: measured.get(n, (0, 0.0)) for n in live})
        self.report.node_weights = weights
        return weights

    async def _replan(self, store: VideoStore, now: float) -> None:
        """Plan the videos found in ``self._records`` and save the plan.

        Raises:
            _LeaseLost: another node leads now (checked right before the plan is written: the
                renewal gives this node a whole ``lease_ttl`` to write it in).
        """
        s = self.s
        if self._leased and not await self._hold(store, now):
            self._step_down("before its plan")
            raise _LeaseLost
        found = videos_from_records(self._records, detail_schema=s.detail_schema)
        previous = self._plan
        plan = plan_videos(
            found,
            s.tiers,
            await self._nodes(store, now),
            previous=self._counts_at_plan or None,
            elapsed=now - self._planned_at if previous else 0.0,
            placed=previous.nodes if previous else await store.placed(self.source),
            day_seconds=s.day_seconds,
        )
        await store.save_plan(self.source, found, plan, s.tiers, planned_at=now)
        self._plan = plan
        self._counts_at_plan = {v.key: dict(v.counts) for v in found}
        self._planned_at = now
        tiers = Counter(plan.tiers.values())
        self.report.videos = len(found)
        self.report.partial = sum(v.partial for v in found)
        self.report.nodes = dict(Counter(plan.nodes.values()))
        self.report.plans.append(
            {"at": now, "videos": len(found), "tiers": {t: tiers[t] for t in (1, 2, 3)}}
        )
        self._say(
            f"plan at day {(now - self.report.started_at) / s.day_seconds:.1f}: {len(found)} "
            f"videos, tiers 1/2/3: {tiers[1]}/{tiers[2]}/{tiers[3]}"
        )
        self._schedule_pages({v.key: v.pages for v in found}, plan, now)

    def _schedule_pages(
        self, pages: Mapping[str, Sequence[str]], plan: VideoPlan, now: float
    ) -> None:
        """Due times of this node's pages under ``plan`` (video -> its pages)."""
        for key, urls in pages.items():
            node = plan.nodes[key]
            if not self.s.mine(node):
                continue
            tier = plan.tiers[key]
            period = period_of(tier, self.s.tiers)
            for url in urls:
                last = self._pages[url].last if url in self._pages else now
                self._pages[url] = _Due(max(now, last + period), tier, node, last)
                self._page_tiers[url] = tier
        if self.s.policy == "change-rate":
            self._plan_rates(now)

    def _plan_rates(self, now: float) -> None:
        """The change-rate policy's intervals for this node's pages: the freshness-optimal
        frequencies (:func:`~topicrawl.revisit.refresh.planned_intervals`) for the visits a
        day the popularity tiers would spend on them, weighted by their video's plays."""
        from topicrawl.revisit.refresh import (  # noqa: PLC0415 - numpy
            planned_intervals,
            planning_rate,
        )

        s, day = self.s, self.s.day_seconds
        urls = list(self._pages)
        self._rates_at = now
        if not urls:
            return
        plays: dict[str, float] = {}
        for video in videos_from_records(self._records, detail_schema=s.detail_schema):
            for url in video.pages:
                plays[url] = float(video.counts.get("plays") or 0.0) + 1.0
        prior = period_of(2, s.tiers) / day
        rates = [planning_rate(self._histories.get(u, ChangeHistory()), prior=prior) for u in urls]
        budget = sum(day / period_of(self._page_tiers.get(u, 3), s.tiers) for u in urls)
        weights = [plays.get(u, 1.0) for u in urls]
        found = planned_intervals(rates, weights, budget, s.tiers, day=day)
        for _ in range(3):  # intervals held at their bounds spend less: give the rest again
            spent = sum(day / i for i in found)
            if spent >= 0.99 * budget:
                break
            scaled = budget * budget / spent
            found = planned_intervals(rates, weights, scaled, s.tiers, day=day)
        for url, interval in zip(urls, found, strict=True):
            self._intervals[url] = interval
            due = self._pages[url]
            tier = tier_of_period(interval, s.tiers)
            self._pages[url] = _Due(max(now, due.last + interval), tier, due.node, due.last)

    async def _follow(self, store: VideoStore, now: float) -> bool:
        """A following node takes the leader's latest plan if it is newer than the one it
        follows; whether it took one. Before a plan falls due, this node's round is written
        for the leader to weigh."""
        s = self.s
        due = self._planned_at + s.tiers.recompute_period
        if self._round and self._planned_at and now >= due - 2 * s.poll:
            rounds = {n: (int(i), t) for n, (i, t) in self._round.items()}
            await store.add_rounds(self.source, now, rounds)
            self._round = {}
        rows = await store.videos(source=self.source, limit=None)
        planned = max((float(r["planned_at"]) for r in rows), default=0.0)
        if planned <= self._planned_at:
            return False
        latest = [r for r in rows if float(r["planned_at"]) == planned]
        plan = VideoPlan(
            popularity={r["video"]: float(r["popularity"]) for r in latest},
            tiers={r["video"]: int(r["tier"]) for r in latest},
            nodes={r["video"]: str(r["node"]) for r in latest},
        )
        self._plan, self._planned_at = plan, planned
        self._counts_at_plan = {r["video"]: json.loads(r["counts"]) for r in latest}
        self._records = await store.records()
        self.report.records = len(self._records)
        self.report.videos = len(latest)
        self.report.partial = sum(bool(r["partial"]) for r in latest)
        self.report.nodes = dict(Counter(plan.nodes.values()))
        tiers = Counter(plan.tiers.values())
        self.report.plans.append(
            {"at": planned, "videos": len(latest), "tiers": {t: tiers[t] for t in (1, 2, 3)}}
        )
        self._say(f"node {s.node}: following the plan of {len(latest)} videos made at {planned}")
        pages = {r["video"]: tuple(json.loads(r["pages"])) for r in latest}
        self._schedule_pages(pages, plan, self.clock.now())
        return True

    async def _rank_accounts(
        self, client: AccountsClient, store: AccountStore, now: float
    ) -> AccountRun:
        s = self.s
        found = videos_from_records(self._records, detail_schema=s.detail_schema)
        names = list(dict.fromkeys(n for v in found for n in v.names if n.strip()))
        stored = await store.accounts(source=client.source, kept_only=True, limit=None)
        settings = replace(
            s.accounts,
            tiers=s.tiers,
            nodes=tuple(n for n in s.nodes if n not in self._gone),
            node_weights=self.report.node_weights or None,
            placed={r["account_id"]: r["node"] for r in stored if r["node"]},
            for_plan=self._planned_at,
        )
        split = self.split
        run_id, result, counts = await run_and_store(
            client,
            store,
            names,
            settings,
            now=now,
            split=(lambda run: AccountFetches(split, str(run))) if split is not None else None,
        )
        self._run_id = run_id
        self.report.account_runs += 1
        self.report.accounts = {**counts, "dropped": counts["accounts"] - counts["kept"]}
        for post in result.posts:
            self._seen_posts.setdefault(post.account_id, set()).add(post.post_id)
        self._schedule_accounts(
            {
                r.account_id: (r.tier, r.node or s.nodes[0])
                for r in result.records
                if r.kept and r.tier is not None
            },
            now,
        )
        self._say(
            f"accounts: {len(names)} names -> {counts['matched']} matches, "
            f"{counts['accounts']} in the follow graph, {counts['kept']} kept"
        )
        return result

    async def _ranked(self, client: AccountsClient, store: AccountStore) -> bool:
        """Whether the latest plan has its account ranking: a done run made for it or a later
        one (a run whose settings do not say, made before session 20, counts as made for it)."""
        runs = await store.runs(limit=20)
        done = [r for r in runs if r.source == client.source and r.status == "done"]
        if not done:
            return False
        try:
            made_for = json.loads(done[0].settings).get("for_plan")
        except (ValueError, AttributeError):
            return True
        return made_for is None or float(made_for) >= self._planned_at

    def _schedule_accounts(self, kept: Mapping[str, tuple[int, str]], now: float) -> None:
        """Due times of this node's kept accounts (id -> tier, node); the others are dropped."""
        for account_id in list(self._accounts):
            if account_id not in kept:
                del self._accounts[account_id]  # dropped by this week's filter
        for account_id, (tier, node) in kept.items():
            if not self.s.mine(node):
                continue
            period = period_of(tier, self.s.tiers)
            old = self._accounts.get(account_id)
            last = old.last if old else now
            self._accounts[account_id] = _Due(max(now, last + period), tier, node, last)

    async def _first_ranking(
        self,
        client: AccountsClient,
        store: VideoStore,
        accounts: AccountStore,
        wait_until: float,
    ) -> bool:
        """Rank the accounts (leading), or wait for the leader's ranking and take the lease
        over to rank them in its place when it expires first; whether there is a ranking."""
        while True:
            if self._leading:
                try:
                    work = self._rank_accounts(client, accounts, self.clock.now())
                    await self._under_lease(work)
                except _LeaseLost:
                    self._step_down("during the account ranking")
                else:
                    return True
            if not await self._await_leader(
                store,
                lambda: self._follow_accounts(client, accounts, self.clock.now()),
                wait_until,
            ):
                return False
            if not self._leading:
                return True

    async def _follow_accounts(
        self, client: AccountsClient, store: AccountStore, now: float
    ) -> bool:
        """A following node takes the leader's latest account ranking if it is new; whether
        it took one."""
        runs = await store.runs(limit=20)
        done = [r for r in runs if r.source == client.source and r.status == "done"]
        if not done or done[0].id == self._run_id:
            return False
        self._run_id = done[0].id
        if not self._seen_posts:
            self._seen_posts = await store.post_ids(client.source)
        rows = await store.accounts(source=client.source, kept_only=True, limit=None)
        kept = {r["account_id"]: (int(r["tier"]), str(r["node"])) for r in rows if r["tier"]}
        self._schedule_accounts(kept, now)
        self.report.accounts = {"kept": len(kept)}
        self._say(f"node {self.s.node}: following the ranking of {len(kept)} kept accounts")
        return True

    # -- leadership ---------------------------------------------------------------------------

    async def _hold(self, store: VideoStore, now: float) -> bool:
        """Take or renew the leader's lease; whether this node holds it."""
        s = self.s
        assert s.node is not None
        held = await store.take_lease(self.source, s.node, now + s.lease, now=now)
        self._renew_at = now + s.lease / 3
        return held

    async def _await_leader(
        self, store: VideoStore, found: Callable[[], Awaitable[bool]], wait_until: float
    ) -> bool:
        """Wait for what the leader writes (``found``: its plan, its account ranking), looking
        every ``poll`` of the clock until ``wait_until``, and take the lease over when it
        expires meanwhile; whether it was found or this node now leads."""
        while True:
            if await found():
                return True
            now = self.clock.now()
            if self._leased and await self._take_over(store, now):
                return True
            if now + self.s.poll > wait_until:
                return False
            await self.clock.sleep_until(now + self.s.poll)

    async def _take_over(self, store: VideoStore, now: float) -> bool:
        """Lead in place of a leader whose lease expired (or who never took it, a
        ``lease_ttl`` after this node started); whether this node now leads. It continues
        from the latest plan in the database, if there is one."""
        s = self.s
        current = await store.lease(self.source)
        if current is None and now < self.report.started_at + s.lease:
            return False  # the first node may not have started yet
        if current is not None and current.expires > now:
            return False
        if not await self._hold(store, now):
            return False
        old = s.nodes[0] if current is None else current.holder
        if old in s.nodes and old != s.node:
            self._gone.add(old)
        self._leading = True
        await self._follow(store, now)
        if self._plan is None:
            what = "took no lease" if current is None else "let its lease expire"
            self._say(
                f"node {s.node}: node {old} {what} before its first plan; crawling in its place"
            )
        else:
            self._say(
                f"node {s.node}: the lease of node {old} expired; leading from the plan made "
                f"at {self._planned_at}"
            )
        return True

    def _step_down(self, during: str) -> None:
        """Follow from now on: another node holds the lease (:meth:`_under_lease` cancels the
        leader's work in hand)."""
        if not self._leading:
            return
        self._leading = False
        self._say(f"node {self.s.node}: another node took the lease {during}; following")

    async def _keep_lease(self, store: VideoStore) -> None:
        """Renew the lease every third of its term while this node leads, whatever it is doing
        (crawling, planning, ranking accounts, revisiting); step down when another node has
        taken it.

        It looks at the clock every sixth of the lease in real seconds (at most one): on the
        system clock that is a sixth of the lease. A simulated clock moves only when the nodes
        wait on it, and the revisit loop wakes for the renewal on that clock itself.
        """
        look = min(self.s.lease / 6, 1.0)
        while True:
            await asyncio.sleep(look)
            now = self.clock.now()
            if not self._leading or now < self._renew_at:
                continue
            try:
                held = await self._hold(store, now)
            except StorageError as exc:
                log.warning("renewing the leader's lease failed (tried again): %s", exc)
                continue
            if not held:
                self._step_down("while this node was busy")

    async def _under_lease(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run ``work`` (the first crawl and plan, an account ranking) as the leader's work: it
        is cancelled when this node steps down meanwhile (:meth:`_keep_lease` renews the
        lease); with no lease, just run it.

        Raises:
            _LeaseLost: another node took the lease (``work`` was cancelled, or its result is
                dropped: the new leader does that work).
        """
        if not self._leased:
            return await work
        look = min(self.s.lease / 6, 1.0)
        task = asyncio.create_task(work)
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=look)
                if not self._leading and not task.done():
                    task.cancel()  # again at each look: a cancellation can be swallowed
        finally:
            if not task.done():  # this node is stopping
                await cancel_and_wait(task)
        if not self._leading:
            if not task.cancelled():
                task.exception()  # retrieved: what it ended with is the new leader's to redo
            raise _LeaseLost
        return task.result()

    # -- revisits -----------------------------------------------------------------------------

    async def _revisit_until(self, end: float, io: _Io) -> None:
        s, store, client = self.s, io.store, io.client
        if self._leading:
            next_plan = self._planned_at + s.tiers.recompute_period
        else:
            next_plan = self.clock.now() + s.poll
        while True:
            soonest = min(
                [d.at for d in self._pages.values()]
                + [d.at for d in self._accounts.values()]
                + [next_plan]
            )
            if soonest > end:
                break
            leasing = self._leased and self._leading
            await self.clock.sleep_until(min(soonest, self._renew_at) if leasing else soonest)
            now = self.clock.now()
            if leasing and now >= self._renew_at and not await self._hold(store, now):
                self._step_down("at its renewal")
            if leasing and not self._leading:
                next_plan = now  # look for the new leader's plan at once
            if now >= next_plan and self._leading:
                try:
                    self._records = await store.records()
                    await self._replan(store, now)
                    if client is not None:
                        await self._under_lease(self._rank_accounts(client, io.accounts, now))
                    next_plan = now + s.tiers.recompute_period
                except _LeaseLost:
                    self._step_down("while planning")
                    next_plan = now
            elif now >= next_plan:
                if self._leased and await self._take_over(store, now):
                    next_plan = self._planned_at + s.tiers.recompute_period
                    if client is not None and not await self._ranked(client, io.accounts):
                        # The dead leader planned but did not rank: rank for its plan now
                        # rather than skip the accounts' week.
                        try:
                            await self._under_lease(self._rank_accounts(client, io.accounts, now))
                        except _LeaseLost:
                            self._step_down("while ranking")
                            next_plan = now
                    continue  # plan now if the dead leader's next plan is due
                await self._follow(store, now)
                if client is not None:
                    await self._follow_accounts(client, io.accounts, now)
                next_plan = now + s.poll
            if s.policy == "change-rate" and now - self._rates_at >= s.tiers.periods[0]:
                self._plan_rates(now)
            pages = [u for u, d in self._pages.items() if d.at <= now]
            people = [a for a, d in self._accounts.items() if d.at <= now]
            visits = await self._visit_all(pages, people, io)
            if leasing and not self._leading:
                next_plan = self.clock.now()  # the lease was lost during the visits
            await io.library.sync()
            await store.add_visits(self.source, visits)
            if client is not None and people:
                await io.accounts.set_next_visits(
                    client.source, {a: self._accounts[a].at for a in people}
                )

    async def _visit_all(self, pages: list[str], people: list[str], io: _Io) -> list[Visit]:
        client = io.client
        gate = asyncio.Semaphore(self.s.concurrency)
        visits: list[Visit] = []
        fetches: list[FetchRecord] = []
        posts: list[PostRecord] = []

        async def page(url: str) -> None:
            async with gate:
                began = time.perf_counter()
                visit, fetched = await self._visit_page(url, io.fetcher, io.library)
                self._measure(visit.node, time.perf_counter() - began)
            visits.append(visit)
            if fetched is not None:
                fetches.append(fetched)

        async def person(account_id: str) -> None:
            assert client is not None
            async with gate:
                began = time.perf_counter()
                visit, fresh = await self._visit_account(account_id, client)
                self._measure(visit.node, time.perf_counter() - began)
            visits.append(visit)
            posts.extend(fresh)

        async with asyncio.TaskGroup() as group:
            for url in pages:
                group.create_task(page(url))
            for account_id in people:
                group.create_task(person(account_id))
        await io.history.append(fetches)
        if client is not None and posts:
            await io.accounts.add_posts(client.source, self._run_id, posts)
        return visits

    def _measure(self, node: str, seconds: float) -> None:
        """Count one item and its real time in ``node``'s round."""
        spent = self._round.setdefault(node, [0.0, 0.0])
        spent[0] += 1
        spent[1] += seconds

    def _done(self, item: dict[str, _Due], key: str, now: float) -> tuple[_Due, float]:
        """Move ``key`` to its next due time; the old entry and how late this visit was."""
        due = item[key]
        period = period_of(due.tier, self.s.tiers)
        if item is self._pages and self.s.policy == "change-rate":
            period = self._intervals.get(key, period)
        item[key] = _Due(now + period, due.tier, due.node, now)
        late = max(0.0, now - due.at)
        self.report.max_lateness = max(self.report.max_lateness, late)
        tier = f"{'page' if item is self._pages else 'account'}.{due.tier}"
        self.report.visits_by_tier[tier] = self.report.visits_by_tier.get(tier, 0) + 1
        return due, late

    async def _visit_page(
        self, url: str, fetcher: HttpFetcher, library: ParserLibrary
    ) -> tuple[Visit, FetchRecord | None]:
        now = self.clock.now()
        due, _ = self._done(self._pages, url, now)
        etag = self._etags.get(url)
        headers = {"If-None-Match": etag} if etag else None
        try:
            response = await fetcher.fetch(Request(url), headers=headers)
        except FetchError as exc:
            log.warning("revisit of %s failed: %s", url, exc)
            self.report.failed_visits += 1
            return Visit("page", url, due.tier, due.node, due.at, now, 0, False, 0), None
        self.report.page_visits += 1
        known = url in self._hashes  # a baseline to tell a change by
        if response.headers.get("ETag"):
            self._etags[url] = response.headers["ETag"]
        if response.status == 304:
            self.report.not_modified += 1
            self._seen(url, (now - due.last) / self.s.day_seconds, changed=False)
            record = FetchRecord(url, now, 304, False, self._hashes.get(url), etag=etag)
            return Visit("page", url, due.tier, due.node, due.at, now, 304, False, 0), record
        text = response.text or ""
        digest = content_hash(text)
        changed = self._hashes.get(url) not in (None, digest)
        self._hashes[url] = digest
        if known:
            self._seen(url, (now - due.last) / self.s.day_seconds, changed=changed)
        fields = await self._extract(url, text, library)
        self.report.changed_pages += changed
        record = FetchRecord(url, now, response.status, changed, digest, etag=self._etags.get(url))
        visit = Visit(
            "page", url, due.tier, due.node, due.at, now, response.status, changed, fields
        )
        return visit, record

    def _seen(self, url: str, days: float, *, changed: bool) -> None:
        """Add one interval to ``url``'s change history (for the change-rate policy)."""
        self._histories[url] = self._histories.get(url, ChangeHistory()).seen(days, changed=changed)

    async def _extract(self, url: str, text: str, library: ParserLibrary) -> int:
        """Re-extract a page's record; returns how many of its fields changed."""
        hint = library.hint_for(url)
        schema = library.config.by_name(hint.schema) if hint is not None else None
        if hint is None or schema is None:
            return 0
        extraction = await asyncio.to_thread(extract, text, url, schema, hint)
        library.learn(extraction, url)
        if extraction.record is None:
            return 0
        fresh = dict(extraction.record)
        old = self._records.get(url, ("", {}))[1]
        self._records[url] = (schema.name, fresh)
        return sum(1 for k, v in fresh.items() if old.get(k) != v)

    async def _visit_account(
        self, account_id: str, client: AccountsClient
    ) -> tuple[Visit, list[PostRecord]]:
        now = self.clock.now()
        due, _ = self._done(self._accounts, account_id, now)
        try:
            entries = await client.statuses(account_id, max_posts=self.s.accounts.max_posts)
        except FetchError as exc:
            log.warning("revisit of account %s failed: %s", account_id, exc)
            self.report.failed_visits += 1
            return Visit("account", account_id, due.tier, due.node, due.at, now, 0, False, 0), []
        seen = self._seen_posts.setdefault(account_id, set())
        fresh = [post_record(account_id, e) for e in entries if e.post.id not in seen]
        seen.update(p.post_id for p in fresh)
        self.report.account_visits += 1
        self.report.new_posts += len(fresh)
        visit = Visit(
            "account", account_id, due.tier, due.node, due.at, now, 200, bool(fresh), len(fresh)
        )
        return visit, fresh

    async def _space(self, url: str) -> None:
        """Keep ``delay`` seconds (real time) between two requests to one host."""
        if self.s.delay <= 0:
            return
        host = urlsplit(url).netloc
        now = time.monotonic()
        start = max(now, self._host_next.get(host, 0.0))
        self._host_next[host] = start + self.s.delay
        if start > now:
            await asyncio.sleep(start - now)
