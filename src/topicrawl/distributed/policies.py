"""Assignment policies beside weighted rendezvous: the rules the learned policy is measured
against, and the factory the worker option picks one from.

Every policy answers :meth:`~topicrawl.distributed.partition.AssignmentPolicy.owner` from a
view of the live nodes (their heartbeats: throughput, CPU, memory, queue, latency), with no
I/O. A policy that learns from outcomes also has :meth:`FeedbackPolicy.observe`, told how a
fetch of a host went on a node. Ties always go to the smaller node id, so every rule is
deterministic given its view (the two-choice rules hash (host, round) for their candidates).

Where the view lacks a number (a heartbeat that did not say), the load-aware rules fall back
to hosts per unit of concurrency for the queue and to concurrency over throughput for the
latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import xxhash

from topicrawl.core.errors import ConfigError
from topicrawl.distributed.partition import (
    AssignmentPolicy,
    NodeLoad,
    RendezvousPolicy,
    rendezvous_score,
)

__all__ = [
    "POLICY_NAMES",
    "BoundedLoadPolicy",
    "FeedbackPolicy",
    "HashModPolicy",
    "LeastLoadedPolicy",
    "PlainRendezvousPolicy",
    "ShortestDelayPolicy",
    "SuccessTablePolicy",
    "TwoChoicesPolicy",
    "make_policy",
]

POLICY_NAMES = (
    "hash",
    "rendezvous-plain",
    "rendezvous",
    "bounded",
    "least-loaded",
    "sed",
    "two-choices",
    "success-table",
    "dqn",
)


@runtime_checkable
class FeedbackPolicy(Protocol):
    """A policy that learns from how each fetch went."""

    def observe(self, host: str, node: str, *, latency: float, status: int) -> None:
        """A fetch of ``host`` on ``node`` took ``latency`` seconds and answered ``status``."""
        ...


def queue_of(n: NodeLoad) -> float:
    """Tasks per slot on the node (its queue, else its hosts), over its concurrency."""
    waiting = n.queue if n.queue is not None else n.hosts
    return waiting / max(1, n.concurrency)


def latency_of(n: NodeLoad, default: float = 1.0) -> float:
    """The node's processing latency in seconds, else concurrency over throughput."""
    if n.latency is not None:
        return max(1e-6, n.latency)
    if n.pages_per_second:
        return max(1, n.concurrency) / max(1e-6, n.pages_per_second)
    return default


def _hash(text: str) -> int:
    return xxhash.xxh64_intdigest(text.encode("utf-8", "surrogatepass"))


class HashModPolicy:
    """``hash(host) mod N`` over the nodes sorted by id: what most crawlers start with."""

    name = "hash"

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        if not nodes:
            return None
        ids = sorted(n.node for n in nodes)
        return ids[_hash(host) % len(ids)]


class PlainRendezvousPolicy(RendezvousPolicy):
    """Rendezvous hashing with every weight 1 (throughput ignored)."""

    name = "rendezvous-plain"

    def weights(self, nodes: Sequence[NodeLoad]) -> dict[str, float]:
        return {n.node: 1.0 for n in nodes}


def _ranked(host: str, nodes: Sequence[NodeLoad], weights: dict[str, float]) -> list[NodeLoad]:
    """The nodes by decreasing weighted rendezvous score for ``host`` (ties: smaller id)."""
    return sorted(nodes, key=lambda n: (-rendezvous_score(host, n.node, weights[n.node]), n.node))


class BoundedLoadPolicy:
    """Weighted rendezvous with bounded loads: the host goes to the first node in its
    rendezvous order whose queue per slot is at most ``factor`` times the mean (plus one
    task), so a hot node sheds new hosts to the next in order.

    Args:
        factor: the bound, > 1 (consistent hashing with bounded loads uses 1.25).
        min_weight: the weights' floor, as for :class:`RendezvousPolicy`.
    """

    name = "bounded"

    def __init__(self, *, factor: float = 1.25, min_weight: float = 0.1) -> None:
        if not (factor >= 1 and math.isfinite(factor)):
            raise ConfigError(f"factor must be a finite number >= 1, got {factor}")
        self.factor = factor
        self._weights = RendezvousPolicy(min_weight=min_weight)

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        if not nodes:
            return None
        ranked = _ranked(host, nodes, self._weights.weights(nodes))
        mean = sum(queue_of(n) for n in nodes) / len(nodes)
        bound = self.factor * mean + 1.0
        for n in ranked:
            if queue_of(n) <= bound:
                return n.node
        return ranked[0].node


class LeastLoadedPolicy:
    """The node with the fewest tasks per slot."""

    name = "least-loaded"

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        if not nodes:
            return None
        return min(nodes, key=lambda n: (queue_of(n), n.node)).node


class ShortestDelayPolicy:
    """Shortest expected delay: ``(queue per slot + 1) * latency``, the wait of one more task
    on each node; ``latency_weight`` < 1 discounts the latency term towards least-loaded."""

    name = "sed"

    def __init__(self, *, latency_weight: float = 1.0) -> None:
        if not 0 <= latency_weight <= 1:
            raise ConfigError(f"latency_weight must be in [0, 1], got {latency_weight}")
        self.latency_weight = latency_weight

    def delay(self, n: NodeLoad) -> float:
        """The expected delay of one more task on ``n``."""
        return float((queue_of(n) + 1.0) * latency_of(n) ** self.latency_weight)

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        if not nodes:
            return None
        return min(nodes, key=lambda n: (self.delay(n), n.node)).node


