"""The coordinator lock and rounds in a real Redis: one leader, takeover, dead nodes, joins."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from topicrawl.core.models import Request
from topicrawl.distributed import (
    Heartbeat,
    NodeInfo,
    NodeLoad,
    NodeRegistry,
    NodeState,
    RedisFrontier,
    RendezvousPolicy,
)
from topicrawl.distributed.coordinator import Coordinator, CoordinatorLock, crawl_done
from topicrawl.distributed.partition import AssignmentPolicy

TIMEOUT = 0.5  # heartbeat TTL in these tests


@dataclass
class Crawl:
    registry: NodeRegistry
    frontiers: dict[str, RedisFrontier]
    redis_url: str
    policy: AssignmentPolicy = field(default_factory=RendezvousPolicy)  # learn: others too

    def coordinator(self, holder: str, *, lock_ttl: float = 5.0) -> Coordinator:
        return Coordinator(
            frontier=self.frontiers["observer"],
            registry=self.registry,
            policy=self.policy,
            lock_ttl=lock_ttl,
            holder=holder,
        )

    async def node(self, name: str) -> RedisFrontier:
        await self.registry.register(NodeInfo(node=name, machine="box", pid=1))
        policy = self.policy

        def propose(host: str) -> str | None:
            live = [n for n in self.frontiers if n != "observer"]
            return policy.owner(host, [NodeLoad(node=n, pages_per_second=1.0) for n in live])

        frontier = RedisFrontier(
            self.redis_url,
            namespace=self.registry.namespace,
            exact=True,
            node=name,
            propose_owner=propose,
            steal_min=0,
            max_per_host=4,
        )
        self.frontiers[name] = await frontier.open()
        return frontier

    async def beat(self, *names: str) -> None:
        for name in names:
            assert await self.registry.heartbeat(
                name, Heartbeat(pages=0, pages_per_second=1.0, errors=0)
            )


@pytest.fixture
async def crawl(redis_url: str) -> AsyncIterator[Crawl]:
    namespace = f"coord-{uuid.uuid4().hex}"
    registry = await NodeRegistry(redis_url, namespace=namespace, heartbeat_timeout=TIMEOUT).open()
    observer = await RedisFrontier(redis_url, namespace=namespace, observer=True).open()
    state = Crawl(registry=registry, frontiers={"observer": observer}, redis_url=redis_url)
    yield state
    keys = [key async for key in registry.client.scan_iter(match=registry.prefix + "*")]
    if keys:
        await registry.client.delete(*keys)
    for frontier in state.frontiers.values():
        await frontier.close()
    await registry.close()


async def test_only_one_holder_at_a_time_and_only_the_holder_renews_or_releases(
    crawl: Crawl,
) -> None:
    client, key = crawl.registry.client, crawl.registry.prefix + "coordinator"
    first = CoordinatorLock(client, key=key, ttl=5.0, holder="one")
    second = CoordinatorLock(client, key=key, ttl=5.0, holder="two")
    assert await first.acquire()
    assert not await second.acquire()
    assert not await second.renew()
    assert not await second.release()
    assert (await first.holder() or "").startswith("one/")
    assert await first.acquire()  # renews
    assert await first.release()
    assert await second.acquire()


async def test_a_standby_takes_over_when_the_lock_expires(crawl: Crawl) -> None:
    leader = crawl.coordinator("leader", lock_ttl=0.2)
    standby = crawl.coordinator("standby", lock_ttl=0.2)
    assert (await leader.round()).led
    assert not (await standby.round()).led
    await asyncio.sleep(0.3)  # the leader died: it stopped renewing
    assert (await standby.round()).led
    # The old leader cannot renew the lock it lost.
    assert not (await leader.round()).led


async def test_a_dead_nodes_leases_and_hosts_go_to_the_live_nodes(crawl: Crawl) -> None:
    n1, n2 = await crawl.node("n1"), await crawl.node("n2")
    coordinator = crawl.coordinator("c")
    assert (await coordinator.round()).joined == ("n1", "n2")
    hosts = [f"h{i}.test" for i in range(20)]
    await n1.push([Request(url=f"http://{h}/") for h in hosts])
    held_by_n2 = await n1.hosts_of("n2")
    assert held_by_n2
    assert await n1.hosts_of("n1")
    leases = [lease for _ in range(50) if (lease := await n2.pop()) is not None]
    assert {lease.host for lease in leases} == held_by_n2

    # Both beat just now (the pushes and pops above took longer than TIMEOUT on a machine at
    # a load of 17), so n2 is not yet past its timeout.
    await crawl.beat("n1", "n2")
    assert not (await coordinator.round()).dead
    for _ in range(2):  # n1 beats, n2 stays silent past its timeout
        await asyncio.sleep(0.3)
        await crawl.beat("n1")
    report = await coordinator.round()
    assert report.dead == ("n2",)
    assert report.released_leases == len(leases)
    assert report.moved_hosts == len(held_by_n2)
    assert await n1.hosts_of("n2") == set()
    assert await n1.hosts_of("n1") == set(hosts)
    assert await n1.in_flight() == 0
    statuses = {n.node: n.state for n in await crawl.registry.nodes()}
    assert statuses == {"n1": NodeState.ALIVE, "n2": NodeState.DEAD}
    popped = [lease for _ in range(50) if (lease := await n1.pop()) is not None]
    assert sorted(lease.request.url for lease in popped) == sorted(f"http://{h}/" for h in hosts)


async def test_leases_of_a_node_declared_dead_by_a_coordinator_that_then_died_come_back(
    crawl: Crawl,
) -> None:
    n1 = await crawl.node("n1")
    coordinator = crawl.coordinator("c", lock_ttl=TIMEOUT)  # its lock lapses when it dies
    await coordinator.round()
    await n1.push([Request(url=f"http://h{i}.test/") for i in range(5)])
    leases = [lease for _ in range(10) if (lease := await n1.pop()) is not None]
    assert leases
    await asyncio.sleep(TIMEOUT + 0.2)
    # The first step of a round only (declared dead), as if its coordinator died then.
    assert await crawl.registry.mark_dead("n1")
    assert await n1.in_flight() == len(leases)
    report = await crawl.coordinator("standby").round()
    assert report.dead == ()  # already declared
    assert report.released_leases == len(leases)
    assert await n1.in_flight() == 0
    assert (await crawl.coordinator("standby").round()).released_leases == 0


async def test_a_joining_node_receives_its_share_at_once(crawl: Crawl) -> None:
    n1 = await crawl.node("n1")
    coordinator = crawl.coordinator("c")
    await coordinator.round()
    hosts = [f"h{i}.test" for i in range(60)]
    await n1.push([Request(url=f"http://{h}/") for h in hosts])
    assert await n1.hosts_of("n1") == set(hosts)
    await crawl.beat("n1")  # the push may have taken longer than TIMEOUT under load
    n2 = await crawl.node("n2")
    report = await coordinator.round()
    assert report.joined == ("n2",)
    moved = await n1.hosts_of("n2")
    assert report.moved_hosts == len(moved) > 0
    # Exactly the hosts rendezvous hashing gives the newcomer (equal weights: both unmeasured).
    policy = RendezvousPolicy()
    live = [NodeLoad(node="n1"), NodeLoad(node="n2")]
    assert moved == {h for h in hosts if policy.owner(h, live) == "n2"}
    assert {lease.host for _ in range(100) if (lease := await n2.pop())} == moved
    # Nothing moves on the next round (both beat just now: under load the pops above can take
    # longer than TIMEOUT, and the round would declare both dead and move their hosts).
    await crawl.beat("n1", "n2")
    assert (await coordinator.round()).moved_hosts == 0


async def test_a_node_that_leaves_hands_back_its_work(crawl: Crawl) -> None:
    n1, n2 = await crawl.node("n1"), await crawl.node("n2")
    coordinator = crawl.coordinator("c")
    await coordinator.round()
    await n1.push([Request(url=f"http://h{i}.test/") for i in range(20)])
    held = await n1.hosts_of("n2")
    lease = await n2.pop()
    assert lease is not None
    await crawl.registry.leave("n2")
    assert await coordinator.release_departed("n2") == 1
    assert await n1.hosts_of("n1") == {f"h{i}.test" for i in range(20)}
    assert held
    assert await n1.hosts_of("n2") == set()


async def test_the_crawl_is_not_done_while_its_first_worker_is_between_run_and_registration(
    crawl: Crawl,
) -> None:
    # The first worker records the storage run before it registers and seeds the frontier: a
    # standalone coordinator (--exit-when-done) once quit there, before the crawl began.
    observer = crawl.frontiers["observer"]
    await crawl.registry.client.hset(crawl.registry.prefix + "meta", "run_id", "1")
    assert not await crawl_done(observer, crawl.registry)
    await crawl.node("n1")
    assert not await crawl_done(observer, crawl.registry)
    await crawl.registry.leave("n1")
    assert await crawl_done(observer, crawl.registry)
