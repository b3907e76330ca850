"""What a worker's frontier costs Redis per page: commands, script calls and CPU.

A worker's calls on one host, without fetching, parsing or storing: ``--tasks`` pages in
hand at once, each popped, its request reported done (``fetched``), its page reserved with
``--links`` new links (the push), its lease acked (held, as a worker holds them, and sent
every ``--ack-every`` pages by a flush, as its checkpoint does); ``--work`` seconds stand
for the fetch and for the parse. Real ``RedisFrontier`` code against a real Redis: use a
private one (``redis-server --port 6418``) so that ``INFO commandstats`` counts only this.

    PYTHONPATH=src .venv/bin/python benchmarks/distributed/bench_frontier_calls.py \
        --redis redis://127.0.0.1:6418/0 --pages 3000 [--rounds 3]

Prints one JSON line per round: commands and script calls per page (Redis's own count,
commands run inside scripts included), Redis CPU per page (``INFO cpu``) and this process's
CPU per page (the client side: building commands, sending them, parsing the answers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid

import redis

from topicrawl.core.models import Request
from topicrawl.distributed import RedisFrontier

NODE = "w0"


def usage(url: str) -> tuple[float, int, int]:
    """Redis's CPU seconds, commands run and script calls so far."""
    client = redis.Redis.from_url(url)
    try:
        cpu = client.info("cpu")
        calls = {k: int(v["calls"]) for k, v in client.info("commandstats").items()}
    finally:
        client.close()
    scripts = calls.get("cmdstat_evalsha", 0) + calls.get("cmdstat_eval", 0)
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), sum(calls.values()), scripts


async def one_round(args: argparse.Namespace) -> dict[str, float]:
    namespace = f"bench-calls-{uuid.uuid4().hex[:10]}"
    frontier = RedisFrontier(
        args.redis,
        namespace=namespace,
        max_per_host=8,
        node=NODE,
        propose_owner=lambda host: NODE,
        share=True,
        defer_acks=True,
        pop_gate=0.05,
    )
    await frontier.open()
    frontier.peers = False  # alone in its crawl, as one worker is
    client = redis.Redis.from_url(args.redis)
    client.sadd(f"{frontier.prefix}members", NODE)
    client.close()
    serial = iter(range(10**9))
    seeds = 64 if args.links else args.pages + 64  # without links, every page queued up front
    await frontier.push([Request(url=f"http://a.test/{next(serial)}") for _ in range(seeds)])
    done = 0
    acked = 0

    async def page_cycle() -> None:
        nonlocal done, acked
        while done < args.pages:
            lease = await frontier.pop()
            if lease is None:
                await asyncio.sleep(0.002)
                continue
            await asyncio.sleep(args.work)  # the fetch
            await frontier.fetched(lease)
            await asyncio.sleep(args.work)  # the parse
            links = [Request(url=f"http://a.test/{next(serial)}") for _ in range(args.links)]
            await frontier.reserve_page(lease, links)
            await frontier.ack(lease)
            done += 1
            if done - acked >= args.ack_every:
                acked = done
                await frontier.flush()

    before, cpu0, wall0 = usage(args.redis), time.process_time(), time.monotonic()
    await asyncio.gather(*(page_cycle() for _ in range(args.tasks)))
    await frontier.flush()
    cpu1, wall1, after = time.process_time(), time.monotonic(), usage(args.redis)
    await frontier.drop()
    await frontier.close()
    return {
        "pages": done,
        "commands_per_page": round((after[1] - before[1]) / done, 1),
        "script_calls_per_page": round((after[2] - before[2]) / done, 3),
        "redis_cpu_us_per_page": round((after[0] - before[0]) / done * 1e6, 1),
        "client_cpu_us_per_page": round((cpu1 - cpu0) / done * 1e6, 1),
        "pages_per_s": round(done / (wall1 - wall0), 1),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6418/0")
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=48, help="pages in hand at once")
    parser.add_argument("--links", type=int, default=4, help="new links per page")
    parser.add_argument("--ack-every", type=int, default=300, help="pages between flushes")
    parser.add_argument("--work", type=float, default=0.002, help="seconds per fetch and parse")
    args = parser.parse_args()
    for _ in range(args.rounds):
        print(json.dumps(asyncio.run(one_round(args))), flush=True)


if __name__ == "__main__":
    main()
