"""Heat-driven allocation on the demo web: the hotter topic gets more CPU and fetches more pages,
and neither topic's crawler processes use more CPU than their cap (plus the limiter's stated
tolerance)."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import psutil

from topicrawl.core.config import FetchSettings
from topicrawl.demoweb import DemoWeb, Kind
from topicrawl.topics.allocation import TopicAllocation, allocate
from topicrawl.topics.supervisor import TopicResult, TopicSupervisor

# The tolerances stated in the docstring of topicrawl/topics/cpulimit.py (points, share of cap).
TOLERANCE = {"cgroup": (3.0, 0.05), "cpulimit": (5.0, 0.20), "duty-cycle": (4.0, 0.15)}
WINDOW = 8.0


def _urls(web: DemoWeb, topic: int, copies: int = 300) -> list[str]:
    # The server ignores query strings: ?copy=k refetches a page, so the queue never runs dry
    # (a 60 % topic fetched all of 60 copies, 8,700 URLs, within the window on a quiet machine).
    pages = [web.url_of(p) for p in web.pages if p.kind in {Kind.HOME, Kind.SECTION, Kind.ARTICLE}]
    urls = [f"{url}?copy={k}" for k in range(copies) for url in pages]
    random.Random(topic).shuffle(urls)
    return urls


async def _until(condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


def _cpu_seconds(processes: dict[int, psutil.Process]) -> dict[int, float]:
    seconds = {}
    for pid, process in processes.items():
        try:
            times = process.cpu_times()
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        seconds[pid] = times.user + times.system
    return seconds


async def test_hotter_topic_fetches_more_and_caps_hold(demo_web: DemoWeb, tmp_path: Path) -> None:
    # Heats 6 : 1 over 70 % free CPU (one core, 30 % used by others): caps 60 % and 10 %;
    # at 20 % per process that is floor(60 / 20) = 3 processes and 1 process.
    allocation = allocate(
        {1: 6.0, 2: 1.0}, cores=1.0, used_by_others=30.0, per_process_cpu=20.0, max_processes=4
    )
    assert {t: (round(a.cpu_cap, 9), a.processes) for t, a in allocation.items()} == {
        1: (60.0, 3),
        2: (10.0, 1),
    }
    results: list[TopicResult] = []

    async def keep(result: TopicResult) -> None:
        results.append(result)

    sup = TopicSupervisor(
        queue_path=tmp_path / "queue.db",
        fetch=FetchSettings(timeout=10.0, retries=1, backoff_base=0.05),
        in_flight_per_process=4,
        on_result=keep,
        close_grace=2.0,
    )
    await sup.start()
    try:
        for topic in allocation:
            await sup.submit(topic, _urls(demo_web, topic))
        # Fresh processes import for about 0.7 CPU-s: let them start under a roomy cap first,
        # or the 10 % topic would spend the whole window importing.
        sup.apply({t: TopicAllocation(a.heat, 100.0, a.processes) for t, a in allocation.items()})
        await _until(
            lambda: all(
                s.processes == allocation[t].processes and s.fetched >= 5 * s.processes
                for t, s in sup.stats().items()
            )
        )
        sup.apply(allocation)
        await asyncio.sleep(1.0)
        processes = {t: {pid: psutil.Process(pid) for pid in sup.pids(t)} for t in allocation}
        cpu_before = {t: _cpu_seconds(p) for t, p in processes.items()}
        before = sup.stats()
        started = time.monotonic()
        await asyncio.sleep(WINDOW)
        cpu_after = {t: _cpu_seconds(p) for t, p in processes.items()}
        elapsed = time.monotonic() - started
        after = sup.stats()
        limiter = sup.limiter_name
        pids_after = {t: sorted(sup.pids(t)) for t in allocation}
    finally:
        await sup.close()
    final = sup.stats()

    fetched = {t: after[t].fetched - before[t].fetched for t in allocation}
    cpu = {
        t: 100.0 * sum(cpu_after[t][pid] - cpu_before[t][pid] for pid in cpu_after[t]) / elapsed
        for t in allocation
    }
    # The same processes ran the whole window, and neither topic ran out of URLs.
    assert pids_after == {t: sorted(p) for t, p in processes.items()}
    assert all(after[t].queued > 0 for t in allocation), after
    assert all(after[t].errors == 0 for t in allocation), after
    assert fetched[2] > 0
    assert fetched[1] > 2 * fetched[2], (fetched, cpu, limiter)
    for topic, share in allocation.items():
        points, relative = TOLERANCE[limiter]
        ceiling = share.cpu_cap + max(points, relative * share.cpu_cap)
        assert cpu[topic] <= ceiling, (topic, cpu, limiter, ceiling)
    # Every fetched page came back to the caller once, with the page's real title.
    answered = [(r.topic, r.page.url) for r in results]
    assert len(answered) == len(set(answered))
    assert {t: sum(1 for r in results if r.topic == t) for t in allocation} == {
        t: final[t].fetched + final[t].errors for t in allocation
    }
    sample = next(r.page for r in results if "/section" not in r.page.url)
    assert sample.status == 200
    assert sample.title.startswith(demo_web.page(sample.url).title)
