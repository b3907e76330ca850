"""A seeded discrete-event simulator of node assignment in a distributed crawl.

Four nodes (speeds 1, 1, 0.5, 0.25; 4 slots each, FIFO queue) fetch tasks of 300 Zipf hosts
(:mod:`world`). Each task is a host's next fetch: it waits in its host's queue until the
host's politeness allows it (the same for every policy: at most ``per_host`` fetches of the
host in flight, and ``gap`` seconds between two dispatches), then the policy picks its node
from a view of the nodes that is ``stale`` seconds old at most (the heartbeats: throughput,
CPU, memory, queue, latency). A fetch takes ``base * distance * noise / speed``; a provider
that refuses the node answers 403/429 after a third of that and the task goes back to its
host (a wasted fetch). A node that dies loses its queue and fetches in flight; they go back
to their hosts when the death is noticed (``stale`` + 1 s later).

Families (how the load arrives and what happens to nodes):

- ``steady``: Poisson arrivals; node n1 slows to 0.3x at mid-run.
- ``bursts``: a 20 s cycle with 5 s at 2.2x the mean rate (the rest at 0.6x); n1 slows.
- ``flash``: Poisson, plus a flash crowd (an extra 0.4 of capacity for a fifth of the run)
  on 8 hosts of one provider; n1 slows.
- ``churn``: Poisson; node n0 dies at mid-run and n2 slows to 0.4x at 0.3 of the run.

Every random draw of a trace (arrivals, hosts, each attempt's noise and refusal draw) is fixed
by the scenario, so every policy sees the same trace (paired comparisons).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from world import NODE_IDS, NODE_SPEEDS, SLOTS, World

from topicrawl.distributed.partition import AssignmentPolicy, NodeLoad
from topicrawl.distributed.policies import FeedbackPolicy

FAMILIES = ("steady", "bursts", "flash", "churn")
_ATTEMPTS = 8  # noise draws kept per task; later attempts reuse them cyclically
_DETECT = 1.0  # seconds past the staleness before a dead node is noticed
MAX_REFUSALS = 4  # a task refused this often (403/429) is given up: a failed task


@dataclass(frozen=True, slots=True)
class Scenario:
    """One simulated run."""

    seed: int
    family: str = "steady"
    load: float = 0.7
    stale: float = 1.0
    duration: float = 60.0
    per_host: int = 3
    gap: float = 0.05


@dataclass(frozen=True, slots=True)
class Trace:
    """The arrivals of a scenario: time, host, and per-attempt noise and refusal draws."""

    times: np.ndarray
    hosts: np.ndarray
    noise: np.ndarray  # (tasks, _ATTEMPTS)
    draws: np.ndarray  # (tasks, _ATTEMPTS)


def capacity(world: World) -> float:
    """Tasks per second the four nodes can fetch at full speed."""
    return SLOTS * sum(NODE_SPEEDS) / world.mean_service()


def make_trace(scenario: Scenario, world: World) -> Trace:
    """The scenario's arrivals (see the module docstring)."""
    if scenario.family not in FAMILIES:
        raise ValueError(f"unknown family {scenario.family!r}")
    rng = np.random.default_rng([scenario.seed, 11, FAMILIES.index(scenario.family)])
    rate = scenario.load * capacity(world)
    d = scenario.duration
    times: list[np.ndarray] = []
    hosts: list[np.ndarray] = []

    def poisson(start: float, end: float, lam: float, pick: np.ndarray | None = None) -> None:
        n = rng.poisson(lam * (end - start))
        times.append(rng.uniform(start, end, size=n))
        if pick is None:
            hosts.append(rng.choice(len(world.hosts), size=n, p=world.popularity))
        else:
            hosts.append(rng.choice(pick, size=n))

    if scenario.family == "bursts":
        for start in np.arange(0.0, d, 20.0):
            poisson(start, min(d, start + 5.0), 2.2 * rate)
            poisson(min(d, start + 5.0), min(d, start + 20.0), 0.6 * rate)
    else:
        poisson(0.0, d, rate)
    if scenario.family == "flash":
        cold = np.argsort(world.popularity)
        provider = int(world.provider[cold[0]])
        crowd = [h for h in cold if world.provider[h] == provider][:8]
        poisson(d / 3, d / 3 + d / 5, 0.4 * capacity(world), np.array(crowd))
    t = np.concatenate(times)
    h = np.concatenate(hosts)
    order = np.argsort(t, kind="stable")
    n = len(t)
    return Trace(
        times=t[order],
        hosts=h[order],
        noise=rng.gamma(4.0, 0.25, size=(n, _ATTEMPTS)),
        draws=rng.uniform(size=(n, _ATTEMPTS)),
    )


