"""Live samples go through the storage's background writer (storage.sql.save_sample)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from topicrawl.core.errors import StorageError
from topicrawl.engine.samples import RunSample, read_samples, sample_row
from topicrawl.storage import SqlStorage
from topicrawl.storage.target import create_engine, parse_target


def row(at: float) -> dict[str, object]:
    return sample_row(
        RunSample(
            run_id=1,
            at=at,
            pages=int(at),
            failures=1,
            bytes=10,
            queued=2,
            in_flight=3,
            parse_backlog=4,
            failures_by_kind={"timeout": 1},
            waits={"host_delay": 2},
            node="w1",
        )
    )


async def count(path: Path) -> int:
    engine = create_engine(parse_target(str(path)), busy_timeout=5.0, connect_timeout=5.0)
    try:
        async with engine.connect() as connection:
            return int(
                (await connection.execute(text("SELECT count(*) FROM run_samples"))).scalar_one()
            )
    finally:
        await engine.dispose()


async def test_samples_wait_for_the_writer_and_read_back_decoded(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path), flush_interval=30.0) as storage:
        storage.save_sample(row(1.0))
        storage.save_sample(row(2.0))
        assert await count(path) == 0  # buffered: nothing written on the caller's path
        await storage.flush()
        assert await count(path) == 2

    engine = create_engine(parse_target(str(path)), busy_timeout=5.0, connect_timeout=5.0)
    try:
        samples = await read_samples(engine, 1)
        assert await read_samples(engine, 2) == []
    finally:
        await engine.dispose()
    assert [s.at for s in samples] == [1.0, 2.0]
    assert samples[0].failures_by_kind == {"timeout": 1}
    assert samples[0].waits == {"host_delay": 2}
    assert samples[0].node == "w1"


async def test_the_background_writer_writes_samples_alone(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path), flush_interval=0.05) as storage:
        storage.save_sample(row(1.0))
        for _ in range(100):
            if await count(path):
                break
            await asyncio.sleep(0.02)
        assert await count(path) == 1


async def test_a_read_only_storage_refuses_samples(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path)):
        pass
    async with SqlStorage(str(path), read_only=True) as reader:
        with pytest.raises(StorageError, match="read-only"):
            reader.save_sample(row(1.0))
