"""The demo microblogs' rate limit: a sliding window of requests per client address."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime

from topicrawl.core.errors import ConfigError

__all__ = ["RateWindow"]


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{int(ts * 1000) % 1000:03d}Z"
    )


class RateWindow:
    """At most ``limit`` requests per ``window`` seconds per client, with Mastodon's headers
    (``X-RateLimit-Limit/Remaining/Reset``, and ``Retry-After`` on a refusal). Thread-safe.

    Raises:
        ConfigError: ``limit`` < 1 or ``window`` <= 0.
    """

    def __init__(
        self, limit: int, window: float, *, clock: Callable[[], float] = time.time
    ) -> None:
        if limit < 1 or not window > 0:
            raise ConfigError("rate_limit must be >= 1 and rate_window > 0")
        self.limit = limit
        self.window = window
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self.requests = 0
        self.rejected = 0

    def clear(self) -> None:
        with self._lock:
            self._hits.clear()

    def hit(self, client: str) -> tuple[dict[str, str], bool]:
        """Count a request of ``client``: its headers, and whether it is allowed."""
        now = self._clock()
        with self._lock:
            self.requests += 1
            hits = self._hits.setdefault(client, deque())
            while hits and hits[0] <= now - self.window:
                hits.popleft()
            allowed = len(hits) < self.limit
            if allowed:
                hits.append(now)
            else:
                self.rejected += 1
            headers, reset = self._headers(hits, now)
        if not allowed:
            headers["Retry-After"] = str(max(1, math.ceil(reset - now)))
        return headers, allowed

    def headers(self, client: str) -> dict[str, str]:
        """The headers of ``client``'s state now (its last request already counted)."""
        with self._lock:
            return self._headers(self._hits.get(client, deque()), self._clock())[0]

    def _headers(self, hits: deque[float], now: float) -> tuple[dict[str, str], float]:
        reset = (hits[0] if hits else now) + self.window
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(0, self.limit - len(hits))),
            "X-RateLimit-Reset": _iso(reset),
        }, reset
