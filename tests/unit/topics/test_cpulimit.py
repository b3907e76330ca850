"""CPU limiter backends: each holds CPU-burning processes near their cap (psutil-measured)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest

from topicrawl.core.errors import ConfigError
from topicrawl.topics import cpulimit
from topicrawl.topics.cpulimit import (
    CgroupLimiter,
    CpuLimiter,
    CpulimitLimiter,
    DutyCycleLimiter,
    choose_limiter,
)

from .cpu_burners import CGROUP, CPULIMIT, DUTY, Usage, assert_near_cap, burners, measured_cpu


def _cgroup() -> CgroupLimiter:
    limiter = CgroupLimiter.detect()
    if limiter is None:
        pytest.skip("no writable cgroup tree with a cpu controller here")
    return limiter


def _cpulimit() -> CpulimitLimiter:
    limiter = CpulimitLimiter.detect()
    if limiter is None:
        pytest.skip("the cpulimit program is not installed")
    return limiter


async def _capped_cpu(limiter: CpuLimiter, cap: float, processes: int) -> Usage:
    with burners(processes) as procs:
        try:
            await limiter.set_group("burn", [p.pid for p in procs], cap)
            return await measured_cpu([p.pid for p in procs])
        finally:
            await limiter.close()


@pytest.mark.parametrize(("cap", "processes"), [(30.0, 1), (60.0, 2)])
async def test_duty_cycle_holds_group_near_cap(cap: float, processes: int) -> None:
    assert_near_cap(await _capped_cpu(DutyCycleLimiter(), cap, processes), cap, **DUTY)


async def test_cgroup_holds_group_near_cap() -> None:
    # 30% and 60% through the supervisor: tests/unit/topics/test_supervisor.py.
    assert_near_cap(await _capped_cpu(_cgroup(), 45.0, 2), 45.0, **CGROUP)


async def test_cpulimit_holds_process_near_cap() -> None:
    assert_near_cap(await _capped_cpu(_cpulimit(), 40.0, 1), 40.0, **CPULIMIT)


async def test_duty_cycle_cap_changes_live() -> None:
    limiter = DutyCycleLimiter()
    with burners(1) as procs:
        pids = [procs[0].pid]
        try:
            await limiter.set_group("burn", pids, 70.0)
            high = await measured_cpu(pids, window=1.5)
            await limiter.set_group("burn", pids, 20.0)
            low = await measured_cpu(pids, window=1.5)
        finally:
            await limiter.close()
    assert_near_cap(high, 70.0, **DUTY)
    assert_near_cap(low, 20.0, **DUTY)


async def test_removed_processes_are_left_running() -> None:
    limiter = DutyCycleLimiter()
    with burners(2) as procs:
        first, second = (psutil.Process(p.pid) for p in procs)
        await limiter.set_group("burn", [first.pid, second.pid], 5.0)
        await measured_cpu([first.pid], warmup=0.3, window=0.3)
        await limiter.set_group("burn", [second.pid], 5.0)  # first leaves the group
        assert first.status() != psutil.STATUS_STOPPED
        await limiter.remove_group("burn")
        assert second.status() != psutil.STATUS_STOPPED
        # Released processes get their full core back.
        freed = await measured_cpu([first.pid], warmup=0.2, window=1.0)
        assert freed.cpu + freed.waiting > 50.0


async def test_cgroup_groups_are_removed_on_close() -> None:
    limiter = _cgroup()
    with burners(1) as procs:
        await limiter.set_group("burn", [procs[0].pid], 50.0)
        path = limiter.group_path("burn")
        assert str(procs[0].pid) in (path / "cgroup.procs").read_text().split()
        await limiter.close()
    assert not path.exists()
    assert not path.parent.exists()


async def test_exited_processes_are_forgotten() -> None:
    limiter = DutyCycleLimiter()
    with burners(2) as procs:
        dead, alive = procs
        await limiter.set_group("burn", [dead.pid, alive.pid], 20.0)
        dead.kill()
        dead.wait()
        # The cycle keeps capping the survivor, and re-adding the dead pid is harmless.
        await limiter.set_group("burn", [dead.pid, alive.pid], 20.0)
        usage = await measured_cpu([alive.pid])
        await limiter.close()
    assert_near_cap(usage, 20.0, **DUTY)


def test_bad_caps_and_group_names_are_refused() -> None:
    limiter = DutyCycleLimiter()
    for cap in (0.0, -5.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="CPU cap"):
            cpulimit._check_cap(cap)
    for name in ("", "../etc", "a/b", "x" * 65):
        with pytest.raises(ValueError, match="group name"):
            cpulimit._check_group(name)
    with pytest.raises(ValueError, match="period"):
        DutyCycleLimiter(period=0)
    assert limiter.name == "duty-cycle"


def test_choice_order_and_forced_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CgroupLimiter, "detect", classmethod(lambda cls: None))
    monkeypatch.setattr(cpulimit.shutil, "which", lambda name: None)
    assert choose_limiter().name == "duty-cycle"
    with pytest.raises(ConfigError, match="cgroup"):
        choose_limiter("cgroup")
    with pytest.raises(ConfigError, match="not installed"):
        choose_limiter("cpulimit")
    with pytest.raises(ConfigError, match="unknown"):
        choose_limiter("fast")  # type: ignore[arg-type]
    monkeypatch.setattr(cpulimit.shutil, "which", lambda name: "/usr/bin/" + name)
    assert choose_limiter().name == "cpulimit"


def test_cgroup_detection_finds_v1_cpu_mount(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cpu = tmp_path / "cpu"
    cpu.mkdir()
    (cpu / "cpu.cfs_quota_us").write_text("-1\n")
    monkeypatch.setattr(cpulimit, "_mounts", lambda: [(cpu, "cgroup", {"rw", "cpu"})])
    monkeypatch.setattr(cpulimit, "_own_cgroups", lambda: {"cpu": "/", "": "/"})
    tree = cpulimit._find_tree()
    assert tree is not None
    assert (tree.version, tree.parent) == (1, cpu)


def test_cgroup_detection_skips_v2_without_cpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    monkeypatch.setattr(cpulimit, "_mounts", lambda: [(tmp_path, "cgroup2", {"rw"})])
    monkeypatch.setattr(cpulimit, "_own_cgroups", lambda: {"": "/"})
    assert cpulimit._find_tree() is None
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    (tmp_path / "cgroup.subtree_control").write_text("\n")
    tree = cpulimit._find_tree()
    assert tree is not None
    assert tree.version == 2
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"


def test_stale_trees_of_dead_supervisors_are_removed(tmp_path: Path) -> None:
    dead = 2**22 + 12345  # above pid_max on common kernels: never alive
    assert not psutil.pid_exists(dead)
    (tmp_path / f"topicrawl-{dead}" / "topic-1").mkdir(parents=True)
    (tmp_path / f"topicrawl-{os.getpid()}").mkdir()
    cpulimit._remove_stale(tmp_path)
    assert not (tmp_path / f"topicrawl-{dead}").exists()
    assert (tmp_path / f"topicrawl-{os.getpid()}").exists()
    assert signal.SIGCONT  # the module relies on it existing on this platform
