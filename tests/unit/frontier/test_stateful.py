"""Random sequences of frontier operations, checked against a naive reference model."""

from __future__ import annotations

import asyncio
import math
import shutil
import tempfile
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from topicrawl.core.models import Lease, Request
from topicrawl.frontier import MemoryFrontier, SqliteFrontier
from topicrawl.frontier._schedule import FrontierCore

T = TypeVar("T")

HOSTS = ["a.test", "b.test", "c.test"]
URLS = [f"http://{host}/{i}" for host in HOSTS for i in range(4)]
SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0])
DEFAULT_DELAY = 0.0  # hosts get delays from the set_host_delay rule
MAX_PER_HOST = 2
LEASE_TTL = 20.0


def host(url: str) -> str:
    return url.split("/")[2]


@dataclass
class Queued:
    score: float
    seq: int
    due: float = -math.inf  # reclaimed with a delay: not before this time


@dataclass
class Out:
    token: str
    score: float
    seq: int
    expires_at: float


@dataclass
class Model:
    """The frontier contract written the slow, obvious way."""

    now: float = 1000.0
    seq: int = 0
    queued: dict[str, Queued] = field(default_factory=dict)
    out: dict[str, Out] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    delay: dict[str, float] = field(default_factory=dict)
    last_pop: dict[str, float] = field(default_factory=dict)
    next_at: dict[str, float] = field(default_factory=dict)

    def push(self, batch: list[tuple[str, float]]) -> int:
        added = 0
        for url, score in batch:
            if url not in self.seen:
                self.seen.add(url)
                self.seq += 1
                self.queued[url] = Queued(score, self.seq)
                added += 1
            elif url in self.queued and score > self.queued[url].score:
                self.increase(url, score)
        return added

    def increase(self, url: str, score: float) -> bool:
        entry = self.queued.get(url)
        if entry is None or not score > entry.score:
            return False
        self.seq += 1
        entry.score, entry.seq = score, self.seq
        return True

    def rescore(self, scores: dict[str, float]) -> int:
        changed = 0
        for url, score in scores.items():
            entry = self.queued.get(url)
            if entry is None or score == entry.score:
                continue
            self.seq += 1
            entry.score, entry.seq = score, self.seq
            changed += 1
        return changed

    def leases_of(self, name: str) -> int:
        return sum(1 for url in self.out if host(url) == name)

    def best(self) -> str | None:
        ready = [
            url
            for url, entry in self.queued.items()
            if entry.due <= self.now
            and self.leases_of(host(url)) < MAX_PER_HOST
            and self.next_at.get(host(url), -math.inf) <= self.now
        ]
        if not ready:
            return None
        return min(ready, key=lambda url: (-self.queued[url].score, self.queued[url].seq))

    def best_at(self, at: float) -> str | None:
        now, self.now = self.now, at
        try:
            return self.best()
        finally:
            self.now = now

    def pop(self, token: str) -> str | None:
        url = self.best()
        if url is None:
            return None
        entry = self.queued.pop(url)
        self.out[url] = Out(token, entry.score, entry.seq, self.now + LEASE_TTL)
        name = host(url)
        self.last_pop[name] = self.now
        self.next_at[name] = self.now + self.delay.get(name, DEFAULT_DELAY)
        return url

    def _current(self, lease: Lease) -> bool:
        out = self.out.get(lease.request.url)
        return out is not None and out.token == lease.token and self.now < out.expires_at

    def ack(self, lease: Lease) -> bool:
        if not self._current(lease):
            return False
        del self.out[lease.request.url]
        return True

    def reclaim(self, lease: Lease, delay: float) -> bool:
        if not self._current(lease):
            return False
        self._back(lease.request.url, self.now + delay if delay > 0 else -math.inf)
        return True

    def _back(self, url: str, due: float) -> None:
        out = self.out.pop(url)
        self.queued[url] = Queued(out.score, out.seq, due)

    def reclaim_expired(self) -> int:
        expired = [url for url, out in self.out.items() if out.expires_at <= self.now]
        for url in expired:
            self._back(url, -math.inf)
        return len(expired)

    def set_host_delay(self, name: str, delay: float) -> None:
        self.delay[name] = delay
        if name in self.last_pop:
            self.next_at[name] = self.last_pop[name] + delay

    def restart(self) -> None:
        """A durable frontier reopened: leases, delays of reclaims and host timers are gone."""
        for url in list(self.out):
            self._back(url, -math.inf)
        for entry in self.queued.values():
            entry.due = -math.inf
        self.last_pop.clear()
        self.next_at.clear()


