"""Each host's robots.txt Crawl-delay, applied to the frontier once per host."""

from __future__ import annotations

from typing import Protocol

from topicrawl.core.protocols import Frontier
from topicrawl.parse.urls import host_of

__all__ = ["CrawlDelays", "HostPolicy"]


class CrawlDelays(Protocol):
    """Where a host's robots.txt Crawl-delay comes from."""

    async def crawl_delay(self, url: str) -> float | None: ...


class HostPolicy:
    """Applies each host's robots.txt Crawl-delay to the frontier, once per host.

    robots.txt allow/disallow is the fetcher's job (it must check every redirect hop too);
    this only makes the frontier space a host's requests as its robots.txt asks.

    Args:
        delays: the robots.txt source, or None when robots.txt is ignored.
        min_delay: the crawl's own minimum delay per host.
    """

    def __init__(self, *, delays: CrawlDelays | None, min_delay: float) -> None:
        self._delays = delays
        self._min_delay = min_delay
        self._configured: dict[str, float] = {}

    async def prepare(self, url: str, frontier: Frontier) -> None:
        """On a host's first URL, give the frontier its Crawl-delay (if above our own)."""
        if self._delays is None:
            return
        host = host_of(url)
        if host in self._configured:
            return
        self._configured[host] = self._min_delay
        delay = await self._delays.crawl_delay(url)
        if delay is not None and delay > self._min_delay:
            self._configured[host] = delay
            await frontier.set_host_delay(host, delay)

    def problem(self, url: str) -> str | None:
        """Why the URL's host robots.txt cannot be read, when the source can tell."""
        problem = getattr(self._delays, "problem", None)
        return None if problem is None else problem(url)

    def floor(self, host: str) -> float:
        """The least delay a host may get: the crawl's own, or its robots.txt Crawl-delay."""
        return self._configured.get(host, self._min_delay)
