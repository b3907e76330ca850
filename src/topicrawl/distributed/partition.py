"""Which node crawls which host: assignment policies and the moves a membership change needs.

A host belongs to one node at a time (its URLs are popped by that node, and by idle nodes
that share it, see :class:`~topicrawl.distributed.redis_frontier.RedisFrontier`). A host is
assigned when it is first seen; afterwards it moves only when its node dies or leaves (to the
least loaded live nodes), when a new node joins and the policy gives the host to the
newcomer, or when an idle node takes a ready host from a busy one. So a membership change
moves only the share of hosts it must.

The default policy is weighted rendezvous (highest-random-weight) hashing: every node scores
every host by ``-w / ln(u)`` with ``u`` a uniform hash of (host, node) in (0, 1) and ``w`` the
node's measured throughput; the highest score wins. A node wins a host with probability
``w / sum(w)``, and removing a node changes the winner only of the hosts it held.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import xxhash

__all__ = [
    "AssignmentPolicy",
    "NodeLoad",
    "RendezvousPolicy",
    "least_loaded",
    "plan_moves",
]

_SCALE = float(1 << 64)


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """What a policy knows of a live node.

    ``pages_per_second`` is the node's throughput over the last measuring window, or ``None``
    while it has not yet run a whole window (a node that just joined). The learned and
    load-aware policies (:mod:`topicrawl.distributed.policies`) also read its CPU use (one
    core = 100), resident memory, queue (tasks waiting or in progress) and processing latency
    (seconds), each ``None`` when the node's heartbeat did not say.
    """

    node: str
    pages_per_second: float | None = None
    hosts: int = 0
    errors: int = 0
    concurrency: int = 1
    cpu_percent: float | None = None
    memory_bytes: int | None = None
    queue: int | None = None
    latency: float | None = None


@runtime_checkable
class AssignmentPolicy(Protocol):
    """Chooses the node for a host among the live nodes. Pure: no I/O."""

    name: str

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        """The node that should crawl ``host``; ``None`` when ``nodes`` is empty."""
        ...


class RendezvousPolicy:
    """Weighted rendezvous hashing with each node's measured throughput as its weight.

    A node not yet measured weighs the mean of the measured ones (1.0 when none is), so a
    newcomer gets an even share of new hosts until its own rate is known; no weight is below
    ``min_weight`` (a stalled node still gets a small share, and weights stay positive).

    Args:
        min_weight: the floor of every weight, in pages per second.
    """

    name = "rendezvous"

    def __init__(self, *, min_weight: float = 0.1) -> None:
        if not (min_weight > 0 and math.isfinite(min_weight)):
            raise ValueError(f"min_weight must be a finite number > 0, got {min_weight}")
        self._min_weight = min_weight

    def weights(self, nodes: Sequence[NodeLoad]) -> dict[str, float]:
        """Each node's weight (see the class docstring)."""
        measured = [n.pages_per_second for n in nodes if n.pages_per_second is not None]
        fallback = sum(measured) / len(measured) if measured else 1.0
        return {
            n.node: max(
                self._min_weight,
                fallback if n.pages_per_second is None else n.pages_per_second,
            )
            for n in nodes
        }

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        """The node with the highest weighted score for ``host``; ties go to the smaller id."""
        best: str | None = None
        best_score = -math.inf
        for node, weight in self.weights(nodes).items():
            score = rendezvous_score(host, node, weight)
            if score > best_score or (score == best_score and best is not None and node < best):
                best, best_score = node, score
        return best


def rendezvous_score(host: str, node: str, weight: float) -> float:
    """``-weight / ln(u)``, with ``u`` in (0, 1) a uniform hash of (host, node)."""
    h = xxhash.xxh64_intdigest(f"{host}\0{node}".encode("utf-8", "surrogatepass"))
    u = (h + 0.5) / _SCALE
    return -weight / math.log(u)


def plan_moves(
    owners: Mapping[str, str],
    nodes: Sequence[NodeLoad],
    policy: AssignmentPolicy,
    *,
    joined: Collection[str] = (),
) -> dict[str, str]:
    """The hosts that must change node after a membership change, and where they go.

    The hosts whose node is not among the live ``nodes`` go to the least loaded live nodes
    (see :func:`least_loaded`; ``""``, the shared pool, when no node is live). A host of a
    live node moves only if the policy now gives it to a node that just ``joined``; every
    other host stays, so a join takes only the newcomer's share and a departure moves only the
    departed node's hosts.

    Args:
        owners: host -> its current node.
        nodes: the live nodes.
        policy: where hosts should go.
        joined: live nodes that joined since the last plan.
    """
    live = {n.node for n in nodes}
    newcomers = set(joined) & live
    moves: dict[str, str] = {}
    orphans = sorted(host for host, node in owners.items() if node not in live)
    moves.update(zip(orphans, least_loaded(len(orphans), nodes), strict=True))
    for host, node in owners.items():
        if node in live and newcomers:
            target = policy.owner(host, nodes)
            if target is not None and target in newcomers and target != node:
                moves[host] = target
    return moves


def least_loaded(count: int, nodes: Sequence[NodeLoad]) -> list[str]:
    """Where ``count`` hosts go, one after the other, each to the live node with the fewest
    hosts per unit of concurrency counting those already given (ties: the smaller id); all
    ``""`` (the shared pool) when no node is live. A dead node's hosts thus go to the nodes
    with the least to do, not to the busiest (throughput-weighted hashing favours those)."""
    if not nodes:
        return [""] * count
    heap = [
        (n.hosts / max(1, n.concurrency), n.node, n.hosts, max(1, n.concurrency)) for n in nodes
    ]
    heapq.heapify(heap)
    targets = []
    for _ in range(count):
        _, node, hosts, concurrency = heapq.heappop(heap)
        targets.append(node)
        heapq.heappush(heap, ((hosts + 1) / concurrency, node, hosts + 1, concurrency))
    return targets
