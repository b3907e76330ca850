"""Distributed mode: the Redis frontier shared by many workers, the node registry, host
partitioning, the coordinator's duties, and the worker."""

from __future__ import annotations

from topicrawl.distributed.partition import (
    AssignmentPolicy,
    NodeLoad,
    RendezvousPolicy,
    least_loaded,
    plan_moves,
)
from topicrawl.distributed.redis_frontier import BloomSize, RedisFrontier, bloom_size
from topicrawl.distributed.registry import (
    Heartbeat,
    NodeInfo,
    NodeRegistry,
    NodeState,
    NodeStatus,
    ThroughputMeter,
    local_node_id,
)
from topicrawl.distributed.settings import DistributedSettings, load_distributed

__all__ = [
    "AssignmentPolicy",
    "BloomSize",
    "DistributedSettings",
    "Heartbeat",
    "NodeInfo",
    "NodeLoad",
    "NodeRegistry",
    "NodeState",
    "NodeStatus",
    "RedisFrontier",
    "RendezvousPolicy",
    "ThroughputMeter",
    "bloom_size",
    "least_loaded",
    "load_distributed",
    "local_node_id",
    "plan_moves",
]
