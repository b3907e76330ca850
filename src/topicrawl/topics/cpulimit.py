"""Holding a group of processes (one topic's crawlers) under a CPU cap.

A cap is in percent of one core, like :mod:`topicrawl.topics.allocation`: 60 means the whole
group may use 0.6 CPU-seconds per second between them, however many processes it has. Three
backends implement :class:`CpuLimiter`; :func:`choose_limiter` takes the first that works here:

1. :class:`CgroupLimiter`: the kernel's CFS bandwidth control. One child cgroup per group
   under ``topicrawl-<pid>``, the processes moved into it, the cap written as ``cpu.max``
   (cgroup v2). Where the cpu controller is bound to a writable cgroup v1 hierarchy instead
   (hybrid hosts) the same quota goes to ``cpu.cfs_quota_us``. Exact, and costs nothing.
2. :class:`CpulimitLimiter`: the ``cpulimit`` program, one instance per process, each given
   ``cap / n`` (cpulimit cannot share a budget between processes, and takes whole percents).
3. :class:`DutyCycleLimiter`: built in. One asyncio task per group stops and continues its
   processes (SIGSTOP / SIGCONT) in 100 ms periods; the run time in each period comes from a
   credit of CPU-seconds (cap * elapsed time - measured use), so the group converges on its cap
   whatever its processes do, and a group that idles cannot bank more than two periods of CPU.

Tolerance (what tests/unit/topics/test_cpulimit.py and test_supervisor.py assert, measuring
the group's CPU with psutil over 2-3 s windows on a shared 2-core machine): the group never
uses more than ``cap + max(4 points, 15% of cap)`` under the duty cycle, ``cap + max(3 points,
5%)`` under cgroup bandwidth and ``cap + max(5 points, 20%)`` under cpulimit; and it uses no
less than ``cap`` minus the same margin, minus the time it spent runnable but waiting for a core
other processes held (``/proc/<pid>/schedstat``). Without contention the duty cycle measured
10.3 / 30.3 / 60.2% at caps 10 / 30 / 60 (one process) and cgroup 10.0 / 30.0 / 59.6%. Every
backend is a ceiling, never a floor: a group that does not want its cap (I/O-bound crawlers)
simply uses less.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import re
import shutil
import signal
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import psutil

from topicrawl.core.errors import ConfigError
from topicrawl.core.tasks import cancel_and_wait

__all__ = [
    "DUTY_PERIOD",
    "CgroupLimiter",
    "CpuLimiter",
    "CpulimitLimiter",
    "DutyCycleLimiter",
    "LimiterKind",
    "choose_limiter",
    "group_cpu_seconds",
]

log = logging.getLogger(__name__)

LimiterKind = Literal["auto", "cgroup", "cpulimit", "duty-cycle"]

DUTY_PERIOD = 0.1
"""Seconds of one stop/continue period of the duty cycle."""

_CFS_PERIOD_US = 100_000
_CFS_MIN_QUOTA_US = 1_000  # the kernel refuses smaller quotas
_GROUP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _check_cap(cap: float) -> float:
    if not math.isfinite(cap) or cap <= 0:
        raise ValueError(f"a CPU cap must be a positive number of percent, got {cap!r}")
    return float(cap)


def _check_group(group: str) -> str:
    if not _GROUP_NAME.match(group) or group in {".", ".."}:
        raise ValueError(f"a group name must match {_GROUP_NAME.pattern}, got {group!r}")
    return group


def group_cpu_seconds(processes: Collection[psutil.Process]) -> float:
    """User + system CPU seconds the processes have used so far (gone ones count 0)."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        total += times.user + times.system
    return total


@runtime_checkable
class CpuLimiter(Protocol):
    """Holds named groups of processes under CPU caps that can change at any time."""

    @property
    def name(self) -> str:
        """The backend's name: ``cgroup``, ``cpulimit`` or ``duty-cycle``."""
        ...

    async def set_group(self, group: str, pids: Collection[int], cap: float) -> None:
        """Make ``group`` exactly these processes, capped at ``cap`` percent of one core.

        Processes that left the group are released (never left stopped); ones that have
        exited are forgotten. Calling it again with a new cap changes the cap live.
        """
        ...

    async def remove_group(self, group: str) -> None:
        """Release the group's processes from any cap and forget the group."""
        ...

    async def close(self) -> None:
        """Release every group; the limiter cannot be used afterwards."""
        ...


# --------------------------------------------------------------------------- cgroup


@dataclass(frozen=True, slots=True)
class _CgroupTree:
    version: Literal[1, 2]
    home: Path  # the cgroup our processes come from (and go back to)
    parent: Path  # where topicrawl-<pid> is created


