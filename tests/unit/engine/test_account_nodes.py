"""Where seed 004's kept accounts are revisited: placed accounts stay, new ones follow the nodes'
measured rates (weighted rendezvous hashing), without I/O."""

from __future__ import annotations

from collections import Counter

import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.engine.accounts import AccountPipelineSettings, account_node

IDS = [f"acct-{i}" for i in range(2_000)]


def test_equal_weights_spread_accounts_evenly() -> None:
    settings = AccountPipelineSettings(nodes=("a", "b"))
    spread = Counter(account_node(i, settings) for i in IDS)
    assert set(spread) == {"a", "b"}
    assert abs(spread["a"] - spread["b"]) < 0.1 * len(IDS)


def test_a_faster_node_gets_more_new_accounts_in_proportion() -> None:
    settings = AccountPipelineSettings(nodes=("a", "b"), node_weights={"a": 3.0, "b": 1.0})
    spread = Counter(account_node(i, settings) for i in IDS)
    assert 0.70 < spread["a"] / len(IDS) < 0.80  # 3 / (3 + 1) = 0.75


def test_a_placed_account_stays_on_its_node_whatever_the_weights() -> None:
    placed = dict.fromkeys(IDS[:100], "b")
    settings = AccountPipelineSettings(
        nodes=("a", "b"), node_weights={"a": 1000.0, "b": 1.0}, placed=placed
    )
    assert all(account_node(i, settings) == "b" for i in IDS[:100])
    assert Counter(account_node(i, settings) for i in IDS[100:])["a"] > 0.95 * 1900


def test_an_account_whose_node_left_is_placed_again() -> None:
    settings = AccountPipelineSettings(nodes=("a", "b"), placed={"acct-1": "gone"})
    assert account_node("acct-1", settings) in {"a", "b"}


def test_weights_must_name_the_nodes() -> None:
    with pytest.raises(ConfigError, match="node weights"):
        AccountPipelineSettings(nodes=("a", "b"), node_weights={"a": 1.0})
