"""The node registry in a real Redis: registration, heartbeats with TTL, verdicts, config."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator

import pytest

from topicrawl.core.config import CrawlSettings
from topicrawl.core.errors import ConfigError, FrontierError
from topicrawl.distributed import (
    Heartbeat,
    NodeInfo,
    NodeRegistry,
    NodeState,
    ThroughputMeter,
    load_distributed,
    local_node_id,
)
from topicrawl.distributed.coordinator import node_loads
from topicrawl.distributed.partition import NodeLoad, RendezvousPolicy
from topicrawl.distributed.policies import latency_of, queue_of
from topicrawl.distributed.usage import ProcessUsage
from topicrawl.distributed.worker import HostAssigner, merge_config


@pytest.fixture
async def registry(redis_url: str) -> AsyncIterator[NodeRegistry]:
    namespace = f"reg-{uuid.uuid4().hex}"
    async with NodeRegistry(redis_url, namespace=namespace, heartbeat_timeout=0.3) as opened:
        yield opened
        keys = [key async for key in opened.client.scan_iter(match=opened.prefix + "*")]
        if keys:
            await opened.client.delete(*keys)


def info(node: str) -> NodeInfo:
    return NodeInfo(
        node=node, machine="box", pid=42, params={"strategy": "bfs"}, capacity={"concurrency": 4}
    )


async def test_a_registered_node_is_live_with_its_parameters(registry: NodeRegistry) -> None:
    await registry.register(info("n1"))
    [status] = await registry.nodes()
    assert (status.node, status.state, status.late, status.live) == (
        "n1",
        NodeState.ALIVE,
        False,
        True,
    )
    assert (status.machine, status.pid) == ("box", 42)
    assert status.params == {"strategy": "bfs"}
    assert status.capacity == {"concurrency": 4}
    assert await registry.client.smembers(registry.prefix + "members") == {b"n1"}


async def test_heartbeats_publish_numbers_and_keep_a_node_alive(registry: NodeRegistry) -> None:
    await registry.register(info("n1"))
    for _ in range(3):
        await asyncio.sleep(0.15)
        assert await registry.heartbeat("n1", Heartbeat(pages=7, pages_per_second=2.5, errors=1))
    [status] = await registry.live()
    assert (status.pages, status.pages_per_second, status.errors) == (7, 2.5, 1)
    # The heartbeat key was refreshed each time: over 0.45 s alive with a 0.3 s TTL.
    assert not await registry.mark_dead("n1")
    # A worker's CPU and memory ride along, when it gives them.
    assert (status.cpu_percent, status.memory_bytes) == (None, None)
    beat = Heartbeat(pages=8, pages_per_second=2.0, errors=1, cpu_percent=55.5, memory_bytes=12345)
    assert await registry.heartbeat("n1", beat)
    [status] = await registry.live()
    assert (status.cpu_percent, status.memory_bytes) == (55.5, 12345)


async def test_heartbeats_carry_queue_and_latency_and_older_nodes_read_as_unknown(
    registry: NodeRegistry,
) -> None:
    await registry.register(info("new"))
    beat = Heartbeat(pages=3, pages_per_second=1.0, errors=0, queue=5, latency=0.25)
    assert await registry.heartbeat("new", beat)
    # A node of an older version: its heartbeat writes the fields it knew, nothing else.
    await registry.register(info("old"))
    old = {"pages": "4", "rate": "2.0", "errors": "0", "excluded": "0", "cpu": "", "rss": ""}
    await registry.client.hset(registry.prefix + "node:old", mapping=old)
    # Fields a broken or hostile node wrote are read as unknown, not as an error.
    await registry.register(info("odd"))
    odd = {"queue": "nan", "latency": "-1"}
    await registry.client.hset(registry.prefix + "node:odd", mapping=odd)
    seen = {s.node: s for s in await registry.live()}
    assert (seen["new"].queue, seen["new"].latency) == (5, 0.25)
    assert (seen["old"].queue, seen["old"].latency, seen["old"].pages) == (None, None, 4)
    assert (seen["odd"].queue, seen["odd"].latency) == (None, None)
    loads = {n.node: n for n in node_loads(list(seen.values()), {"old": 7})}
    assert (loads["new"].queue, loads["new"].latency) == (5, 0.25)
    # The load-aware policies fall back for the old node: its hosts per slot, and
    # concurrency over throughput.
    assert queue_of(loads["old"]) == 7 / 4
    assert latency_of(loads["old"]) == 4 / 2.0


def test_a_worker_measures_its_own_cpu_and_memory() -> None:
    usage = ProcessUsage()
    sum(n * n for n in range(200_000))  # some CPU to measure
    cpu, rss = usage.sample()
    assert cpu is not None
    assert cpu >= 0.0
    assert rss is not None
    assert rss > 1_000_000  # a Python process holds megabytes


async def test_a_silent_node_turns_late_then_is_declared_dead_once(
    registry: NodeRegistry,
) -> None:
    await registry.register(info("n1"))
    await registry.register(info("n2"))
    await asyncio.sleep(0.4)
    await registry.heartbeat("n2", Heartbeat(pages=1, pages_per_second=None, errors=0))
    late = {n.node: n.late for n in await registry.nodes()}
    assert late == {"n1": True, "n2": False}
    assert await registry.mark_dead("n1")
    assert not await registry.mark_dead("n1")
    assert not await registry.mark_dead("n2")
    states = {n.node: n.state for n in await registry.nodes()}
    assert states == {"n1": NodeState.DEAD, "n2": NodeState.ALIVE}
    assert [n.node for n in await registry.live()] == ["n2"]
    assert await registry.client.smembers(registry.prefix + "members") == {b"n2"}
    # A dead node's heartbeat changes nothing and tells it to register again.
    assert not await registry.heartbeat("n1", Heartbeat(pages=9, pages_per_second=1.0, errors=0))
    assert [n.node for n in await registry.live()] == ["n2"]
    await registry.register(info("n1"))
    assert sorted(n.node for n in await registry.live()) == ["n1", "n2"]


async def test_a_node_that_leaves_is_kept_as_left(registry: NodeRegistry) -> None:
    await registry.register(info("n1"))
    await registry.leave("n1")
    [status] = await registry.nodes()
    assert (status.state, status.live) == (NodeState.LEFT, False)
    assert status.died_at is not None
    assert not await registry.mark_dead("n1")


async def test_node_configuration_is_stored_centrally(registry: NodeRegistry) -> None:
    await registry.set_config("*", {"concurrency": 4, "politeness": {"delay": 0.5}})
    await registry.set_config("n2", {"concurrency": 32})
    assert await registry.config_for("n1") == {"concurrency": 4, "politeness": {"delay": 0.5}}
    assert await registry.config_for("n2") == {"concurrency": 32, "politeness": {"delay": 0.5}}
    await registry.client.hset(registry.prefix + "nodecfg", "n3", "[1, 2]")
    with pytest.raises(ConfigError, match="not a JSON object"):
        await registry.config_for("n3")


def test_a_nodes_configuration_is_laid_over_its_settings() -> None:
    settings = CrawlSettings(concurrency=8, politeness={"delay": 1.0, "per_host": 2})  # type: ignore[arg-type]
    merged = merge_config(settings, {"concurrency": 32, "politeness": {"delay": 0.25}})
    assert (merged.concurrency, merged.politeness.delay, merged.politeness.per_host) == (
        32,
        0.25,
        2,
    )
    with pytest.raises(ConfigError, match="invalid"):
        merge_config(settings, {"concurrency": -1})


def test_throughput_is_measured_over_a_whole_window() -> None:
    meter = ThroughputMeter(10.0)
    meter.add(0.0, 0)
    meter.add(5.0, 50)
    assert meter.rate() is None  # only half a window so far
    meter.add(10.0, 100)
    assert meter.rate() == 10.0
    meter.add(15.0, 100)
    meter.add(20.0, 100)
    assert meter.rate() == 0.0  # nothing in the last 10 s
    meter.add(25.0, 130)
    assert meter.rate() == 3.0  # 30 pages over 15..25


def test_the_host_assigner_caches_until_the_view_changes() -> None:
    assigner = HostAssigner(RendezvousPolicy())
    assert assigner.propose("a.test") is None
    assigner.update([NodeLoad(node="n1", pages_per_second=1.0)])
    assert assigner.propose("a.test") == "n1"
    assigner.update([NodeLoad(node="n2", pages_per_second=1.0)])
    assert assigner.propose("a.test") == "n2"


def test_local_node_id_names_machine_and_process() -> None:
    node = local_node_id(pid=1234)
    assert node.endswith("-1234")
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", node)


def test_distributed_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="heartbeat_timeout must be longer"):
        load_distributed(heartbeat_interval=10.0, heartbeat_timeout=5.0)
    settings = load_distributed(heartbeat_interval=1.0, heartbeat_timeout=3.0, lock_ttl=1.5)
    assert settings.round_interval == 0.5


async def test_an_unreachable_redis_is_a_clear_error() -> None:
    registry = NodeRegistry("redis://127.0.0.1:1/0", namespace="x", heartbeat_timeout=1.0)
    with pytest.raises(FrontierError, match=r"cannot use Redis at redis://127\.0\.0\.1:1/0"):
        await registry.open()


async def test_redis_password_is_not_shown() -> None:
    registry = NodeRegistry(
        "redis://user:secret@127.0.0.1:1/0", namespace="x", heartbeat_timeout=1.0
    )
    with pytest.raises(FrontierError) as caught:
        await registry.open()
    assert "secret" not in str(caught.value)
