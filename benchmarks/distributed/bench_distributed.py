"""Distributed crawl benchmark: pages/s with 1, 2 and 4 workers, scrapy-redis alongside, and
Redis memory per queued and per seen URL.

Needs Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, db ``test``). Everything runs on
this machine: the latency web (``latency_web.py``), the workers, Redis and PostgreSQL share
its cores, so the scaling measured here is bounded by CPU as well as by latency.

    .venv/bin/python benchmarks/distributed/bench_distributed.py [--workers 1,2,4]
        [--hosts 128 --pages 20 --concurrency 8 --delay 0.5] [--skip-scrapy] [--skip-memory]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import asyncpg
from redis.asyncio import Redis

from topicrawl.core.models import Request
from topicrawl.distributed import RedisFrontier

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
REDIS_URL = "redis://127.0.0.1:6379/13"
PG_URL = os.environ.get(
    "TOPICRAWL_BENCH_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
"""The PostgreSQL database the runs use (a fresh schema each); env TOPICRAWL_BENCH_POSTGRES."""


@dataclass(frozen=True)
class Run:
    crawler: str
    workers: int
    pages: int
    seconds: float
    pages_per_s: float
    cpu_s: float
    min_host_gap: float | None


def web_stats(port: int, host: str) -> dict[str, float]:
    with urllib.request.urlopen(f"http://{host}:{port}/__stats", timeout=10) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]


def web_reset(port: int, host: str) -> None:
    request = urllib.request.Request(f"http://{host}:{port}/__reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_topicrawl(args: argparse.Namespace, hosts: list[str], workers: int, seeds: Path) -> Run:
    namespace = f"bench-{uuid.uuid4().hex[:10]}"
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    db = f"{PG_URL}?schema={schema}"
    web_reset(args.port, hosts[0])
    env = {**os.environ, "TOPICRAWL_PARSE_WORKERS": "0", "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "0.5"}
    cpu0, start = children_cpu(), time.monotonic()
    procs = []
    for i in range(workers):
        argv = [str(BIN / "python"), "-m", "topicrawl.cli", "worker", "--quiet"]
        argv += ["--redis", REDIS_URL, "--namespace", namespace, "--db", db]
        argv += ["--node-id", f"bench{i}", "--seeds-file", str(seeds), "--strategy", "bfs"]
        argv += ["--max-pages", "0", "--concurrency", str(args.concurrency)]
        argv += ["--per-host", "2", "--delay", str(args.delay), "--max-depth", "50"]
        argv += ["--heartbeat-interval", "1", "--heartbeat-timeout", "5"]
        argv += ["--throughput-window", "5", "--lock-ttl", "5"]
        procs.append(subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL))
    codes = [proc.wait(900) for proc in procs]
    wall = time.monotonic() - start
    cpu = children_cpu() - cpu0
    if any(codes):
        raise SystemExit(f"a worker failed: exit codes {codes}")
    stats = web_stats(args.port, hosts[0])
    stored = asyncio.run(_count_and_drop(schema, namespace))
    span = stats["last"] - stats["first"]
    print(
        f"topicrawl x{workers}: {stored} pages stored, {stats['served']} served, wall {wall:.1f} s"
    )
    return Run(
        crawler="topicrawl",
        workers=workers,
        pages=int(stats["served"]),
        seconds=round(span, 2),
        pages_per_s=round(stats["served"] / span, 1),
        cpu_s=round(cpu, 1),
        min_host_gap=stats["min_gap"],
    )


async def _count_and_drop(schema: str, namespace: str) -> int:
    connection = await asyncpg.connect(PG_URL.replace("+asyncpg", ""))
    try:
        count = await connection.fetchval(f'SELECT count(*) FROM "{schema}".pages')
        await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await connection.close()
    await _drop_keys(f"topicrawl:{{{namespace}}}:*")
    return int(count)


async def _drop_keys(pattern: str) -> None:
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=pattern, count=1000)]
        for start in range(0, len(keys), 1000):
            await client.delete(*keys[start : start + 1000])
    finally:
        await client.aclose()


def run_scrapy_redis(args: argparse.Namespace, hosts: list[str], workers: int) -> Run:
    name = f"bench{uuid.uuid4().hex[:8]}"
    seeds = [f"http://{host}:{args.port}/p/0.html" for host in hosts]
    asyncio.run(_push_seeds(f"{name}:start_urls", seeds))
    web_reset(args.port, hosts[0])
    cpu0, start = children_cpu(), time.monotonic()
    procs = []
    for _ in range(workers):
        argv = [str(BIN / "scrapy"), "runspider", str(HERE / "scrapy_redis_spider.py")]
        argv += ["-a", f"name={name}", "-s", f"REDIS_URL={REDIS_URL}"]
        argv += ["-s", f"CONCURRENT_REQUESTS={args.concurrency}"]
        argv += ["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=2", "-s", f"DOWNLOAD_DELAY={args.delay}"]
        argv += ["-s", "RANDOMIZE_DOWNLOAD_DELAY=False"]
        procs.append(subprocess.Popen(argv, stderr=subprocess.DEVNULL))
    codes = [proc.wait(900) for proc in procs]
    wall = time.monotonic() - start
    cpu = children_cpu() - cpu0
    asyncio.run(_drop_keys(f"{name}:*"))
    if any(codes):
        raise SystemExit(f"a scrapy-redis process failed: exit codes {codes}")
    stats = web_stats(args.port, hosts[0])
    span = stats["last"] - stats["first"]
    print(f"scrapy-redis x{workers}: {stats['served']} served, wall {wall:.1f} s")
    return Run(
        crawler="scrapy-redis",
        workers=workers,
        pages=int(stats["served"]),
        seconds=round(span, 2),
        pages_per_s=round(stats["served"] / span, 1),
        cpu_s=round(cpu, 1),
        min_host_gap=stats["min_gap"],
    )


async def _push_seeds(key: str, seeds: list[str]) -> None:
    client = Redis.from_url(REDIS_URL)
    try:
        await client.rpush(key, *seeds)
    finally:
        await client.aclose()


async def redis_memory(urls: int, hosts: int) -> dict[str, float]:
    """Bytes of Redis per queued URL and per seen URL, in exact and Bloom dedupe modes."""
    result: dict[str, float] = {}
    client = Redis.from_url(REDIS_URL)
    try:
        for mode in ("exact", "bloom"):
            namespace = f"mem-{uuid.uuid4().hex[:10]}"
            frontier = RedisFrontier(
                REDIS_URL,
                namespace=namespace,
                exact=mode == "exact",
                bloom_capacity=urls,
                max_per_host=1_000_000,
            )
            await frontier.open()
            requests = [
                Request(url=f"http://host{i % hosts}.example/articles/{i}/some-title.html")
                for i in range(urls)
            ]
            for start in range(0, urls, 5000):
                await frontier.push(requests[start : start + 5000])
            queued = await _namespace_bytes(client, frontier.prefix)
            while True:
                leases = [lease for _ in range(500) if (lease := await frontier.pop())]
                if not leases:
                    break
                for lease in leases:
                    await frontier.ack(lease)
            done = await _namespace_bytes(client, frontier.prefix)
            await frontier.drop()
            await frontier.close()
            dedupe = done["dedupe"]
            result[f"{mode}_bytes_per_seen_url"] = round(dedupe / urls, 2)
            result[f"{mode}_bytes_per_queued_url"] = round(
                (sum(queued.values()) - sum(done.values())) / urls, 1
            )
            result[f"{mode}_bytes_per_host_state"] = round(done["other"] / hosts, 1)
    finally:
        await client.aclose()
    return result


async def _namespace_bytes(client: Redis, prefix: str) -> dict[str, int]:
    """Bytes of the namespace's keys: the dedupe structures, and everything else."""
    totals = {"dedupe": 0, "other": 0}
    async for key in client.scan_iter(match=prefix + "*", count=1000):
        name = key.decode()[len(prefix) :]
        kind = "dedupe" if name == "seen" or name.startswith("bloom:") else "other"
        totals[kind] += int(await client.memory_usage(key, samples=0) or 0)
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--hosts", type=int, default=128)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--port", type=int, default=8390)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--skip-scrapy", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-urls", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    args = parser.parse_args()

    web = subprocess.Popen(
        [
            str(BIN / "python"),
            str(HERE / "latency_web.py"),
            "--hosts",
            str(args.hosts),
            "--pages",
            str(args.pages),
            "--port",
            str(args.port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert web.stdout is not None
        hosts = json.loads(web.stdout.readline())["hosts"]
        seeds = Path(tempfile.mkdtemp(prefix="bench-dist-")) / "seeds.txt"
        seeds.write_text("".join(f"http://{h}:{args.port}/p/0.html\n" for h in hosts))
        runs: list[Run] = []
        for workers in (int(w) for w in args.workers.split(",")):
            runs.append(run_topicrawl(args, hosts, workers, seeds))
            if not args.skip_scrapy:
                runs.append(run_scrapy_redis(args, hosts, workers))
        memory = {} if args.skip_memory else asyncio.run(redis_memory(args.memory_urls, 1000))
    finally:
        web.terminate()
        web.wait(10)
    report = {
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "load_average": os.getloadavg(),
        "runs": [asdict(run) for run in runs],
        "redis_memory": memory,
    }
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
