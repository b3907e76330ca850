"""Distributed mode: the Redis-backed frontier (queue, leases, dedupe) shared by many workers."""

from __future__ import annotations

from topicrawl.distributed.redis_frontier import BloomSize, RedisFrontier, bloom_size

__all__ = ["BloomSize", "RedisFrontier", "bloom_size"]
