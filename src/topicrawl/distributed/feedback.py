"""How a worker's fetches went, fed back to where hosts go.

:class:`HostAssigner` proposes the node of a host seen for the first time, from the latest
view of the live nodes. :class:`FetchFeedback` hears every fetch the worker's crawler makes
(its status, 0 for no answer, and its seconds) and:

- tells the assignment policy when it learns from outcomes
  (:class:`~topicrawl.distributed.policies.FeedbackPolicy`: the success table, a training DQN);
- keeps the node's processing latency (the mean seconds of its last fetches) and hands it to
  the heartbeat, beside the node's queue, for the load-aware policies of every node;
- after a refusal (403 or 429) of a host this node holds, asks that policy again where the
  host should go; when it now names another live node, the host is handed to that node (its
  queued URLs, politeness state and leases stay as they are: only which node pops it
  changes), so a node a host refuses stops being given the host's work.

Under the success table, what a node learns is shared with the other nodes through Redis
(:mod:`topicrawl.distributed.outcomes`, given as ``shared``): another node's policy then
knows that a host refused this one, and a node that joins starts from it. A host already held
is not proposed again, so that matters when hosts move for other reasons: an idle node taking
a ready host from a busy one (the pop skips the hosts whose shared rows rule the node out,
looking 8 deep into the other node's ready set; past that, or before the rows are shared, it
can still take a host that refuses it, and hands it on again after its next refusal), or a
node joining or dying.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from topicrawl.core.errors import FrontierError
from topicrawl.core.models import FetchOutcome
from topicrawl.distributed.outcomes import SharedOutcomes
from topicrawl.distributed.partition import AssignmentPolicy, NodeLoad
from topicrawl.distributed.policies import FeedbackPolicy

__all__ = ["FetchFeedback", "HostAssigner", "HostOwners"]

log = logging.getLogger(__name__)

_CACHE = 100_000  # proposals remembered at most (then forgotten all at once)


class HostOwners(Protocol):
    """The frontier's record of which node holds which host."""

    async def owners_of(self, hosts: Sequence[str]) -> dict[str, str]: ...

    async def assign_hosts(self, owners: Mapping[str, str]) -> int: ...


class HostAssigner:
    """Proposes the node for a host seen for the first time, from the latest view of nodes.

    The view is refreshed with every heartbeat; answers are cached until it changes or the
    host is :meth:`forget`-ten (its policy learnt something about it).
    """

    def __init__(self, policy: AssignmentPolicy) -> None:
        self.policy = policy
        self._nodes: tuple[NodeLoad, ...] = ()
        self._cache: dict[str, str | None] = {}

    @property
    def nodes(self) -> tuple[NodeLoad, ...]:
        """The latest view of the live nodes, by id."""
        return self._nodes

    def update(self, nodes: Sequence[NodeLoad]) -> None:
        """Use a new view of the live nodes."""
        view = tuple(sorted(nodes, key=lambda n: n.node))
        if view != self._nodes:
            self._nodes = view
            self._cache.clear()

    def propose(self, host: str) -> str | None:
        """The node ``host`` should go to, or None when no node is known."""
        if host not in self._cache:
            if len(self._cache) > _CACHE:
                self._cache.clear()
            self._cache[host] = self.policy.owner(host, self._nodes)
        return self._cache[host]

    def forget(self, host: str) -> None:
        """Drop the cached proposal for ``host``: the next one asks the policy again."""
        self._cache.pop(host, None)

    def forget_all(self, hosts: Iterable[str]) -> None:
        """:meth:`forget` each of ``hosts``."""
        for host in hosts:
            self._cache.pop(host, None)


class FetchFeedback:
    """The crawler's ``on_fetch`` listener of a worker (see the module docstring).

    Args:
        node: this worker's node id.
        assigner: the worker's host assigner (its policy and its view of the nodes).
        frontier: where host owners are read and changed.
        window: fetches the processing latency is the mean of.
    """

    def __init__(
        self,
        *,
        node: str,
        assigner: HostAssigner,
        frontier: HostOwners,
        window: int = 200,
        shared: SharedOutcomes | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"window must be at least 1, got {window}")
        self.node = node
        self._assigner = assigner
        policy = assigner.policy
        self._learner = policy if isinstance(policy, FeedbackPolicy) else None
        self._frontier = frontier
        self._shared = shared
        self._seconds: deque[float] = deque(maxlen=window)
        self._review: set[str] = set()
        self._wake = asyncio.Event()
        self.fetches = 0
        self.refusals = 0
        self.moved = 0
        """Hosts this node handed on after they refused it."""

    @property
    def latency(self) -> float | None:
        """Mean seconds of the last fetches (None before the first)."""
        if not self._seconds:
            return None
        return sum(self._seconds) / len(self._seconds)

    def __call__(self, outcome: FetchOutcome) -> None:
        """Hear one fetch (never blocks: a host to hand on is handed on by :meth:`run`)."""
        self.fetches += 1
        self._seconds.append(outcome.seconds)
        if outcome.refused:
            self.refusals += 1
        if self._learner is None:
            return
        self._learner.observe(
            outcome.host, self.node, latency=outcome.seconds, status=outcome.status
        )
        self._assigner.forget(outcome.host)
        if self._shared is not None:
            self._shared.note(outcome.host, refused=outcome.refused)
        if outcome.refused:
            self._review.add(outcome.host)
            self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Hand on the hosts that refused this node, as refusals come, until ``stop``."""
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                woken = asyncio.ensure_future(self._wake.wait())
                try:
                    await asyncio.wait({woken, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
                self._wake.clear()
                try:
                    await self.review()
                except FrontierError as exc:  # the hosts stay here; the next refusal retries
                    log.warning("could not hand on hosts that refused this node: %s", exc)
        finally:
            stopping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping

    async def review(self) -> int:
        """Ask the policy again about each host that refused this node since the last
        review; hand each it now gives to another live node to that node, if this node
        still holds it. Returns how many hosts were handed on."""
        hosts, self._review = self._review, set()
        wanted: dict[str, str] = {}
        for host in sorted(hosts):
            target = self._assigner.policy.owner(host, self._assigner.nodes)
            if target is not None and target != self.node:
                wanted[host] = target
        if not wanted:
            return 0
        held = await self._frontier.owners_of(list(wanted))
        moves = {host: node for host, node in wanted.items() if held.get(host) == self.node}
        if not moves:
            return 0
        moved = await self._frontier.assign_hosts(moves)
        self.moved += moved
        for host, node in moves.items():
            log.info("host %s refuses node %s: handed to %s", host, self.node, node)
        return moved
