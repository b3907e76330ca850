"""The progress line says which hosts the crawl holds, why, and when they are retried."""

from __future__ import annotations

import io

from rich.console import Console

from topicrawl.cli.progress import CrawlProgress, held_line
from topicrawl.core.models import CrawlStats, HeldHost


def test_the_held_line_names_each_held_host_and_its_retry() -> None:
    stats = CrawlStats()
    assert held_line(stats) == ""
    stats.held["a.test"] = HeldHost("a.test", "robots.txt answered 500", until=1600.0)
    line = held_line(stats, now=1000.0)
    assert line.startswith("a.test held (robots.txt answered 500; retry at ")
    assert line.endswith("in 600 s)")


def test_the_progress_line_shows_the_wait() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=300)
    stats = CrawlStats(started_at=1.0)
    stats.held["a.test"] = HeldHost("a.test", "robots.txt answered 500", until=4e9)
    with CrawlProgress(console=console, total=0) as progress:
        progress.update(stats)
        console.print(progress._progress.get_renderable())  # what the live line shows
    assert "a.test held (robots.txt answered 500; retry at" in out.getvalue()
