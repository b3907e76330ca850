"""CPU-burning child processes and a psutil measurement of their CPU, for the cap tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil

from topicrawl.topics.cpulimit import group_cpu_seconds

BURN = (sys.executable, "-c", "while True: pass")

# The tolerances stated in topicrawl/topics/cpulimit.py's docstring.
DUTY = {"points": 4.0, "share": 0.15}
CGROUP = {"points": 3.0, "share": 0.05}
CPULIMIT = {"points": 5.0, "share": 0.20}


@contextmanager
def burners(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` processes that each spin one core until killed."""
    procs = [subprocess.Popen(BURN, stdin=subprocess.DEVNULL) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class Usage:
    """CPU a group used over a window and the time it sat runnable but waiting for a core
    (other processes' load), both in percent of one core."""

    cpu: float
    waiting: float


def _run_delay(pids: Sequence[int]) -> float:
    """Seconds the processes have waited on a run queue (/proc/<pid>/schedstat)."""
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


async def measured_cpu(pids: Sequence[int], *, warmup: float = 0.5, window: float = 2.0) -> Usage:
    """CPU of the processes together over ``window`` seconds, and their run-queue wait.

    The machine is shared, so a capped group can get less than its cap because others hold
    the cores: ``waiting`` says how much. (cgroup throttling also counts as waiting.)
    """
    await asyncio.sleep(warmup)
    processes = [psutil.Process(pid) for pid in pids]
    used_before, waited_before = group_cpu_seconds(processes), _run_delay(pids)
    before = time.monotonic()
    await asyncio.sleep(window)
    used_after, waited_after = group_cpu_seconds(processes), _run_delay(pids)
    elapsed = time.monotonic() - before
    return Usage(
        cpu=100.0 * (used_after - used_before) / elapsed,
        waiting=100.0 * (waited_after - waited_before) / elapsed,
    )


def assert_near_cap(usage: Usage, cap: float, *, points: float, share: float) -> None:
    """Never over ``cap + tolerance``; and not under ``cap - tolerance`` by more than the
    time the group spent waiting for a core that others held."""
    tol = tolerance(cap, points=points, share=share)
    assert usage.cpu <= cap + tol, f"{usage} over cap {cap} + {tol}"
    assert usage.cpu + usage.waiting >= cap - tol, f"{usage} under cap {cap} - {tol}"


def tolerance(cap: float, *, points: float, share: float) -> float:
    """The allowed gap between measured CPU and the cap: ``max(points, share * cap)``."""
    return max(points, share * cap)