def _mounts() -> list[tuple[Path, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found: list[tuple[Path, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 5 or len(rest) < 3 or rest[0] not in {"cgroup", "cgroup2"}:
            continue
        found.append((Path(fields[4]), rest[0], set(rest[2].split(","))))
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller list (``""`` for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            paths[controllers] = path
    return paths


def _under(mount: Path, path: str) -> Path:
    return mount / path.lstrip("/")


def _find_tree() -> _CgroupTree | None:
    """A cgroup tree with a cpu controller we can write to, or None."""
    own = _own_cgroups()
    for mount, fstype, options in _mounts():
        if fstype == "cgroup2" and "" in own:
            try:
                available = (mount / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if "cpu" not in available:
                continue
            home = _under(mount, own[""])
            # A non-root v2 cgroup holding processes cannot hand controllers to children, so
            # the root is the fallback parent (root is exempt from that rule).
            for parent in dict.fromkeys((home.parent if home != mount else mount, mount)):
                if _v2_enable_cpu(parent):
                    return _CgroupTree(version=2, home=home, parent=parent)
        elif fstype == "cgroup" and "cpu" in options:
            key = next((c for c in own if "cpu" in c.split(",")), None)
            home = _under(mount, own[key]) if key is not None else mount
            if os.access(home, os.W_OK) and (home / "cpu.cfs_quota_us").exists():
                return _CgroupTree(version=1, home=home, parent=home)
    return None


def _v2_enable_cpu(parent: Path) -> bool:
    control = parent / "cgroup.subtree_control"
    try:
        if "cpu" in control.read_text().split():
            return True
        control.write_text("+cpu")
    except OSError:
        return False
    return True


class CgroupLimiter:
    """CPU caps by cgroup CFS bandwidth (v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``).

    Build it with :meth:`detect`. Quotas are per 100 ms period; the kernel's smallest quota
    (1 ms) makes 1% the smallest cap.
    """

    def __init__(self, tree: _CgroupTree) -> None:
        self._tree = tree
        self._root = tree.parent / f"topicrawl-{os.getpid()}"
        self._groups: dict[str, set[int]] = {}

    @classmethod
    def detect(cls) -> CgroupLimiter | None:
        """A limiter on this machine's writable cgroup cpu controller, or None if there is none."""
        tree = _find_tree()
        if tree is None:
            return None
        limiter = cls(tree)
        try:
            limiter._make_root()
        except OSError as exc:
            log.info("cgroup tree %s is not usable: %s", tree.parent, exc)
            return None
        return limiter

    @property
    def name(self) -> str:
        return "cgroup"

    @property
    def version(self) -> int:
        """1 or 2: which cgroup hierarchy carries the cpu controller here."""
        return self._tree.version

    def group_path(self, group: str) -> Path:
        """The cgroup directory of a group."""
        return self._root / _check_group(group)

    def _make_root(self) -> None:
        _remove_stale(self._tree.parent)
        self._root.mkdir(exist_ok=True)
        if self._tree.version == 2:
            (self._root / "cgroup.subtree_control").write_text("+cpu")

    def _write_cap(self, path: Path, cap: float) -> None:
        quota = max(_CFS_MIN_QUOTA_US, round(cap / 100.0 * _CFS_PERIOD_US))
        if self._tree.version == 2:
            (path / "cpu.max").write_text(f"{quota} {_CFS_PERIOD_US}")
        else:
            (path / "cpu.cfs_period_us").write_text(str(_CFS_PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(quota))

    async def set_group(self, group: str, pids: Collection[int], cap: float) -> None:
        cap = _check_cap(cap)
        path = self.group_path(group)
        path.mkdir(exist_ok=True)
        self._write_cap(path, cap)
        wanted = set(pids)
        for pid in self._groups.get(group, set()) - wanted:
            self._move(pid, self._tree.home)
        for pid in wanted:
            self._move(pid, path)
        self._groups[group] = wanted

    @staticmethod
    def _move(pid: int, target: Path) -> None:
        try:
            (target / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            pass  # exited: nothing to move
        except OSError as exc:
            if exc.errno != 3:  # ESRCH
                raise

    async def remove_group(self, group: str) -> None:
        path = self.group_path(group)
        self._groups.pop(group, None)
        if not path.exists():
            return
        with contextlib.suppress(OSError):
            for line in (path / "cgroup.procs").read_text().split():
                self._move(int(line), self._tree.home)
        for _ in range(50):  # rmdir fails for a moment while an exiting task is still counted
            try:
                path.rmdir()
            except FileNotFoundError:
                return
            except OSError:
                await asyncio.sleep(0.02)
            else:
                return
        log.warning("could not remove cgroup %s", path)

    async def close(self) -> None:
        for group in list(self._groups):
            await self.remove_group(group)
        if self._root.exists():
            for child in self._root.iterdir():
                if child.is_dir():
                    await self.remove_group(child.name)
            with contextlib.suppress(OSError):
                self._root.rmdir()


def _remove_stale(parent: Path) -> None:
    """Remove empty ``topicrawl-<pid>`` trees left by supervisors that died."""
    for entry in parent.glob("topicrawl-*"):
        pid = entry.name.removeprefix("topicrawl-")
        if not pid.isdigit() or psutil.pid_exists(int(pid)):
            continue
        for child in entry.iterdir():
            if child.is_dir():
                with contextlib.suppress(OSError):
                    child.rmdir()
        with contextlib.suppress(OSError):
            entry.rmdir()


# --------------------------------------------------------------------------- cpulimit


class CpulimitLimiter:
    """CPU caps by the ``cpulimit`` program: one instance per process, each given ``cap / n``.

    cpulimit takes whole percents (at least 1), so a share under 1% is rounded up to 1%, and
    a process that idles leaves its share unused rather than passing it to the others.
    Changing a cap restarts the instances (cpulimit cannot change a running limit); on exit
    each instance continues its process.
    """

    def __init__(self, program: str) -> None:
        self._program = program
        self._limits: dict[int, tuple[int, asyncio.subprocess.Process]] = {}
        self._groups: dict[str, set[int]] = {}

    @classmethod
    def detect(cls, program: str = "cpulimit") -> CpulimitLimiter | None:
        """A limiter on the installed ``cpulimit`` program, or None if it is not installed."""
        path = shutil.which(program)
        return cls(path) if path is not None else None

    @property
    def name(self) -> str:
        return "cpulimit"

    async def set_group(self, group: str, pids: Collection[int], cap: float) -> None:
        cap = _check_cap(cap)
        wanted = {pid for pid in pids if psutil.pid_exists(pid)}
        for pid in self._groups.get(_check_group(group), set()) - wanted:
            await self._release(pid)
        share = max(1, round(cap / len(wanted))) if wanted else 0
        for pid in wanted:
            current = self._limits.get(pid)
            if current is not None and current[0] == share and current[1].returncode is None:
                continue
            if current is not None:
                await self._stop(current[1])
            process = await asyncio.create_subprocess_exec(
                self._program,
                "--pid",
                str(pid),
                "--limit",
                str(share),
                "--lazy",
                "--quiet",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
            self._limits[pid] = (share, process)
        self._groups[group] = wanted

    async def _release(self, pid: int) -> None:
        current = self._limits.pop(pid, None)
        if current is not None:
            await self._stop(current[1])
        _continue(pid)

    @staticmethod
    async def _stop(process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()  # cpulimit continues its target when it exits
            try:
                await asyncio.wait_for(process.wait(), 2.0)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def remove_group(self, group: str) -> None:
        for pid in self._groups.pop(group, set()):
            await self._release(pid)

    async def close(self) -> None:
        for group in list(self._groups):
            await self.remove_group(group)


def _continue(pid: int) -> None:
    """SIGCONT a process that may have been left stopped; gone processes are ignored."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGCONT)


# --------------------------------------------------------------------------- duty cycle


@dataclass(slots=True)
class _Cycle:
    cap: float
    processes: dict[int, psutil.Process] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None
    stopped: bool = False


class DutyCycleLimiter:
    """CPU caps by stopping and continuing the processes (SIGSTOP / SIGCONT), built in.

    Each group has a task that wakes every ``period`` seconds, measures the CPU the group used
    since (psutil), adds ``cap * elapsed - used`` to a credit of CPU-seconds and lets the group
    run for ``credit / rate`` of the next period, ``rate`` being the CPU the group has been
    seen to burn while running (a moving average). The credit is capped at two periods'
    allowance, so idle time is not saved up into a burst, and a debt beyond two seconds is
    forgiven so that one misjudged period cannot freeze the group for long.

    Args:
        period: seconds of one stop/continue period.
    """

    def __init__(self, *, period: float = DUTY_PERIOD) -> None:
        if not math.isfinite(period) or period <= 0:
            raise ValueError(f"period must be > 0 seconds, got {period!r}")
        self._period = period
        self._groups: dict[str, _Cycle] = {}
        self._cores = float(psutil.cpu_count(logical=True) or 1)

    @property
    def name(self) -> str:
        return "duty-cycle"

    async def set_group(self, group: str, pids: Collection[int], cap: float) -> None:
        cap = _check_cap(cap)
        cycle = self._groups.get(_check_group(group))
        if cycle is None:
            cycle = self._groups[group] = _Cycle(cap=cap)
        cycle.cap = cap
        wanted = set(pids)
        for pid in set(cycle.processes) - wanted:
            del cycle.processes[pid]
            _continue(pid)
        for pid in wanted - set(cycle.processes):
            try:
                cycle.processes[pid] = psutil.Process(pid)
            except psutil.NoSuchProcess:
                continue
        if cycle.task is None or cycle.task.done():
            cycle.task = asyncio.create_task(self._run(group, cycle), name=f"duty-cycle {group}")

    def _signal(self, cycle: _Cycle, sig: signal.Signals) -> None:
        for pid, process in list(cycle.processes.items()):
            try:
                process.send_signal(sig)  # psutil refuses a pid that was reused meanwhile
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                del cycle.processes[pid]
            except psutil.AccessDenied:
                log.warning("not allowed to signal process %d; it is not capped", pid)
                del cycle.processes[pid]
        cycle.stopped = sig == signal.SIGSTOP

    async def _run(self, group: str, cycle: _Cycle) -> None:
        period = self._period
        try:
            used_before = group_cpu_seconds(cycle.processes.values())
            members = set(cycle.processes)
            before = time.monotonic()
            credit = 0.0
            rate = min(float(len(cycle.processes)) or 1.0, self._cores)
            ran = 0.0  # seconds the group was allowed to run in the last period
            while True:
                now = time.monotonic()
                used_now = group_cpu_seconds(cycle.processes.values())
                if set(cycle.processes) != members:
                    # Membership changed: the sums are of different processes; start over.
                    members = set(cycle.processes)
                    used = 0.0
                else:
                    used = max(0.0, used_now - used_before)
                used_before = used_now
                allowance = cycle.cap / 100.0
                credit += allowance * (now - before) - used
                credit = max(-2.0 * allowance, min(credit, 2.0 * allowance * period))
                if ran > 0.01 and used > 0:
                    seen = used / ran
                    rate = 0.7 * rate + 0.3 * min(seen, self._cores)
                before = now
                run = credit / max(rate, 0.05) if credit > 0 else 0.0
                if run >= period:
                    ran = period
                    if cycle.stopped:
                        self._signal(cycle, signal.SIGCONT)
                    await asyncio.sleep(period)
                    continue
                if run >= 0.002:
                    started = time.monotonic()
                    self._signal(cycle, signal.SIGCONT)
                    await asyncio.sleep(run)
                    self._signal(cycle, signal.SIGSTOP)
                    ran = time.monotonic() - started  # the real slice, oversleep included
                else:
                    ran = 0.0
                    self._signal(cycle, signal.SIGSTOP)
                await asyncio.sleep(max(0.0, period - ran))
        finally:
            self._signal(cycle, signal.SIGCONT)

    async def remove_group(self, group: str) -> None:
        cycle = self._groups.pop(group, None)
        if cycle is None:
            return
        if cycle.task is not None:
            await cancel_and_wait(cycle.task)
        for pid in cycle.processes:
            _continue(pid)

    async def close(self) -> None:
        for group in list(self._groups):
            await self.remove_group(group)


# --------------------------------------------------------------------------- choice


def choose_limiter(kind: LimiterKind = "auto", *, cpulimit_program: str = "cpulimit") -> CpuLimiter:
    """The CPU limiter to use: ``auto`` picks cgroup, else cpulimit, else the duty cycle.

    Raises:
        ConfigError: a forced backend is not available on this machine.
    """
    if kind in {"auto", "cgroup"}:
        cgroup = CgroupLimiter.detect()
        if cgroup is not None:
            return cgroup
        if kind == "cgroup":
            raise ConfigError(
                "no writable cgroup tree with a cpu controller (run as root, or use "
                "cpu_limiter='duty-cycle')"
            )
    if kind in {"auto", "cpulimit"}:
        program = CpulimitLimiter.detect(cpulimit_program)
        if program is not None:
            return program
        if kind == "cpulimit":
            raise ConfigError(
                f"the {cpulimit_program!r} program is not installed (apt-get install cpulimit)"
            )
    if kind in {"auto", "duty-cycle"}:
        return DutyCycleLimiter()
    raise ConfigError(f"unknown CPU limiter {kind!r}: use auto, cgroup, cpulimit or duty-cycle")