class FrontierMachine(RuleBasedStateMachine):
    """Drives a frontier and the model with the same operations and compares every answer."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.model = Model()
        self.frontier = self.run(self.open())
        self.leases: dict[str, Lease] = {}
        self.old_leases: list[Lease] = []

    def clock(self) -> float:
        return self.model.now

    async def open(self) -> FrontierCore:
        return MemoryFrontier(
            default_delay=DEFAULT_DELAY,
            max_per_host=MAX_PER_HOST,
            lease_ttl=LEASE_TTL,
            bloom_capacity=4,
            bloom_error_rate=0.2,  # plenty of false positives to get past
            clock=self.clock,
        )

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        try:
            self.run(self.frontier.close())
        finally:
            self.loop.close()

    @rule(batch=st.lists(st.tuples(st.sampled_from(URLS), SCORES), max_size=6))
    def push(self, batch: list[tuple[str, float]]) -> None:
        requests = [Request(url, score=score) for url, score in batch]
        assert self.run(self.frontier.push(requests)) == self.model.push(batch)

    @rule()
    def pop(self) -> None:
        lease = self.run(self.frontier.pop())
        expected = self.model.pop(lease.token if lease else "")
        assert (lease.request.url if lease else None) == expected
        if lease is not None:
            assert lease.request.score == self.model.out[lease.request.url].score
            self.leases[lease.request.url] = lease

    @invariant()
    def peek_agrees(self) -> None:
        peeked = self.run(self.frontier.peek())
        assert (peeked.url if peeked else None) == self.model.best()

    @precondition(lambda self: self.leases)
    @rule(data=st.data(), delay=st.sampled_from([None, 0.0, 1.5]))
    def finish(self, data: st.DataObject, delay: float | None) -> None:
        url = data.draw(st.sampled_from(sorted(self.leases)))
        lease = self.leases.pop(url)
        if delay is None:
            assert self.run(self.frontier.ack(lease)) == self.model.ack(lease)
        else:
            assert self.run(self.frontier.reclaim(lease, delay=delay)) == self.model.reclaim(
                lease, delay
            )
        self.old_leases.append(lease)

    @precondition(lambda self: self.leases or self.old_leases)
    @rule(data=st.data(), score=st.sampled_from([-5.0, 5.0]))
    def push_again(self, data: st.DataObject, score: float) -> None:
        """Push a URL that was leased (and maybe acked or reclaimed) since."""
        lease = data.draw(st.sampled_from([*self.leases.values(), *self.old_leases]))
        batch = [(lease.request.url, score)]
        requests = [Request(url, score=score) for url, score in batch]
        assert self.run(self.frontier.push(requests)) == self.model.push(batch)

    @precondition(lambda self: self.old_leases)
    @rule(data=st.data())
    def finish_stale(self, data: st.DataObject) -> None:
        lease = data.draw(st.sampled_from(self.old_leases))
        assert self.run(self.frontier.ack(lease)) == self.model.ack(lease)

    @rule(url=st.sampled_from(URLS), score=SCORES)
    def increase(self, url: str, score: float) -> None:
        assert self.run(self.frontier.increase(url, score)) == self.model.increase(url, score)

    @rule(scores=st.dictionaries(st.sampled_from(URLS), SCORES, max_size=4))
    def rescore(self, scores: dict[str, float]) -> None:
        assert self.run(self.frontier.rescore(scores)) == self.model.rescore(scores)

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.5, 25.0]))
    def tick(self, seconds: float) -> None:
        self.model.now += seconds

    @rule(name=st.sampled_from(HOSTS), delay=st.sampled_from([0.0, 0.5, 3.0]))
    def set_host_delay(self, name: str, delay: float) -> None:
        self.run(self.frontier.set_host_delay(name, delay))
        self.model.set_host_delay(name, delay)

    @rule()
    def reclaim_expired(self) -> None:
        assert self.run(self.frontier.reclaim_expired()) == self.model.reclaim_expired()

    @rule(url=st.sampled_from(URLS))
    def seen(self, url: str) -> None:
        assert self.run(self.frontier.seen(url)) == (url in self.model.seen)

    @invariant()
    def counts_agree(self) -> None:
        assert self.run(self.frontier.queued()) == len(self.model.queued)
        assert self.run(self.frontier.in_flight()) == len(self.model.out)

    @invariant()
    def next_ready_in_is_honest(self) -> None:
        wait = self.run(self.frontier.next_ready_in())
        model = self.model
        assert (wait is None) == (not model.queued)
        if wait is None:
            return
        assert wait >= 0
        if model.best() is not None:
            assert wait == 0.0
            return
        end = model.now + wait
        # It never oversleeps: nothing becomes poppable before the wait is over ...
        changes = {entry.due for entry in model.queued.values()} | set(model.next_at.values())
        for at in sorted(t for t in changes if model.now < t < end - 1e-9):
            assert model.best_at(at) is None
        # ... and when it is over, something happens.
        end += 1e-9
        assert (
            model.best_at(end) is not None
            or any(out.expires_at <= end for out in model.out.values())
            or any(model.now < entry.due <= end for entry in model.queued.values())
        )


class SqliteMachine(FrontierMachine):
    """The same, on SQLite with tiny batches and cache, and restarts in between."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="frontier-machine-"))
        super().__init__()

    async def open(self) -> FrontierCore:
        return await SqliteFrontier(
            self.directory / "frontier.db",
            default_delay=DEFAULT_DELAY,
            max_per_host=MAX_PER_HOST,
            lease_ttl=LEASE_TTL,
            bloom_capacity=4,
            bloom_error_rate=0.2,
            clock=self.clock,
            flush_every=3,
            flush_interval=0.01,
            cache_size=4,
        ).open()

    @rule()
    def flush(self) -> None:
        self.run(self.frontier.flush())

    @rule()
    def restart(self) -> None:
        self.run(self.frontier.close())
        self.frontier = self.run(self.open())
        self.model.restart()
        self.old_leases.extend(self.leases.values())
        self.leases.clear()

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


TestMemoryFrontierAgainstModel = FrontierMachine.TestCase
TestMemoryFrontierAgainstModel.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None
)
TestSqliteFrontierAgainstModel = SqliteMachine.TestCase
TestSqliteFrontierAgainstModel.settings = settings(
    max_examples=30, stateful_step_count=30, deadline=None
)
