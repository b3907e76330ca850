"""Allocation benchmark: per-topic CPU caps from forecast heat, enforced, and what they buy.

Serves the demo web (``python -m topicrawl.demoweb``, its own process) on loopback, measures
the machine's free CPU with psutil, computes each topic's cap and process count with
:func:`topicrawl.topics.allocation.allocate` from given heats, runs the topics' crawler
processes under a :class:`~topicrawl.topics.supervisor.TopicSupervisor` against long queues of
demo-web URLs, and measures over a window: each topic's CPU (psutil, its processes only), the
time its processes waited for a core (``/proc/<pid>/schedstat``: load from others, or cgroup
throttling), pages fetched and pages/s. A second period re-measures the free CPU and applies new
heats (by default the reverse order). Spearman's rank correlation between heat and pages fetched
says whether the pages follow the heat. Run once per CPU-limiter backend available here.

Usage: .venv/bin/python benchmarks/heat/allocation.py [--limiters cgroup cpulimit duty-cycle]
       [--heats 60 25 10 5] [--window 20] [--per-process-cpu 25]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import random
import re
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from scipy.stats import spearmanr

from topicrawl.core.config import FetchSettings
from topicrawl.demoweb import DemoWeb, Kind
from topicrawl.topics.allocation import TopicAllocation, allocate, measure_cpu
from topicrawl.topics.cpulimit import CgroupLimiter, CpulimitLimiter, LimiterKind
from topicrawl.topics.supervisor import TopicResult, TopicSupervisor, TopicWorkStats

# The tolerances stated in the docstring of topicrawl/topics/cpulimit.py:
# a group never uses more than cap + max(points, share * cap).
TOLERANCE: dict[str, tuple[float, float]] = {
    "cgroup": (3.0, 0.05),
    "cpulimit": (5.0, 0.20),
    "duty-cycle": (4.0, 0.15),
}
WARM_CAP = 100.0  # percent: caps while fresh crawler processes import (about 0.7 CPU-s each)
SETTLE = 1.5  # seconds after the real caps are applied before the window opens
DOCUMENTS = frozenset({Kind.HOME, Kind.SECTION, Kind.ARTICLE})


def tolerance(limiter: str, cap: float) -> float:
    """Allowed excess of measured CPU over the cap for a backend: ``max(points, share*cap)``."""
    points, share = TOLERANCE[limiter]
    return max(points, share * cap)


# --------------------------------------------------------------------------- demo web


@dataclass(slots=True)
class DemoWebProcess:
    """``python -m topicrawl.demoweb`` in a child process; its CPU is measured apart."""

    seed: int
    hosts: int
    pages_per_host: int
    process: asyncio.subprocess.Process | None = None
    port: int = 0

    async def start(self, timeout: float = 180.0) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "topicrawl.demoweb",
            "--port=0",
            f"--seed={self.seed}",
            f"--hosts={self.hosts}",
            f"--pages-per-host={self.pages_per_host}",
            "--crawl-delay=0",
            stdout=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
        )
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while line := (await self.process.stdout.readline()).decode():
                if match := re.search(r":(\d+)/\s*$", line):
                    self.port = int(match[1])
                if line.startswith("Serving"):
                    break
        if not self.port:
            raise RuntimeError("the demo web server did not start")

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


def topic_urls(web: DemoWeb, topic: int, copies: int) -> list[str]:
    """The web's documents, each under ``copies`` query variants, in a per-topic order.

    The demo server ignores query strings, so ``?copy=k`` fetches the same page again; the
    variants only make the queue long enough that no topic runs dry in a window.
    """
    base = [web.url_of(page) for page in web.pages if page.kind in DOCUMENTS]
    urls = [f"{url}?copy={k}" for k in range(copies) for url in base]
    random.Random(topic).shuffle(urls)
    return urls


# --------------------------------------------------------------------------- measuring


def _run_delay(pid: int) -> float | None:
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


@dataclass(slots=True)
class _Seen:
    process: psutil.Process
    first_cpu: float
    last_cpu: float
    first_wait: float
    last_wait: float


@dataclass(slots=True)
class GroupMeter:
    """Samples every topic's live crawler processes: CPU seconds and run-queue wait.

    A process seen first mid-window counts from its first sample; one that exits counts up
    to its last sample (at most ``interval`` seconds lost).
    """

    supervisor: TopicSupervisor
    topics: Sequence[int]
    interval: float = 0.2
    seen: dict[int, dict[int, _Seen]] = field(default_factory=dict)

    def sample(self) -> None:
        for topic in self.topics:
            group = self.seen.setdefault(topic, {})
            for pid in self.supervisor.pids(topic):
                entry = group.get(pid)
                try:
                    process = entry.process if entry else psutil.Process(pid)
                    times = process.cpu_times()
                except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                    continue
                cpu = times.user + times.system
                wait = _run_delay(pid)
                if entry is None:
                    group[pid] = _Seen(process, cpu, cpu, wait or 0.0, wait or 0.0)
                else:
                    entry.last_cpu = cpu
                    entry.last_wait = wait if wait is not None else entry.last_wait

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(self.interval)

    def cpu_seconds(self, topic: int) -> tuple[float, float]:
        group = self.seen.get(topic, {}).values()
        return (
            sum(s.last_cpu - s.first_cpu for s in group),
            sum(s.last_wait - s.first_wait for s in group),
        )


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


@dataclass(frozen=True, slots=True)
class TopicWindow:
    """One topic over one measurement window."""

    topic: int
    heat: float
    cap: float
    processes: int
    cpu: float  # percent of one core
    waiting: float  # percent of one core spent runnable but not running
    fetched: int
    errors: int
    queued_left: int
    seconds: float
    limiter: str

    @property
    def pages_per_second(self) -> float:
        return self.fetched / self.seconds

    @property
    def within_cap(self) -> bool:
        return self.cpu <= self.cap + tolerance(self.limiter, self.cap)


@dataclass(frozen=True, slots=True)
class PeriodReport:
    """One period of one backend: the allocation inputs, the load and every topic's window."""

    limiter: str
    period: int
    measured_others: float  # C_used as measured with psutil before the period
    used_by_others: float  # C_used given to allocate(): measured, or cores*100 - --free
    per_process_cpu: float
    rows: tuple[TopicWindow, ...]
    machine_cpu: float  # whole machine, percent of one core (200 = both cores)
    server_cpu: float
    supervisor_cpu: float
    load: tuple[float, float, float]

    @property
    def spearman(self) -> float:
        heats = [r.heat for r in self.rows]
        fetched = [r.fetched for r in self.rows]
        if len(set(heats)) < 2 or len(set(fetched)) < 2:
            return math.nan  # undefined for a constant input
        rho = spearmanr(heats, fetched).statistic
        return float(rho)

    @property
    def others_cpu(self) -> float:
        crawl = sum(r.cpu for r in self.rows) + self.server_cpu + self.supervisor_cpu
        return max(0.0, self.machine_cpu - crawl)


