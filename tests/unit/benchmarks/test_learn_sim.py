"""The assignment simulator: seeded, the same trace for every policy, politeness held, and
the effects it exists to show (a blocking provider, a node that dies)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "learn"))

from sim import Scenario, make_trace, simulate
from world import NODE_IDS, PROVIDERS, make_world

from topicrawl.distributed.partition import NodeLoad
from topicrawl.distributed.policies import HashModPolicy, LeastLoadedPolicy, SuccessTablePolicy

SHORT = Scenario(seed=3, family="steady", load=0.5, stale=1.0, duration=15.0)


class Always:
    """Every fetch to one node."""

    name = "always"

    def __init__(self, node: str) -> None:
        self.node = node

    def owner(self, host: str, nodes: list[NodeLoad]) -> str | None:
        live = [n.node for n in nodes]
        return self.node if self.node in live else min(live)


def test_worlds_and_traces_are_seeded_and_shared_by_every_policy() -> None:
    a, b = make_world(3, hosts=300), make_world(3, hosts=300)
    assert a.hosts == b.hosts
    assert len(set(a.hosts)) == 300
    assert abs(a.popularity.sum() - 1.0) < 1e-9
    assert make_world(4).hosts != a.hosts
    t1, t2 = make_trace(SHORT, a), make_trace(SHORT, b)
    assert (t1.times == t2.times).all()
    assert (t1.hosts == t2.hosts).all()
    first = simulate(SHORT, a, LeastLoadedPolicy())
    again = simulate(SHORT, b, LeastLoadedPolicy())
    assert (first.latencies == again.latencies).all()
    assert len(first.latencies) == len(t1.times)


def test_politeness_is_the_same_for_every_policy() -> None:
    world = make_world(3)
    for policy in (HashModPolicy(), LeastLoadedPolicy(), Always("n3")):
        assert simulate(SHORT, world, policy).gap_violations == 0


def test_a_blocking_provider_wastes_fetches_that_the_success_table_avoids() -> None:
    world = make_world(3)
    blocked = next(i for i, p in enumerate(PROVIDERS) if p.refuse[2] == 1.0)
    assert any(world.provider == blocked)
    pinned = simulate(SHORT, world, Always("n2"))
    table = simulate(SHORT, world, SuccessTablePolicy())
    assert pinned.wasted > 0
    assert pinned.failed > 0
    assert table.wasted < pinned.wasted / 3


def test_a_dead_nodes_fetches_come_back_and_finish_elsewhere() -> None:
    churn = Scenario(seed=3, family="churn", load=0.5, stale=1.0, duration=20.0)
    result = simulate(churn, make_world(3), Always(NODE_IDS[0]))  # n0 dies at mid-run
    assert result.lost > 0
    assert np.isfinite(result.latencies).all()
    assert result.good > 0
