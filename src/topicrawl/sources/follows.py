"""The follow graph grown from matched accounts, hop by hop, within a bound per hop.

Hop 0 is the matched accounts. Hop ``h`` reads the following list of every account of hop
``h - 1`` and keeps at most ``max_per_hop`` accounts not seen before: those followed by most
accounts of the previous hop first (then by their follower count, then id), so a bounded
graph keeps the accounts its core points at most. Accounts of the last hop are not expanded;
edges are kept between accounts that are in the graph. An account whose list cannot be read
(private, gone: a permanent error) is skipped and counted; a rate limit longer than the
client will wait ends the growth with an error.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from topicrawl.core.errors import ConfigError, PermanentFetchError
from topicrawl.sources.accountsapi import Account

__all__ = ["FollowGraph", "grow_follow_graph"]

_log = logging.getLogger(__name__)

Following = Callable[[str], Awaitable[Sequence[Account]]]
# A hop's following lists read at once (e.g. split between nodes): account id -> the accounts
# it follows, None for a list that could not be read; given the ids and the hop.
FollowingMany = Callable[[Sequence[str], int], Awaitable[Mapping[str, Sequence[Account] | None]]]


@dataclass(frozen=True)
class FollowGraph:
    """Accounts by id, each one's hop from the matched set, and edges (follower, followee)."""

    accounts: Mapping[str, Account]
    hops: Mapping[str, int]
    edges: frozenset[tuple[str, str]]
    unreadable: tuple[str, ...] = field(default=())

    def at_hop(self, hop: int) -> list[str]:
        return sorted(a for a, h in self.hops.items() if h == hop)


async def grow_follow_graph(
    seeds: Sequence[Account],
    following: Following,
    *,
    max_hops: int = 3,
    max_per_hop: int = 200,
    following_many: FollowingMany | None = None,
) -> FollowGraph:
    """Grow the follow graph from ``seeds`` up to ``max_hops`` hops (see the module docstring).

    Args:
        seeds: the matched accounts (hop 0).
        following: an account id -> the accounts it follows (e.g.
            :meth:`~topicrawl.sources.accountsapi.AccountsClient.following`, already capped).
        max_hops: 0 to 3 (the brief of the video-domain system: three hops).
        max_per_hop: most new accounts a hop adds.
        following_many: reads a whole hop's lists at once instead of ``following`` one by
            one (the graph is the same: the lists are merged in the same order).

    Raises:
        ConfigError: a bound out of range.
    """
    if not 0 <= max_hops <= 3:
        raise ConfigError(f"max_hops must be 0 to 3, got {max_hops}")
    if max_per_hop < 1:
        raise ConfigError(f"max_per_hop must be >= 1, got {max_per_hop}")
    accounts: dict[str, Account] = {}
    hops: dict[str, int] = {}
    for seed in seeds:
        if seed.id not in accounts:
            accounts[seed.id] = seed
            hops[seed.id] = 0
    raw_edges: set[tuple[str, str]] = set()
    unreadable: list[str] = []
    frontier = sorted(accounts)
    for hop in range(1, max_hops + 1):
        votes: dict[str, int] = {}
        found: dict[str, Account] = {}
        lists = await following_many(frontier, hop) if following_many is not None else None
        for account_id in frontier:
            if lists is not None:
                listed = lists.get(account_id)
                if listed is None:
                    unreadable.append(account_id)
                    continue
                followed = listed
            else:
                try:
                    followed = await following(account_id)
                except PermanentFetchError as exc:
                    _log.warning("following list of %s not readable: %s", account_id, exc)
                    unreadable.append(account_id)
                    continue
            for other in followed:
                if other.id == account_id:
                    continue
                raw_edges.add((account_id, other.id))
                if other.id not in accounts:
                    found[other.id] = other
                    votes[other.id] = votes.get(other.id, 0) + 1
        ranked = sorted(found, key=lambda a: (-votes[a], -found[a].followers, a))
        frontier = ranked[:max_per_hop]
        for account_id in frontier:
            accounts[account_id] = found[account_id]
            hops[account_id] = hop
        if not frontier:
            break
    edges = frozenset((a, b) for a, b in raw_edges if a in accounts and b in accounts)
    return FollowGraph(accounts, hops, edges, tuple(unreadable))
