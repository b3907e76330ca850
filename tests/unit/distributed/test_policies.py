"""The baseline assignment policies and the worker's choice of one (no Redis, no torch)."""

from __future__ import annotations

from collections import Counter

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.distributed.partition import AssignmentPolicy, NodeLoad, RendezvousPolicy
from topicrawl.distributed.policies import (
    POLICY_NAMES,
    BoundedLoadPolicy,
    FeedbackPolicy,
    HashModPolicy,
    LeastLoadedPolicy,
    PlainRendezvousPolicy,
    ShortestDelayPolicy,
    SuccessTablePolicy,
    TwoChoicesPolicy,
    make_policy,
)
from topicrawl.distributed.settings import load_distributed

HOSTS = [f"host{i}.example" for i in range(2000)]


def node(
    name: str, queue: int = 0, latency: float | None = 0.5, rate: float | None = 1.0
) -> NodeLoad:
    return NodeLoad(node=name, queue=queue, latency=latency, pages_per_second=rate, concurrency=4)


def test_every_rule_is_a_policy_and_answers_none_without_nodes() -> None:
    for name in POLICY_NAMES:
        if name == "dqn":
            continue
        policy = make_policy(name)
        assert isinstance(policy, AssignmentPolicy)
        assert policy.owner("x.org", []) is None
        assert policy.owner("x.org", [node("only")]) == "only"


def test_hash_mod_n_splits_evenly_and_reshuffles_on_a_change() -> None:
    policy = HashModPolicy()
    three = [node("a"), node("b"), node("c")]
    counts = Counter(policy.owner(h, three) for h in HOSTS)
    assert all(abs(c - 2000 / 3) < 120 for c in counts.values())
    four = [*three, node("d")]
    moved = sum(policy.owner(h, three) != policy.owner(h, four) for h in HOSTS)
    assert moved > 1000  # about 3/4: why crawlers moved to consistent hashing


def test_plain_rendezvous_ignores_throughput() -> None:
    live = [node("slow", rate=1.0), node("fast", rate=100.0)]
    plain = Counter(PlainRendezvousPolicy().owner(h, live) for h in HOSTS)
    weighted = Counter(RendezvousPolicy().owner(h, live) for h in HOSTS)
    assert abs(plain["slow"] - 1000) < 120
    assert weighted["slow"] < 100


def test_bounded_loads_skip_a_node_past_the_bound() -> None:
    policy = BoundedLoadPolicy(factor=1.0)
    calm = [node("a"), node("b"), node("c")]
    hot = [node("a", queue=400), node("b"), node("c")]
    for h in HOSTS[:200]:
        assert policy.owner(h, hot) != "a"
        if RendezvousPolicy().owner(h, calm) != "a":
            assert policy.owner(h, hot) == RendezvousPolicy().owner(h, calm)
    with pytest.raises(ConfigError):
        BoundedLoadPolicy(factor=0.5)


def test_least_loaded_and_shortest_expected_delay() -> None:
    live = [node("a", queue=8, latency=0.1), node("b", queue=4, latency=1.0)]
    assert LeastLoadedPolicy().owner("h", live) == "b"
    # SED: a waits (2 + 1) * 0.1, b (1 + 1) * 1.0
    assert ShortestDelayPolicy().owner("h", live) == "a"
    assert ShortestDelayPolicy(latency_weight=0.0).owner("h", live) == "b"
    # Without a latency in the heartbeat: concurrency over throughput.
    blind = [
        node("a", queue=0, latency=None, rate=40.0),
        node("b", queue=0, latency=None, rate=1.0),
    ]
    assert ShortestDelayPolicy().owner("h", blind) == "a"


def test_two_choices_pick_the_better_of_two_candidates() -> None:
    policy = TwoChoicesPolicy()
    live = [node("a", queue=50), node("b"), node("c"), node("d")]
    picks = Counter(policy.owner(h, live) for h in HOSTS)
    # a wins only when both candidates are a: never, the two candidates differ.
    assert picks["a"] == 0
    assert len(policy.candidates("h", live)) == 2


def test_the_success_table_avoids_a_node_that_refuses_a_host() -> None:
    policy = SuccessTablePolicy(threshold=0.5, min_tries=1)
    assert isinstance(policy, FeedbackPolicy)
    live = [node("a"), node("b")]
    policy.observe("shop.org", "a", latency=0.1, status=403)
    assert policy.refuses("shop.org", "a")
    assert all(policy.owner("shop.org", live) == "b" for _ in range(20))
    policy.observe("shop.org", "b", latency=0.1, status=429)
    assert policy.owner("shop.org", live) in {"a", "b"}  # both refuse: fall back to all
    for _ in range(10):
        policy.observe("shop.org", "a", latency=0.1, status=200)
    assert not policy.refuses("shop.org", "a")  # the refusals decayed
    small = SuccessTablePolicy(max_hosts=2)
    for h in ("x", "y", "z"):
        small.observe(h, "a", latency=0.1, status=403)
    assert not small.refuses("x", "a")  # the oldest host was forgotten


def test_the_worker_option_names_a_policy() -> None:
    assert isinstance(make_policy("least-loaded"), LeastLoadedPolicy)
    assert load_distributed(assignment="sed").assignment == "sed"
    with pytest.raises(ConfigError, match="not one of"):
        load_distributed(assignment="random")
    with pytest.raises(ConfigError, match="assignment_model"):
        load_distributed(assignment="dqn")
    with pytest.raises(ConfigError, match="unknown assignment policy"):
        make_policy("random")
    with pytest.raises(ConfigError, match="model file"):
        make_policy("dqn")
