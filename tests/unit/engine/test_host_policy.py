from __future__ import annotations

from topicrawl.engine.crawl import HostPolicy
from topicrawl.frontier import MemoryFrontier


class Delays:
    def __init__(self, delays: dict[str, float | None]) -> None:
        self.delays = delays
        self.asked: list[str] = []

    async def crawl_delay(self, url: str) -> float | None:
        self.asked.append(url)
        return self.delays.get(url.split("/")[2])


async def test_robots_crawl_delay_raises_the_floor_of_its_host_only() -> None:
    delays = Delays({"slow.test": 3.0, "fast.test": 0.1})
    policy = HostPolicy(delays=delays, min_delay=0.5)
    frontier = MemoryFrontier()
    for url in ("http://slow.test/a", "http://slow.test/b", "http://fast.test/a"):
        await policy.prepare(url, frontier)
    assert delays.asked == ["http://slow.test/a", "http://fast.test/a"]  # once per host
    assert policy.floor("slow.test") == 3.0
    assert policy.floor("fast.test") == 0.5  # a Crawl-delay under our own changes nothing
    assert policy.floor("never.seen") == 0.5


async def test_without_robots_the_floor_is_the_crawl_delay() -> None:
    policy = HostPolicy(delays=None, min_delay=0.25)
    await policy.prepare("http://a.test/", MemoryFrontier())
    assert policy.floor("a.test") == 0.25