# --------------------------------------------------------------------------- one backend


@dataclass(slots=True)
class Bench:
    """One benchmark run's settings and shared state."""

    web: DemoWeb
    server: DemoWebProcess
    periods: Sequence[Mapping[int, float]]
    window: float
    copies: int
    max_processes: int
    in_flight: int
    workdir: Path
    free: float | None  # CPU to divide (percent of one core); None: measured free CPU

    @property
    def cores(self) -> float:
        return float(psutil.cpu_count(logical=True) or 1)

    def own_pids(self, supervisor: TopicSupervisor | None) -> list[int]:
        pids = [os.getpid()]
        if self.server.process is not None:
            pids.append(self.server.process.pid)
        if supervisor is not None:
            for topic in self.periods[0]:
                pids.extend(supervisor.pids(topic))
        return pids

    def supervisor(self, limiter: LimiterKind, name: str) -> TopicSupervisor:
        async def drop(result: TopicResult) -> None:
            """The benchmark counts pages through stats(); the pages themselves are not kept
            (an unread result buffer would pause the crawlers)."""

        return TopicSupervisor(
            on_result=drop,
            queue_path=self.workdir / f"{name}.db",
            fetch=FetchSettings(timeout=10.0, retries=1, backoff_base=0.05),
            cpu_limiter=limiter,
            in_flight_per_process=self.in_flight,
            max_processes=self.max_processes,
            close_grace=3.0,
            retire_grace=5.0,
            cpu_sample_interval=0.5,
        )


async def _warm(
    sup: TopicSupervisor, allocation: Mapping[int, TopicAllocation], timeout: float = 60.0
) -> None:
    """Run every topic at WARM_CAP until its processes are up and fetching, so the window
    measures crawling, not the interpreter start of fresh processes under a tiny cap."""
    warm = {
        t: TopicAllocation(a.heat, max(a.cpu_cap, WARM_CAP), a.processes)
        for t, a in allocation.items()
    }
    start = {t: s.fetched for t, s in sup.stats().items()}
    sup.apply(warm)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = sup.stats()
        if all(
            stats[t].processes == a.processes
            and stats[t].fetched - start.get(t, 0) >= 5 * a.processes
            for t, a in allocation.items()
        ):
            break
        await asyncio.sleep(0.1)
    else:
        print(f"warning: warm-up did not finish in {timeout:.0f} s; measuring anyway", flush=True)
    await asyncio.sleep(1.0)  # let processes started last finish importing


