"""Influence: weighted PageRank by hand, edge weights, activity, node and thread placement."""

from __future__ import annotations

import math

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.revisit.influence import (
    WEEK,
    AccountSignals,
    InfluenceWeights,
    activity,
    edge_weights,
    node_of,
    pagerank,
    plain_pagerank,
    recompute_due,
    thread_of,
    weighted_pagerank,
)

# A follows B (weight 1) and C (weight 3); B follows C; C follows A. Damping d = 0.85, N = 3:
#   b = (1-d)/3 + d * a/4
#   c = (1-d)/3 + d * (3a/4 + b)
#   a = (1-d)/3 + d * c
# Substituting b into c and c into a: a = 0.05 (1 + d (1 + d)) / (1 - d (3d/4 + d^2/4)),
# which with exact fractions is a = 1372/3249, then b = 454/3249 and c = 1423/3249.
WEIGHTED = {("A", "B"): 1.0, ("A", "C"): 3.0, ("B", "C"): 1.0, ("C", "A"): 1.0}
BY_HAND = {"A": 1372 / 3249, "B": 454 / 3249, "C": 1423 / 3249}
# The same graph unweighted (A splits 1:1): b = 0.05 + d a/2, c = 0.05 + d (a/2 + b),
# a = 0.05 + d c  ->  a = 0.05 (1 + d + d^2) / (1 - d^2/2 - d^3/2).


def test_weighted_pagerank_matches_the_hand_computed_ranks() -> None:
    ranks = pagerank("ABC", WEIGHTED, damping=0.85)
    for node, expected in BY_HAND.items():
        assert ranks[node] == pytest.approx(expected, abs=1e-9)


def test_plain_pagerank_splits_a_vote_evenly() -> None:
    d = 0.85
    a = 0.05 * (1 + d + d * d) / (1 - d * d / 2 - d**3 / 2)
    b = 0.05 + d * a / 2
    ranks = plain_pagerank("ABC", WEIGHTED)
    assert ranks["A"] == pytest.approx(a, abs=1e-9)
    assert ranks["B"] == pytest.approx(b, abs=1e-9)
    assert ranks["B"] > BY_HAND["B"]  # B gets half of A's vote here, a quarter when weighted


def test_edge_weights_come_from_the_followees_signals() -> None:
    signals = {
        "B": AccountSignals(),
        "C": AccountSignals(followers=99, originals=10, reposts_received=30, days=5.0),
    }
    weights = InfluenceWeights(followers=1.0, activity=0.0, reposts=2.0, comments=1.0)
    got = edge_weights([("A", "B"), ("A", "C"), ("X", "C")], signals, weights)
    assert got[("A", "B")] == 1.0
    assert got[("A", "C")] == pytest.approx(1 + math.log(100) + 2 * math.log(4))
    assert got[("X", "C")] == got[("A", "C")]


def test_weighted_pagerank_favours_the_followee_with_engagement() -> None:
    # A and D both follow B and C; B and C look alike but C's posts are reposted and commented.
    edges = [("A", "B"), ("A", "C"), ("D", "B"), ("D", "C")]
    engaged = AccountSignals(originals=10, reposts_received=50, comments_received=20)
    signals = {"B": AccountSignals(originals=10), "C": engaged}
    ranks = weighted_pagerank("ABCD", edges, signals)
    plain = plain_pagerank("ABCD", edges)
    assert ranks["C"] > ranks["B"]
    assert plain["C"] == pytest.approx(plain["B"])
    assert sum(ranks.values()) == pytest.approx(1.0)


def test_pagerank_refuses_bad_weights_and_handles_empty_graphs() -> None:
    with pytest.raises(ConfigError):
        pagerank("AB", {("A", "B"): 0.0})
    with pytest.raises(ConfigError):
        pagerank("AB", {("A", "B"): math.nan})
    assert pagerank([], {}) == {}
    with pytest.raises(ConfigError):
        InfluenceWeights(damping=1.0)


def test_activity_counts_reposts_at_half_an_original() -> None:
    assert activity(10, 4, 2.0) == 6.0
    assert AccountSignals(originals=7, reposts_made=2, days=1.0).activity == 8.0
    with pytest.raises(ConfigError):
        activity(1, 0, 0.0)


def test_node_of_is_stable_and_moves_only_the_removed_nodes_accounts() -> None:
    ids = [str(100_000 + k) for k in range(2000)]
    three = {i: node_of(i, ["n1", "n2", "n3"]) for i in ids}
    assert three == {i: node_of(i, ["n3", "n1", "n2"]) for i in ids}  # order does not matter
    shares = {n: sum(1 for v in three.values() if v == n) for n in ("n1", "n2", "n3")}
    assert all(550 < count < 780 for count in shares.values()), shares
    two = {i: node_of(i, ["n1", "n2"]) for i in ids}
    moved = [i for i in ids if three[i] != two[i]]
    assert moved
    assert all(three[i] == "n3" for i in moved)
    assert node_of("1", []) is None
    weighted = [node_of(i, {"fast": 3.0, "slow": 1.0}) for i in ids]
    assert weighted.count("fast") > 2.5 * weighted.count("slow")


def test_thread_of_is_the_id_modulo_the_threads() -> None:
    assert thread_of("100007", 4) == 100007 % 4
    assert thread_of("12", 1) == 0
    assert 0 <= thread_of("alice@example.org", 8) < 8
    assert thread_of("alice@example.org", 8) == thread_of("alice@example.org", 8)
    assert thread_of("٣", 4) in range(4)  # a non-ASCII digit is hashed, not int()-ed
    with pytest.raises(ConfigError):
        thread_of("1", 0)


def test_recompute_is_weekly() -> None:
    assert recompute_due(None, 0.0)
    assert not recompute_due(1000.0, 1000.0 + WEEK - 1)
    assert recompute_due(1000.0, 1000.0 + WEEK)
    assert recompute_due(0.0, 8.0, every=7.0)
