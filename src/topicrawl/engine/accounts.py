"""The video-domain account pipeline: names -> matches -> follow graph -> posts -> LDA filter
-> influence -> tiers, wired from the pieces in ``sources`` and ``revisit``.

:func:`run_account_pipeline` is what ``topicrawl accounts run`` calls; it reads from an
:class:`~topicrawl.sources.accountsapi.AccountsClient` and returns rows ready for
:class:`~topicrawl.storage.accountstore.AccountStore`. Matches of the steps in
``keep_steps`` (exact and affix by default) are kept whatever their LDA score; fuzzy matches
and the accounts the follow graph added are kept only when the LDA filter puts them in the
domain. Influence (weighted PageRank) is computed over the whole follow graph and tiers are
given to the kept accounts only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from topicrawl.core.errors import ConfigError, PermanentFetchError
from topicrawl.revisit.influence import (
    AccountSignals,
    InfluenceWeights,
    node_of,
    thread_of,
    weighted_pagerank,
)
from topicrawl.revisit.tiers import TierPolicy, assign_tiers, period_of
from topicrawl.sources.accounts import AccountMatch, MatchStep, match_entities
from topicrawl.sources.accountsapi import Account, AccountsClient, TimelineEntry
from topicrawl.sources.follows import FollowGraph, grow_follow_graph
from topicrawl.sources.lda import DomainScore, LdaFilter, LdaSettings
from topicrawl.storage.accountstore import AccountRecord, AccountStore, PostRecord

__all__ = [
    "VIDEO_DOMAIN_WORDS",
    "AccountPipelineSettings",
    "AccountRun",
    "account_node",
    "post_record",
    "run_account_pipeline",
    "run_and_store",
    "signals_of",
]

VIDEO_DOMAIN_WORDS: tuple[str, ...] = (
    "film",
    "movie",
    "series",
    "episode",
    "director",
    "actor",
    "actress",
    "cinema",
    "trailer",
    "premiere",
    "box office",
    "电影",
    "电视剧",
    "导演",
    "演员",
    "票房",
    "预告片",
    "首映",
    "剧集",
    "影评",
)

_log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


class SplitFetches(Protocol):
    """The per-account reads done elsewhere (e.g. split between the video system's nodes)."""

    async def following_many(
        self, ids: Sequence[str], hop: int
    ) -> Mapping[str, Sequence[Account] | None]: ...

    async def statuses_many(self, ids: Sequence[str]) -> Mapping[str, list[TimelineEntry]]: ...


@dataclass(frozen=True)
class AccountPipelineSettings:
    """The pipeline's bounds and knobs (see each step's module for its own)."""

    domain_words: tuple[str, ...] = VIDEO_DOMAIN_WORDS
    search_limit: int = 20
    fuzzy_threshold: float = 88.0
    max_hops: int = 3
    max_per_hop: int = 200
    max_following: int = 200
    max_posts: int = 100
    concurrency: int = 4
    keep_steps: frozenset[MatchStep] = frozenset({MatchStep.EXACT, MatchStep.AFFIX})
    lda: LdaSettings = field(default_factory=LdaSettings)
    influence: InfluenceWeights = field(default_factory=InfluenceWeights)
    tiers: TierPolicy = field(default_factory=TierPolicy)
    nodes: tuple[str, ...] = ("local",)
    threads: int = 4
    node_weights: Mapping[str, float] | None = None
    placed: Mapping[str, str] = field(default_factory=dict)
    for_plan: float | None = None  # the video system's plan this ranking follows (its time)

    def __post_init__(self) -> None:
        if self.search_limit < 1 or self.max_following < 1 or self.max_posts < 1:
            raise ConfigError("search_limit, max_following and max_posts must be >= 1")
        if not 1 <= self.concurrency <= 64:
            raise ConfigError(f"concurrency must be 1 to 64, got {self.concurrency}")
        if not self.nodes or self.threads < 1:
            raise ConfigError("at least one node and one thread are needed")
        if self.node_weights is not None and set(self.node_weights) != set(self.nodes):
            raise ConfigError(
                f"node weights are for {sorted(self.node_weights)}, the nodes are "
                f"{sorted(self.nodes)}"
            )

    def summary(self) -> dict[str, object]:
        """The settings as plain values, for the run's history row."""
        return {
            "domain_words": list(self.domain_words),
            "search_limit": self.search_limit,
            "fuzzy_threshold": self.fuzzy_threshold,
            "max_hops": self.max_hops,
            "max_per_hop": self.max_per_hop,
            "max_following": self.max_following,
            "max_posts": self.max_posts,
            "keep_steps": sorted(int(s) for s in self.keep_steps),
            "lda": {
                "topics": self.lda.topics,
                "top_topics": self.lda.top_topics,
                "top_words": self.lda.top_words,
                "threshold": self.lda.threshold,
            },
            "tier_periods": list(self.tiers.periods),
            "nodes": list(self.nodes),
            "node_weights": dict(self.node_weights) if self.node_weights else None,
            "threads": self.threads,
            "for_plan": self.for_plan,
        }


@dataclass(frozen=True)
class AccountRun:
    """What one run found: every step's output and the rows to store."""

    matches: tuple[AccountMatch, ...]
    graph: FollowGraph
    scores: Mapping[str, DomainScore]
    influence: Mapping[str, float]
    tiers: Mapping[str, int]
    records: tuple[AccountRecord, ...]
    posts: tuple[PostRecord, ...]

    @property
    def kept(self) -> list[str]:
        return sorted(r.account_id for r in self.records if r.kept)


async def run_and_store(
    client: AccountsClient,
    store: AccountStore,
    names: Sequence[str],
    settings: AccountPipelineSettings,
    *,
    progress: Progress | None = None,
    now: float | None = None,
    split: Callable[[int], SplitFetches] | None = None,
) -> tuple[int, AccountRun, dict[str, int]]:
    """:func:`run_account_pipeline` recorded as a run of ``store``: the run's id, its result
    and its counts (matched, accounts, edges, kept). A failed run is marked failed.

    ``split`` gives the per-account reads of the run (by its id) when they are done
    elsewhere.

    Raises:
        as :func:`run_account_pipeline`, and StorageError.
    """
    run_id = await store.start_run(client.source, entities=len(names), settings=settings.summary())
    try:
        result = await run_account_pipeline(
            client,
            names,
            settings,
            progress=progress,
            now=now,
            fetches=split(run_id) if split is not None else None,
        )
        await store.record(run_id, client.source, result.records, result.graph.edges, result.posts)
    except BaseException as exc:
        await store.finish_run(run_id, status="failed", counts={}, error=repr(exc)[:500])
        raise
    counts = {
        "matched": len(result.matches),
        "accounts": len(result.graph.accounts),
        "edges": len(result.graph.edges),
        "kept": len(result.kept),
    }
    await store.finish_run(run_id, status="done", counts=counts)
    return run_id, result, counts


def post_record(account_id: str, entry: TimelineEntry) -> PostRecord:
    """The row of a timeline entry of ``account_id`` (a repost keeps the original's id)."""
    post = entry.post
    return PostRecord(
        account_id=account_id,
        post_id=post.id,
        original_id=post.id if entry.repost else None,
        author=post.author,
        text=post.text,
        created_at=post.created_at,
        reposts=post.reposts,
        likes=post.likes,
        comments=post.comments,
        url=post.url,
    )


def signals_of(followers: int, entries: Sequence[TimelineEntry]) -> AccountSignals:
    """An account's signals from its timeline: originals, reposts, engagement received, and
    the days the timeline spans (at least one)."""
    originals = [e.post for e in entries if not e.repost]
    reposts = len(entries) - len(originals)
    times = [e.post.created_at for e in entries]
    days = max(1.0, (max(times) - min(times)) / 86_400.0) if times else 1.0
    return AccountSignals(
        followers=followers,
        originals=len(originals),
        reposts_made=reposts,
        reposts_received=sum(p.reposts for p in originals),
        comments_received=sum(p.comments for p in originals),
        days=days,
    )


async def run_account_pipeline(
    client: AccountsClient,
    names: Sequence[str],
    settings: AccountPipelineSettings | None = None,
    *,
    progress: Progress | None = None,
    now: float | None = None,
    fetches: SplitFetches | None = None,
) -> AccountRun:
    """Run every step against ``client`` for the entity ``names``.

    With ``fetches``, the following lists and timelines are read through it (e.g. by every
    node of the video system) and only matched, merged, filtered and ranked here.

    Raises:
        ConfigError: no usable name.
        FetchError: the microblog server failed beyond the client's retries.
    """
    s = settings or AccountPipelineSettings()
    when = time.time() if now is None else now
    report = progress or (lambda _stage, _done, _total: None)
    usable = [n for n in names if n.strip()]
    if not usable:
        raise ConfigError("no entity names given")

    async def search(query: str) -> list[Account]:
        return await client.search_accounts(query, limit=s.search_limit)

    report("matching", 0, len(usable))
    matches = await match_entities(usable, search, fuzzy_threshold=s.fuzzy_threshold)
    report("matching", len(usable), len(usable))

    async def following(account_id: str) -> list[Account]:
        return await client.following(account_id, max_accounts=s.max_following)

    graph = await grow_follow_graph(
        [m.account for m in matches],
        following,
        max_hops=s.max_hops,
        max_per_hop=s.max_per_hop,
        following_many=fetches.following_many if fetches is not None else None,
    )
    report("graph", len(graph.accounts), len(graph.accounts))
    if fetches is not None:
        read = await fetches.statuses_many(sorted(graph.accounts))
        timelines = {a: list(read.get(a, [])) for a in sorted(graph.accounts)}
        report("posts", len(timelines), len(timelines))
    else:
        timelines = await _timelines(client, sorted(graph.accounts), s, report)
    by_account = {m.account.id: m for m in matches}
    keep = {a for a, m in by_account.items() if m.step in s.keep_steps}
    documents = {a: "\n".join(e.post.text for e in tl) for a, tl in timelines.items()}
    # The LDA and the PageRank run in a thread: seconds of CPU would hold up the event loop
    # (in the video system, the renewal of the leader's lease among other things).
    lda = LdaFilter(s.domain_words + tuple(usable), settings=s.lda)
    scores = await asyncio.to_thread(lda.score, documents, keep=keep)
    report("lda", len(scores), len(scores))
    signals = {a: signals_of(graph.accounts[a].followers, timelines[a]) for a in graph.accounts}
    influence = await asyncio.to_thread(
        weighted_pagerank, graph.accounts, graph.edges, signals, s.influence
    )
    kept = [a for a in graph.accounts if scores[a].kept]
    tiers = assign_tiers({a: influence.get(a, 0.0) for a in kept}, s.tiers)
    records = tuple(
        _record(
            a,
            graph=graph,
            match=by_account.get(a),
            score=scores[a],
            signals=signals[a],
            influence=influence,
            tiers=tiers,
            s=s,
            now=when,
        )
        for a in sorted(graph.accounts)
    )
    posts = tuple(post_record(a, e) for a in sorted(timelines) for e in timelines[a])
    return AccountRun(tuple(matches), graph, scores, influence, tiers, records, posts)


async def _timelines(
    client: AccountsClient,
    ids: Sequence[str],
    s: AccountPipelineSettings,
    report: Progress,
) -> dict[str, list[TimelineEntry]]:
    gate = asyncio.Semaphore(s.concurrency)
    out: dict[str, list[TimelineEntry]] = {}

    async def one(account_id: str) -> None:
        async with gate:
            try:
                out[account_id] = await client.statuses(account_id, max_posts=s.max_posts)
            except PermanentFetchError as exc:  # private or gone: judged on no posts
                _log.warning("posts of account %s not readable: %s", account_id, exc)
                out[account_id] = []
            report("posts", len(out), len(ids))

    async with asyncio.TaskGroup() as group:
        for account_id in ids:
            group.create_task(one(account_id))
    return out


def account_node(account_id: str, s: AccountPipelineSettings) -> str | None:
    """The node of a kept account: the one it was ``placed`` on while that node is listed,
    else weighted rendezvous hashing of its id over ``node_weights`` (equal weights when
    unmeasured), so a node's measured rate steers only where new accounts go."""
    old = s.placed.get(account_id)
    if old is not None and old in s.nodes:
        return old
    return node_of(account_id, s.node_weights or s.nodes)


def _record(
    account_id: str,
    *,
    graph: FollowGraph,
    match: AccountMatch | None,
    score: DomainScore,
    signals: AccountSignals,
    influence: Mapping[str, float],
    tiers: Mapping[str, int],
    s: AccountPipelineSettings,
    now: float,
) -> AccountRecord:
    account = graph.accounts[account_id]
    tier = tiers.get(account_id)
    period = period_of(tier, s.tiers) if tier is not None else None
    return AccountRecord(
        account_id=account_id,
        username=account.username,
        display_name=account.display_name,
        followers=account.followers,
        following=account.following,
        statuses=account.statuses,
        hop=graph.hops.get(account_id),
        match_name=match.name if match else None,
        match_step=int(match.step) if match else None,
        match_score=match.score if match else None,
        domain_score=score.score,
        kept=score.kept,
        activity=signals.activity,
        influence=influence.get(account_id),
        tier=tier,
        revisit_days=period / 86_400.0 if period is not None else None,
        next_visit_at=now + period if period is not None else None,
        node=account_node(account_id, s) if score.kept else None,
        thread=thread_of(account_id, s.threads) if score.kept else None,
    )
