"""Focused crawls of the demo web over HTTP: recall against ground truth, the learned state
kept in the database and continued on resume, and `topicrawl label` on a crawl database."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from topicrawl.cli.app import app
from topicrawl.cli.label import learning_table
from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import Page, StrategyResult
from topicrawl.demoweb import TOPICS, DemoWeb, DemoWebServer
from topicrawl.engine import open_crawl, open_storage, run_crawl
from topicrawl.engine.learning import restore_learning
from topicrawl.focus import FocusedStrategy, HumanJudge, LearnedState, make_strategy
from topicrawl.storage import SqlStorage
from topicrawl.storage.learned import FocusRecords, SavedState


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    web = DemoWeb.generate(seed=5, hosts=4, pages_per_host=30)
    demo = DemoWebServer(web, slow_delay=0.2)
    with demo.run_in_thread():
        yield demo


def _settings(server: DemoWebServer, db: Path, **extra: object) -> CrawlSettings:
    bases = server.web.bases()
    options: dict[str, object] = {
        "seeds": tuple(bases.values()),
        "max_pages": 0,
        "concurrency": 4,
        "parse_workers": 0,
        "politeness": {"per_host": 2},
        "frontier": {"kind": "sqlite"},
        "scope": {"allowed_domains": tuple(bases), "max_depth": 8},
        "fetch": {"timeout": 5.0, "backoff_base": 0.05, "backoff_max": 1.0},
        "storage": {"url": str(db), "flush_interval": 0.2},
    }
    options.update(extra)
    return CrawlSettings(**options)  # type: ignore[arg-type]


async def _pages(db: Path) -> list[Page]:
    async with open_storage(str(db)) as storage:
        return [page async for page in storage.iter_pages()]


async def test_focused_finds_twice_the_on_topic_pages_of_bfs_in_the_same_budget(
    server: DemoWebServer, tmp_path: Path
) -> None:
    """Recall of each topic's true pages (both languages' keywords) after 40 fetches."""
    web = server.web
    found = {"bfs": 0, "focused": 0}
    for topic in (TOPICS[1], TOPICS[3], TOPICS[4]):
        for strategy in found:
            db = tmp_path / f"{topic.id}-{strategy}.db"
            settings = _settings(
                server, db, strategy=strategy, topics=(topic.keywords(),), max_pages=40
            )
            await run_crawl(settings)
            pages = await _pages(db)
            assert len(pages) == 40
            found[strategy] += sum(
                1
                for p in pages
                if web.find(p.final_url) is not None and web.true_topic(p.final_url) == topic.id
            )
    assert found["focused"] >= 2 * found["bfs"] > 0, found


class _TermsSeen:
    """Wraps a strategy's ``on_page``, counting the pages that came with their terms."""

    def __init__(self, on_page: Callable[[Page], StrategyResult]) -> None:
        self._on_page = on_page
        self.pages = 0
        self.with_terms = 0

    def __call__(self, page: Page) -> StrategyResult:
        self.pages += 1
        self.with_terms += page.terms is not None
        return self._on_page(page)


async def test_terms_counted_in_the_parse_worker_leave_the_crawl_unchanged(
    server: DemoWebServer, tmp_path: Path
) -> None:
    """The worker's term counts (English and Chinese keywords, so jieba in the worker too)
    must give every page the same relevance, and so the crawl the same fetch order,
    as counting on the event loop. Both crawls are deterministic: one request in flight, no
    politeness delay, robots.txt (a Crawl-delay, ready or not by the clock) not read."""
    topic = TOPICS[1].keywords()
    crawls = []
    for workers in (0, 1):
        db = tmp_path / f"workers-{workers}.db"
        settings = _settings(
            server,
            db,
            strategy="focused",
            topics=(topic,),
            max_pages=60,
            concurrency=1,
            parse_workers=workers,
            politeness={"per_host": 1, "delay": 0.0, "obey_robots": False},
            frontier={"kind": "memory"},
            strategy_options={"evolve": True, "update_every": 5},
        )
        async with open_crawl(settings) as crawler:
            strategy = crawler.strategy
            assert isinstance(strategy, FocusedStrategy)
            seen = _TermsSeen(strategy.on_page)
            strategy.on_page = seen  # type: ignore[method-assign]
            await crawler.run()
            updates = len(strategy.topics[0].history)
        pages = await _pages(db)
        crawls.append(([(p.url, p.relevance) for p in pages], updates))
        assert len(pages) == 60
        assert (seen.pages, seen.with_terms) == (60, 60 if workers else 0)
    assert crawls[0] == crawls[1]
    assert crawls[0][1] > 1  # the topic vector was updated, so learned terms were scored too


