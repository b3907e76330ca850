"""Shared fixtures. Real services: skipped with a reason outside CI, a failure in CI."""

from __future__ import annotations

import os
import socket

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

POSTGRES_URL = os.environ.get(
    "TOPICRAWL_TEST_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
REDIS_URL = os.environ.get("TOPICRAWL_TEST_REDIS", "redis://127.0.0.1:6379/15")


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
