"""The real run: 4 ``topicrawl worker`` processes (shared Redis frontier, PostgreSQL) crawl a
local web that treats the nodes differently (``nodeweb.py``: a provider that refuses one node,
one that throttles another, one slow for a third, and a slow node), once per assignment
policy, on the same web in the same run.

Per policy: good pages a second (200 answers over the span from the first to the last),
refused fetches (403 and 429 answered), p50/p95 of the good answers' seconds at the server,
pages that never got a good answer (of every page of the web, all reachable from the seeds),
pages stored, the workers' wall time, and each node's answers.

Needs Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, db ``test``; env
TOPICRAWL_BENCH_POSTGRES); each run uses a fresh namespace and schema and drops them.

    PYTHONPATH=src .venv/bin/python benchmarks/learn/real_run.py \
        [--policies rendezvous,success-table,dqn --model out/dqn.pt] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from redis.asyncio import Redis

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
REDIS_URL = os.environ.get("TOPICRAWL_BENCH_REDIS", "redis://127.0.0.1:6379/0")
PG_URL = os.environ.get(
    "TOPICRAWL_BENCH_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
NODES = 4
RUN_TIMEOUT = 600.0


def control(port: int, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def run_policy(
    args: argparse.Namespace, policy: str, seeds: Path, gateways: dict[str, str]
) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:10]
    namespace, schema = f"s20learn-{tag}", f"s20_learn_{tag}"
    control(args.port, "/__reset", "POST")
    env = {
        **os.environ,
        "TOPICRAWL_PARSE_WORKERS": "0",
        "TOPICRAWL_STORAGE__FLUSH_INTERVAL": "0.5",
    }
    if args.no_sharing:  # a node crawls only the hosts it holds: placement alone decides
        env |= {
            "TOPICRAWL_DISTRIBUTED__SHARE_HOSTS": "false",
            "TOPICRAWL_DISTRIBUTED__STEAL_MIN": "0",
        }
    load_before = os.getloadavg()
    start = time.monotonic()
    procs = []
    logs = []
    for k, port in enumerate(sorted(gateways, key=int)):
        argv = [
            str(BIN / "python"),
            "-m",
            "topicrawl.cli",
            "worker",
            "--quiet",
            "--log-level",
            "info",
        ]
        argv += [
            "--redis",
            REDIS_URL,
            "--namespace",
            namespace,
            "--db",
            f"{PG_URL}?schema={schema}",
        ]
        argv += ["--node-id", f"n{k}", "--seeds-file", str(seeds), "--strategy", "bfs"]
        argv += ["--max-pages", "0", "--concurrency", str(args.concurrency)]
        argv += ["--per-host", "2", "--delay", str(args.delay), "--max-depth", "200"]
        argv += ["--heartbeat-interval", "1", "--heartbeat-timeout", "15"]
        argv += ["--throughput-window", "5", "--lock-ttl", "5", "--assignment", policy]
        if policy == "dqn":
            argv += ["--assignment-model", str(args.model)]
        log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - the worker's output, read at the end
            "w+", prefix=f"real-{policy}-n{k}-", suffix=".log", delete=False
        )
        logs.append(log.name)
        node_env = {**env, "TOPICRAWL_FETCH__PROXIES": f"http://127.0.0.1:{port}"}
        procs.append(subprocess.Popen(argv, env=node_env, stdout=log, stderr=subprocess.STDOUT))
    codes: list[int | None] = []
    for proc in procs:
        left = max(1.0, RUN_TIMEOUT - (time.monotonic() - start))
        try:
            codes.append(proc.wait(left))
        except subprocess.TimeoutExpired:
            proc.terminate()
            codes.append(None)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    wall = time.monotonic() - start
    stats = control(args.port, "/__stats")
    stored, moved = asyncio.run(_stored_and_drop(schema, namespace)), _handed_on(logs)
    seconds = [s for n in stats["nodes"].values() for s in n["seconds"]]
    refused = sum(
        count
        for n in stats["nodes"].values()
        for code, count in n["statuses"].items()
        if code in {"403", "429"}
    )
    span = max(1e-9, stats["last"] - stats["first"])
    result = {
        "policy": policy,
        "exit_codes": codes,
        "wall_s": round(wall, 1),
        "good_pages": len(seconds),
        "good_pages_per_s": round(len(seconds) / span, 2),
        "refused_fetches": refused,
        "p50_s": round(float(np.percentile(seconds, 50)), 3) if seconds else None,
        "p95_s": round(float(np.percentile(seconds, 95)), 3) if seconds else None,
        "never_crawled": stats["total_pages"] - len(stats["good"]),
        "total_pages": stats["total_pages"],
        "stored": stored,
        "hosts_handed_on": moved,
        "per_node": {
            node: {"statuses": n["statuses"], "good": len(n["seconds"])}
            for node, n in sorted(stats["nodes"].items())
        },
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "logs": logs,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "logs"}), flush=True)
    return result


def _handed_on(logs: list[str]) -> int:
    text = " ".join(" ".join(Path(log).read_text(errors="replace").split()) for log in logs)
    return text.count(": handed to ")


async def _stored_and_drop(schema: str, namespace: str) -> int:
    connection = await asyncpg.connect(PG_URL.replace("+asyncpg", ""))
    try:
        count = await connection.fetchval(f'SELECT count(*) FROM "{schema}".pages')
        await connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        await connection.close()
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [
            key async for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*", count=1000)
        ]
        for start in range(0, len(keys), 1000):
            await client.delete(*keys[start : start + 1000])
    finally:
        await client.aclose()
    return int(count)


def table(report: dict[str, Any]) -> str:
    """The runs of a report as a markdown table, one row a run, in the order they ran."""
    lines = [
        "| round | policy | good pages/s | refused (403+429) | p50 s | p95 s | never crawled "
        "| stored | stored / wall s | handed on | wall s | load 1-min before/after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['round']} | {r['policy']} | {r['good_pages_per_s']} | {r['refused_fetches']} "
            f"| {r['p50_s']} | {r['p95_s']} | {r['never_crawled']} of {r['total_pages']} "
            f"| {r['stored']} | {r['stored'] / r['wall_s']:.2f} | {r['hosts_handed_on']} "
            f"| {r['wall_s']} "
            f"| {r['load_before'][0]} / {r['load_after'][0]} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, help="print a report's table and stop")
    parser.add_argument("--policies", default="rendezvous,success-table,dqn")
    parser.add_argument("--model", type=Path, default=HERE / "out" / "dqn.pt")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--port", type=int, default=8460)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument(
        "--no-sharing",
        action="store_true",
        help="idle nodes neither pop other nodes' ready hosts nor take them (share_hosts "
        "false, steal_min 0): where the policy places a host is where it is crawled",
    )
    parser.add_argument("--out", type=Path, default=HERE / "real_run.json")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
    policies = args.policies.split(",")
    web = subprocess.Popen(
        [
            *(str(BIN / "python"), str(HERE / "nodeweb.py"), "--hosts", str(args.hosts)),
            *("--pages", str(args.pages), "--port", str(args.port), "--nodes", str(NODES)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    runs: list[dict[str, Any]] = []
    try:
        assert web.stdout is not None
        served = json.loads(web.stdout.readline())
        seeds = Path(tempfile.mkdtemp(prefix="real-run-")) / "seeds.txt"
        seeds.write_text("".join(f"http://{h}:{args.port}/p/0.html\n" for h in served["hosts"]))
        for round_ in range(args.rounds):
            # Each round in the other order, so no policy always runs first or last.
            order = policies if round_ % 2 == 0 else policies[::-1]
            for policy in order:
                runs.append(
                    {"round": round_, **run_policy(args, policy, seeds, served["gateways"])}
                )
                args.out.write_text(json.dumps(_report(args, runs), indent=1))
    finally:
        web.terminate()
        web.wait(10)
    print(json.dumps(_report(args, runs)["runs"], indent=1))


def _report(args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "settings": {k: str(v) for k, v in vars(args).items() if k != "out"},
        "cpus": os.cpu_count(),
        "runs": runs,
    }


if __name__ == "__main__":
    main()
