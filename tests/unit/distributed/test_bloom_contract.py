"""The Frontier contract again, for RedisFrontier in Bloom mode (the contract runs exact mode)."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.contract import test_frontier as contract
from topicrawl.core.protocols import Frontier
from topicrawl.distributed import RedisFrontier

clock = contract.clock


class _BloomFrontier(RedisFrontier):
    async def close(self) -> None:
        if self._redis is not None:
            await self.drop()
        await super().close()


@pytest.fixture
async def open_frontier(
    redis_url: str, tmp_path: Path, clock: contract.FakeClock
) -> AsyncIterator[contract.Opener]:
    async def factory(place: Path, clock: contract.FakeClock, **options: Any) -> Frontier:
        namespace = f"bloom-{uuid.uuid4().hex}"
        # Small capacity on purpose: the suite pushes at most ~10k URLs, well under it.
        frontier = _BloomFrontier(
            redis_url, namespace=namespace, clock=clock, bloom_capacity=100_000, **options
        )
        return await frontier.open()

    async for opener, _ in contract._opener(factory, tmp_path, clock):
        yield opener


for _name, _test in inspect.getmembers(contract, inspect.iscoroutinefunction):
    if _name.startswith("test_") and "open_frontier" in inspect.signature(_test).parameters:
        globals()[_name] = _test