async def test_learned_state_is_saved_and_a_resumed_crawl_continues_it(
    server: DemoWebServer, tmp_path: Path
) -> None:
    db = tmp_path / "resume.db"
    topic = TOPICS[0].keywords()
    options = {"evolve": True, "update_every": 5, "judge_every": 10}
    first = _settings(
        server, db, strategy="focused", topics=(topic,), max_pages=60, strategy_options=options
    )
    await run_crawl(first)
    async with FocusRecords(str(db)) as records:
        (saved,) = await records.states()
    state = LearnedState.from_json(saved.state)
    assert saved.pages == state.pages > 0
    learned = state.topics[0].snapshots
    assert len(learned) > 1  # the topic vector was updated during the crawl

    second = _settings(
        server, db, strategy="focused", topics=(topic,), max_pages=120, strategy_options=options
    )
    await run_crawl(second)
    async with FocusRecords(str(db)) as records:
        states = await records.states()
    assert len(states) == 2
    resumed = LearnedState.from_json(states[-1].state)
    # It went on from where the first stopped: same history first, more pages after.
    assert resumed.topics[0].snapshots[: len(learned)] == learned
    assert resumed.pages > state.pages
    assert resumed.thresholds[: len(state.thresholds)] == state.thresholds
    # The CLI shows the evolution: one row per topic vector value, with its terms.
    table = await learning_table(str(db))
    assert table is not None
    console = Console(record=True, width=200)
    console.print(table)
    shown = console.export_text()
    assert f"threshold now {resumed.threshold:.3f} after {resumed.pages} pages" in shown
    top_term = resumed.topics[0].snapshots[-1].weights[0][0]
    assert top_term in shown
    assert table.row_count == len(resumed.topics[0].snapshots)


async def _store(db: Path, pages: list[Page]) -> None:
    storage = SqlStorage(str(db))
    await storage.open()
    try:
        run_id = await storage.start_run(name="focused", config="{}")
        for page in pages:
            await storage.save_page(page, run_id=run_id)
    finally:
        await storage.close()


def _page(i: int, title: str, text: str) -> Page:
    return Page(
        url=f"http://h/{i}",
        final_url=f"http://h/{i}",
        status=200,
        depth=1,
        fetched_at=float(i),
        content_type="text/html",
        title=title,
        text=text,
        relevance=0.25,
        reasons={"anchor": 0.5, "inherited": 0.125},
    )


def test_label_command_shows_escaped_pages_and_records_answers(tmp_path: Path) -> None:
    db = tmp_path / "crawl.db"
    hostile = _page(0, "[red]alarm[/red]", "text with [bold]markup[/bold] and [link=x]a[/link]")
    asyncio.run(_store(db, [hostile, *(_page(i, f"page {i}", "crawler text") for i in (1, 2, 3))]))
    runner = CliRunner()
    result = runner.invoke(
        app, ["label", "--db", str(db), "--count", "4", "--seed", "1"], input="y\nn\nmaybe\ns\nq\n"
    )
    assert result.exit_code == 0, result.output
    # Crawled text is shown literally, never interpreted as markup.
    assert "[red]alarm[/red]" in result.output
    assert "[bold]markup[/bold]" in result.output
    assert "relevance 0.250" in result.output
    assert "please answer y, n, s or q" in result.output
    assert "labelled: 1 yes, 1 no, 1 skipped" in result.output

    async def read() -> dict[str, str]:
        async with FocusRecords(str(db)) as records:
            return await records.labels()

    labels = asyncio.run(read())
    assert sorted(labels.values()) == ["no", "skip", "yes"]
    # A second session shows only the page not labelled yet.
    again = runner.invoke(app, ["label", "--db", str(db), "--count", "4"], input="y\n")
    assert again.exit_code == 0, again.output
    assert "page 1 of 1" in again.output
    assert len(asyncio.run(read())) == 4


def test_label_command_on_a_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["label", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 4
    assert "does not exist" in " ".join(result.output.split())


async def test_stored_labels_become_the_threshold_judge(tmp_path: Path) -> None:
    db = tmp_path / "labels.db"
    await _store(db, [_page(1, "a", "crawler"), _page(2, "b", "crawler")])
    async with FocusRecords(str(db)) as records:
        await records.save_label("http://h/1", "no")
        await records.save_label("http://h/2", "skip")
        with pytest.raises(ValueError, match="label"):
            await records.save_label("http://h/2", "perhaps")
    strategy = make_strategy("focused", topics=["crawler"])
    assert isinstance(strategy, FocusedStrategy)
    await restore_learning(strategy, str(db))
    judge = strategy.judge
    assert isinstance(judge, HumanJudge)
    assert len(judge) == 1  # the skipped page is not a judgement
    # The person said no, whatever the text says; the unlabelled page goes to the fallback.
    assert not judge.is_relevant(_page(1, "a", "crawler crawler"))
    assert judge.is_relevant(_page(2, "b", "crawler crawler"))


async def test_learned_state_is_saved_during_the_crawl_not_only_at_its_end(
    server: DemoWebServer, tmp_path: Path
) -> None:
    # A crash (kill -9) skips the save at the end: what was learned must already be stored.
    db = tmp_path / "during.db"
    topic = TOPICS[0].keywords()
    settings = _settings(
        server,
        db,
        strategy="focused",
        topics=(topic,),
        max_pages=0,
        strategy_options={"evolve": True, "update_every": 5, "judge_every": 10},
        politeness={"per_host": 1, "delay": 0.05},
        storage={"url": str(db), "flush_interval": 0.1},
    )
    saved_while_running: list[SavedState] = []
    async with open_crawl(settings, learning_interval=0.2) as crawler:
        run = asyncio.create_task(crawler.run())
        try:
            deadline = asyncio.get_running_loop().time() + 60
            while not run.done() and asyncio.get_running_loop().time() < deadline:
                async with FocusRecords(str(db)) as records:
                    saved_while_running = await records.states()
                if saved_while_running:
                    break
                await asyncio.sleep(0.2)
            assert not run.done(), "the crawl ended before any state was saved during it"
        finally:
            crawler.stop()
            await run
    assert saved_while_running
    state = LearnedState.from_json(saved_while_running[-1].state)
    assert state.pages > 0
    assert len(state.topics[0].snapshots) > 1 or len(state.thresholds) > 0