class TwoChoicesPolicy:
    """Power of ``d`` choices: ``d`` candidates drawn by hashing (host, round), the one with
    the shorter expected delay wins (see :class:`ShortestDelayPolicy`)."""

    name = "two-choices"

    def __init__(self, *, choices: int = 2, latency_weight: float = 1.0) -> None:
        if choices < 1:
            raise ConfigError(f"choices must be >= 1, got {choices}")
        self.choices = choices
        self._delay = ShortestDelayPolicy(latency_weight=latency_weight)
        self._round = 0

    def candidates(self, host: str, nodes: Sequence[NodeLoad]) -> list[NodeLoad]:
        """The ``choices`` nodes drawn for this decision (fewer when fewer are live)."""
        self._round += 1
        ordered = sorted(nodes, key=lambda n: n.node)
        picks: list[NodeLoad] = []
        salt = 0
        while len(picks) < min(self.choices, len(ordered)):
            pick = ordered[_hash(f"{host}\0{self._round}\0{salt}") % len(ordered)]
            salt += 1
            if pick not in picks:
                picks.append(pick)
        return picks

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        if not nodes:
            return None
        pool = self.candidates(host, nodes)
        return min(pool, key=lambda n: (self._delay.delay(n), n.node)).node


class SuccessTablePolicy:
    """Two choices among the nodes a per-(host, node) success table does not rule out.

    Each fetch outcome updates the host's record on that node (an exponentially decayed
    count of tries and of refusals: 403 or 429); a node whose refusal share for the host is
    at least ``threshold`` after ``min_tries`` tries is avoided for it while another is not.
    The table keeps at most ``max_hosts`` hosts (the oldest go first).

    Args:
        threshold: refusal share that rules a node out, in (0, 1].
        decay: weight of the past at each new outcome, in [0, 1).
        min_tries: decayed tries before a node may be ruled out.
    """

    name = "success-table"

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        decay: float = 0.9,
        min_tries: float = 1.0,
        choices: int = 2,
        latency_weight: float = 1.0,
        max_hosts: int = 100_000,
    ) -> None:
        if not (0 < threshold <= 1 and 0 <= decay < 1 and min_tries >= 0 and max_hosts >= 1):
            raise ConfigError("threshold in (0, 1], decay in [0, 1), min_tries >= 0")
        self.threshold = threshold
        self.decay = decay
        self.min_tries = min_tries
        self._max_hosts = max_hosts
        self._two = TwoChoicesPolicy(choices=choices, latency_weight=latency_weight)
        self._table: dict[str, dict[str, tuple[float, float]]] = {}

    def observe(self, host: str, node: str, *, latency: float, status: int) -> None:
        row = self._table.pop(host, {})  # re-inserted last: the dict is oldest-first
        tries, refused = row.get(node, (0.0, 0.0))
        bad = 1.0 if status in {403, 429} else 0.0
        row[node] = (self.decay * tries + 1.0, self.decay * refused + bad)
        self._table[host] = row
        if len(self._table) > self._max_hosts:
            del self._table[next(iter(self._table))]

    def row(self, host: str, node: str) -> tuple[float, float] | None:
        """The decayed (tries, refusals) of ``host`` on ``node``, or None if none were seen."""
        return self._table.get(host, {}).get(node)

    def learn(self, host: str, node: str, tries: float, refused: float) -> None:
        """Take the (tries, refusals) of ``host`` on ``node`` as learnt elsewhere (another
        node's table, shared through Redis: see :mod:`topicrawl.distributed.outcomes`)."""
        if not (tries >= 0 and 0 <= refused <= tries and math.isfinite(tries)):
            raise ValueError(f"bad success-table row for {host} on {node}: {tries}, {refused}")
        row = self._table.pop(host, {})
        row[node] = (tries, refused)
        self._table[host] = row
        if len(self._table) > self._max_hosts:
            del self._table[next(iter(self._table))]

    def refuses(self, host: str, node: str) -> bool:
        """Whether ``node`` is ruled out for ``host``."""
        tries, refused = self._table.get(host, {}).get(node, (0.0, 0.0))
        return tries >= self.min_tries and tries > 0 and refused / tries >= self.threshold

    def owner(self, host: str, nodes: Sequence[NodeLoad]) -> str | None:
        allowed = [n for n in nodes if not self.refuses(host, n.node)]
        return self._two.owner(host, allowed or nodes)


def make_policy(
    name: str, *, min_weight: float = 0.1, model: str | None = None
) -> AssignmentPolicy:
    """The policy a worker option names (see :data:`POLICY_NAMES`), with its default knobs.

    ``dqn`` needs the ``learn`` extra and ``model``, a file written by the benchmark's
    training (``benchmarks/learn``): it answers greedily and does not train in the worker.

    Raises:
        ConfigError: an unknown name, or ``dqn`` without a model or without torch.
    """
    match name:
        case "hash":
            return HashModPolicy()
        case "rendezvous-plain":
            return PlainRendezvousPolicy(min_weight=min_weight)
        case "rendezvous":
            return RendezvousPolicy(min_weight=min_weight)
        case "bounded":
            return BoundedLoadPolicy(min_weight=min_weight)
        case "least-loaded":
            return LeastLoadedPolicy()
        case "sed":
            return ShortestDelayPolicy()
        case "two-choices":
            return TwoChoicesPolicy()
        case "success-table":
            return SuccessTablePolicy()
        case "dqn":
            if not model:
                raise ConfigError("the dqn policy needs a model file (assignment_model)")
            from pathlib import Path  # noqa: PLC0415

            from topicrawl.learn.dqn import load_dqn_policy  # noqa: PLC0415 - torch on demand

            return load_dqn_policy(Path(model))
    raise ConfigError(f"unknown assignment policy {name!r}; one of {', '.join(POLICY_NAMES)}")
