"""``topicrawl label``: show sampled pages of a crawl and record a person's yes/no judgements.

The labels go to the crawl database's ``labels`` table. A focused crawl that is started or
resumed on that database judges its adaptive threshold's samples with them (a human judge;
pages nobody labelled are judged by the automatic judge).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from topicrawl.core.errors import ConfigError, StorageError, TopicrawlError
from topicrawl.core.models import Page

if TYPE_CHECKING:
    from topicrawl.focus import LearnedState

__all__ = ["label", "label_pages", "learning_table", "print_learning"]

EXCERPT_CHARS = 600
TITLE_CHARS = 200
URL_CHARS = 300
_SHOWN_TERMS = 8
_ANSWERS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "s": "skip", "skip": "skip"}
_QUIT = {"q", "quit"}

AskFn = Callable[[], str | None]
"""Asks a person about the page just shown: yes, no, skip, or None to stop."""


def _excerpt(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def page_panel(page: Page, *, number: int, total: int) -> Panel:
    """A page as a person sees it to judge it: every crawled string escaped for rich markup."""
    title = escape(_excerpt(page.title, TITLE_CHARS) or "(no title)")
    url = escape(_excerpt(page.final_url, URL_CHARS))
    relevance = "-" if page.relevance is None else f"{page.relevance:.3f}"
    reasons = ", ".join(f"{escape(k)} {v:.3f}" for k, v in sorted(page.reasons.items()))
    body = (
        f"[bold]{title}[/bold]\n[dim]{url}[/dim]\n"
        f"relevance {relevance}" + (f"   priority: {reasons}" if reasons else "") + "\n\n"
        f"{escape(_excerpt(page.text, EXCERPT_CHARS))}"
    )
    return Panel(body, title=f"page {number} of {total}", title_align="left")


async def label_pages(
    *, db: str, count: int, seed: int | None, topic: str, console: Console, ask: AskFn
) -> dict[str, int]:
    """Sample up to ``count`` unlabelled pages of the crawl in ``db``, ask for each, save.

    Returns:
        how many pages got each answer.

    Raises:
        StorageError: the database does not exist or cannot be read or written.
    """
    from topicrawl.engine.build import open_storage  # noqa: PLC0415 - slow import
    from topicrawl.storage.learned import FocusRecords  # noqa: PLC0415

    async with open_storage(db) as storage:  # opening runs the migrations (labels table)
        pages = [
            page
            async for page in storage.iter_pages()
            if page.status == 200 and page.duplicate_of is None
        ]
    counts = {"yes": 0, "no": 0, "skip": 0}
    async with FocusRecords(db) as records:
        done = await records.labels(topic=topic)
        waiting = [page for page in pages if page.url not in done]
        sample = random.Random(seed).sample(waiting, min(count, len(waiting)))
        if not sample:
            console.print("no unlabelled pages to show")
            return counts
        for number, page in enumerate(sample, 1):
            console.print(page_panel(page, number=number, total=len(sample)))
            answer = ask()
            if answer is None:
                break
            await records.save_label(page.url, answer, topic=topic)
            counts[answer] += 1
    return counts


def _ask(console: Console) -> str | None:
    """Ask until the answer is yes, no or skip (None: quit)."""
    while True:
        reply = typer.prompt("on topic? [y]es / [n]o / [s]kip / [q]uit", default="s")
        key = reply.strip().lower()
        if key in _QUIT:
            return None
        if key in _ANSWERS:
            return _ANSWERS[key]
        console.print("please answer y, n, s or q")


def label(
    db: Annotated[str, typer.Option(help="SQLite file or postgresql:// URL of a crawl.")],
    count: Annotated[int, typer.Option(help="Pages to show.", min=1)] = 20,
    seed: Annotated[int | None, typer.Option(help="Seed of the random sample.")] = None,
    topic: Annotated[str, typer.Option(help="Topic the labels are for (default: any).")] = "",
) -> None:
    """Show sampled pages of a crawl and record whether each is on topic (yes/no/skip)."""
    console = Console()
    try:
        counts = asyncio.run(
            label_pages(
                db=db,
                count=count,
                seed=seed,
                topic=topic,
                console=console,
                ask=lambda: _ask(console),
            )
        )
    except ConfigError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    except StorageError as exc:
        Console(stderr=True).print(f"[red]database error:[/red] {escape(str(exc))}")
        raise typer.Exit(4) from exc
    except TopicrawlError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc
    console.print(
        f"labelled: {counts['yes']} yes, {counts['no']} no, {counts['skip']} skipped; "
        "a focused crawl on this database now judges its threshold samples with them"
    )


async def learning_table(db: str) -> Table | None:
    """The topic vectors' evolution and the threshold history of the latest saved state of a
    focused crawl in ``db`` (None when there is none). Terms are escaped: they come from
    crawled text."""
    from topicrawl.focus import LearnedState  # noqa: PLC0415
    from topicrawl.storage.learned import FocusRecords  # noqa: PLC0415

    async with FocusRecords(db) as records:
        saved = await records.latest_state()
    if saved is None:
        return None
    state = LearnedState.from_json(saved.state)
    table = Table(title="what the focused crawl learned", title_justify="left")
    table.add_column("topic")
    table.add_column("after pages", justify="right")
    table.add_column("threshold", justify="right")
    table.add_column(f"top {_SHOWN_TERMS} terms (weight)")
    for topic in state.topics:
        for snapshot in topic.snapshots:
            terms = ", ".join(
                f"{escape(term)} {weight:.2f}" for term, weight in snapshot.weights[:_SHOWN_TERMS]
            )
            threshold = "-" if snapshot.threshold is None else f"{snapshot.threshold:.3f}"
            table.add_row(escape(topic.topic), str(snapshot.pages), threshold, terms)
    moves = " -> ".join(f"{value:.3f}@{pages}" for pages, value in state.thresholds[-8:])
    table.caption = "\n".join(
        [
            f"threshold now {state.threshold:.3f} after {state.pages} pages; last moves: "
            f"{moves}; {len(state.precisions)} precision samples",
            *_learner_lines(state),
        ]
    )
    return table


def _learner_lines(state: LearnedState) -> list[str]:
    """What the link learner learned and which pages were promoted to seeds (escaped: the
    feature names and URLs come from crawled pages)."""
    lines = []
    learner = state.learner
    if learner is not None:
        strongest = ", ".join(f"{escape(name)} {weight:+.2f}" for name, weight in learner.strongest)
        lines.append(
            f"link learner: {learner.examples} examples ({learner.positives} led to relevant "
            f"pages), {learner.updates} updates, blend weight {learner.weight:.2f}; strongest "
            f"features: {strongest or '-'}"
        )
    if state.seeded:
        lines.append(
            f"this session was seeded with {len(state.seeded)} pages the last one promoted"
        )
    if state.promoted:
        urls = ", ".join(escape(url) for url, _ in state.promoted)
        lines.append(f"promoted to seeds of the next session: {urls}")
    return lines


async def print_learning(console: Console, db: str) -> None:
    """Print :func:`learning_table` for ``db`` if a focused crawl saved a state there."""
    table = await learning_table(db)
    if table is not None:
        console.print(table)
