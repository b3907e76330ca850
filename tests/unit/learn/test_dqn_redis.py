"""The DQN policy placing hosts of a crawl in a real Redis: a node that dies, a node that joins."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("torch")

from tests.unit.distributed.test_coordinator import Crawl, crawl  # noqa: F401 - fixture
from topicrawl.core.models import Request
from topicrawl.distributed import NodeLoad
from topicrawl.learn.dqn import DqnAgent, DqnConfig, DqnPolicy, hostid_feature


async def test_hosts_placed_by_the_dqn_survive_a_dead_node_and_a_join(crawl: Crawl) -> None:  # noqa: F811
    policy = DqnPolicy(DqnAgent(DqnConfig(feature_dim=4, hidden=8), seed=5), hostid_feature(4))
    crawl.policy = policy
    n1 = await crawl.node("n1")
    await crawl.node("n2")
    coordinator = crawl.coordinator("c")
    assert (await coordinator.round()).joined == ("n1", "n2")
    hosts = {f"h{i}.test" for i in range(30)}
    await n1.push([Request(url=f"http://{h}/") for h in sorted(hosts)])
    assert await n1.hosts_of("n1") | await n1.hosts_of("n2") == hosts

    await crawl.beat("n1", "n2")
    for _ in range(2):  # n2 stays silent past its timeout
        await asyncio.sleep(0.3)
        await crawl.beat("n1")
    assert (await coordinator.round()).dead == ("n2",)
    assert await n1.hosts_of("n1") == hosts  # the dead node's hosts came back to the live one

    await crawl.node("n3")
    report = await coordinator.round()
    assert report.joined == ("n3",)
    moved = await n1.hosts_of("n3")
    live = [NodeLoad(node="n1"), NodeLoad(node="n3")]
    # A join takes to the newcomer only the hosts the DQN now gives it; the rest stay.
    assert moved == {h for h in hosts if policy.owner(h, live) == "n3"}
    assert await n1.hosts_of("n1") == hosts - moved
