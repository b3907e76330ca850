"""TopicSupervisor: CPU caps on a topic's processes, process counts, and its API's contract."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest

from topicrawl.topics.allocation import TopicAllocation
from topicrawl.topics.cpulimit import CgroupLimiter, LimiterKind
from topicrawl.topics.supervisor import TopicResult, TopicSupervisor

from .cpu_burners import BURN, CGROUP, DUTY, assert_near_cap, measured_cpu


def _alloc(cap: float, processes: int) -> TopicAllocation:
    return TopicAllocation(heat=1.0, cpu_cap=cap, processes=processes)


def _burning_supervisor(tmp_path: Path, limiter: LimiterKind) -> TopicSupervisor:
    return TopicSupervisor(
        queue_path=tmp_path / "queue.db",
        cpu_limiter=limiter,
        worker_command=BURN,
        close_grace=0.2,
        retire_grace=0.5,
        cpu_sample_interval=0.5,
    )


async def _wait_for(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


def _limiters() -> list[LimiterKind]:
    kinds: list[LimiterKind] = ["duty-cycle"]
    if CgroupLimiter.detect() is not None:
        kinds.append("cgroup")
    return kinds


@pytest.mark.parametrize("limiter", _limiters())
async def test_topic_processes_stay_under_changing_caps(
    tmp_path: Path, limiter: LimiterKind
) -> None:
    tolerance = DUTY if limiter == "duty-cycle" else CGROUP
    sup = _burning_supervisor(tmp_path, limiter)
    await sup.start()
    try:
        assert sup.limiter_name == limiter
        sup.apply({1: _alloc(30.0, 2)})
        await _wait_for(lambda: len(sup.pids(1)) == 2)
        pids = sup.pids(1)
        assert_near_cap(await measured_cpu(pids, window=2.0), 30.0, **tolerance)
        sup.apply({1: _alloc(60.0, 2)})
        usage = await measured_cpu(sup.pids(1), window=2.0)
        assert_near_cap(usage, 60.0, **tolerance)
        # The supervisor's own measurement agrees with ours.
        stats = sup.stats()[1]
        assert (stats.cap, stats.processes) == (60.0, 2)
        assert abs(stats.cpu_percent - usage.cpu) <= 15.0
    finally:
        await sup.close()
    # Closing stops the processes (burners ignore their closed pipe, so they are killed).
    assert not [pid for pid in pids if psutil.pid_exists(pid)]
    assert sup.pids(1) == []


async def test_process_count_follows_allocations(tmp_path: Path) -> None:
    sup = _burning_supervisor(tmp_path, "duty-cycle")
    await sup.start()
    try:
        sup.apply({1: _alloc(10.0, 3), 2: _alloc(10.0, 1)})
        await _wait_for(lambda: len(sup.pids(1)) == 3 and len(sup.pids(2)) == 1)
        first = set(sup.pids(1))
        sup.apply({1: _alloc(10.0, 1)})  # topic 2 left out: its processes stop
        await _wait_for(lambda: len(sup.pids(1)) == 1 and not sup.pids(2))
        assert set(sup.pids(1)) <= first  # shrinking keeps a process, it starts none
        stats = sup.stats()
        assert (stats[1].target, stats[2].target) == (1, 0)
        assert stats[1].restarts == stats[2].restarts == 0
    finally:
        await sup.close()


async def test_api_contract_errors(tmp_path: Path) -> None:
    async def keep(result: TopicResult) -> None:
        del result

    sup = TopicSupervisor(queue_path=tmp_path / "q.db", cpu_limiter="duty-cycle", on_result=keep)
    with pytest.raises(RuntimeError, match="start"):
        await sup.submit(1, ["http://127.0.0.1/"])
    with pytest.raises(RuntimeError, match="start"):
        sup.apply({})
    await sup.start()
    try:
        with pytest.raises(ValueError, match="CPU cap"):
            sup.apply({1: _alloc(0.0, 1)})
        with pytest.raises(ValueError, match="processes"):
            sup.apply({1: _alloc(5.0, -1)})
        with pytest.raises(RuntimeError, match="on_result"):
            async for _ in sup.results():
                pass
        assert (
            await sup.submit(3, ["http://127.0.0.1:1/a", "not a url", "http://127.0.0.1:1/a"]) == 1
        )
        assert sup.stats()[3].queued == 1
        with pytest.raises(RuntimeError, match="already"):
            await sup.start()
        with pytest.raises(TypeError, match="topic id"):
            sup.apply([_alloc(5.0, 1)])  # type: ignore[arg-type]
    finally:
        await sup.close()
    assert sup.stats()[3].queued == 1  # the numbers at closing
    with pytest.raises(RuntimeError, match="closed"):
        await sup.submit(3, ["http://127.0.0.1:1/b"])
    with pytest.raises(ValueError, match="in_flight_per_process"):
        TopicSupervisor(queue_path=tmp_path / "q.db", in_flight_per_process=0)
