"""Closest two requests to one host at the server: ``topicrawl crawl`` and ``topicrawl worker``.

A recording reverse proxy on 127.0.0.1 forwards to the Java 17 API docs on 127.0.0.11:8080
(``/work/shared/bench/docsweb.sh start``) and notes when each request arrives; the crawlers
crawl the proxy (one host) breadth-first. ``--src`` picks the sources (e.g. a main checkout's
``src`` for a reference run side by side).

    .venv/bin/python benchmarks/distributed/bench_spacing.py --src src --src /work/main/src
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import socket
import statistics
import sys
import time
import uuid

import aiohttp
import asyncpg
from aiohttp import web
from redis.asyncio import Redis

UPSTREAM = "http://127.0.0.11:8080"
REDIS_URL = "redis://127.0.0.1:6379/0"
PG_URL = "postgresql://127.0.0.1:5432/test"


async def serve_proxy(arrivals: list[float]) -> tuple[web.AppRunner, int]:
    session = aiohttp.ClientSession()

    async def forward(request: web.Request) -> web.Response:
        if not request.path.endswith("robots.txt"):
            arrivals.append(time.monotonic())
        async with session.get(UPSTREAM + request.path_qs, allow_redirects=False) as answer:
            body = await answer.read()
            headers = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type",)}
            return web.Response(status=answer.status, body=body, headers=headers)

    app = web.Application()
    app.router.add_get("/{tail:.*}", forward)
    app.on_cleanup.append(lambda _: session.close())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


async def run(args: argparse.Namespace, src: str, workers: int) -> float:
    """One crawl (workers 0: ``topicrawl crawl``); the closest two arrivals, seconds."""
    arrivals: list[float] = []
    runner, port = await serve_proxy(arrivals)
    schema, namespace = f"spacing_{uuid.uuid4().hex[:10]}", f"spacing-{uuid.uuid4().hex[:10]}"
    argv = ["--seed", f"http://127.0.0.1:{port}/", "--strategy", "bfs", "--quiet"]
    argv += ["--db", f"{PG_URL}?schema={schema}", "--max-pages", str(args.max_pages)]
    argv += ["--concurrency", str(args.concurrency), "--per-host", str(args.per_host)]
    argv += ["--delay", str(args.delay)]
    env = {**os.environ, "PYTHONPATH": src}
    base = [sys.executable, "-m", "topicrawl.cli"]
    commands = [[*base, "crawl", *argv]] if workers == 0 else []
    for i in range(workers):
        where = ["--redis", REDIS_URL, "--namespace", namespace, "--node-id", f"w{i}"]
        commands.append([*base, "worker", *argv, *where])
    try:
        procs = [await asyncio.create_subprocess_exec(*c, env=env) for c in commands]
        codes = [await p.wait() for p in procs]
        assert codes == [0] * len(procs), codes
    finally:
        await runner.cleanup()
        redis = Redis.from_url(REDIS_URL)
        keys = [k async for k in redis.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        connection = await asyncpg.connect(PG_URL)
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await connection.close()
    ordered = sorted(arrivals)
    return min(b - a for a, b in itertools.pairwise(ordered))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", required=True)
    parser.add_argument("--workers", default="0,1,2", help="0 = topicrawl crawl")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-pages", type=int, default=80)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--per-host", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.25)
    args = parser.parse_args()
    found: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for workers in (int(w) for w in args.workers.split(",")):
            for src in args.src:  # side by side, alternately
                gap = await run(args, src, workers)
                found.setdefault((src, workers), []).append(gap)
                print(f"{src} {'crawl' if workers == 0 else f'{workers} worker(s)'}: {gap:.3f} s")
    for (src, workers), gaps in found.items():
        name = "crawl" if workers == 0 else f"{workers} worker(s)"
        print(f"median {src} {name}: {statistics.median(gaps):.3f} s of {len(gaps)}")


if __name__ == "__main__":
    asyncio.run(main())
