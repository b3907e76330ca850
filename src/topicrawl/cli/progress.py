"""Progress bar and end-of-crawl summary for the command line."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from topicrawl.core.models import CrawlStats

if TYPE_CHECKING:
    from topicrawl.engine.build import CrawlReport

__all__ = ["CrawlProgress", "held_line", "print_summary", "render_line", "summary_table"]


class CrawlProgress:
    """A live progress bar fed by the crawler's per-page callback (redrawn at most 10x/s)."""

    def __init__(self, *, console: Console, total: int, enabled: bool = True) -> None:
        self._enabled = enabled and console.is_terminal
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]crawling"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:.0f} pages/s  errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            TextColumn("[yellow]{task.fields[held]}"),
            console=console,
            transient=True,
            disable=not self._enabled,
        )
        self._task: TaskID | None = None
        self._total = total or None
        self._last = 0.0

    def __enter__(self) -> CrawlProgress:
        self._progress.__enter__()
        self._task = self._progress.add_task(
            "crawl", total=self._total, rate=0.0, errors=0, held=""
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.__exit__(exc_type, exc, tb)

    def update(self, stats: CrawlStats) -> None:
        now = time.time()
        if self._task is None or not self._enabled or now - self._last < 0.1:
            return
        self._last = now
        self._progress.update(
            self._task,
            completed=stats.pages,
            rate=stats.pages_per_second(now),
            errors=stats.error_count,
            held=held_line(stats, now=now),
        )


def held_line(stats: CrawlStats, *, now: float | None = None) -> str:
    """What the crawl waits for, for the progress line: the hosts it holds, why, and when
    they are retried ("" when none)."""
    current = time.time() if now is None else now
    return ", ".join(held.describe(current) for held in stats.held.values())


def summary_table(stats: CrawlStats, *, title: str = "crawl summary") -> Table:
    """The numbers a user wants after a crawl, as a rich table."""
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    seconds = max(stats.finished_at - stats.started_at, 0.0)
    table.add_row("pages stored", f"{stats.pages}")
    table.add_row("duplicates (same content)", f"{stats.duplicates}")
    table.add_row("URLs queued", f"{stats.queued}")
    table.add_row("errors", f"{stats.error_count}")
    for kind, count in sorted(stats.errors.items(), key=lambda item: -item[1]):
        table.add_row(f"  {kind}", f"{count}")
    table.add_row("seconds", f"{seconds:.1f}")
    table.add_row("pages/s", f"{stats.pages_per_second(stats.finished_at):.1f}")
    if stats.harvest_rate is not None and stats.relevant:
        table.add_row("harvest rate (strategy's judgement)", f"{stats.harvest_rate:.3f}")
    table.add_row("MB fetched", f"{stats.bytes / 1e6:.1f}")
    return table


def render_line(render: Mapping[str, int]) -> str:
    """One line of a crawl's render counts (pages rendered, browser requests, restarts)."""
    blocked = sum(v for k, v in render.items() if k.startswith("requests/blocked"))
    return (
        f"rendered in Chromium: {render.get('pages/rendered', 0)} pages"
        f" ({render.get('pages/not_rendered', 0)} did not need it,"
        f" {render.get('pages/render_failed', 0)} failed);"
        f" browser requests: {render.get('requests/fetched', 0)} fetched,"
        f" {render.get('requests/cached', 0)} cached, {blocked} blocked;"
        f" browser restarts: {render.get('browser/restarts', 0)}"
    )


def print_summary(console: Console, report: CrawlReport) -> None:
    console.print(summary_table(report.stats))
    console.print(f"results in {report.storage_url} (run {report.run_id})")
    video = report.video
    if video.get("pages/play") or video.get("pages/video"):
        line = (
            f"video pages: {video.get('pages/play', 0)} play pages, "
            f"{video.get('pages/video', 0)} about a video; "
            f"{video.get('manifests/fetched', 0)} manifests fetched"
        )
        if video.get("media/fetched") or video.get("media/failed"):
            line += (
                f"; media files fetched: {video.get('media/fetched', 0)} "
                f"({video.get('media/bytes', 0):,} bytes), failed: {video.get('media/failed', 0)}"
            )
        console.print(line + " (media URLs: topicrawl export)")
    if report.render:
        console.print(render_line(report.render))
    if report.stats.held:
        console.print(f"hosts held at the end: {held_line(report.stats)}")
    if report.queued_left:
        console.print(
            f"{report.queued_left} URLs still queued: run the same command again to go on"
        )
