"""Rows: hostile strings become storable, and pages survive the trip to SQLite and back."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topicrawl.core.models import Link, Page
from topicrawl.storage import SqlStorage
from topicrawl.storage.rows import PAGE_COLUMNS, clean, decode_body, page_row

hostile_text = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()),  # surrogates and NULs included
    max_size=200,
)


@given(hostile_text)
def test_cleaned_text_is_storable_utf8_without_nul(value: str) -> None:
    cleaned = clean(value)

    cleaned.encode("utf-8")
    assert "\x00" not in cleaned
    assert len(cleaned) == len(value)


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00")))
def test_clean_text_is_left_alone(value: str) -> None:
    assert clean(value) == value


def test_bodies_are_stored_compressed_and_read_back() -> None:
    body = b"<p>" + b"repetitive " * 1000 + b"</p>"
    page = Page(url="u", final_url="u", status=200, depth=0, fetched_at=0.0, content_type="t")

    stored = page_row(page, run_id=1, body=body, headers=None)[PAGE_COLUMNS.index("body")]

    assert len(stored) < len(body) / 10
    assert decode_body(stored) == body


pages = st.builds(
    Page,
    url=st.text(min_size=1, max_size=50).map(lambda s: "https://h/" + s),
    final_url=st.text(max_size=50),
    status=st.integers(100, 599),
    depth=st.integers(0, 1000),
    fetched_at=st.floats(0, 4e9),
    content_type=st.text(max_size=30),
    title=hostile_text,
    text=hostile_text,
    links=st.lists(
        st.builds(
            Link,
            url=st.text(max_size=40),
            anchor=hostile_text,
            block=st.integers(0, 50),
            block_text=hostile_text,
            nofollow=st.booleans(),
        ),
        max_size=5,
    ).map(tuple),
    relevance=st.none() | st.floats(-1e9, 1e9),
    reasons=st.dictionaries(st.text(max_size=10), st.floats(-1e6, 1e6), max_size=3),
    redirects=st.lists(st.text(max_size=30), max_size=3).map(tuple),
)


def storable(page: Page) -> Page:
    return Page(
        url=clean(page.url),
        final_url=clean(page.final_url),
        status=page.status,
        depth=page.depth,
        fetched_at=page.fetched_at,
        content_type=clean(page.content_type),
        title=clean(page.title),
        text=clean(page.text),
        links=tuple(
            Link(clean(li.url), clean(li.anchor), li.block, clean(li.block_text), li.nofollow)
            for li in page.links
        ),
        relevance=page.relevance,
        # JSON columns are written ASCII-escaped, so they come back exactly.
        reasons=page.reasons,
        redirects=page.redirects,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages)
def test_any_page_survives_sqlite(page: Page) -> None:
    with tempfile.TemporaryDirectory() as directory:
        stored = asyncio.run(_round_trip(Path(directory) / "crawl.db", page))

    expected = storable(page)
    assert stored == expected
    assert dict(stored.reasons) == dict(expected.reasons)


async def _round_trip(path: Path, page: Page) -> Page:
    async with SqlStorage(str(path)) as storage:
        await storage.save_page(page, run_id=1)
        [stored] = [p async for p in storage.iter_pages(with_links=True)]
        return stored
