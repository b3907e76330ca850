"""Redis memory of the distributed frontier at a million URLs (issue #24 item 4).

Pushes ``--urls`` distinct URLs over ``--hosts`` hosts into a fresh namespace, in exact and in
Bloom dedupe mode, and reports the bytes of the dedupe structures per seen URL and of everything
else per queued URL (the hosts' state included; ``bench_distributed.py`` separates it on a
smaller run by popping everything). Nothing is popped: at a million URLs that takes an hour.

    PYTHONPATH=src python benchmarks/scale/redis_memory.py --urls 1000000 --hosts 1000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from pathlib import Path

from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "distributed"))
from bench_distributed import REDIS_URL, _namespace_bytes

from topicrawl.core.models import Request
from topicrawl.distributed import RedisFrontier


async def measure(urls: int, hosts: int) -> dict[str, object]:
    client = Redis.from_url(REDIS_URL)
    result: dict[str, object] = {"urls": urls, "hosts": hosts}
    try:
        for mode in ("exact", "bloom"):
            frontier = RedisFrontier(
                REDIS_URL,
                namespace=f"mem-{uuid.uuid4().hex[:10]}",
                exact=mode == "exact",
                bloom_capacity=urls,
                max_per_host=1_000_000,
            )
            await frontier.open()
            started = time.perf_counter()
            for start in range(0, urls, 5000):
                await frontier.push(
                    [
                        Request(url=f"http://host{i % hosts}.example/articles/{i}/some-title.html")
                        for i in range(start, min(urls, start + 5000))
                    ]
                )
            seconds = time.perf_counter() - started
            sizes = await _namespace_bytes(client, frontier.prefix)
            used = (await client.info("memory"))["used_memory"]
            result[mode] = {
                "bytes_per_seen_url": round(sizes["dedupe"] / urls, 2),
                "bytes_per_queued_url_incl_host_state": round(sizes["other"] / urls, 1),
                "push_us_per_url": round(1e6 * seconds / urls, 1),
                "redis_used_memory_mb": round(used / 2**20, 1),
            }
            await frontier.drop()
            await frontier.close()
    finally:
        await client.aclose()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.urls, args.hosts))))


if __name__ == "__main__":
    main()
