"""Shared fixtures. Real services: skipped with a reason outside CI, a failure in CI."""

from __future__ import annotations

import os
import signal
import socket
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from xdist.scheduler import LoadScopeScheduling

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

POSTGRES_URL = os.environ.get(
    "TOPICRAWL_TEST_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("TOPICRAWL_TEST_REDIS", "redis://127.0.0.1:6379/15")

# A shell starts a background job (`pytest ... &`) with SIGINT ignored, and an ignored signal
# stays ignored across exec: every child process the tests send Ctrl-C to would then ignore
# it. Tests behave as under a terminal: the default handler, which children reset to default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    """Skip (outside CI) or fail (in CI) when a real service is not listening."""
    if _reachable(host, port):
        return
    message = f"{name} is not reachable at {host}:{port}"
    if IN_CI:
        pytest.fail(f"{message}; CI must have it", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def postgres_url() -> str:
    require_service("PostgreSQL", "127.0.0.1", 5432)
    return POSTGRES_URL


@pytest.fixture
def redis_url() -> str:
    require_service("Redis", "127.0.0.1", 6379)
    return REDIS_URL


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A crawl database URL on each store: a SQLite file, or a fresh PostgreSQL schema that is
    dropped afterwards."""
    if request.param == "sqlite":
        yield str(tmp_path / "crawl.db")
        return
    base: str = request.getfixturevalue("postgres_url")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    yield f"{base}{'&' if '?' in base else '?'}schema={schema}"
    connection = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


# Modules whose tests start several real workers, each with its own PostgreSQL pool (up to
# 15 connections): under pytest-xdist they share one process, so one of them runs at a time
# and the suite itself never exhausts the server's 100 connections.
_ONE_AT_A_TIME = ("tests/integration/distributed/",)


def _scope(nodeid: str) -> str:
    """The unit of work an xdist process takes whole: a module (its module-scoped servers start
    once), or every module under one of :data:`_ONE_AT_A_TIME`."""
    module = nodeid.split("::", 1)[0]
    return next((prefix for prefix in _ONE_AT_A_TIME if module.startswith(prefix)), module)


class _ByScope(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return _scope(nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling:
    """scripts/test.sh runs the suite in several processes (``-n``), scheduled by :func:`_scope`
    (xdist's ``--dist loadgroup`` marks do not reach its scheduler under pytest 9)."""
    return _ByScope(config, log)
