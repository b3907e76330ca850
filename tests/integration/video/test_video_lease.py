"""A dead leader is replaced: leadership of seed 004's system is a lease in the shared
database; when the leader stops renewing it, a follower takes it over and continues the
weekly plans from the database, each week planned once.

In one process on a lockstep clock (the leader's task cancelled after its first plan), and in
the slow run with real processes, the leader killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topicrawl.demoweb.seed004 import Seed004Demo
from topicrawl.engine.videosystem import SystemReport, VideoSystem, VideoSystemSettings
from topicrawl.revisit.clock import LockstepClock, SystemClock
from topicrawl.revisit.tiers import DAY
from topicrawl.storage.videostore import VideoStore

START = 1_800_000_000.0
WEEK = 7 * DAY


async def test_a_follower_takes_over_the_lease_of_a_dead_leader(tmp_path: Path) -> None:
    clock = LockstepClock(START, parties=2)
    db = str(tmp_path / "video.db")
    lines: list[str] = []
    with Seed004Demo(clock, titles=6) as demo:
        common = {
            "site": demo.site_url,
            "db": db,
            "parsers": str(demo.write_schemas(tmp_path / "schemas.toml")),
            "days": 15.0,  # plans due at days 0, 7 and 14
            "nodes": ("a", "b"),
            "follow_poll": DAY / 4,
            "lease_ttl": DAY,
        }
        leader = VideoSystem(VideoSystemSettings(**common, node="a"), clock=clock)
        follower = VideoSystem(
            VideoSystemSettings(**common, node="b"), clock=clock, progress=lines.append
        )
        planned = asyncio.Event()
        leader._say = lambda line: planned.set() if line.startswith("plan at") else None

        async def lead() -> None:
            try:
                await leader.run()
            finally:
                clock.leave()

        async def follow() -> SystemReport:
            try:
                return await follower.run()
            finally:
                clock.leave()

        leading = asyncio.create_task(lead())
        following = asyncio.create_task(follow())
        await planned.wait()
        leading.cancel()  # the leader dies right after its first plan
        with pytest.raises(asyncio.CancelledError):
            await leading
        report = await following
    async with VideoStore(db, read_only=True) as store:
        plans = sorted(await store.plans(demo.site_url))
        videos = await store.videos(limit=None)
        lease = await store.lease(demo.site_url)
        rounds = await store.last_rounds(demo.site_url)
    # The follower took the lease once it expired, and went on with the weekly plans: the
    # dead leader's day-0 plan, then days 7 and 14, each once.
    assert any("lease of node a expired" in line for line in lines)
    assert [round((at - START) / DAY, 6) for at in plans] == [0.0, 7.0, 14.0]
    assert lease is not None
    assert lease[0] == 1  # node b holds it
    assert len(report.plans) == 3
    # The later plans placed every video on the live node, which revisited them.
    assert {v["node"] for v in videos} == {"b"}
    assert report.page_visits > 0
    assert "" not in rounds  # the lease is no node's round


def _plans(db: Path) -> list[float]:
    """The times of the plans written so far."""
    if not db.exists():
        return []
    connection = sqlite3.connect(db, timeout=30)
    try:
        rows = connection.execute("SELECT DISTINCT planned_at FROM video_tiers").fetchall()
        return sorted(r[0] for r in rows)
    except sqlite3.OperationalError:
        return []  # the tables are not there yet
    finally:
        connection.close()


@pytest.mark.slow
def test_a_killed_leader_process_is_replaced(tmp_path: Path) -> None:
    day = 1.0  # a week lasts 7 s of real time
    db = tmp_path / "video.db"
    with Seed004Demo(SystemClock(), titles=4, day_seconds=day) as demo:
        schemas = demo.write_schemas(tmp_path / "schemas.toml")
        procs: dict[str, subprocess.Popen[bytes]] = {}
        try:
            for node in ("a", "b"):
                argv = [sys.executable, "-m", "topicrawl.cli", "video", "run"]
                argv += ["--site", demo.site_url, "--parsers", str(schemas), "--db", str(db)]
                argv += ["--nodes", "a,b", "--node", node, "--days", "16"]
                argv += ["--day-seconds", str(day), "--lease-ttl", "1.5"]
                with (tmp_path / f"{node}.log").open("wb") as log:
                    procs[node] = subprocess.Popen(
                        argv, env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT
                    )
            deadline = time.monotonic() + 240
            while not _plans(db) and time.monotonic() < deadline:
                assert procs["a"].poll() is None, (tmp_path / "a.log").read_text()
                time.sleep(0.1)
            assert _plans(db), "the leader wrote no plan"
            procs["a"].send_signal(signal.SIGKILL)
            procs["a"].wait(30)
            code = procs["b"].wait(240)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
    log_b = (tmp_path / "b.log").read_text(errors="replace")
    assert code == 0, log_b
    assert "lease of node a expired" in log_b
    times = _plans(db)
    connection = sqlite3.connect(db)
    try:
        nodes_now = {r[0] for r in connection.execute("SELECT DISTINCT node FROM videos")}
    finally:
        connection.close()
    # The dead leader's plan, then the follower's, a week apart: no week planned twice.
    assert len(times) >= 2
    assert all(later - earlier >= 7 * day - 1e-6 for earlier, later in itertools.pairwise(times))
    assert nodes_now == {"b"}
