"""Weighted rendezvous hashing and the moves a membership change needs (no Redis)."""

from __future__ import annotations

from collections import Counter

import pytest

from topicrawl.distributed import (
    AssignmentPolicy,
    NodeLoad,
    RendezvousPolicy,
    least_loaded,
    plan_moves,
)

HOSTS = [f"host{i}.example" for i in range(6000)]


def nodes(*specs: tuple[str, float | None]) -> list[NodeLoad]:
    return [NodeLoad(node=name, pages_per_second=rate) for name, rate in specs]


def shares(policy: RendezvousPolicy, live: list[NodeLoad]) -> Counter[str | None]:
    return Counter(policy.owner(host, live) for host in HOSTS)


def test_rendezvous_is_a_policy_and_deterministic() -> None:
    policy = RendezvousPolicy()
    assert isinstance(policy, AssignmentPolicy)
    live = nodes(("a", 5.0), ("b", 5.0))
    assert [policy.owner(h, live) for h in HOSTS[:50]] == [
        RendezvousPolicy().owner(h, list(reversed(live))) for h in HOSTS[:50]
    ]
    assert policy.owner("x", []) is None


def test_hosts_split_in_proportion_to_throughput() -> None:
    counts = shares(RendezvousPolicy(), nodes(("slow", 10.0), ("fast", 30.0)))
    # Expected 1/4 and 3/4 of 6000; the binomial standard deviation is about 34 hosts.
    assert abs(counts["slow"] - 1500) < 150
    assert abs(counts["fast"] - 4500) < 150


def test_a_new_node_weighs_the_mean_of_the_measured_ones() -> None:
    policy = RendezvousPolicy(min_weight=0.5)
    weights = policy.weights(nodes(("a", 10.0), ("b", 30.0), ("new", None), ("stuck", 0.0)))
    # The mean of the measured rates (10 + 30 + 0) / 3; the stalled node gets the floor.
    assert weights == {"a": 10.0, "b": 30.0, "new": 40.0 / 3, "stuck": 0.5}
    assert policy.weights(nodes(("only", None))) == {"only": 1.0}


def test_removing_a_node_moves_only_its_hosts() -> None:
    policy = RendezvousPolicy()
    before = nodes(("a", 1.0), ("b", 2.0), ("c", 3.0))
    owners = {h: policy.owner(h, before) or "" for h in HOSTS}
    after = [n for n in before if n.node != "b"]
    moves = plan_moves(owners, after, policy)
    assert set(moves) == {h for h, o in owners.items() if o == "b"}
    assert set(moves.values()) <= {"a", "c"}


def test_a_dead_nodes_hosts_go_to_the_least_loaded() -> None:
    owners = {"h1": "dead", "h2": "dead", "h3": "dead", "x": "busy"}
    live = [
        NodeLoad(node="busy", pages_per_second=500.0, hosts=5, concurrency=8),
        NodeLoad(node="idle", pages_per_second=1.0, hosts=0, concurrency=8),
        NodeLoad(node="half", pages_per_second=1.0, hosts=1, concurrency=8),
    ]
    # Not to the fastest node (which hashing by throughput would favour): to the ones with
    # the fewest hosts per unit of concurrency, counting those given along the way.
    moves = plan_moves(owners, live, RendezvousPolicy())
    assert moves == {"h1": "idle", "h2": "half", "h3": "idle"}
    assert least_loaded(3, []) == ["", "", ""]
    wide = [NodeLoad(node="a", hosts=4, concurrency=8), NodeLoad(node="b", hosts=1, concurrency=1)]
    # a: 4 hosts for 8 requests; b: 1 for 1. a takes hosts until it is as loaded as b.
    assert least_loaded(6, wide) == ["a", "a", "a", "a", "a", "b"]


def test_a_joining_node_takes_only_its_share() -> None:
    policy = RendezvousPolicy()
    before = nodes(("a", 4.0), ("b", 4.0), ("c", 4.0))
    owners = {h: policy.owner(h, before) or "" for h in HOSTS}
    after = [*before, NodeLoad(node="d", pages_per_second=None)]
    moves = plan_moves(owners, after, policy, joined=["d"])
    assert set(moves.values()) == {"d"}
    # d weighs the mean (4.0): a quarter of the hosts, about 1500 (sd about 34).
    assert abs(len(moves) - 1500) < 150
    assert all(policy.owner(h, after) == "d" for h in moves)


def test_hosts_stay_put_when_nothing_changed_even_if_weights_did() -> None:
    policy = RendezvousPolicy()
    owners = {h: policy.owner(h, nodes(("a", 1.0), ("b", 1.0))) or "" for h in HOSTS[:500]}
    assert plan_moves(owners, nodes(("a", 100.0), ("b", 1.0)), policy) == {}


def test_with_no_live_node_hosts_go_to_the_pool() -> None:
    assert plan_moves({"h1": "gone", "h2": "gone"}, [], RendezvousPolicy()) == {
        "h1": "",
        "h2": "",
    }


def test_min_weight_must_be_positive() -> None:
    with pytest.raises(ValueError, match="min_weight"):
        RendezvousPolicy(min_weight=0.0)
