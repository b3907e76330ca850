"""Topic crawler processes against a real local site: scaling, deaths, restarts, robots.txt."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

from topicrawl.core.config import FetchSettings
from topicrawl.topics.allocation import TopicAllocation
from topicrawl.topics.supervisor import TopicResult, TopicSupervisor
from topicrawl.topics.workqueue import TopicWorkQueue, UrlState

from .conftest import Site

CRASHY = (sys.executable, str(Path(__file__).with_name("crashy_worker.py")))
FAST = FetchSettings(timeout=10.0, retries=0)


def _alloc(processes: int, cap: float = 150.0) -> dict[int, TopicAllocation]:
    return {1: TopicAllocation(heat=1.0, cpu_cap=cap, processes=processes)}


def _supervisor(tmp_path: Path, results: list[TopicResult], **options: object) -> TopicSupervisor:
    async def keep(result: TopicResult) -> None:
        results.append(result)

    settings: dict[str, object] = {
        "queue_path": tmp_path / "queue.db",
        "fetch": FAST,
        "cpu_limiter": "duty-cycle",
        "on_result": keep,
        "close_grace": 2.0,
    }
    settings.update(options)
    return TopicSupervisor(**settings)  # type: ignore[arg-type]


async def _until(condition, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


async def test_scaling_up_and_down_loses_and_repeats_nothing(site: Site, tmp_path: Path) -> None:
    results: list[TopicResult] = []
    sup = _supervisor(tmp_path, results, in_flight_per_process=1)
    await sup.start()
    urls = [site.url(f"/p/{n}") for n in range(60)]
    try:
        assert await sup.submit(1, [*urls, site.url("/private/1")]) == 61
        sup.apply(_alloc(1))
        await _until(lambda: len(results) >= 10)
        sup.apply(_alloc(3))
        await _until(lambda: sup.stats()[1].processes == 3)
        seen_three = sup.stats()[1].processes
        await _until(lambda: len(results) >= 35)
        sup.apply(_alloc(1))
        await _until(lambda: sup.stats()[1].processes == 1)
        await sup.join([1])
        stats = sup.stats()[1]
    finally:
        await sup.close()
    assert seen_three == 3
    by_url = Counter(r.page.url for r in results)
    assert set(by_url) == {*urls, site.url("/private/1")}
    assert max(by_url.values()) == 1
    # Every page was requested exactly once: shrinking let processes finish their URL.
    assert all(site.hits[f"/p/{n}"] == 1 for n in range(60))
    # robots.txt obeyed: the disallowed page was never requested, and says why.
    assert site.hits["/private/1"] == 0
    private = next(r for r in results if r.page.url.endswith("/private/1"))
    assert private.page.error_kind == "robots"
    page7 = next(r for r in results if r.page.url == site.url("/p/7"))
    assert (page7.page.status, page7.page.title) == (200, "Page 7")
    assert page7.page.links == (site.url("/p/8"), site.url("/private/7"))
    assert "Text of page 7." in page7.page.excerpt
    assert (stats.fetched, stats.errors, stats.requeued, stats.restarts) == (60, 1, 0, 0)
    assert (stats.queued, stats.in_flight, stats.processes) == (0, 0, 1)


async def test_a_killed_process_is_replaced_and_its_url_fetched_again(
    site: Site, tmp_path: Path
) -> None:
    results: list[TopicResult] = []
    sup = _supervisor(tmp_path, results)
    await sup.start()
    try:
        await sup.submit(1, [site.url("/slow/1?s=1.0")])
        sup.apply(_alloc(1))
        await _until(lambda: site.hits["/slow/1"] == 1)
        (victim,) = sup.pids(1)
        os.kill(victim, signal.SIGKILL)
        await sup.join([1])
        stats = sup.stats()[1]
        survivors = sup.pids(1)
    finally:
        await sup.close()
    assert (stats.restarts, stats.requeued, stats.processes) == (1, 1, 1)
    assert survivors
    assert victim not in survivors
    (result,) = results
    assert (result.page.status, result.page.error, result.attempts) == (200, None, 2)
    assert site.hits["/slow/1"] == 2  # the requeued lease, and only it, was fetched twice


async def test_a_url_that_keeps_killing_processes_is_given_up(site: Site, tmp_path: Path) -> None:
    results: list[TopicResult] = []
    sup = _supervisor(tmp_path, results, worker_command=CRASHY, max_attempts=2)
    await sup.start()
    crash, fine = site.url("/p/crash"), [site.url(f"/p/{n}") for n in range(3)]
    try:
        await sup.submit(1, [crash, *fine])
        sup.apply(_alloc(1))  # one process, two URLs at a time: crash and /p/0 go together
        await sup.join([1])
        stats = sup.stats()[1]
    finally:
        await sup.close()
    # Death 1 had two URLs in the process: neither is blamed, both are retried alone.
    # Deaths 2 and 3 had the crashing URL alone: it is given up after max_attempts=2.
    assert stats.restarts == 3
    assert (stats.failed, stats.fetched) == (1, 3)
    attempts = {r.page.url: (r.attempts, r.page.error is None) for r in results}
    assert attempts == {crash: (2, False), **dict.fromkeys(fine, (1, True))}
    queue = TopicWorkQueue(tmp_path / "queue.db")
    assert queue.state_of(1, crash) == (UrlState.FAILED, 2)
    queue.close()


async def test_the_queue_outlives_the_supervisor(site: Site, tmp_path: Path) -> None:
    urls = [site.url(f"/p/{n}") for n in range(30)]
    first: list[TopicResult] = []
    sup = _supervisor(tmp_path, first, in_flight_per_process=1)
    await sup.start()
    await sup.submit(1, urls)
    sup.apply(_alloc(1))
    await _until(lambda: len(first) >= 5)
    await sup.close()  # mid-run: the rest stays queued in the file
    assert 5 <= len(first) < 30

    second: list[TopicResult] = []
    sup = _supervisor(tmp_path, second)
    await sup.start()
    try:
        assert await sup.submit(1, urls) == 0  # already known, done or queued
        sup.apply(_alloc(2))
        await sup.join([1])
    finally:
        await sup.close()
    assert sorted(r.page.url for r in first + second) == sorted(urls)
    assert all(site.hits[f"/p/{n}"] == 1 for n in range(30))


async def test_results_iterator_ends_at_close(site: Site, tmp_path: Path) -> None:
    sup = TopicSupervisor(queue_path=tmp_path / "q.db", fetch=FAST, cpu_limiter="duty-cycle")
    await sup.start()
    await sup.submit(1, [site.url(f"/p/{n}") for n in range(4)])
    sup.apply(_alloc(1))
    got: list[TopicResult] = []

    async def read() -> None:
        async for result in sup.results():
            got.append(result)
            if len(got) == 4:
                await sup.close()

    await asyncio.wait_for(read(), 30.0)
    assert sorted(r.page.url for r in got) == sorted(site.url(f"/p/{n}") for n in range(4))