async def _window(
    bench: Bench,
    sup: TopicSupervisor,
    allocation: Mapping[int, TopicAllocation],
    others: tuple[float, float],
    per_process_cpu: float,
    period: int,
) -> PeriodReport:
    topics = list(allocation)
    meter = GroupMeter(sup, topics)
    assert bench.server.process is not None
    server = psutil.Process(bench.server.process.pid)
    me = psutil.Process()
    meter.sample()
    before: dict[int, TopicWorkStats] = sup.stats()
    server_before, me_before = _cpu(server), _cpu(me)
    psutil.cpu_percent(None)
    started = time.monotonic()
    sampler = asyncio.create_task(meter.run())
    await asyncio.sleep(bench.window)
    sampler.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sampler
    meter.sample()
    elapsed = time.monotonic() - started
    machine = psutil.cpu_percent(None) * bench.cores
    after = sup.stats()
    rows = []
    for topic in topics:
        cpu, wait = meter.cpu_seconds(topic)
        rows.append(
            TopicWindow(
                topic=topic,
                heat=allocation[topic].heat,
                cap=allocation[topic].cpu_cap,
                processes=after[topic].processes,
                cpu=100.0 * cpu / elapsed,
                waiting=100.0 * wait / elapsed,
                fetched=after[topic].fetched - before[topic].fetched,
                errors=after[topic].errors - before[topic].errors,
                queued_left=after[topic].queued,
                seconds=elapsed,
                limiter=sup.limiter_name,
            )
        )
    return PeriodReport(
        limiter=sup.limiter_name,
        period=period,
        measured_others=others[0],
        used_by_others=others[1],
        per_process_cpu=per_process_cpu,
        rows=tuple(rows),
        machine_cpu=machine,
        server_cpu=100.0 * (_cpu(server) - server_before) / elapsed,
        supervisor_cpu=100.0 * (_cpu(me) - me_before) / elapsed,
        load=os.getloadavg(),
    )


async def calibrate(bench: Bench) -> float:
    """CPU (percent of one core) one uncapped crawler process uses on the demo web."""
    sup = bench.supervisor("auto", "calibrate")
    await sup.start()
    try:
        await sup.submit(0, topic_urls(bench.web, 0, bench.copies))
        one = {0: TopicAllocation(heat=1.0, cpu_cap=bench.cores * 100.0, processes=1)}
        await _warm(sup, one)
        meter = GroupMeter(sup, [0])
        meter.sample()
        started = time.monotonic()
        await asyncio.sleep(4.0)
        meter.sample()
        return 100.0 * meter.cpu_seconds(0)[0] / (time.monotonic() - started)
    finally:
        await sup.close()


async def run_backend(bench: Bench, limiter: LimiterKind, per_process: float) -> list[PeriodReport]:
    """Every period of the benchmark under one CPU limiter."""
    sup = bench.supervisor(limiter, limiter)
    await sup.start()
    reports = []
    try:
        for topic in bench.periods[0]:
            await sup.submit(topic, topic_urls(bench.web, topic, bench.copies))
        for period, heats in enumerate(bench.periods, start=1):
            usage = await asyncio.to_thread(measure_cpu, window=2.0, own_pids=bench.own_pids(sup))
            others = usage.used_by_others
            if bench.free is not None:
                others = max(0.0, bench.cores * 100.0 - bench.free)
            allocation = allocate(
                heats,
                cores=bench.cores,
                used_by_others=others,
                per_process_cpu=per_process,
                max_processes=bench.max_processes,
            )
            await _warm(sup, allocation)
            sup.apply(allocation)
            await asyncio.sleep(SETTLE)
            reports.append(
                await _window(
                    bench, sup, allocation, (usage.used_by_others, others), per_process, period
                )
            )
            print(render_period(reports[-1]), flush=True)
    finally:
        await sup.close()
    return reports


# --------------------------------------------------------------------------- output


