"""Full-text search and keyset pagination (storage.search) on SQLite and a real PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.core.models import Page
from topicrawl.storage import MIGRATIONS, SqlStorage
from topicrawl.storage.migrations import migrate
from topicrawl.storage.schema import PAGE_TOPIC_COLUMNS, PAGE_TOPIC_INDEXES
from topicrawl.storage.search import InvalidCursor, PageQuery, PageSummary, search_pages
from topicrawl.storage.target import WRITE_OPTION, create_engine, parse_target


@pytest.fixture
def url(store_url: str) -> str:
    return store_url


@pytest.fixture
async def reader(url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    yield engine
    await engine.dispose()


def page(n: int, **changes: Any) -> Page:
    fields: dict[str, Any] = {
        "url": f"http://host{n % 3}.test:8080/page/{n}",
        "final_url": f"http://host{n % 3}.test:8080/page/{n}",
        "status": 200,
        "depth": 1,
        "fetched_at": 1_700_000_000.0 + n // 2,  # two pages per second: ties on fetched_at
        "content_type": "text/html",
        "title": f"Page {n}",
        "text": f"filler words about nothing in particular, number {n}",
        "relevance": n / 40,
        "score": 1.0,
    }
    fields.update(changes)
    return Page(**fields)


async def store(url: str, pages: list[Page], *, run_id: int = 1) -> None:
    async with SqlStorage(url, flush_interval=30.0) as storage:
        for item in pages:
            await storage.save_page(item, run_id=run_id)


async def every_page(
    engine: AsyncEngine, query: PageQuery, *, limit: int
) -> list[list[PageSummary]]:
    """Each page of results, following the cursors to the end."""
    pages: list[list[PageSummary]] = []
    cursor: str | None = None
    while True:
        found, cursor = await search_pages(engine, query, after=cursor, limit=limit)
        pages.append(found)
        if cursor is None:
            return pages
        assert len(pages) < 100, "the cursors never end"


async def test_the_pages_list_is_newest_first_and_walks_every_page_once(
    url: str, reader: AsyncEngine
) -> None:
    await store(url, [page(n) for n in range(30)])

    batches = await every_page(reader, PageQuery(), limit=7)

    assert [len(batch) for batch in batches] == [7, 7, 7, 7, 2]
    found = [summary for batch in batches for summary in batch]
    keys = [(summary.fetched_at, summary.id) for summary in found]
    assert keys == sorted(keys, reverse=True)
    assert sorted(summary.url for summary in found) == sorted(page(n).url for n in range(30))
    first = found[-1]
    assert first.title == "Page 0"
    assert first.host == "host0.test:8080"
    assert first.snippet.startswith("filler words")


async def test_text_search_finds_every_match_once_best_first(url: str, reader: AsyncEngine) -> None:
    pages = [page(n) for n in range(24)]
    for n in (3, 8, 13, 21):
        pages[n] = page(n, text=f"a page that mentions the heliotrope once, number {n}")
    # Many mentions, and in the title: the best match.
    pages[17] = page(17, title="Heliotrope", text="heliotrope heliotrope heliotrope garden")
    await store(url, pages)

    batches = await every_page(reader, PageQuery(text="heliotrope"), limit=2)

    found = [summary.url for batch in batches for summary in batch]
    assert sorted(found) == sorted(pages[n].url for n in (3, 8, 13, 17, 21))
    assert found[0] == pages[17].url
    assert "heliotrope" in batches[0][0].snippet.lower()


async def test_all_words_must_match(url: str, reader: AsyncEngine) -> None:
    await store(
        url,
        [
            page(1, text="apples and pears"),
            page(2, text="apples only"),
            page(3, text="pears only"),
        ],
    )

    found, cursor = await search_pages(reader, PageQuery(text="pears  apples"))

    assert [summary.url for summary in found] == [page(1).url]
    assert cursor is None


@pytest.mark.parametrize(
    "words",
    [
        'apples OR "secret',
        "NEAR(apples secret)",
        "apples*",
        "title:secret",
        "'); DROP TABLE pages; --",
        "\\'); DROP TABLE pages; --",  # PostgreSQL gets the words inlined as a literal
        "$1 :name %(x)s ?",
        "线程'); DROP TABLE pages; --",
        '"',
        "^apples",
        "apples -secret",
    ],
)
async def test_words_are_never_query_syntax(url: str, reader: AsyncEngine, words: str) -> None:
    await store(url, [page(1, text="apples here"), page(2, text="a secret here")])

    found, _ = await search_pages(reader, PageQuery(text=words))

    # Whatever is found contains every word (its letters and digits at least): the OR, NEAR,
    # NOT, column filter or prefix syntax of the search engine never took effect.
    letters = [w.lower() for w in re.findall(r"\w+", words)]
    for summary in found:
        body = f"{summary.title} {summary.snippet}".lower()
        assert all(w in body for w in letters), (words, summary.snippet)
    listed, _ = await search_pages(reader, PageQuery())  # and the table is still there
    assert len(listed) == 2


@pytest.mark.parametrize("value", ["x'); DROP TABLE pages; --", "a:b :name $1 %(x)s %", "\\'"])
async def test_filter_values_are_never_query_syntax(
    url: str, reader: AsyncEngine, value: str
) -> None:
    await store(url, [page(1, text="apples here"), page(2, text="apples there")])

    for query in (PageQuery(text="apples", host=value), PageQuery(text="apples", topic=value)):
        found, _ = await search_pages(reader, query)
        assert found == []
    listed, _ = await search_pages(reader, PageQuery(text="apples"))  # the table is still there
    assert len(listed) == 2


async def test_postgres_indexes_pages_by_status(url: str, reader: AsyncEngine) -> None:
    await store(url, [page(1)])

    async with reader.connect() as connection:
        names = await connection.run_sync(
            lambda sync: {index["name"] for index in inspect(sync).get_indexes("pages")}
        )

    # Schema 13: a status filter narrows a text search by index (SQLite: ix_pages_filters).
    expected = "ix_pages_filters" if reader.dialect.name == "sqlite" else "ix_pages_status_id"
    assert expected in names


async def test_like_wildcards_in_short_words_are_literal(url: str, reader: AsyncEngine) -> None:
    if not url.endswith(".db"):
        pytest.skip("PostgreSQL's parser drops the punctuation of words: no LIKE involved")
    await store(url, [page(1, text="it rose 9% today"), page(2, text="it rose 95 today")])

    found, _ = await search_pages(reader, PageQuery(text="9%"))

    assert [summary.url for summary in found] == [page(1).url]


async def test_chinese_words_are_found_inside_unspaced_text(url: str, reader: AsyncEngine) -> None:
    await store(
        url,
        [
            page(1, title="新闻", text="中华人民共和国的首都是北京"),
            page(2, title="天气", text="今天上海下雨"),
        ],
    )

    for words in ("人民", "人民共和国", "北京"):
        found, _ = await search_pages(reader, PageQuery(text=words))
        assert [summary.url for summary in found] == [page(1).url], words
    found, _ = await search_pages(reader, PageQuery(text="上海"))
    assert [summary.url for summary in found] == [page(2).url]
    # One character (a scan), and pieces that are not substrings (PostgreSQL searches a word of
    # two or more as the phrase of its bigrams: both bigrams are there, not in that order).
    found, _ = await search_pages(reader, PageQuery(text="雨"))
    assert [summary.url for summary in found] == [page(2).url]
    for absent in ("京北", "人共和", "首北京"):
        found, _ = await search_pages(reader, PageQuery(text=absent))
        assert found == [], absent
    found, _ = await search_pages(reader, PageQuery(text="首都 people"))
    assert found == []


async def test_postgres_keeps_a_stored_vector_with_cjk_bigrams(
    url: str, reader: AsyncEngine
) -> None:
    if not url.startswith("postgres"):
        pytest.skip("the stored tsvector is PostgreSQL's")
    await store(url, [page(1, title="Thread", text="并发的线程 and a Thread pool")])

    async with reader.connect() as connection:
        vector = (await connection.execute(text("SELECT search_vector::text FROM pages"))).scalar()
        indexes = {
            row[0]
            for row in await connection.execute(
                text(
                    "SELECT indexname FROM pg_indexes "
                    "WHERE tablename = 'pages' AND schemaname = current_schema()"
                )
            )
        }
    assert vector is not None
    for token in ("'thread'", "'pool'", "'并发'", "'发的'", "'的线'", "'线程'"):
        assert token in vector, token
    assert "ix_pages_search_vector" in indexes
    assert "ix_pages_fulltext" not in indexes  # the expression index it replaces
    found, _ = await search_pages(reader, PageQuery(text="线程 thread"))
    assert [summary.url for summary in found] == [page(1).url]


async def test_filters_narrow_the_list_and_the_search(url: str, reader: AsyncEngine) -> None:
    topics = ("java thread", "python asyncio", None)
    pages = [page(n, status=404 if n % 4 == 0 else 200, topic=topics[n % 5 % 3]) for n in range(20)]
    await store(url, pages[:10], run_id=1)
    await store(url, pages[10:], run_id=2)

    async def urls(**fields: Any) -> set[str]:
        batches = await every_page(reader, PageQuery(**fields), limit=3)
        return {summary.url for batch in batches for summary in batch}

    def expected(keep: Any) -> set[str]:
        return {p.url for n, p in enumerate(pages) if keep(n, p)}

    assert await urls(host="host1.test:8080") == expected(lambda n, p: n % 3 == 1)
    # A bare name stands for every port of that name, and is not a prefix of other names.
    assert await urls(host="host1.test") == expected(lambda n, p: n % 3 == 1)
    assert await urls(host="host1.tes") == set()
    assert await urls(host="host1.test:9999") == set()
    assert await urls(status=404) == expected(lambda n, p: p.status == 404)
    assert await urls(min_relevance=0.25, max_relevance=0.3) == expected(
        lambda n, p: 0.25 <= p.relevance <= 0.3
    )
    assert await urls(since=1_700_000_002.0, until=1_700_000_004.0) == expected(
        lambda n, p: 2 <= n // 2 <= 4
    )
    assert await urls(run_id=2) == expected(lambda n, p: n >= 10)
    assert await urls(text="particular", host="host2.test:8080", status=200) == expected(
        lambda n, p: n % 3 == 2 and p.status == 200
    )
    assert await urls(topic="java thread") == expected(lambda n, p: p.topic == "java thread")
    assert await urls(topic="python asyncio", text="particular", status=200) == expected(
        lambda n, p: p.topic == "python asyncio" and p.status == 200
    )
    assert await urls(topic="java") == set()


async def test_a_page_fetched_again_is_searched_by_its_new_text(
    url: str, reader: AsyncEngine
) -> None:
    await store(url, [page(1, text="the old wording"), page(2, text="unrelated")])
    await store(url, [page(1, text="the new phrasing", fetched_at=1_800_000_000.0)])

    old, _ = await search_pages(reader, PageQuery(text="wording"))
    new, _ = await search_pages(reader, PageQuery(text="phrasing"))

    assert old == []
    assert [summary.url for summary in new] == [page(1).url]


async def test_snippets_are_plain_text_as_stored(url: str, reader: AsyncEngine) -> None:
    hostile = '<script>alert("x")</script> marigold <b onclick="steal()">bold</b>'
    await store(url, [page(1, title="<i>t</i>", text=hostile)])

    found, _ = await search_pages(reader, PageQuery(text="marigold"))

    assert found[0].snippet == hostile  # escaping is the template's job, not the search's
    assert found[0].title == "<i>t</i>"


async def test_cursors_from_elsewhere_are_refused(url: str, reader: AsyncEngine) -> None:
    await store(url, [page(n) for n in range(5)])
    _, list_cursor = await search_pages(reader, PageQuery(), limit=2)
    assert list_cursor is not None

    for cursor in ("not a cursor", "eyJ4IjoxfQ", "WyJuIiwxLDEsMV0"):
        with pytest.raises(InvalidCursor):
            await search_pages(reader, PageQuery(), after=cursor)
    with pytest.raises(InvalidCursor):
        await search_pages(reader, PageQuery(text="filler"), after=list_cursor)
    with pytest.raises(ValueError, match="limit"):
        await search_pages(reader, PageQuery(), limit=0)


async def test_pages_stored_before_the_migration_get_a_host_and_are_searchable(
    url: str, reader: AsyncEngine
) -> None:
    # A database as schema version 5 left it: no pages.host, no full-text index.
    writer = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    try:
        async with writer.execution_options(**{WRITE_OPTION: True}).begin() as connection:
            if "schema=" in url:
                schema = url.rsplit("schema=", 1)[1]
                await connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
            await migrate(connection, MIGRATIONS[:5])
            for index in (
                *PAGE_TOPIC_INDEXES,
                "ix_pages_host_fetched_at",
                "ix_pages_fetched_at_id",
            ):
                await connection.execute(text(f"DROP INDEX IF EXISTS {index}"))
            for column in (*PAGE_TOPIC_COLUMNS, "host"):
                await connection.execute(text(f"ALTER TABLE pages DROP COLUMN {column}"))
            for n in range(3):
                await connection.execute(
                    text(
                        "INSERT INTO pages (url, final_url, status, depth, fetched_at, "
                        "content_type, title, text, score, reasons, elapsed, size, redirects, "
                        "noindex) VALUES (:url, :url, 200, 0, :at, 'text/html', :title, "
                        ":body, 0, '{}', 0, 0, '[]', false)"
                    ),
                    {
                        "url": f"https://old{n}.example/a",
                        "at": float(n),
                        "title": f"old {n}",
                        "body": "saxophone" if n == 1 else "drums",
                    },
                )
    finally:
        await writer.dispose()

    await store(url, [page(9, text="a saxophone too")])  # opening migrates to the latest

    found, _ = await search_pages(reader, PageQuery(text="saxophone"))
    assert sorted(summary.url for summary in found) == sorted(
        ["https://old1.example/a", page(9).url]
    )
    listed, _ = await search_pages(reader, PageQuery(host="old2.example"))
    assert [(summary.url, summary.host) for summary in listed] == [
        ("https://old2.example/a", "old2.example")
    ]
    # Migration 8 gave the old database its indexes: the filters' one on SQLite only.
    async with reader.connect() as connection:
        indexes = await connection.run_sync(
            lambda sync: {index["name"] for index in inspect(sync).get_indexes("pages")}
        )
    assert "ix_pages_topic_fetched_at" in indexes
    assert ("ix_pages_filters" in indexes) == url.startswith("/")


async def test_the_indexes_follow_text_that_changes_script_and_deleted_pages(
    url: str, reader: AsyncEngine
) -> None:
    await store(url, [page(1, text="北京欢迎你的到来"), page(2, text="plain english words")])
    await store(url, [page(1, text="now in english", fetched_at=1_800_000_000.0)])
    await store(url, [page(2, text="现在是中文了 北京欢迎你", fetched_at=1_800_000_000.0)])

    for words, expected in [
        ("北京欢迎", [page(2).url]),
        ("english", [page(1).url]),
        ("plain", []),
    ]:
        found, _ = await search_pages(reader, PageQuery(text=words))
        assert [summary.url for summary in found] == expected, words

    async with reader.begin() as connection:
        await connection.execute(text("DELETE FROM pages WHERE url = :url"), {"url": page(2).url})
    found, _ = await search_pages(reader, PageQuery(text="北京欢迎"))
    assert found == []
    found, _ = await search_pages(reader, PageQuery(text="english"))
    assert [summary.url for summary in found] == [page(1).url]


async def test_sqlite_ranks_the_newest_matches_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("topicrawl.storage.search.RANKED", 3)
    url = str(tmp_path / "crawl.db")
    # The best match (most mentions) is the oldest: out of the ranked window.
    pages = [page(0, text="lupin " * 30)] + [
        page(n, text=f"one lupin, page {n}") for n in range(1, 7)
    ]
    await store(url, pages)
    engine = create_engine(parse_target(url), busy_timeout=5.0, connect_timeout=5.0)
    try:
        batches = await every_page(engine, PageQuery(text="lupin"), limit=2)
        on_host = await every_page(engine, PageQuery(text="lupin", host="host1.test:8080"), limit=5)
    finally:
        await engine.dispose()

    found = [summary.url for batch in batches for summary in batch]
    assert sorted(found) == sorted(page(n).url for n in (4, 5, 6))
    # The window is taken after the filters: the newest 3 matches on that host.
    assert sorted(s.url for batch in on_host for s in batch) == sorted(page(n).url for n in (1, 4))


@pytest.mark.parametrize(
    ("word", "topic", "walk_density"),
    [
        ("common", None, 0.2),  # in most pages: found in the first window
        ("middle", None, 0.02),  # denser than walk_density: the walk goes on down the key
        ("rare", None, 0.2),  # in a few: one query by the index bitmaps
        ("middle", None, 0.2),  # in between: windows of ids
        ("middle", "python asyncio", 0.2),  # windows, the filter's bitmap ANDed
        ("中文词", None, 0.2),  # one bigram looked up (in 英文词典 too), the word by LIKE
    ],
)
async def test_a_search_ranks_exactly_the_newest_matches_however_it_reads_them(
    url: str,
    reader: AsyncEngine,
    monkeypatch: pytest.MonkeyPatch,
    word: str,
    topic: str | None,
    walk_density: float,
) -> None:
    # Small windows and rank set over 400 pages, so each way of reading the matches (walk,
    # bitmaps, several windows) covers many steps; what comes back must be the newest RANKED
    # matches, as one pass over every page finds them.
    import topicrawl.storage.search as search  # noqa: PLC0415

    monkeypatch.setattr(search, "RANKED", 4)
    monkeypatch.setattr(search, "_FIRST_WINDOW", 32)
    monkeypatch.setattr(search, "_WALK_DENSITY", walk_density)
    monkeypatch.setattr(search, "_WINDOW_GROWTH", 2)
    topics = ("java thread", "python asyncio", None)

    def words(n: int) -> str:
        found = ["filler"]
        found += ["common"] if n % 4 else []
        found += ["middle"] if n % 23 == 0 else []
        found += ["rare"] if n in {3, 150, 170} else []
        found += ["的中文词语"] if n % 29 == 0 else (["英文词典"] if n % 7 == 0 else [])
        return " ".join(found)

    pages = [page(n, text=words(n), topic=topics[n % 3]) for n in range(400)]
    await store(url, pages)
    matching = [
        p.url for p in pages if word in p.text.split() or (word == "中文词" and word in p.text)
    ]
    if topic is not None:
        matching = [p.url for p in pages if p.url in matching and p.topic == topic]
    expected = set(matching[-4:])  # stored in order: the newest are last

    batches = await every_page(reader, PageQuery(text=word, topic=topic), limit=4)
    found = [summary.url for batch in batches for summary in batch]
    assert len(found) == len(set(found))
    assert set(found) == expected
