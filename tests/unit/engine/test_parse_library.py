"""The parse workers run the parser library's methods and the library learns from them."""

from __future__ import annotations

import tomllib

import pytest

from topicrawl.engine.parsing import PageParser
from topicrawl.parse.methods import ParserLibrary, config_from_mapping

from ..parse.methods.pages import FILM, SCHEMA_TOML, page
from .responses import html_response

CONFIG = config_from_mapping(tomllib.loads(SCHEMA_TOML))


@pytest.mark.parametrize("workers", [0, 1])
async def test_workers_extract_records_and_the_library_heals(workers: int) -> None:
    library = ParserLibrary(CONFIG)
    parser = PageParser(workers=workers, library=library)
    try:
        first = await parser(html_response(page("v1"), "https://filmsite.com/film/1.html"))
        changed = await parser(html_response(page("cosmetic"), "https://filmsite.com/film/2.html"))
        other = await parser(html_response(page("v1"), "https://elsewhere.org/film/1.html"))
    finally:
        await parser.close()
    assert first.extraction is not None
    assert first.extraction.method == "rules"
    assert first.extraction.record is not None
    assert first.extraction.record["title"] == FILM["title"]
    assert first.page.title.startswith(FILM["title"])  # the page is parsed as before
    assert changed.extraction is not None
    assert changed.extraction.method == "relocate"
    assert other.extraction is None  # no schema for that domain: nothing extracted
    (change,) = library.changes_seen
    assert change.new_method == "relocate"


async def test_a_library_without_schemas_changes_nothing() -> None:
    parser = PageParser(workers=0, library=ParserLibrary(config_from_mapping({})))
    try:
        result = await parser(html_response(page("v1"), "https://filmsite.com/film/1.html"))
    finally:
        await parser.close()
    assert result.extraction is None


async def test_hostile_structured_data_is_cut_off_in_the_worker_and_the_page_goes_on() -> None:
    # ~5 s of extruct (quadratic itemref resolution) against the 1 s budget per page.
    ids = " ".join(f"p{i}" for i in range(3000))
    scopes = f'<div itemscope itemtype="http://schema.org/Thing" itemref="{ids}"></div>' * 30
    props = "".join(f'<span id="p{i}" itemprop="name">x{i}</span>' for i in range(3000))
    fields = "<h1 class='film-title'>T</h1><span class='plays'>3K</span>"
    html = f"<html><body>{scopes}{props}{fields}</body></html>"
    parser = PageParser(workers=1, library=ParserLibrary(CONFIG))
    try:
        result = await parser(html_response(html, "https://filmsite.com/film/9.html"))
    finally:
        await parser.close()
    assert result.extraction is not None
    first = result.extraction.attempts[0]
    assert first.method == "structured"
    assert first.error is not None
    assert first.error.startswith("StructuredTimeout")
    assert result.extraction.record == {"title": "T", "plays": 3000}
