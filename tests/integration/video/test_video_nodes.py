"""Seed 004's system on two nodes sharing one database: the first node leads (crawls, plans,
ranks accounts), the second follows its plans and revisits only its own share.

Both nodes run at once against the demo video site and microblog, so the follower has to wait
for the leader's first plan and account ranking and pick up its weekly re-plans as they are
written. By default on a lockstep clock (simulated time that moves only when both nodes wait
on it: the same interleaving as real time with no real waits); on the real clock with a "day"
of a quarter second in the slow run.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from topicrawl.demoweb.seed004 import Seed004Demo
from topicrawl.engine.accounts import AccountPipelineSettings
from topicrawl.engine.videosystem import SystemReport, VideoSystem, VideoSystemSettings
from topicrawl.revisit.clock import Clock, LockstepClock, SystemClock
from topicrawl.revisit.tiers import DAY, TierPolicy
from topicrawl.sources.lda import LdaSettings
from topicrawl.storage.accountstore import AccountStore
from topicrawl.storage.videostore import VideoStore

START = 1_800_000_000.0


@pytest.mark.parametrize(
    ("clock_kind", "day_seconds", "days"),
    [
        ("lockstep", DAY, 8.0),  # one more weekly plan after the first
        pytest.param("real", 0.25, 40.0, marks=pytest.mark.slow),  # five more, 10 s of revisits
    ],
)
async def test_a_follower_node_revisits_its_share_of_the_leaders_plans(
    tmp_path: Path, clock_kind: str, day_seconds: float, days: float
) -> None:
    lockstep = LockstepClock(START, parties=2) if clock_kind == "lockstep" else None
    clock: Clock = lockstep or SystemClock()
    db = str(tmp_path / "video.db")
    with Seed004Demo(clock, titles=8, fans=8, others=16, day_seconds=day_seconds) as demo:
        common = {
            "site": demo.site_url,
            "db": db,
            "parsers": str(demo.write_schemas(tmp_path / "schemas.toml")),
            "api": demo.api_url,
            "days": days,
            "tiers": TierPolicy.in_days(day_seconds=day_seconds),
            "accounts": AccountPipelineSettings(
                max_hops=1, max_per_hop=40, max_posts=40, lda=LdaSettings(max_iter=10)
            ),
            "nodes": ("a", "b"),
            "day_seconds": day_seconds,
            "follow_poll": day_seconds / 5,
            "follow_timeout": None if lockstep else 600.0,  # the leader's first crawl and ranking
        }
        leader = VideoSystem(VideoSystemSettings(**common, node="a"), clock=clock)
        follower = VideoSystem(VideoSystemSettings(**common, node="b"), clock=clock)

        async def run(system: VideoSystem) -> SystemReport:
            try:
                return await system.run()
            finally:
                if lockstep is not None:
                    lockstep.leave()

        lead, follow = await asyncio.gather(run(leader), run(follower))

    # Only the leader crawled and ran the account pipeline (one run a plan).
    assert lead.pages_crawled > 0
    assert follow.pages_crawled == 0
    assert follow.account_runs == 0
    async with AccountStore(db, read_only=True) as accounts_store:
        runs = [r for r in await accounts_store.runs() if r.status == "done"]
        kept = await accounts_store.accounts(kept_only=True, limit=None)
    assert {r["node"] for r in kept} == {"a", "b"}
    assert follow.accounts == {"kept": len(kept)}
    assert len(runs) == lead.account_runs == len(lead.plans) >= 2
    # The follower took the leader's plans as they were written (it may skip one written
    # while it was busy, or one written after its end), each with the leader's tiers.
    async with VideoStore(db, read_only=True) as store:
        plans = await store.plans(demo.site_url)
        visits = await store.visits()
        videos = await store.videos(limit=None)
        rounds = await store.last_rounds(demo.site_url)
    lead_tiers = {p["at"]: p["tiers"] for p in lead.plans}
    assert sorted(lead_tiers) == sorted(plans)
    assert len(follow.plans) >= 2
    for plan in follow.plans:
        assert plan["tiers"] == lead_tiers[plan["at"]]
    # Work is split exactly: every visit of an item placed on b was made by the follower,
    # every visit of an item on a by the leader, and both had pages and accounts to revisit.
    by_node = Counter(v["node"] for v in visits)
    made_by_follower = follow.page_visits + follow.account_visits + follow.failed_visits
    made_by_leader = lead.page_visits + lead.account_visits + lead.failed_visits
    assert by_node == {"a": made_by_leader, "b": made_by_follower}
    kinds = {(v["node"], v["kind"]) for v in visits}
    assert kinds == {("a", "page"), ("a", "account"), ("b", "page"), ("b", "account")}
    assert {v["node"] for v in videos} == {"a", "b"}
    # A video's pages are revisited by one node only.
    pages_on = {v["item"]: v["node"] for v in visits if v["kind"] == "page"}
    for visit in visits:
        if visit["kind"] == "page":
            assert pages_on[visit["item"]] == visit["node"]
    # Both nodes' rounds were written for the leader's later plans to weigh.
    assert set(rounds) == {"a", "b"}
    assert set(lead.node_weights) == {"a", "b"}
