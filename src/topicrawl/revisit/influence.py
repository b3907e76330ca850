"""Account influence: activity, weighted PageRank over the follow graph, and where work goes.

Pure functions, no I/O:

- :func:`activity`: posts a day from original posts and reposts (a repost counts
  ``repost_weight`` of an original).
- :func:`edge_weights`: a follow edge ``u -> v`` (``u`` follows ``v``) passes ``u``'s rank to
  ``v`` in proportion to ``1 + sum(c_k * log1p(s_k(v)))`` over ``v``'s signals: followers,
  activity, reposts and comments received per post. So among the accounts ``u`` follows, the
  followed, active and engaging ones get more of ``u``'s vote.
- :func:`weighted_pagerank`: networkx's PageRank with those weights (each node's out-weights
  normalised; dangling nodes spread evenly); :func:`plain_pagerank` without them.
- :func:`node_of` (rendezvous hashing of the account id over the nodes, as hosts are in
  :mod:`topicrawl.distributed.partition`) and :func:`thread_of` (the id modulo the threads).
- :func:`recompute_due`: influence (and its tiers) are recomputed weekly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import xxhash

from topicrawl.core.errors import ConfigError
from topicrawl.distributed.partition import rendezvous_score

__all__ = [
    "WEEK",
    "AccountSignals",
    "InfluenceWeights",
    "activity",
    "edge_weights",
    "node_of",
    "pagerank",
    "plain_pagerank",
    "recompute_due",
    "thread_of",
    "weighted_pagerank",
]

WEEK = 7 * 86_400.0


@dataclass(frozen=True, slots=True)
class AccountSignals:
    """What an account shows of itself: followers, original posts and reposts over ``days``,
    and the reposts and comments its original posts received."""

    followers: int = 0
    originals: int = 0
    reposts_made: int = 0
    reposts_received: int = 0
    comments_received: int = 0
    days: float = 7.0

    @property
    def activity(self) -> float:
        return activity(self.originals, self.reposts_made, self.days)

    @property
    def reposts_per_post(self) -> float:
        return self.reposts_received / self.originals if self.originals else 0.0

    @property
    def comments_per_post(self) -> float:
        return self.comments_received / self.originals if self.originals else 0.0


@dataclass(frozen=True, slots=True)
class InfluenceWeights:
    """The coefficients of each signal in an edge's weight (all >= 0)."""

    followers: float = 0.5
    activity: float = 0.5
    reposts: float = 1.0
    comments: float = 1.0
    damping: float = 0.85

    def __post_init__(self) -> None:
        values = (self.followers, self.activity, self.reposts, self.comments)
        if any(not (v >= 0 and math.isfinite(v)) for v in values):
            raise ConfigError("influence weights must be finite and >= 0")
        if not 0 < self.damping < 1:
            raise ConfigError(f"damping must be in (0, 1), got {self.damping}")


def activity(originals: int, reposts: int, days: float, *, repost_weight: float = 0.5) -> float:
    """Posts a day: originals plus ``repost_weight`` per repost, over ``days``.

    Raises:
        ConfigError: ``days`` <= 0, or a negative count.
    """
    if not days > 0 or originals < 0 or reposts < 0:
        raise ConfigError("days must be > 0 and counts >= 0")
    return (originals + repost_weight * reposts) / days


def edge_weights(
    edges: Iterable[tuple[str, str]],
    signals: Mapping[str, AccountSignals],
    weights: InfluenceWeights | None = None,
) -> dict[tuple[str, str], float]:
    """The weight of each follow edge (follower, followee) from the followee's signals."""
    w = weights or InfluenceWeights()
    out: dict[tuple[str, str], float] = {}
    cache: dict[str, float] = {}
    for follower, followee in edges:
        value = cache.get(followee)
        if value is None:
            s = signals.get(followee, AccountSignals())
            value = (
                1.0
                + w.followers * math.log1p(s.followers)
                + w.activity * math.log1p(s.activity)
                + w.reposts * math.log1p(s.reposts_per_post)
                + w.comments * math.log1p(s.comments_per_post)
            )
            cache[followee] = value
        out[(follower, followee)] = value
    return out


def pagerank(
    nodes: Iterable[str], weighted: Mapping[tuple[str, str], float], *, damping: float = 0.85
) -> dict[str, float]:
    """PageRank where each node passes its rank along its out-edges in proportion to their
    weights (networkx; dangling nodes spread evenly; self-loops ignored)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(nodes))
    for (a, b), weight in weighted.items():
        if not (weight > 0 and math.isfinite(weight)):
            raise ConfigError(f"edge {a} -> {b} has weight {weight}; weights must be > 0")
        if a != b:
            graph.add_edge(a, b, weight=weight)
    if graph.number_of_nodes() == 0:
        return {}
    ranks: dict[str, float] = nx.pagerank(graph, alpha=damping, weight="weight", tol=1e-12)
    return ranks


def weighted_pagerank(
    nodes: Iterable[str],
    edges: Iterable[tuple[str, str]],
    signals: Mapping[str, AccountSignals],
    weights: InfluenceWeights | None = None,
) -> dict[str, float]:
    """Each account's influence: :func:`pagerank` with :func:`edge_weights` (sums to 1)."""
    w = weights or InfluenceWeights()
    return pagerank(nodes, edge_weights(edges, signals, w), damping=w.damping)


def plain_pagerank(
    nodes: Iterable[str], edges: Iterable[tuple[str, str]], *, damping: float = 0.85
) -> dict[str, float]:
    """PageRank over the follow graph with every edge alike (the benchmark's baseline)."""
    return pagerank(nodes, dict.fromkeys(edges, 1.0), damping=damping)


def node_of(account_id: str, nodes: Sequence[str] | Mapping[str, float]) -> str | None:
    """The node that handles ``account_id``: weighted rendezvous hashing of the id.

    ``nodes`` is a list of node names (equal weights) or names with weights (e.g. measured
    throughput). Removing a node moves only the accounts it held. None when there is no node.
    """
    weighted = nodes if isinstance(nodes, Mapping) else dict.fromkeys(nodes, 1.0)
    best: tuple[float, str] | None = None
    for node, weight in weighted.items():
        if not (weight > 0 and math.isfinite(weight)):
            raise ConfigError(f"node {node!r} has weight {weight}; weights must be > 0")
        key = (rendezvous_score(f"account:{account_id}", node, weight), node)
        if best is None or key > best:
            best = key
    return best[1] if best is not None else None


def thread_of(account_id: str, threads: int) -> int:
    """The thread (0 .. threads-1) of a node that handles ``account_id``: the id modulo the
    thread count (a numeric id as the number, another id by its 64-bit hash).

    Raises:
        ConfigError: ``threads`` < 1.
    """
    if threads < 1:
        raise ConfigError(f"threads must be >= 1, got {threads}")
    number = int(account_id) if account_id.isascii() and account_id.isdigit() else None
    if number is None:
        number = xxhash.xxh64_intdigest(account_id.encode("utf-8"))
    return number % threads


def recompute_due(last_computed: float | None, now: float, *, every: float = WEEK) -> bool:
    """Whether influence is due again: never computed, or ``every`` seconds have passed."""
    if not every > 0:
        raise ConfigError(f"the recompute period must be > 0, got {every}")
    return last_computed is None or now - last_computed >= every
