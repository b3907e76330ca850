"""Fixtures of the fetch tests: loopback servers started per test and closed after it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.unit.fetch.servers import Servers, Sleeps


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    running = Servers()
    yield running
    await running.close()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()
