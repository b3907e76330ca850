"""The online link learner over HTTP, on a hand-made demo web where the hand-built prior is
misled: the links whose anchors name the topic lead to off-topic pages, and the links whose
anchors say nothing ("continue reading") lead to the relevant ones. Also: the seeds a
focused crawl promotes are used by its next session and shown by the CLI."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from topicrawl.cli.label import learning_table
from topicrawl.core.config import CrawlSettings
from topicrawl.core.models import Page
from topicrawl.demoweb import DemoWeb, DemoWebServer
from topicrawl.demoweb.model import DemoHost, DemoLink, DemoPage, Kind
from topicrawl.demoweb.text import TextGenerator, topic_by_id
from topicrawl.engine import open_crawl, open_storage, run_crawl
from topicrawl.focus import FocusedStrategy, LearnedState
from topicrawl.storage.learned import FocusRecords

HOST = "127.0.0.3"
TOPIC = "astronomy, telescope, planet, galaxy"
RELEVANT = 60


def _page(path: str, topic: str, number: int, links: list[DemoLink]) -> DemoPage:
    """An article about ``topic`` in the demo web's words, its own sentences for each page
    (the main-text extractor drops paragraphs it has seen on earlier pages)."""
    writer = TextGenerator(random.Random(f"{topic}-{number}"))
    subject = topic_by_id(topic)
    return DemoPage(
        host=HOST,
        path=path,
        kind=Kind.ARTICLE,
        title=writer.title(subject, "en"),
        lang="en",
        true_topic=topic,
        paragraphs=writer.paragraphs(subject, "en", 2),
        links=tuple(links),
    )


def _link(target: str, anchor: str, block: str) -> DemoLink:
    return DemoLink(host=HOST, target=target, anchor=anchor, block=block)


def misleading_web() -> DemoWeb:
    """Relevant pages ``/r{i}/page.html`` in a binary tree (the home page links to r0-r2);
    each links to two off-topic pages through anchors full of the topic's words and to its two
    children through "continue reading"."""
    pages = [
        DemoPage(
            host=HOST,
            path="/",
            kind=Kind.HOME,
            title="Evening club",
            lang="en",
            paragraphs=(("Welcome to the evening club.",),),
            links=tuple(
                _link(f"/r{i}/page.html", "Astronomy: telescope, planet, galaxy", "list")
                for i in range(3)
            ),
        )
    ]
    for i in range(RELEVANT):
        decoys = [
            _link(f"/d{j}/page.html", f"Telescope, planet and galaxy guide {j}", "related")
            for j in (2 * i, 2 * i + 1)
        ]
        children = [
            _link(f"/r{j}/page.html", "continue reading", "more")
            for j in (2 * i + 3, 2 * i + 4)
            if j < RELEVANT
        ]
        pages.append(_page(f"/r{i}/page.html", "astronomy", i, decoys + children))
        for j in (2 * i, 2 * i + 1):
            home = [_link("/", "home", "footer")]
            pages.append(_page(f"/d{j}/page.html", "cooking", j, home))
    return DemoWeb(
        hosts=(DemoHost(address=HOST, name="Evening club", lang="en"),), pages=tuple(pages)
    )


@pytest.fixture(scope="module")
def server() -> Iterator[DemoWebServer]:
    demo = DemoWebServer(misleading_web())
    with demo.run_in_thread():
        yield demo


def _settings(server: DemoWebServer, db: Path, pages: int, **options: object) -> CrawlSettings:
    return CrawlSettings(
        seeds=(server.web.base_url(HOST),),
        topics=(TOPIC,),
        strategy="focused",
        strategy_options=options,
        max_pages=pages,
        concurrency=1,
        parse_workers=0,
        politeness={"per_host": 1, "delay": 0.0},
        frontier={"kind": "sqlite"},
        scope={"allowed_domains": (HOST,)},
        fetch={"timeout": 5.0},
        storage={"url": str(db), "flush_interval": 0.2},
    )


async def _fetched(db: Path) -> list[Page]:
    async with open_storage(str(db)) as storage:
        return [page async for page in storage.iter_pages()]


LEARNER = {
    "learner": True,
    "learner_every": 5,
    "learner_evidence": 10.0,
    "learner_explore": 0.0,
}


async def test_the_learner_puts_the_links_that_led_to_relevant_pages_first(
    server: DemoWebServer, tmp_path: Path
) -> None:
    relevant_fetched: dict[str, int] = {}
    # The prior this site was built for: with session 17's topic_df_cap (on by default since)
    # the learner still fetches more relevant pages, but its strongest features are the
    # page's relevance, depth and importance, "continue" not among those kept (measured).
    prior = {"topic_df_cap": 1.0}
    for name, options in (("prior", prior), ("learner", {**prior, **LEARNER})):
        db = tmp_path / f"{name}.db"
        await run_crawl(_settings(server, db, 45, **options))
        pages = await _fetched(db)
        assert len(pages) == 45
        relevant_fetched[name] = sum(1 for p in pages if "/r" in p.url)
        if name == "learner":
            learned = pages
    # The prior takes every decoy as soon as it is found (its anchor names the topic): about
    # one relevant page in three. The learner soon ranks "continue reading" above them.
    assert relevant_fetched["prior"] <= 20, relevant_fetched
    assert relevant_fetched["learner"] >= relevant_fetched["prior"] + 10, relevant_fetched
    # What a page stores says why: the prior's part and the model's beside it.
    late = [p for p in learned if "/r" in p.url and "model" in p.reasons]
    assert late, "no page was fetched on the model's word"
    assert all(p.reasons["model"] > p.reasons["prior"] for p in late)
    async with FocusRecords(str(tmp_path / "learner.db")) as records:
        saved = await records.latest_state()
    assert saved is not None
    state = LearnedState.from_json(saved.state)
    assert state.learner is not None
    assert state.learner.examples >= 40
    strongest = dict(state.learner.strongest)
    assert strongest["a:continue"] > 0.0
    decoy_words = {"anchor", "block", "a:telescope", "a:planet", "a:and", "a:galaxy", "a:guide"}
    negative = {name for name, weight in strongest.items() if weight < 0.0}
    assert negative & decoy_words, strongest
    # The CLI summary says what the model learned.
    table = await learning_table(str(tmp_path / "learner.db"))
    assert table is not None
    console = Console(record=True, width=250)
    console.print(table)
    shown = console.export_text()
    assert "link learner" in shown
    assert "a:continue +" in shown
    assert f"{state.learner.examples} examples" in shown


async def test_promoted_pages_seed_the_next_session_and_are_reported(
    server: DemoWebServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "resume.db"
    await run_crawl(_settings(server, db, 30, **LEARNER))
    async with FocusRecords(str(db)) as records:
        saved = await records.latest_state()
    assert saved is not None
    promoted = [url for url, _ in LearnedState.from_json(saved.state).promoted]
    assert promoted
    assert all("/r" in url for url in promoted)
    table = await learning_table(str(db))
    assert table is not None
    console = Console(record=True, width=250)
    console.print(table)
    assert promoted[0] in console.export_text()

    with caplog.at_level(logging.WARNING, logger="topicrawl.focus.strategies"):
        async with open_crawl(_settings(server, db, 60, **LEARNER)) as crawler:
            strategy = crawler.strategy
            assert isinstance(strategy, FocusedStrategy)
            assert set(promoted) <= set(strategy.seeded)
            await crawler.run()
    assert f"seeding with {len(promoted)} pages the last session promoted" in caplog.text
    async with FocusRecords(str(db)) as records:
        resumed = LearnedState.from_json((await records.latest_state()).state)  # type: ignore[union-attr]
    assert set(promoted) <= set(resumed.seeded)
