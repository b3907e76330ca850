"""The DQN on hand-made transitions: targets, replay, target sync, the policy's view of nodes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from topicrawl.core.errors import ConfigError  # noqa: E402
from topicrawl.distributed.partition import AssignmentPolicy, NodeLoad, plan_moves  # noqa: E402
from topicrawl.distributed.policies import FeedbackPolicy  # noqa: E402
from topicrawl.learn.dqn import (  # noqa: E402
    NODE_FEATURES,
    DqnAgent,
    DqnConfig,
    DqnPolicy,
    ReplayMemory,
    hostid_feature,
    load_dqn_policy,
    save_dqn_policy,
    td_targets,
)

SMALL = DqnConfig(max_nodes=3, feature_dim=2, hidden=8, batch_size=4, replay=8, sync_every=3)


def loads(*names: str, queue: int = 0) -> list[NodeLoad]:
    return [NodeLoad(node=n, queue=queue, latency=0.5, concurrency=4) for n in names]


def test_td_targets_take_the_best_live_next_action_only() -> None:
    rewards = torch.tensor([1.0, -0.5, 2.0])
    next_values = torch.tensor([[3.0, 10.0], [-1.0, -4.0], [5.0, 6.0]])
    masks = torch.tensor([[True, False], [True, True], [False, False]])
    # row 0: the 10 is masked (dead node) so 3; row 1: max -1; row 2: no live action: r only.
    assert td_targets(rewards, next_values, masks, 0.5).tolist() == [2.5, -1.0, 2.0]


def test_the_replay_memory_is_a_ring_that_samples_what_it_holds() -> None:
    memory = ReplayMemory(3, state_dim=2, actions=2)
    for i in range(5):
        memory.push(
            np.full(2, i, np.float32),
            i % 2,
            float(i),
            np.full(2, i + 1, np.float32),
            np.array([True, False]),
        )
    assert len(memory) == 3
    assert sorted(memory.rewards.tolist()) == [2.0, 3.0, 4.0]  # 0 and 1 were overwritten
    states, actions, rewards, next_states, masks = memory.sample(50, np.random.default_rng(0))
    assert set(rewards.tolist()) <= {2.0, 3.0, 4.0}
    assert (next_states[:, 0] == states[:, 0] + 1).all()
    assert (actions == rewards.long() % 2).all()
    assert masks.shape == (50, 2)


def test_the_target_network_is_synced_every_n_learning_steps() -> None:
    agent = DqnAgent(SMALL, seed=0)
    state = np.zeros(SMALL.state_dim, np.float32)
    for i in range(SMALL.batch_size):
        agent.memory.push(state + i, i % 3, -1.0, state, np.array([True, True, False]))

    def same() -> bool:
        return all(
            torch.equal(a, b)
            for a, b in zip(agent.online.parameters(), agent.target.parameters(), strict=True)
        )

    assert same()
    assert agent.learn_step() is not None
    assert not same()  # the online net moved; the target waits
    agent.learn_step()
    assert not same()
    agent.learn_step()  # the third step: synced
    assert same()
    assert agent.steps == 3


def test_learning_moves_the_value_of_the_taken_action_towards_its_reward() -> None:
    config = DqnConfig(
        max_nodes=2, feature_dim=0, hidden=8, batch_size=8, replay=64, gamma=0.0, learning_rate=0.01
    )
    agent = DqnAgent(config, seed=1)
    state = np.zeros(config.state_dim, np.float32)
    for _ in range(32):
        agent.memory.push(state, 0, -2.0, state, np.array([True, True]))
        agent.memory.push(state, 1, 0.0, state, np.array([True, True]))
    for _ in range(300):
        agent.learn_step()
    values = agent.values(state)
    assert values[0] == pytest.approx(-2.0, abs=0.2)
    assert values[1] == pytest.approx(0.0, abs=0.2)
    assert agent.act(state, np.array([True, True]), explore=False) == 1
    assert agent.act(state, np.array([True, False]), explore=False) == 0  # the mask wins


def test_the_reward_is_a_penalty_above_the_threshold_and_for_refusals() -> None:
    policy = DqnPolicy(DqnAgent(DqnConfig(threshold=2.0)))
    assert policy.reward(1.0, 200) == 0.0
    assert policy.reward(3.0, 200) == -0.5
    assert policy.reward(1.0, 403) == -1.0
    assert policy.reward(6.0, 429) == -3.0
    assert policy.reward(0.1, 0) == -1.0  # lost on a dead node


def test_a_node_keeps_its_slot_a_dead_one_is_never_chosen_and_a_newcomer_takes_a_free_slot() -> (
    None
):
    policy = DqnPolicy(DqnAgent(SMALL), hostid_feature(2))
    assert isinstance(policy, AssignmentPolicy)
    assert isinstance(policy, FeedbackPolicy)
    assert policy.slot_of(loads("a", "b", "c")) == {"a": 0, "b": 1, "c": 2}
    state, mask = policy.state("h.org", loads("a", "c"))  # b died
    assert mask.tolist() == [True, False, True]
    assert state.shape == (SMALL.state_dim,)
    assert state[NODE_FEATURES] == 0.0  # b's slot is empty
    assert all(policy.owner(f"h{i}.org", loads("a", "c")) in {"a", "c"} for i in range(50))
    assert policy.slot_of(loads("a", "c", "d")) == {"a": 0, "c": 2, "d": 1}
    assert policy.owner("x.org", []) is None


def test_the_policy_plugs_into_a_membership_change() -> None:
    policy = DqnPolicy(DqnAgent(SMALL))
    before = loads("a", "b", "c")
    owners = {f"h{i}.org": policy.owner(f"h{i}.org", before) or "" for i in range(60)}
    after = loads("a", "c")  # b died
    moves = plan_moves(owners, after, policy)
    assert set(moves) == {h for h, n in owners.items() if n == "b"}
    assert set(moves.values()) <= {"a", "c"}
    joined = [*after, NodeLoad(node="d")]
    moves = plan_moves({h: n for h, n in owners.items() if n != "b"}, joined, policy, joined=["d"])
    assert set(moves.values()) <= {"d"}  # a join only takes hosts to the newcomer


def test_training_records_transitions_and_learns_while_it_assigns() -> None:
    agent = DqnAgent(
        DqnConfig(
            max_nodes=2,
            feature_dim=2,
            hidden=8,
            batch_size=4,
            replay=32,
            train_every=1,
            epsilon_steps=10,
        )
    )
    policy = DqnPolicy(agent, hostid_feature(2), training=True)
    for i in range(12):
        node = policy.owner(f"h{i % 3}.org", loads("a", "b"))
        assert node in {"a", "b"}
        policy.observe(f"h{i % 3}.org", node, latency=2.0 if node == "a" else 0.1, status=200)
    policy.observe("never.org", "a", latency=1.0, status=200)  # no decision: ignored
    assert len(agent.memory) == 12
    assert agent.steps == 12 - 3  # a step per transition once a batch is held
    assert agent.epsilon == pytest.approx(0.05)


def test_a_saved_policy_answers_like_the_trained_one(tmp_path: Path) -> None:
    policy = DqnPolicy(DqnAgent(SMALL, seed=3), hostid_feature(2))
    save_dqn_policy(policy, tmp_path / "dqn.pt", feature="hostid")
    loaded = load_dqn_policy(tmp_path / "dqn.pt")
    nodes = loads("a", "b", "c")
    hosts = [f"h{i}.org" for i in range(30)]
    assert [loaded.owner(h, nodes) for h in hosts] == [policy.owner(h, nodes) for h in hosts]
    (tmp_path / "bad.pt").write_text("x")
    with pytest.raises(ConfigError):
        load_dqn_policy(tmp_path / "bad.pt")
    with pytest.raises(ConfigError):
        DqnConfig(gamma=1.0)
    assert not math.isnan(loaded.agent.values(np.zeros(SMALL.state_dim, np.float32))[0])
