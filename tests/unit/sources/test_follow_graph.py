"""The follow graph grown hop by hop, within its bounds."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from topicrawl.core.errors import ConfigError, PermanentFetchError
from topicrawl.sources.accountsapi import Account
from topicrawl.sources.follows import grow_follow_graph

# s -> a, b ; a -> c, d ; b -> c, e ; c -> f ; d -> s ; f -> g ; g -> h
FOLLOWS = {
    "s": ["a", "b"],
    "a": ["c", "d"],
    "b": ["c", "e"],
    "c": ["f"],
    "d": ["s"],
    "e": [],
    "f": ["g"],
    "g": ["h"],
}
FOLLOWERS = {"d": 50, "e": 10}


def account(key: str) -> Account:
    return Account(id=key, username=key, display_name=key, followers=FOLLOWERS.get(key, 0))


class Lists:
    def __init__(self, private: Sequence[str] = ()) -> None:
        self.asked: list[str] = []
        self.private = set(private)

    async def __call__(self, account_id: str) -> list[Account]:
        self.asked.append(account_id)
        if account_id in self.private:
            raise PermanentFetchError(f"https://x/{account_id}", "HTTP 403")
        return [account(k) for k in FOLLOWS.get(account_id, [])]


async def test_three_hops_from_the_seed() -> None:
    lists = Lists()
    graph = await grow_follow_graph([account("s")], lists, max_hops=3)
    assert graph.hops == {"s": 0, "a": 1, "b": 1, "c": 2, "d": 2, "e": 2, "f": 3}
    assert "g" not in graph.accounts  # four hops away
    assert ("d", "s") in graph.edges
    assert ("c", "f") in graph.edges
    assert ("f", "g") not in graph.edges  # the last hop is not expanded
    assert sorted(lists.asked) == ["a", "b", "c", "d", "e", "s"]


async def test_a_bounded_hop_keeps_the_most_followed_accounts() -> None:
    graph = await grow_follow_graph([account("s")], Lists(), max_hops=2, max_per_hop=2)
    # c is followed by a and b (2 votes); d (50 followers) beats e (10) among single votes.
    assert graph.at_hop(2) == ["c", "d"]
    assert all(a in graph.accounts and b in graph.accounts for a, b in graph.edges)


async def test_unreadable_lists_are_skipped_and_counted() -> None:
    graph = await grow_follow_graph([account("s")], Lists(private=["a"]), max_hops=2)
    assert graph.unreadable == ("a",)
    assert graph.at_hop(2) == ["c", "e"]


async def test_zero_hops_and_bad_bounds() -> None:
    graph = await grow_follow_graph([account("s"), account("s")], Lists(), max_hops=0)
    assert dict(graph.hops) == {"s": 0}
    assert not graph.edges
    with pytest.raises(ConfigError):
        await grow_follow_graph([], Lists(), max_hops=4)
    with pytest.raises(ConfigError):
        await grow_follow_graph([], Lists(), max_per_hop=0)
