"""The SQLite frontier's keys in memory with and without ``spill_limit`` (issue #24).

    PYTHONPATH=src python benchmarks/scale/spill_check.py

Pushes 100,000 distinct URLs over 500 hosts (40 a batch, a flush every 4,000), then pops and
acks 5,000, once with every key in memory and once with at most 32 a host, under tracemalloc
(so times are ~2x slow; this checks memory, not speed). One JSON line per setting.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import tracemalloc
from typing import Any

from topicrawl.core.models import Request
from topicrawl.frontier import SqliteFrontier


async def run(limit: int, n: int = 100_000, hosts: int = 500) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tracemalloc.start()
        f = SqliteFrontier(
            os.path.join(d, "f.db"), max_per_host=8, spill_limit=limit, flush_interval=3600
        )
        await f.open()
        base = tracemalloc.get_traced_memory()[0]
        t = time.perf_counter()
        for s in range(0, n, 40):
            await f.push(
                [
                    Request(f"http://h{i % hosts}.test/p/{i}", score=-(i // 1000))
                    for i in range(s, s + 40)
                ]
            )
            if s % 4000 == 0:
                await f.flush()
        await f.flush()
        push = time.perf_counter() - t
        traced = tracemalloc.get_traced_memory()[0] - base
        keys = f._queues.keys_in_memory()
        t = time.perf_counter()
        popped = 0
        while popped < 5000 and (lease := await f.pop()) is not None:
            await f.ack(lease)
            popped += 1
            if popped % 1000 == 0:
                await f.flush()
        pop = time.perf_counter() - t
        await f.close()
        tracemalloc.stop()
        return {
            "spill_limit": limit,
            "queued": n,
            "keys_in_memory": keys,
            "traced_mb_after_pushes": round(traced / 2**20, 1),
            "push_us": round(1e6 * push / n, 1),
            "pop_ack_us": round(1e6 * pop / popped, 1),
            "load": os.getloadavg()[0],
        }


for limit in (0, 32):
    print(json.dumps(asyncio.run(run(limit))), flush=True)