def node_events(scenario: Scenario) -> list[tuple[float, int, str, float]]:
    """(time, node, what, factor): ``slow`` multiplies the speed, ``die`` kills the node."""
    d = scenario.duration
    if scenario.family == "churn":
        return [(0.3 * d, 2, "slow", 0.4), (0.5 * d, 0, "die", 0.0)]
    return [(0.5 * d, 1, "slow", 0.3)]


@dataclass(slots=True)
class _Node:
    index: int
    speed: float
    alive: bool = True
    listed: bool = True  # in the policies' view (a dead node leaves it once noticed)
    queue: deque[tuple[int, float]] = field(default_factory=deque)
    busy: dict[int, float] = field(default_factory=dict)  # task -> dispatch time
    latency: float | None = None  # EWMA of processing seconds (dispatch to answer)
    done: deque[float] = field(default_factory=deque)  # answer times, last 5 s
    lost: list[tuple[int, float]] = field(default_factory=list)

    def load(self, now: float) -> NodeLoad:
        while self.done and self.done[0] < now - 5.0:
            self.done.popleft()
        waiting = len(self.queue) + len(self.busy)
        return NodeLoad(
            node=NODE_IDS[self.index],
            pages_per_second=len(self.done) / 5.0,
            hosts=waiting,
            concurrency=SLOTS,
            cpu_percent=100.0 * len(self.busy) / SLOTS,
            memory_bytes=100_000_000 + 2_000_000 * waiting,
            queue=waiting,
            latency=self.latency,
        )


@dataclass(slots=True)
class Result:
    """What a policy did on one scenario."""

    latencies: np.ndarray  # arrival to a good answer, per task
    good: int  # good answers within the run's duration
    wasted: int  # 403 and 429 answers
    lost: int  # fetches lost on a dead node
    failed: int  # tasks given up after MAX_REFUSALS refusals (latency: until given up)
    gap_violations: int  # dispatches of a host closer than ``gap`` (should be 0)
    decisions: int
    decision_seconds: float
    duration: float

    def metrics(self) -> dict[str, float]:
        lat = self.latencies
        return {
            "mean": float(lat.mean()),
            "p95": float(np.percentile(lat, 95)),
            "p99": float(np.percentile(lat, 99)),
            "good_per_s": self.good / self.duration,
            "wasted": float(self.wasted),
            "lost": float(self.lost),
            "failed": float(self.failed),
            "gap_violations": float(self.gap_violations),
            "decision_us": 1e6 * self.decision_seconds / max(1, self.decisions),
        }


