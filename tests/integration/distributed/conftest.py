"""The fixture most distributed tests share: a cluster of workers over the module's ``server``
(each module serves its own demo web), the real Redis and PostgreSQL, cleaned up after."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.distributed.harness import Cluster
from topicrawl.demoweb import DemoWebServer


@pytest.fixture
async def cluster(
    server: DemoWebServer, redis_url: str, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    made = Cluster(server=server, redis_url=redis_url, postgres_url=postgres_url, tmp=tmp_path)
    yield made
    await made.cleanup()
