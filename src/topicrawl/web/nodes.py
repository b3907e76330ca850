"""The Nodes page's data: the workers of a distributed crawl, from its registry in Redis."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

__all__ = ["NodesSource"]


@dataclass(frozen=True, slots=True)
class NodesSource:
    """Where the crawl's registry lives (``topicrawl serve --redis --namespace``)."""

    redis_url: str
    namespace: str
    heartbeat_timeout: float = 15.0

    async def read(self) -> dict[str, Any]:
        """Every node ever registered (alive, late, dead, left), hosts and leases each holds,
        the frontier's totals and which process holds the coordinator lock.

        Raises:
            FrontierError: Redis cannot be reached.
        """
        from topicrawl.distributed.redis_frontier import RedisFrontier  # noqa: PLC0415
        from topicrawl.distributed.registry import NodeRegistry  # noqa: PLC0415

        registry = NodeRegistry(
            self.redis_url, namespace=self.namespace, heartbeat_timeout=self.heartbeat_timeout
        )
        frontier = RedisFrontier(self.redis_url, namespace=self.namespace, observer=True)
        async with registry, frontier:
            found = await registry.nodes()
            names = [n.node for n in found]
            hosts = await frontier.host_counts(names)
            leases = await frontier.lease_counts(names)
            queued, in_flight = await frontier.queued(), await frontier.in_flight()
            holder = await registry.client.get(registry.prefix + "coordinator")
        now = time.time()
        coordinator = holder.decode(errors="replace") if isinstance(holder, bytes) else holder
        return {
            "configured": True,
            "namespace": self.namespace,
            "now": now,
            "queued": queued,
            "in_flight": in_flight,
            "coordinator": coordinator,
            "nodes": [
                {
                    "node": n.node,
                    "state": "late" if n.late else n.state.value,
                    "live": n.live,
                    "machine": n.machine,
                    "pid": n.pid,
                    "started_at": n.started_at,
                    "heartbeat_age": None if n.last_heartbeat is None else now - n.last_heartbeat,
                    "pages": n.pages,
                    "pages_per_second": n.pages_per_second,
                    "errors": n.errors,
                    "cpu_percent": n.cpu_percent,
                    "memory_bytes": n.memory_bytes,
                    "hosts": hosts.get(n.node, 0),
                    "leases": leases.get(n.node, 0),
                    "died_at": n.died_at,
                    "capacity": dict(n.capacity),
                    "coordinator": coordinator is not None
                    and coordinator.split("/", 1)[0] == n.node,
                }
                for n in found
            ],
        }
