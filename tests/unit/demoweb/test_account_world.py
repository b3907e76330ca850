"""The demo accounts world: deterministic, with every kind of account and its truth."""

from __future__ import annotations

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.demoweb.accounts import AccountWorld
from topicrawl.demoweb.seed004 import demo_names, demo_popularity
from topicrawl.demoweb.video import build_video_site
from topicrawl.sources.accounts import MatchStep, match_name
from topicrawl.sources.accountsapi import Account

NAMES = [
    "张艺谋",
    "巩俐",
    "流浪地球",
    "让子弹飞",
    "周星驰",
    "Christopher Nolan",
    "Gong Li",
    "Inception",
    "Breaking Bad",
    "Meryl Streep",
    "The Shawshank Redemption",
    "霸王别姬",
]


def test_same_arguments_same_world() -> None:
    a = AccountWorld.generate(NAMES, seed=5)
    b = AccountWorld.generate(NAMES, seed=5)
    assert a.accounts == b.accounts
    assert a.statuses == b.statuses
    assert a.following == b.following
    assert AccountWorld.generate(NAMES, seed=6).accounts != a.accounts


def test_every_kind_is_there_with_its_truth() -> None:
    world = AccountWorld.generate(NAMES, seed=5)
    kinds = {a.kind for a in world.accounts.values()}
    assert kinds == {"exact", "affix", "near", "false", "fan", "other"}
    for account in world.accounts.values():
        assert account.domain == (account.kind in {"exact", "affix", "near", "fan"})
        assert account.influence > 0
        if account.kind in {"exact", "affix", "near", "false"}:
            assert account.entity in NAMES
    assert set(world.true_matches()) <= set(world.in_domain())


def test_generated_names_match_at_the_step_their_kind_says() -> None:
    world = AccountWorld.generate(NAMES, seed=5)
    expected = {"exact": MatchStep.EXACT, "affix": MatchStep.AFFIX, "near": MatchStep.FUZZY}
    for a in world.accounts.values():
        if a.kind not in expected:
            continue
        found = match_name(a.entity or "", [Account(a.id, a.username, a.display_name)])
        assert [m.step for m in found] == [expected[a.kind]], a.display_name


def test_timelines_are_newest_first_and_reposts_point_at_originals() -> None:
    world = AccountWorld.generate(NAMES, seed=5)
    reposts = 0
    for account_id, timeline in world.statuses.items():
        ids = [s.id for s in timeline]
        assert ids == sorted(ids, reverse=True)
        for status in timeline:
            assert status.account == account_id
            if status.reblog_of is not None:
                reposts += 1
                original = world.post(status.reblog_of)
                assert original is not None
                assert original.reblog_of is None
                assert original.account in world.following[account_id]
    assert reposts > 0


def test_follower_counts_include_the_follow_graph() -> None:
    world = AccountWorld.generate(NAMES, seed=5)
    indegree = dict.fromkeys(world.accounts, 0)
    for follower, followed in world.following.items():
        assert follower not in followed
        for target in followed:
            indegree[target] += 1
    assert all(world.followers_count[a] >= indegree[a] for a in world.accounts)


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        AccountWorld.generate([" ", "x"])
    with pytest.raises(ConfigError):
        AccountWorld.generate(NAMES, fans=-1)


def test_popularity_lifts_an_entitys_own_accounts_and_nothing_else() -> None:
    names = ["Alma Reyes", "Bo Lindqvist", "Cai Wen", "Dora Quinn", "Eli Moreau"]
    plain = AccountWorld.generate(names, seed=3, fans=6, others=6)
    plays = {"Alma Reyes": 4e6, "Bo Lindqvist": 1e6, "Cai Wen": 1e6, "Dora Quinn": 1e6,
             "Eli Moreau": 1e4}  # fmt: skip
    lifted = AccountWorld.generate(names, seed=3, fans=6, others=6, popularity=plays)
    factor = {"Alma Reyes": 2.0, "Eli Moreau": 0.3}  # sqrt(4), sqrt(0.01) held at 0.3
    assert set(plain.accounts) == set(lifted.accounts)
    for account_id, before in plain.accounts.items():
        after = lifted.accounts[account_id]
        own = before.kind in {"exact", "affix", "near"}
        lift = factor.get(before.entity or "", 1.0) if own else 1.0
        assert after.influence == pytest.approx(lift * before.influence)
        assert after.activity == pytest.approx(lift * before.activity)
    assert any(a.entity == "Alma Reyes" and a.kind == "exact" for a in plain.accounts.values())


def test_seed004_accounts_follow_the_sites_popularity() -> None:
    site = build_video_site(seed=0, titles=20, hard=False)
    plays = demo_popularity(site)
    world = AccountWorld.generate(demo_names(site), seed=7, fans=0, others=0, popularity=plays)
    exact = [a for a in world.accounts.values() if a.kind == "exact" and a.entity in plays]
    ranks = {a.id: i for i, a in enumerate(sorted(exact, key=lambda a: plays[a.entity or ""]))}
    by_influence = sorted(exact, key=lambda a: a.influence)
    rho = 1 - 6 * sum((ranks[a.id] - i) ** 2 for i, a in enumerate(by_influence)) / (
        len(exact) * (len(exact) ** 2 - 1)
    )
    assert rho > 0.3  # Spearman: popularity and true influence go together
