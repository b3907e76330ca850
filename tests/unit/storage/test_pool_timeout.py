"""A connection pool that stays busy past its timeout is a transient storage error, retried.

A crawl with 128 pages in flight on a heavily loaded machine died of SQLAlchemy's
``QueuePool limit ... reached, connection timed out`` (issue #24's scale run).
"""

from __future__ import annotations

import pytest
from sqlalchemy.exc import TimeoutError as PoolTimeout

from topicrawl.core.errors import StorageError
from topicrawl.storage.errors import with_retries
from topicrawl.storage.target import parse_target

BUSY = "QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00"


async def test_a_pool_timeout_is_retried_and_the_operation_then_succeeds() -> None:
    calls = 0

    async def lookup() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise PoolTimeout(BUSY)
        return "found"

    result = await with_retries(
        lookup, target=parse_target("crawl.db"), doing="a look-up", retries=2, backoff=0.0
    )
    assert (result, calls) == ("found", 2)


async def test_a_pool_that_stays_busy_ends_as_a_storage_error() -> None:
    async def lookup() -> str:
        raise PoolTimeout(BUSY)

    with pytest.raises(StorageError, match="a look-up"):
        await with_retries(
            lookup, target=parse_target("crawl.db"), doing="a look-up", retries=1, backoff=0.0
        )