def simulate(
    scenario: Scenario,
    world: World,
    policy: AssignmentPolicy,
    trace: Trace | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Result:
    """Run ``policy`` on the scenario; all tasks are finished (the run drains after the last
    arrival, up to 5x the duration, when what is left counts with its wait so far)."""
    trace = trace or make_trace(scenario, world)
    nodes = [_Node(i, s) for i, s in enumerate(NODE_SPEEDS)]
    feedback = policy if isinstance(policy, FeedbackPolicy) else None
    n_tasks = len(trace.times)
    attempt = np.zeros(n_tasks, dtype=int)
    finish = np.full(n_tasks, np.nan)
    waiting: list[deque[int]] = [deque() for _ in world.hosts]
    inflight = np.zeros(len(world.hosts), dtype=int)
    last_dispatch = np.full(len(world.hosts), -math.inf)
    release_at = np.full(len(world.hosts), -math.inf)
    events: list[tuple[float, int, int, int, int]] = []  # time, seq, kind, a, b
    seq = 0
    stats = {"good": 0, "wasted": 0, "lost": 0, "failed": 0, "gaps": 0, "decisions": 0}
    refusals = np.zeros(n_tasks, dtype=int)
    spent = 0.0
    view: list[NodeLoad] = []
    view_at = -math.inf
    arrive, answer, release, node_event, notice = range(5)

    def push(at: float, kind: int, a: int = 0, b: int = 0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, kind, a, b))

    def current_view(now: float) -> list[NodeLoad]:
        nonlocal view, view_at
        if scenario.stale <= 0 or now - view_at >= scenario.stale:
            view = [n.load(now) for n in nodes if n.listed]
            view_at = now
        return view

    def start(node: _Node, now: float) -> None:
        while node.alive and node.queue and len(node.busy) < SLOTS:
            task, sent = node.queue.popleft()
            node.busy[task] = sent
            host = int(trace.hosts[task])
            k = attempt[task] % _ATTEMPTS
            seconds = world.base[host] * world.distance[host, node.index]
            seconds *= trace.noise[task, k] / node.speed
            chance, status = world.refusal(host, node.index)
            if trace.draws[task, k] < chance:
                seconds /= 3
            else:
                status = 200
            push(now + seconds, answer, task, node.index * 1000 + status)

    def dispatch(host: int, now: float) -> None:
        nonlocal spent
        while waiting[host] and inflight[host] < scenario.per_host:
            due = last_dispatch[host] + scenario.gap
            if now < due - 1e-12:
                if release_at[host] < due:
                    release_at[host] = due
                    push(due, release, host)
                return
            task = waiting[host].popleft()
            live = current_view(now)
            began = clock()
            chosen = policy.owner(world.hosts[host], live)
            spent += clock() - began
            stats["decisions"] += 1
            index = NODE_IDS.index(chosen) if chosen in NODE_IDS else 0
            if now - last_dispatch[host] < scenario.gap - 1e-9:
                stats["gaps"] += 1
            last_dispatch[host] = now
            inflight[host] += 1
            node = nodes[index]
            if node.alive:
                node.queue.append((task, now))
                start(node, now)
            else:
                node.lost.append((task, now))

    def back(task: int, host: int, now: float) -> None:
        inflight[host] -= 1
        attempt[task] += 1
        waiting[host].appendleft(task)

    for i, t in enumerate(trace.times):
        push(float(t), arrive, i)
    for when, index, what, _ in node_events(scenario):
        push(when, node_event, index, 1 if what == "die" else 0)
    slow_factor = {i: f for _, i, w, f in node_events(scenario) if w == "slow"}
    horizon = 5 * scenario.duration
    now = 0.0
    while events:
        now, _, kind, a, b = heapq.heappop(events)
        if now > horizon:
            break
        if kind == arrive:
            host = int(trace.hosts[a])
            waiting[host].append(a)
            dispatch(host, now)
        elif kind == release:
            dispatch(a, now)
        elif kind == answer:
            index, status = divmod(b, 1000)
            node = nodes[index]
            if a not in node.busy:
                continue  # the node died with it in flight; it went back already
            sent = node.busy.pop(a)
            host = int(trace.hosts[a])
            took = now - sent
            node.latency = took if node.latency is None else 0.8 * node.latency + 0.2 * took
            node.done.append(now)
            if feedback is not None:
                feedback.observe(world.hosts[host], NODE_IDS[index], latency=took, status=status)
            if status == 200:
                inflight[host] -= 1
                finish[a] = now
                stats["good"] += now <= scenario.duration
            else:
                stats["wasted"] += 1
                refusals[a] += 1
                if refusals[a] >= MAX_REFUSALS:
                    inflight[host] -= 1
                    finish[a] = now
                    stats["failed"] += 1
                else:
                    back(a, host, now)
            start(node, now)
            dispatch(host, now)
        elif kind == node_event:
            node = nodes[a]
            if b == 1:
                node.alive = False
                node.lost.extend(node.queue)
                node.lost.extend(node.busy.items())
                node.queue.clear()
                node.busy.clear()
                push(now + scenario.stale + _DETECT, notice, a)
            else:
                node.speed *= slow_factor[a]
        elif kind == notice:
            node = nodes[a]
            node.listed = False
            view_at = -math.inf  # the membership changed: every view is rebuilt
            lost, node.lost = node.lost, []
            for task, sent in lost:
                host = int(trace.hosts[task])
                stats["lost"] += 1
                if feedback is not None:
                    feedback.observe(world.hosts[host], NODE_IDS[a], latency=now - sent, status=0)
                back(task, host, now)
            for host in {int(trace.hosts[task]) for task, _ in lost}:
                dispatch(host, now)
    unfinished = np.isnan(finish)
    finish[unfinished] = now
    return Result(
        latencies=finish - trace.times,
        good=stats["good"],
        wasted=stats["wasted"],
        lost=stats["lost"],
        failed=stats["failed"],
        gap_violations=stats["gaps"],
        decisions=stats["decisions"],
        decision_seconds=spent,
        duration=scenario.duration,
    )


def run_many(
    scenarios: Sequence[Scenario],
    worlds: dict[int, World],
    make: Callable[[], AssignmentPolicy],
) -> list[dict[str, float]]:
    """Each scenario's metrics with a fresh policy from ``make``."""
    return [simulate(s, worlds[s.seed], make()).metrics() for s in scenarios]
