"""One site, side by side: ``topicrawl crawl`` on PostgreSQL against 1 and N ``topicrawl worker``s.

The Java 17 API docs on 127.0.0.11:8080 (``../shared/bench/docsweb.sh start``), breadth-first,
robots.txt obeyed, the same settings on every side, every page stored in the same PostgreSQL
(a fresh schema per run; a fresh Redis namespace per distributed run). The variants run
interleaved, round after round, so a loaded machine slows them alike.

pages/s = pages stored / (last page's fetch time - first page's), read from the database:
process start-up and shutdown are left out on every side.

    .venv/bin/python benchmarks/distributed/bench_onesite.py [--rounds 2] [--workers 1,3]
        [--max-pages 0] [--concurrency 16] [--per-host 8] [--cpu-quota 0] [--out onesite.json]

A run that has not ended after ``--timeout`` seconds is reported as hung, not waited on:
each of its processes (and their children) is dumped with ``py-spy dump`` when py-spy is
installed (beside this Python) and sent SIGUSR1, then killed; the run is recorded with
``hung: true`` and the benchmark goes on, and exits 1 at the end. ``--prefix`` starts every
schema and namespace name (e.g. your own name on a shared PostgreSQL and Redis).

``--cpu-quota 0.5`` caps every crawl or worker process (its parse workers included) at half a
CPU with a cgroup (v1 ``cpu`` controller, ``cpu.cfs_quota_us``; needs write access to
``/sys/fs/cgroup/cpu``), to stand for separate machines that are each CPU-bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import asyncpg
from redis.asyncio import Redis

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
REDIS_URL = "redis://127.0.0.1:6379/13"
PG_URL = os.environ.get("TOPICRAWL_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
"""The PostgreSQL database the runs use (a fresh schema each); env TOPICRAWL_BENCH_POSTGRES."""
SEED = "http://127.0.0.11:8080/"
CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000


class CpuCap:
    """One cgroup per process, each capped at ``quota`` CPUs; removed by :meth:`remove`."""

    def __init__(self, quota: float) -> None:
        self.quota = quota
        self.groups: list[Path] = []

    def group(self) -> Path | None:
        """A new capped cgroup (None when no cap is asked for)."""
        if not self.quota:
            return None
        path = CGROUP_CPU / f"topicrawl-bench-{uuid.uuid4().hex[:10]}"
        try:
            path.mkdir()
            (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(round(self.quota * PERIOD_US)))
        except OSError as exc:
            raise SystemExit(f"--cpu-quota needs a writable {CGROUP_CPU}: {exc}") from exc
        self.groups.append(path)
        return path

    def remove(self) -> None:
        for path in self.groups:
            try:
                path.rmdir()
            except OSError:
                time.sleep(0.5)  # a child may still be exiting
                path.rmdir()
        self.groups.clear()


def start(argv: list[str], env: dict[str, str], cap: CpuCap) -> subprocess.Popen[bytes]:
    """Start a process, inside a capped cgroup of its own when asked (before it runs)."""
    group = cap.group()
    if group is not None:
        # The shell moves itself into the cgroup, then becomes the process (same pid).
        enter = f'echo $$ > "{group}/cgroup.procs" && exec "$@"'
        argv = ["/bin/sh", "-c", enter, "sh", *argv]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)


@dataclass(frozen=True)
class Run:
    variant: str
    round: int
    pages: int
    seconds: float
    pages_per_s: float
    cpu_s: float
    wall_s: float
    redis_cpu_s: float = 0.0  # the Redis server's CPU meanwhile (other users of it included)
    hung: bool = False  # killed after --timeout seconds (see report_hang)
    # Commands the Redis server ran meanwhile, those inside scripts included (INFO
    # commandstats; other users of that Redis included: use a private one, --redis).
    redis_commands: int = 0
    script_calls: int = 0  # EVAL and EVALSHA calls among them
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the start and the end


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def redis_usage(url: str) -> tuple[float, int, int]:
    """The Redis server's CPU seconds (user + system, ``INFO cpu``), commands run and script
    calls (``INFO commandstats``: commands run by scripts count too), all since it started."""
    import redis  # noqa: PLC0415 - the sync client, for a few reads

    client = redis.Redis.from_url(url)
    try:
        cpu = client.info("cpu")
        stats = client.info("commandstats")
    finally:
        client.close()
    calls = {name: int(value["calls"]) for name, value in stats.items()}
    scripts = calls.get("cmdstat_eval", 0) + calls.get("cmdstat_evalsha", 0)
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), sum(calls.values()), scripts


def common_args(args: argparse.Namespace, db: str) -> list[str]:
    argv = ["--seed", SEED, "--strategy", "bfs", "--db", db, "--quiet"]
    argv += ["--max-pages", str(args.max_pages), "--concurrency", str(args.concurrency)]
    argv += ["--per-host", str(args.per_host)]
    return argv


def _descendants(pid: int) -> list[int]:
    """The process and every process under it (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def report_hang(procs: list[subprocess.Popen[bytes]], out: Path) -> None:
    """Say which processes of a run did not end, with a py-spy dump of each (and its
    children), and ask each for its asyncio tasks (SIGUSR1: crawl and worker write them to
    their stderr, which is this script's)."""
    spy = BIN / "py-spy"
    with out.open("a") as dump:
        for proc in procs:
            if proc.poll() is not None:
                continue
            for pid in _descendants(proc.pid):
                dump.write(f"=== pid {pid} (of {proc.args!r})\n")
                dump.flush()
                if spy.exists():
                    subprocess.run(
                        [str(spy), "dump", "--pid", str(pid)],
                        stdout=dump,
                        stderr=subprocess.STDOUT,
                        timeout=60,
                        check=False,
                    )
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGUSR1)
    print(
        f"HUNG: processes still running after the timeout; py-spy dumps in {out}, each"
        " process's asyncio tasks (SIGUSR1) on this script's stderr",
        flush=True,
    )


