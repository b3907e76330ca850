"""A pool of HTTP proxies: random choice among the healthy ones, slow or failing ones benched."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from topicrawl.core.errors import ConfigError

__all__ = ["ProxyPool", "ProxyState"]

logger = logging.getLogger(__name__)

# Weight of the newest latency sample in the moving average: recent enough to bench a proxy
# that turned slow within a few requests, smooth enough that one slow page does not.
_SMOOTHING = 0.3


@dataclass(frozen=True, slots=True)
class ProxyState:
    """What the pool knows about one proxy, for stats and the dashboard.

    ``latency`` is the moving average in seconds (``None`` before the first success);
    ``benched_until`` is a clock reading, 0 when the proxy is in play.
    """

    proxy: str
    latency: float | None
    benched_until: float
    failures: int
    successes: int


@dataclass(slots=True)
class _Health:
    latency: float | None = None
    benched_until: float = 0.0
    failures: int = 0
    successes: int = 0


class ProxyPool:
    """Chooses a proxy per request and benches the ones that fail or get slow.

    A proxy is benched for ``bench_seconds`` when a request through it fails, or when its
    moving-average latency goes over ``max_latency``; it comes back afterwards with a fresh
    average. :meth:`choose` picks at random among the proxies in play. If every proxy is
    benched, it returns the one whose bench ends soonest, so the crawl slows down but never
    stops.

    Args:
        proxies: proxy URLs (``http://host:port``, optionally with ``user:pass@``).
        max_latency: seconds of average latency over which a proxy is benched.
        bench_seconds: how long a benched proxy sits out.
        clock: monotonic seconds, injectable for tests.
        rng: the random source for the choice, injectable for tests.

    Raises:
        ConfigError: a proxy is not an http(s) URL, or a limit is not positive.
    """

    def __init__(
        self,
        proxies: Sequence[str],
        *,
        max_latency: float,
        bench_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        if max_latency <= 0 or bench_seconds <= 0:
            raise ConfigError("proxy max_latency and bench_seconds must be positive")
        unique: dict[str, None] = {}
        for given in proxies:
            proxy = given.strip()
            if not proxy.startswith(("http://", "https://")) or len(proxy) < 10:
                raise ConfigError(f"proxy {_redact(given)!r} is not an http:// or https:// URL")
            unique[proxy] = None
        self._proxies = tuple(unique)
        self._health = {proxy: _Health() for proxy in self._proxies}
        self._max_latency = max_latency
        self._bench_seconds = bench_seconds
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._all_benched_warned = False

    @property
    def proxies(self) -> tuple[str, ...]:
        """Every proxy in the pool, benched or not, in configuration order."""
        return self._proxies

    def __len__(self) -> int:
        return len(self._proxies)

    def choose(self) -> str | None:
        """A proxy for the next request, or ``None`` when the pool is empty (go direct)."""
        if not self._proxies:
            return None
        now = self._clock()
        ready = [p for p in self._proxies if self._health[p].benched_until <= now]
        if ready:
            self._all_benched_warned = False
            return ready[0] if len(ready) == 1 else self._rng.choice(ready)
        soonest = min(self._proxies, key=lambda p: self._health[p].benched_until)
        if not self._all_benched_warned:
            self._all_benched_warned = True
            logger.warning(
                "all %d proxies are benched; using %s, whose bench ends soonest",
                len(self._proxies),
                _redact(soonest),
            )
        return soonest

    def report(self, proxy: str, *, latency: float | None, ok: bool) -> None:
        """Record how a request through ``proxy`` went.

        Args:
            proxy: a proxy returned by :meth:`choose`; unknown proxies are ignored.
            latency: seconds until the response headers arrived, when there was a response.
            ok: False when the proxy failed (could not connect, dropped the connection, timed
                out); a failed proxy is benched at once.
        """
        health = self._health.get(proxy)
        if health is None:
            return
        now = self._clock()
        if not ok:
            health.failures += 1
            self._bench(proxy, health, now, "it failed")
            return
        health.successes += 1
        if latency is None:
            return
        if health.latency is None:
            health.latency = latency
        else:
            health.latency += _SMOOTHING * (latency - health.latency)
        if health.latency > self._max_latency:
            self._bench(proxy, health, now, f"its latency is {health.latency:.2f}s")

    def states(self) -> tuple[ProxyState, ...]:
        """A snapshot of every proxy's health, in configuration order."""
        return tuple(
            ProxyState(
                proxy=p,
                latency=h.latency,
                benched_until=h.benched_until,
                failures=h.failures,
                successes=h.successes,
            )
            for p, h in self._health.items()
        )

    def _bench(self, proxy: str, health: _Health, now: float, why: str) -> None:
        if health.benched_until <= now:
            logger.info("benching proxy %s for %.0fs: %s", _redact(proxy), self._bench_seconds, why)
        health.benched_until = now + self._bench_seconds
        # A proxy comes back on probation: its old average must not bench it again at once.
        health.latency = None


def _redact(proxy: str) -> str:
    """The proxy URL without its credentials, fit for a log line."""
    scheme, _, rest = proxy.partition("://")
    at = rest.rfind("@")
    return f"{scheme}://***@{rest[at + 1 :]}" if at >= 0 else proxy
