"""SqliteFrontier beyond the contract: crashes, shared files, locks, corruption, write-behind."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from topicrawl.core.errors import ConfigError, FrontierError, FrontierInUse
from topicrawl.core.models import Request
from topicrawl.frontier import SqliteFrontier

CRASHING_CRAWL = textwrap.dedent(
    """
    import asyncio, json, sys
    from topicrawl.core.models import Request
    from topicrawl.frontier import SqliteFrontier

    async def main(path):
        frontier = SqliteFrontier(path, max_per_host=100, flush_interval=3600, flush_every=10**9)
        await frontier.open()
        await frontier.push(
            [Request(f"http://h{i % 5}.test/{i}", score=float(i % 7)) for i in range(100)]
        )
        done = [await frontier.pop() for _ in range(10)]
        out = [await frontier.pop() for _ in range(5)]
        for lease in done:
            await frontier.ack(lease)
        await frontier.flush()
        # Changes after the last flush: the kill loses them.
        await frontier.push([Request("http://late.test/unflushed", score=-1.0)])
        late = await frontier.pop()
        await frontier.ack(late)
        report = {
            "done": [lease.request.url for lease in done],
            "out": [lease.request.url for lease in out],
            "late_ack": late.request.url,
        }
        print(json.dumps(report), flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main(sys.argv[1]))
    """
)


async def drain(frontier: SqliteFrontier) -> list[str]:
    urls: list[str] = []
    while (lease := await frontier.pop()) is not None:
        urls.append(lease.request.url)
        await frontier.ack(lease)
    return urls


async def test_a_killed_crawl_resumes_with_leases_back_and_flushed_acks_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CRASHING_CRAWL, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line, child.stderr.read() if child.stderr else "no output"
        report = json.loads(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL

    async with SqliteFrontier(path, max_per_host=100) as frontier:
        assert await frontier.in_flight() == 0
        assert await frontier.queued() == 90  # 100 pushed, 10 acked and flushed
        for url in report["done"]:
            assert await frontier.seen(url)
            assert await frontier.push([Request(url, score=99.0)]) == 0
        assert not await frontier.seen("http://late.test/unflushed")  # pushed after the flush
        urls = await drain(frontier)
    everything = {f"http://h{i % 5}.test/{i}" for i in range(100)}
    assert sorted(urls) == sorted(everything - set(report["done"]))
    # The leases that were out (and the ack that was not flushed) come back first.
    assert set(urls[:6]) == {*report["out"], report["late_ack"]}


async def test_the_file_can_be_shared_with_other_tables(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE pages (url TEXT PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO pages VALUES ('http://a.test/', 'A')")
    conn.close()
    async with SqliteFrontier(path) as frontier:
        await frontier.push([Request("http://a.test/next", score=1.0)])
        with sqlite3.connect(path) as other:  # a storage writer using the same file meanwhile
            other.execute("INSERT INTO pages VALUES ('http://a.test/2', 'B')")
        other.close()
        await frontier.flush()
    check = sqlite3.connect(path)
    try:
        tables = {row[0] for row in check.execute("SELECT name FROM sqlite_master")}
        assert {"pages", "frontier_requests", "frontier_hosts"} <= tables
        assert check.execute("SELECT count(*) FROM pages").fetchone()[0] == 2
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        check.close()


async def test_a_second_frontier_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path) as first:
        await first.push([Request("http://a.test/1")])
        with pytest.raises(FrontierInUse, match="in use by another frontier"):
            await SqliteFrontier(path).open()
    async with SqliteFrontier(path) as again:
        assert await again.queued() == 1


async def test_a_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(FrontierError, match="not a usable SQLite database"):
        await SqliteFrontier(path).open()


async def test_a_locked_database_is_a_clear_error_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path, busy_timeout=0.05, flush_interval=3600) as frontier:
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            await frontier.push([Request("http://a.test/1", score=1.0)])
            with pytest.raises(FrontierError, match="locked"):
                await frontier.flush()
            other.execute("COMMIT")
        finally:
            other.close()
        await frontier.flush()
        lease = await frontier.pop()
        assert lease is not None
        assert lease.request.url == "http://a.test/1"
    check = sqlite3.connect(path)
    try:
        assert check.execute("SELECT url FROM frontier_requests").fetchall() == [
            ("http://a.test/1",)
        ]
    finally:
        check.close()


async def _rows_eventually(path: Path, expected: int) -> int:
    count = -1
    for _ in range(250):
        check = sqlite3.connect(path)
        try:
            count = check.execute("SELECT count(*) FROM frontier_requests").fetchone()[0]
        finally:
            check.close()
        if count == expected:
            break
        await asyncio.sleep(0.02)
    return count


async def test_changes_are_committed_in_the_background(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path, flush_interval=0.05) as frontier:
        await frontier.push([Request(f"http://a.test/{i}") for i in range(10)])
        assert await _rows_eventually(path, 10) == 10


def _states(path: Path) -> dict[str, int]:
    check = sqlite3.connect(path)
    try:
        return dict(check.execute("SELECT url, state FROM frontier_requests").fetchall())
    finally:
        check.close()


async def test_an_ack_is_durable_at_flush_and_not_before(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path, flush_interval=0.02) as frontier:
        await frontier.push([Request("http://a.test/1", score=1.0)])
        lease = await frontier.pop()
        assert lease is not None
        assert await frontier.ack(lease)
        await frontier.push([Request("http://a.test/2")])
        assert await _rows_eventually(path, 2) == 2  # background commits write the pushes
        await asyncio.sleep(0.1)
        assert _states(path) == {"http://a.test/1": 0, "http://a.test/2": 0}
        assert await frontier.push([Request("http://a.test/1", score=5.0)]) == 0
        assert not await frontier.increase("http://a.test/1", 6.0)
        assert await frontier.queued() == 1
        second = await frontier.pop()
        assert second is not None
        assert second.request.url == "http://a.test/2"
        assert await frontier.pop() is None
        await frontier.reclaim(second)
        await frontier.flush()
        assert _states(path) == {"http://a.test/1": 1, "http://a.test/2": 0}


async def test_flush_sealed_commits_the_acks_sealed_and_none_after(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path, flush_interval=3600) as frontier:
        await frontier.push([Request(f"http://a.test/{n}", score=-n) for n in range(4)])
        leases = [await frontier.pop() for _ in range(3)]
        first, second, third = leases
        assert first is not None
        assert second is not None
        assert third is not None
        assert await frontier.ack(first)
        assert await frontier.revisit(second, due=4e9)
        frontier.seal_acks()
        assert await frontier.ack(third)  # after the seal: its page may not be stored yet
        await frontier.flush_sealed()
        assert _states(path) == {
            "http://a.test/0": 1,
            "http://a.test/1": 0,
            "http://a.test/2": 0,
            "http://a.test/3": 0,
        }
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT count(*) FROM frontier_due").fetchone() == (1,)
        # Acked, so not handed out again, though the table still says queued.
        assert (await frontier.pop()).request.url == "http://a.test/3"  # type: ignore[union-attr]
        frontier.seal_acks()
        await frontier.flush_sealed()
        assert _states(path)["http://a.test/2"] == 1


async def test_many_pending_changes_trigger_a_commit(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path, flush_interval=3600, flush_every=20) as frontier:
        await frontier.push([Request(f"http://a.test/{i}") for i in range(50)])
        assert await _rows_eventually(path, 50) == 50
        # Far behind (4x the batch): the push itself waits for the commit.
        await frontier.push([Request(f"http://b.test/{i}") for i in range(100)])
        check = sqlite3.connect(path)
        try:
            assert check.execute("SELECT count(*) FROM frontier_requests").fetchone()[0] == 150
        finally:
            check.close()


async def test_duplicates_are_found_in_the_table_after_the_cache_forgets(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path, cache_size=4, max_per_host=1000) as frontier:
        urls = [f"http://a.test/{i}" for i in range(300)]
        assert await frontier.push([Request(url, score=0.0) for url in urls]) == 300
        await frontier.flush()
        assert await frontier.push([Request(url, score=0.0) for url in urls]) == 0
        assert await frontier.push([Request(urls[7], score=5.0)]) == 0  # increase-key
        await frontier.flush()
        first = await frontier.pop()
        assert first is not None
        assert (first.request.url, first.request.score) == (urls[7], 5.0)
        await frontier.ack(first)
        await frontier.flush()
        assert not await frontier.increase(urls[7], 9.0)
        assert await frontier.push([Request(urls[7], score=9.0)]) == 0
        assert await frontier.queued() == 299


async def test_a_frontier_from_a_newer_topicrawl_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqliteFrontier(path):
        pass
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE frontier_meta SET value='99' WHERE name='schema'")
    conn.close()
    with pytest.raises(FrontierError, match="schema version 99"):
        await SqliteFrontier(path).open()


async def test_it_must_be_opened_and_needs_a_file(tmp_path: Path) -> None:
    frontier = SqliteFrontier(tmp_path / "crawl.db")
    with pytest.raises(FrontierError, match="not open"):
        await frontier.push([Request("http://a.test/")])
    await frontier.close()
    with pytest.raises(ConfigError):
        SqliteFrontier(":memory:")