def run_variant(
    args: argparse.Namespace, workers: int, round_no: int, src: Path | None = None
) -> Run:
    """``workers`` 0: one ``topicrawl crawl``; else that many ``topicrawl worker``s; with
    ``src``, the code of that source tree (e.g. the main branch's, for a before/after)."""
    schema = f"{args.prefix}_{uuid.uuid4().hex[:10]}"
    namespace = f"{args.prefix}-{uuid.uuid4().hex[:10]}"
    db = f"{PG_URL}?schema={schema}"
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    load0 = os.getloadavg()[0]
    cpu0, began, redis0 = children_cpu(), time.monotonic(), redis_usage(args.redis)
    cap = CpuCap(args.cpu_quota)
    procs = []
    try:
        if workers == 0:
            argv = [str(BIN / "topicrawl"), "crawl", *common_args(args, db)]
            procs.append(start(argv, env, cap))
        for i in range(workers):
            argv = [str(BIN / "topicrawl"), "worker", *common_args(args, db)]
            argv += ["--redis", args.redis, "--namespace", namespace, "--node-id", f"w{i}"]
            procs.append(start(argv, env, cap))
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline and any(proc.poll() is None for proc in procs):
            time.sleep(0.2)
        hung = any(proc.poll() is None for proc in procs)
        if hung:
            report_hang(procs, args.out.with_suffix(".hang.txt"))
            time.sleep(2.0)
        codes = [proc.poll() for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        cap.remove()
    wall = time.monotonic() - began
    cpu = children_cpu() - cpu0
    redis1 = redis_usage(args.redis)
    pages, first, last = asyncio.run(_read_and_drop(schema, namespace, args.redis))
    if any(codes) and not hung:
        raise SystemExit(f"a process failed: exit codes {codes}")
    span = max(last - first, 1e-9)
    variant = "crawl" if workers == 0 else f"worker x{workers}"
    if src is not None:
        variant += f" ({src})"
    run = Run(
        variant,
        round_no,
        pages,
        round(span, 2),
        round(pages / span, 1),
        round(cpu, 1),
        round(wall, 1),
        round(redis1[0] - redis0[0], 2),
        hung,
        redis1[1] - redis0[1],
        redis1[2] - redis0[2],
        (round(load0, 1), round(os.getloadavg()[0], 1)),
    )
    print(json.dumps(asdict(run)), flush=True)
    return run


async def _read_and_drop(schema: str, namespace: str, redis_url: str) -> tuple[int, float, float]:
    connection = await asyncpg.connect(PG_URL)
    try:
        try:
            row = await connection.fetchrow(
                "SELECT count(*) AS n, min(fetched_at) AS a, max(fetched_at) AS b"
                f' FROM "{schema}".pages'
            )
        except asyncpg.UndefinedTableError:  # a run that hung before creating its tables
            row = {"n": 0, "a": None, "b": None}
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()
    client = Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"topicrawl:{{{namespace}}}:*")]
        for at in range(0, len(keys), 1000):
            await client.delete(*keys[at : at + 1000])
    finally:
        await client.aclose()
    return int(row["n"]), float(row["a"] or 0.0), float(row["b"] or 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", default="1,3")
    parser.add_argument("--max-pages", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--per-host", type=int, default=8)
    parser.add_argument(
        "--redis",
        default=REDIS_URL,
        help="the Redis the workers use (a private one counts only their commands)",
    )
    parser.add_argument("--prefix", default="bench", help="start of schema/namespace names")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds a run may take, then it is hung"
    )
    parser.add_argument("--cpu-quota", type=float, default=0.0, help="CPUs per process (0: no cap)")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="also run 1 worker with this source tree's code (e.g. ../main/src), interleaved",
    )
    parser.add_argument("--out", type=Path, default=HERE / "onesite.json")
    args = parser.parse_args()
    variants: list[tuple[int, Path | None]] = [(0, None)]
    variants += [(int(w), None) for w in args.workers.split(",")]
    if args.baseline_src is not None:
        variants.append((1, args.baseline_src.resolve()))
    runs = [
        run_variant(args, workers, round_no, src)
        for round_no in range(1, args.rounds + 1)
        for workers, src in variants
    ]
    report = {
        "settings": {k: str(v) for k, v in vars(args).items()},
        "load_average_after": os.getloadavg(),
        "runs": [asdict(run) for run in runs],
    }
    args.out.write_text(json.dumps(report, indent=2))
    if any(run.hung for run in runs):
        raise SystemExit(f"{sum(run.hung for run in runs)} run(s) hung: see the .hang.txt file")


if __name__ == "__main__":
    main()