def render_period(report: PeriodReport) -> str:
    """A markdown table of one period and a line about the load."""
    capacity = (psutil.cpu_count(logical=True) or 1) * 100.0
    free = max(0.0, capacity - report.used_by_others)
    measured = max(0.0, capacity - report.measured_others)
    lines = [
        f"#### {report.limiter}, period {report.period}",
        "",
        f"divided {free:.0f}% of CPU (measured free: {measured:.0f}%, others using "
        f"{report.measured_others:.0f}% of {capacity:.0f}% over 2 s), per-process CPU "
        f"{report.per_process_cpu:.0f}%; during the {report.rows[0].seconds:.0f} s window: "
        f"machine {report.machine_cpu:.0f}% of {capacity:.0f}%, "
        f"crawlers {sum(r.cpu for r in report.rows):.0f}%, demo web server "
        f"{report.server_cpu:.0f}%, supervisor {report.supervisor_cpu:.0f}%, other processes "
        f"{report.others_cpu:.0f}%; load average {report.load[0]:.2f}",
        "",
        "| topic | heat | cap % | procs | CPU % | waited % | within cap + tol | pages "
        "| pages/s | errors | queued left |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.rows:
        tol = tolerance(r.limiter, r.cap)
        verdict = "yes" if r.within_cap else "**no**"
        lines.append(
            f"| {r.topic} | {r.heat:g} | {r.cap:.1f} | {r.processes} | {r.cpu:.1f} | "
            f"{r.waiting:.1f} | {verdict} (<= {r.cap + tol:.1f}) | {r.fetched} | "
            f"{r.pages_per_second:.1f} | {r.errors} | {r.queued_left} |"
        )
    lines += ["", f"Spearman(heat, pages) = {report.spearman:.2f}", ""]
    return "\n".join(lines)


def summary(reports: Sequence[PeriodReport]) -> str:
    """One row per backend and period."""
    lines = [
        "| limiter | period | heats | caps % | CPU % | pages | all within cap + tol | Spearman |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rep in reports:
        rows = rep.rows
        lines.append(
            f"| {rep.limiter} | {rep.period} | {' / '.join(f'{r.heat:g}' for r in rows)} | "
            f"{' / '.join(f'{r.cap:.1f}' for r in rows)} | "
            f"{' / '.join(f'{r.cpu:.1f}' for r in rows)} | "
            f"{' / '.join(str(r.fetched) for r in rows)} | "
            f"{'yes' if all(r.within_cap for r in rows) else '**no**'} | {rep.spearman:.2f} |"
        )
    return "\n".join(lines)


def available(wanted: Sequence[str]) -> list[LimiterKind]:
    """The asked-for backends that work on this machine (the duty cycle always does)."""
    found: list[LimiterKind] = []
    for name in wanted:
        if name == "cgroup" and CgroupLimiter.detect() is None:
            print("cgroup: no writable cgroup cpu controller here; skipped")
        elif name == "cpulimit" and CpulimitLimiter.detect() is None:
            print("cpulimit: the program is not installed; skipped")
        elif name in {"cgroup", "cpulimit", "duty-cycle"}:
            found.append(name)  # type: ignore[arg-type]
    return found


@contextlib.asynccontextmanager
async def serving(
    seed: int, hosts: int, pages: int
) -> AsyncIterator[tuple[DemoWeb, DemoWebProcess]]:
    server = DemoWebProcess(seed=seed, hosts=hosts, pages_per_host=pages)
    starting = asyncio.create_task(server.start())
    web = await asyncio.to_thread(
        DemoWeb.generate, seed=seed, hosts=hosts, pages_per_host=pages, crawl_delay=0.0
    )
    try:
        await starting
        yield web.at_port(server.port), server
    finally:
        await server.stop()


async def main_async(args: argparse.Namespace) -> None:
    first = {i + 1: float(h) for i, h in enumerate(args.heats)}
    second = args.heats2 or list(reversed(args.heats))
    if len(second) != len(first):
        raise SystemExit("--heats2 needs as many heats as --heats")
    periods = [first, {i + 1: float(h) for i, h in enumerate(second)}]
    limiters = available(args.limiters)
    print(
        f"{platform.python_version()} on {platform.machine()}, "
        f"{psutil.cpu_count(logical=True)} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="topicrawl-alloc-") as tmp:
        async with serving(args.seed, args.hosts, args.pages_per_host) as (web, server):
            bench = Bench(
                web=web,
                server=server,
                periods=periods,
                window=args.window,
                copies=args.copies,
                max_processes=args.max_processes,
                in_flight=args.in_flight,
                workdir=Path(tmp),
                free=args.free,
            )
            per_process = args.per_process_cpu or await calibrate(bench)
            print(f"per-process CPU of one uncapped crawler: {per_process:.1f}%", flush=True)
            reports = []
            for limiter in limiters:
                reports += await run_backend(bench, limiter, per_process)
    print("### Summary\n")
    print(summary(reports))
    print(f"\ntotal {time.monotonic() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limiters", nargs="+", default=["cgroup", "cpulimit", "duty-cycle"])
    parser.add_argument("--heats", type=float, nargs="+", default=[60, 25, 10, 5])
    parser.add_argument("--heats2", type=float, nargs="+", help="second period (default: reversed)")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured per period")
    parser.add_argument(
        "--free",
        type=float,
        help="CPU %% to divide among the topics instead of the measured free CPU "
        "(for a machine whose other processes take every core)",
    )
    parser.add_argument("--per-process-cpu", type=float, help="skip the calibration")
    parser.add_argument("--max-processes", type=int, default=4, help="N_max per topic")
    parser.add_argument("--in-flight", type=int, default=4, help="URLs per process at once")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--pages-per-host", type=int, default=150)
    parser.add_argument("--copies", type=int, default=12, help="query variants per page")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
