"""CPU caps and process counts for the topic crawlers, in proportion to each topic's heat.

CPU is counted in percent of one core, so a machine with ``cores`` cores has
``M = cores * 100``. Each period a topic ``q`` with forecast heat ``H_q`` gets the cap
``max(1%, (M - C_used) * H_q / sum H)``, where ``C_used`` is what processes other than the
crawl already use, and ``clamp(floor(cap / per-process CPU), 1, N_max)`` crawler processes.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import psutil

__all__ = [
    "MIN_CPU_CAP",
    "CpuUsage",
    "TopicAllocation",
    "allocate",
    "cpu_caps",
    "measure_cpu",
    "process_count",
]

MIN_CPU_CAP = 1.0  # percent of one core: every live topic keeps crawling, however cold

K = TypeVar("K", bound=Hashable)


def _finite(name: str, value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def cpu_caps(
    heats: Mapping[K, float],
    *,
    cores: float,
    used_by_others: float,
    floor: float = MIN_CPU_CAP,
) -> dict[K, float]:
    """Each topic's CPU cap in percent of one core, from its (forecast) heat.

    Negative heats (a falling trend extrapolated below 0) count as 0. When every heat is 0 the
    free CPU is split equally. When others use more than the machine has (``C_used > M``,
    possible with a stale measurement) nothing is free and every topic gets ``floor``. Because
    of the floor, the caps can add up to a little more than the free CPU.

    Raises:
        ValueError: a heat or argument is NaN or infinite, ``cores <= 0``, ``used_by_others < 0``
            or ``floor < 0``.
    """
    if _finite("cores", cores) <= 0:
        raise ValueError(f"cores must be > 0, got {cores!r}")
    if _finite("used_by_others", used_by_others) < 0:
        raise ValueError(f"used_by_others must be >= 0, got {used_by_others!r}")
    if _finite("floor", floor) < 0:
        raise ValueError(f"floor must be >= 0, got {floor!r}")
    clipped = {topic: max(0.0, _finite(f"heat of {topic!r}", h)) for topic, h in heats.items()}
    if not clipped:
        return {}
    free = max(0.0, cores * 100.0 - used_by_others)
    total = math.fsum(clipped.values())
    if total <= 0.0:
        share = free / len(clipped)
        return {topic: max(floor, share) for topic in clipped}
    # free * (h / total), not free * h / total: with a denormal heat the product free * h loses
    # its precision and the cap came out above the free CPU (heats {0: 5e-324}: 99.0 of 98.75).
    return {topic: max(floor, free * (h / total)) for topic, h in clipped.items()}


def process_count(cap: float, *, per_process_cpu: float, max_processes: int) -> int:
    """``clamp(floor(cap / per_process_cpu), 1, max_processes)``.

    A cap within a rounding error of a whole multiple counts as that multiple (30% / 10% is 3).
    """
    if _finite("per_process_cpu", per_process_cpu) <= 0:
        raise ValueError(f"per_process_cpu must be > 0, got {per_process_cpu!r}")
    if max_processes < 1:
        raise ValueError(f"max_processes must be >= 1, got {max_processes!r}")
    ratio = max(0.0, _finite("cap", cap)) / per_process_cpu
    return min(max(1, math.floor(ratio + 1e-9)), max_processes)


@dataclass(frozen=True, slots=True)
class TopicAllocation:
    """What one topic's crawlers get this period."""

    heat: float
    cpu_cap: float
    processes: int


def allocate(
    heats: Mapping[K, float],
    *,
    cores: float,
    used_by_others: float,
    per_process_cpu: float,
    max_processes: int,
    floor: float = MIN_CPU_CAP,
) -> dict[K, TopicAllocation]:
    """CPU caps (:func:`cpu_caps`) and process counts (:func:`process_count`) for every topic."""
    caps = cpu_caps(heats, cores=cores, used_by_others=used_by_others, floor=floor)
    return {
        topic: TopicAllocation(
            heat=max(0.0, float(heats[topic])),
            cpu_cap=cap,
            processes=process_count(
                cap, per_process_cpu=per_process_cpu, max_processes=max_processes
            ),
        )
        for topic, cap in caps.items()
    }


@dataclass(frozen=True, slots=True)
class CpuUsage:
    """CPU use over a measurement window, in percent of one core."""

    capacity: float
    total: float
    own: float

    @property
    def used_by_others(self) -> float:
        """``C_used``: everything but the crawl's own processes."""
        return max(0.0, self.total - self.own)


def measure_cpu(
    *, window: float = 1.0, own_pids: Iterable[int] = (), include_children: bool = True
) -> CpuUsage:
    """Measure the machine's CPU use over ``window`` seconds, and how much of it is ours.

    ``own_pids`` (with their descendants when ``include_children``) are the crawl's processes;
    the rest is ``C_used``. A process that exits during the window counts for nothing. This
    blocks for ``window`` seconds: from async code run it in a thread.
    """
    if _finite("window", window) <= 0:
        raise ValueError(f"window must be > 0 seconds, got {window!r}")
    processes: dict[int, psutil.Process] = {}
    for pid in set(own_pids):
        try:
            process = psutil.Process(pid)
            tree = [process, *(process.children(recursive=True) if include_children else [])]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # gone (or never ours): it uses none of the window
        for member in tree:
            processes.setdefault(member.pid, member)
    started: list[psutil.Process] = []
    for process in processes.values():
        try:
            process.cpu_percent(None)  # first call starts this process's measurement
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        started.append(process)
    cores = psutil.cpu_count(logical=True) or 1
    total = psutil.cpu_percent(interval=window) * cores
    own = 0.0
    for process in started:
        try:
            own += process.cpu_percent(None)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return CpuUsage(capacity=cores * 100.0, total=total, own=min(own, total))
