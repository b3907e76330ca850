"""The demo web of seed 004's system: the video site and a microblog around its names, on one
clock.

:class:`Seed004Demo` serves the demo video site (its counts grow with the clock's days) and a
demo microblog whose accounts match, nearly match and falsely match the site's titles,
directors and actors (its posts appear as the clock passes their time; an entity's own
accounts are as influential and active as its titles are played, :func:`demo_popularity`).
Both read the same :class:`~topicrawl.revisit.clock.Clock`, so with a simulated clock a test
or ``topicrawl video run --demo`` runs weeks in seconds. The clock starts halfway through the
microblog's timelines: the first ranking sees half the posts, revisits find the rest.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import TracebackType
from typing import Self

from topicrawl.demoweb.accounts import TIMELINE_EPOCH, AccountWorld
from topicrawl.demoweb.accountserver import AccountServer
from topicrawl.demoweb.video.schemas import demo_schemas
from topicrawl.demoweb.video.server import VideoServer
from topicrawl.demoweb.video.site import VideoSite, build_video_site
from topicrawl.revisit.clock import Clock
from topicrawl.revisit.tiers import DAY

__all__ = ["DEMO_START", "TIMELINE_DAYS", "Seed004Demo", "demo_names", "demo_popularity"]

TIMELINE_DAYS = 14.0
DEMO_START = TIMELINE_EPOCH + TIMELINE_DAYS / 2 * DAY
"""Where a demo's clock starts: halfway through the microblog's timelines."""


def demo_popularity(site: VideoSite) -> dict[str, float]:
    """Each demo name's plays: a title's own, a director's or actor's over their titles."""
    plays = {t.id: float(t.plays) for t in site.titles}
    found = {t.name: float(t.plays) for t in site.titles}
    for person in site.entities():
        worked = sum(plays.get(i, 0.0) for i in person.titles)
        found[person.name] = found.get(person.name, 0.0) + worked
    return found


def demo_names(site: VideoSite) -> list[str]:
    """The names the demo microblog is built around: titles, directors and actors."""
    names = [t.name for t in site.titles] + [e.name for e in site.entities()]
    return list(dict.fromkeys(names))


class Seed004Demo:
    """Both demo servers on loopback, in threads of their own (``async with``).

    Args:
        clock: the clock both servers read; the site's day 0 is the clock's time at start.
        titles: titles of the video site (2-500; its pages grow with it).
        seed: the site's and the microblog's seed.
        fans: video-domain accounts besides the entities' own; ``others``: off-topic ones.
        day_seconds: a day's length on the clock.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        titles: int = 80,
        seed: int = 0,
        fans: int = 30,
        others: int = 60,
        day_seconds: float = DAY,
    ) -> None:
        self.clock = clock
        self.start = clock.now()
        self.day_seconds = day_seconds
        self.site = build_video_site(seed=seed, titles=titles, hard=False)
        self.world = AccountWorld.generate(
            demo_names(self.site),
            seed=seed + 7,
            fans=fans,
            others=others,
            days=TIMELINE_DAYS,
            popularity=demo_popularity(self.site),
        )
        self.video = VideoServer(self.site, clock=self.day)
        # The microblog's time runs from DEMO_START when the clock starts elsewhere.
        offset = DEMO_START - self.start
        self.microblog = AccountServer(
            self.world, rate_limit=1_000_000, clock=lambda: clock.now() + offset
        )
        self._stack = contextlib.ExitStack()

    def day(self) -> float:
        """Days since the demo started, on the clock."""
        return (self.clock.now() - self.start) / self.day_seconds

    @property
    def site_url(self) -> str:
        return self.video.base_url + "index.html"

    @property
    def api_url(self) -> str:
        return self.microblog.base_url

    def write_schemas(self, path: Path) -> Path:
        """Write the site's schemas for its address to ``path``; returns ``path``."""
        host = self.video.base_url.split("//", 1)[1].split(":", 1)[0]
        path.write_text(demo_schemas(host), encoding="utf-8")
        return path

    def __enter__(self) -> Self:
        with contextlib.ExitStack() as stack:
            stack.enter_context(self.video.run_in_thread())
            stack.enter_context(self.microblog.run_in_thread())
            self._stack = stack.pop_all()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.close()
