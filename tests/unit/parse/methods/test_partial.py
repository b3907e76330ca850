"""Partial records: a page where no method gets every required field is stored with what it
has, flagged, and teaches the library nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

from topicrawl.parse.methods import (
    MemoryLibraryStore,
    ParserLibrary,
    config_from_mapping,
    extract,
    url_pattern,
)
from topicrawl.storage.parsers import SqlParserStore
from topicrawl.storage.videostore import VideoStore

from .pages import FILM, SCHEMA_TOML, page

CONFIG = config_from_mapping(tomllib.loads(SCHEMA_TOML))
URL = "https://www.filmsite.com/film/{n}.html"


def _learn(library: ParserLibrary, html: str, n: int) -> object:
    url = URL.format(n=n)
    hint = library.hint_for(url)
    assert hint is not None
    schema = CONFIG.by_name(hint.schema)
    assert schema is not None
    outcome = extract(html, url, schema, hint)
    library.learn(outcome, url)
    return outcome


async def test_a_page_without_its_plays_is_stored_with_the_rest_and_flagged() -> None:
    store = MemoryLibraryStore()
    library = ParserLibrary(CONFIG, store=store)
    outcome = _learn(library, page("v1", shown_plays="n/a"), 1)
    assert outcome.method is None  # type: ignore[attr-defined]
    assert outcome.record is None  # type: ignore[attr-defined]
    assert outcome.missing == ("plays",)  # type: ignore[attr-defined]
    assert outcome.partial_method == "rules"  # type: ignore[attr-defined]
    assert outcome.partial["title"] == FILM["title"]  # type: ignore[attr-defined]
    assert outcome.partial["actors"] == FILM["actors"]  # type: ignore[attr-defined]
    assert "plays" not in outcome.partial  # type: ignore[attr-defined]
    # nothing learnt from it: no method remembered, a failure counted
    state = library.states()[url_pattern(URL.format(n=1))]
    assert (state.method, state.failures, state.successes) == (None, 1, 0)
    await library.sync()
    (stored,) = store.records.values()
    assert stored.partial
    assert stored.missing == ("plays",)
    assert stored.method == "partial:rules"
    # a whole page afterwards is a normal record, and the method is learnt from it
    _learn(library, page("v1"), 2)
    assert library.states()[url_pattern(URL.format(n=2))].method == "rules"


def test_a_page_with_nothing_valid_has_no_partial_record() -> None:
    library = ParserLibrary(CONFIG)
    outcome = _learn(library, "<html><body><p>gone</p></body></html>", 3)
    assert outcome.partial is None  # type: ignore[attr-defined]
    assert outcome.missing == ()  # type: ignore[attr-defined]


async def test_partial_records_are_kept_apart_in_the_database(tmp_path: Path) -> None:
    db = str(tmp_path / "crawl.db")
    async with VideoStore(db):  # creates the tables (migrations)
        pass
    async with SqlParserStore(db) as sql:
        library = ParserLibrary(CONFIG, store=sql)
        _learn(library, page("v1", shown_plays="n/a"), 1)
        _learn(library, page("v1"), 2)
        await library.sync()
        validated = await sql.records()
        everything = await sql.records(partial=True)
        counts = (await sql.count_records(), await sql.count_records(partial=True))
    assert list(validated) == [URL.format(n=2)]
    assert set(everything) == {URL.format(n=1), URL.format(n=2)}
    assert "plays" not in everything[URL.format(n=1)]
    assert counts == (1, 1)
