"""The Storage contract, run against SQLite and a real PostgreSQL (one fresh schema per test)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import asyncpg
import pytest
from sqlalchemy import select

from topicrawl.core.errors import StorageError
from topicrawl.core.models import ErrorKind, FetchFailure, Link, LinkScore, Page
from topicrawl.core.protocols import Storage
from topicrawl.storage import SqlStorage
from topicrawl.storage.link_scores import decode_link_scores
from topicrawl.storage.schema import pages
from topicrawl.storage.target import create_engine, parse_target

Factory = Callable[..., SqlStorage]


def make_page(n: int, **changes: Any) -> Page:
    fields: dict[str, Any] = {
        "url": f"https://example.org/page/{n}",
        "final_url": f"https://example.org/page/{n}",
        "status": 200,
        "depth": n % 4,
        "fetched_at": 1_700_000_000.25 + n,
        "content_type": "text/html",
        "title": f"Page {n}",
        "text": f"text of page {n} " * 20,
        "links": (
            Link(f"https://example.org/page/{n + 1}", "next", block=0, block_text="next prev"),
            Link(f"https://example.org/page/{n - 1}", "prev", block=0, block_text="next prev"),
            Link("https://other.example/", "elsewhere", block=1, nofollow=True),
        ),
        "lang": "en",
        "parent_url": f"https://example.org/page/{n - 1}" if n else None,
        "content_hash": f"hash-{n}",
        "relevance": 0.5,
        "score": 1.5,
        "reasons": {"anchor": 0.25, "inherited": 0.125},
        "elapsed": 0.042,
        "size": 1234 + n,
        "encoding": "utf-8",
        "redirects": (f"http://example.org/page/{n}",),
    }
    fields.update(changes)
    return Page(**fields)


@pytest.fixture
def storage_url(store_url: str) -> str:
    return store_url


@pytest.fixture
async def make_storage(storage_url: str) -> AsyncIterator[Factory]:
    made: list[SqlStorage] = []

    def make(**options: Any) -> SqlStorage:
        options.setdefault("flush_interval", 30.0)
        storage = SqlStorage(storage_url, **options)
        made.append(storage)
        return storage

    yield make
    for storage in made:
        await storage.close()


@pytest.fixture
async def storage(make_storage: Factory) -> SqlStorage:
    opened = make_storage()
    await opened.open()
    return opened


async def pages_of(storage: SqlStorage, *, with_links: bool = False) -> list[Page]:
    return [page async for page in storage.iter_pages(with_links=with_links)]


def test_sql_storage_is_a_storage() -> None:
    assert isinstance(SqlStorage("unused.db"), Storage)


async def test_saving_a_url_again_replaces_its_row_and_links(storage: SqlStorage) -> None:
    run = await storage.start_run(name="t", config="{}")
    await storage.save_page(make_page(1), run_id=run)
    await storage.flush()
    newer = make_page(1, status=404, title="Gone", links=(Link("https://x.example/", "x"),))
    await storage.save_page(newer, run_id=run)
    # Saved twice within one buffered batch, too: still one row.
    await storage.save_page(make_page(2), run_id=run)
    await storage.save_page(make_page(2, title="Two, again"), run_id=run)

    stored = await pages_of(storage, with_links=True)

    assert await storage.count_pages() == 2
    assert [(p.url, p.status, p.title) for p in stored] == [
        (newer.url, 404, "Gone"),
        (make_page(2).url, 200, "Two, again"),
    ]
    assert stored[0].links == (Link("https://x.example/", "x"),)


async def test_a_late_write_of_an_older_fetch_keeps_the_newer_row(storage: SqlStorage) -> None:
    run = await storage.start_run(name="t", config="{}")
    newer = make_page(1, title="fetched again", fetched_at=1_800_000_000.0)
    await storage.save_page(newer, run_id=run)
    await storage.flush()
    await storage.save_page(make_page(1, title="stale"), run_id=run)  # older fetched_at
    await storage.save_page(make_page(2, title="first", fetched_at=5.0), run_id=run)
    await storage.save_page(make_page(2, title="stale", fetched_at=4.0), run_id=run)  # same batch

    stored = await pages_of(storage)

    assert sorted((p.url, p.title, p.fetched_at) for p in stored) == [
        (newer.url, "fetched again", 1_800_000_000.0),
        (make_page(2).url, "first", 5.0),
    ]


async def test_pages_come_back_in_fetch_order_across_batches(make_storage: Factory) -> None:
    storage = make_storage(batch_size=7)
    await storage.open()
    order = [5, 3, 9, 1, 0, 8, 2, 7, 4, 6, 12, 10, 11, 15, 14, 13, 16, 19, 18, 17]
    for n in order:
        await storage.save_page(make_page(n), run_id=1)
    await storage.save_page(make_page(9, title="refetched"), run_id=1)

    stored = await pages_of(storage)

    assert [page.url for page in stored] == [make_page(n).url for n in order]
    assert stored[2].title == "refetched"


async def test_a_page_reads_back_as_saved(storage: SqlStorage) -> None:
    page = make_page(3, relevance=None, noindex=True, lang=None, duplicate_of="https://d/")

    await storage.save_page(page, run_id=1)
    [stored] = await pages_of(storage, with_links=True)

    assert stored == page
    assert dict(stored.reasons) == dict(page.reasons)


async def test_iterating_without_links_leaves_them_out(storage: SqlStorage) -> None:
    await storage.save_page(make_page(1), run_id=1)
    await storage.save_page(make_page(2, links=()), run_id=1)

    with_links = await pages_of(storage, with_links=True)
    without = await pages_of(storage)

    assert [len(p.links) for p in with_links] == [3, 0]
    assert with_links[0].links == make_page(1).links
    assert [p.links for p in without] == [(), ()]


async def test_iteration_streams_more_pages_than_one_chunk(storage: SqlStorage) -> None:
    for n in range(1203):
        await storage.save_page(make_page(n, text="t", links=make_page(n).links[:1]), run_id=1)

    stored = await pages_of(storage, with_links=True)

    assert [p.url for p in stored] == [make_page(n).url for n in range(1203)]
    assert all(p.links == make_page(n).links[:1] for n, p in enumerate(stored))


def many_links(count: int) -> tuple[Link, ...]:
    """``count`` links in blocks of 100 sharing very long block texts (tens of KB, non-ASCII),
    some with a block text of their own, some nofollow."""
    links = []
    for n in range(count):
        block = n // 100
        block_text = f"Klasse {block} — método ☕ {block} " * 2000
        if n % 997 == 0:
            block_text = f"a block text of its own {n} " * 4000
        links.append(
            Link(
                url=f"https://docs.example/api/java.base/pkg{block}/Class{n}.html#method-{n}",
                anchor=f"Class{n}.method{n}(int, String) — ünïcode",
                block=block,
                block_text=block_text,
                nofollow=n % 7 == 0,
            )
        )
    return tuple(links)


async def test_a_page_with_thousands_of_links_comes_back_exactly(make_storage: Factory) -> None:
    page = make_page(1, links=many_links(5000))
    writer = make_storage()
    await writer.open()
    await writer.save_page(page, run_id=1)
    await writer.save_page(make_page(2), run_id=1)

    assert await pages_of(writer, with_links=True) == [page, make_page(2)]
    await writer.close()
    reader = make_storage()
    await reader.open()
    [stored, _] = await pages_of(reader, with_links=True)
    assert stored.links == page.links


async def test_content_hash_is_found_while_still_buffered(storage: SqlStorage) -> None:
    await storage.save_page(make_page(1, content_hash="same"), run_id=1)
    await storage.save_page(
        make_page(2, content_hash="same", duplicate_of=make_page(1).url), run_id=1
    )

    assert storage.stats.buffered_pages == 2
    assert await storage.find_content_hash("same") == make_page(1).url
    assert await storage.find_content_hash("other") is None

    await storage.flush()

    assert storage.stats.buffered_pages == 0
    assert await storage.find_content_hash("same") == make_page(1).url


async def test_content_hash_held_by_a_duplicate_points_at_the_original(
    storage: SqlStorage,
) -> None:
    await storage.save_page(make_page(2, content_hash="h", duplicate_of="https://orig/"), run_id=1)
    assert await storage.find_content_hash("h") == "https://orig/"
    await storage.flush()
    assert await storage.find_content_hash("h") == "https://orig/"


async def test_failures_are_kept_in_order_one_per_url(storage: SqlStorage) -> None:
    run = await storage.start_run(name="t", config="{}")
    first = FetchFailure("https://a/", ErrorKind.TIMEOUT, "timed out after 20 s", 1.5)
    other = FetchFailure("https://b/", ErrorKind.HTTP_NOT_FOUND, "404", 2.5, 404, 3, "https://a", 2)
    again = FetchFailure("https://a/", ErrorKind.ROBOTS, "disallowed", 3.5)
    for failure in (first, other, again):
        await storage.save_failure(failure, run_id=run)

    # The URL's latest failure, in the place of its first.
    assert [f async for f in storage.iter_failures()] == [again, other]


async def test_a_failure_saved_again_after_a_crash_is_one_row(make_storage: Factory) -> None:
    # Issue 26: a failure stored, the process killed before the frontier's ack was durable,
    # the URL leased again and failed again: it got a second row.
    before = make_storage()
    await before.open()
    await before.save_failure(FetchFailure("https://a/", ErrorKind.TIMEOUT, "slow", 1.0), run_id=1)
    await before.flush()
    await before.close()
    after = make_storage()
    await after.open()
    again = FetchFailure("https://a/", ErrorKind.CONNECTION, "reset", 2.0, attempts=3)
    await after.save_failure(again, run_id=2)
    await after.flush()
    # A late write of an older failure (a worker cut off past its lease) changes nothing.
    await after.save_failure(FetchFailure("https://a/", ErrorKind.DNS, "old", 0.5), run_id=1)

    assert [f async for f in after.iter_failures()] == [again]


async def test_runs_start_and_finish(storage: SqlStorage) -> None:
    first = await storage.start_run(name="first", config='{"max_pages": 10}')
    second = await storage.start_run(name="second", config="{}")
    await storage.save_page(make_page(1), run_id=first)

    await storage.finish_run(first, stats='{"pages": 1}')

    run = await storage.get_run(first)
    assert second > first
    assert run is not None
    assert (run.name, run.config, run.stats) == ("first", '{"max_pages": 10}', '{"pages": 1}')
    assert run.finished_at is not None
    assert run.finished_at >= run.started_at
    unfinished = await storage.get_run(second)
    assert unfinished is not None
    assert unfinished.finished_at is None
    assert await storage.get_run(second + 100) is None
    # Finishing a run flushes its pages first.
    assert storage.stats.buffered_pages == 0


async def test_finishing_an_unknown_run_is_an_error(storage: SqlStorage) -> None:
    with pytest.raises(StorageError, match="no run 4242"):
        await storage.finish_run(4242, stats="{}")


async def test_close_writes_the_buffer_durably(make_storage: Factory) -> None:
    writer = make_storage()
    await writer.open()
    for n in range(30):
        await writer.save_page(make_page(n), run_id=1)
    await writer.save_failure(
        FetchFailure("https://f/", ErrorKind.DNS, "no such host", 9.0), run_id=1
    )
    assert writer.stats.buffered_pages == 30
    await writer.close()

    reader = make_storage()
    await reader.open()

    assert await reader.count_pages() == 30
    assert await pages_of(reader, with_links=True) == [make_page(n) for n in range(30)]
    assert [f.url async for f in reader.iter_failures()] == ["https://f/"]
    # Content hashes written by an earlier process are found (and absent ones are not).
    assert await reader.find_content_hash("hash-7") == make_page(7).url
    assert await reader.find_content_hash("hash-never-stored") is None


async def test_the_background_writer_flushes_without_being_asked(make_storage: Factory) -> None:
    writer = make_storage(flush_interval=0.05)
    await writer.open()
    await writer.save_page(make_page(1), run_id=1)
    reader = make_storage()
    await reader.open()

    for _ in range(200):
        if writer.stats.pages_written:
            break
        await asyncio.sleep(0.05)

    assert await reader.count_pages() == 1


async def test_a_full_batch_is_written_at_once(make_storage: Factory) -> None:
    writer = make_storage(batch_size=5)
    await writer.open()
    for n in range(5):
        await writer.save_page(make_page(n), run_id=1)

    for _ in range(200):
        if writer.stats.pages_written == 5:
            break
        await asyncio.sleep(0.02)

    assert writer.stats.pages_written == 5
    assert writer.stats.batches == 1


async def test_hostile_text_is_stored(storage: SqlStorage) -> None:
    hostile = "nul\x00 <script>alert(1)</script> \u202eevil 漢字 😀 \ud800 end"
    page = make_page(
        1,
        title=hostile,
        text=hostile * 50,
        links=(
            Link("https://l/" + hostile, hostile, block=3, block_text=hostile * 3),
            Link("https://l/2", "plain", block=3, block_text=hostile * 3, nofollow=True),
        ),
    )

    await storage.save_page(page, run_id=1)
    [stored] = await pages_of(storage, with_links=True)

    expected = hostile.replace("\x00", "\ufffd").replace("\ud800", "?")
    assert stored.title == expected
    assert stored.text == expected * 50
    assert stored.links == (
        Link("https://l/" + expected, expected, block=3, block_text=expected * 3),
        Link("https://l/2", "plain", block=3, block_text=expected * 3, nofollow=True),
    )


async def test_bodies_are_kept_only_when_asked(make_storage: Factory) -> None:
    body = b"<html>\x00\xff binary-safe body</html>" * 100
    headers = {"Content-Type": "text/html; charset=utf-8", "Server": "demo"}
    keeping = make_storage(keep_body=True)
    await keeping.open()
    await keeping.save_page(make_page(1), run_id=1, body=body, headers=headers)
    await keeping.save_page(make_page(2), run_id=1)

    archived = [item async for item in keeping.iter_archived()]

    assert [(a.body, a.headers) for a in archived] == [(body, headers), (None, None)]
    assert archived[0].page == make_page(1, links=())

    await keeping.close()
    plain = make_storage(keep_body=False)
    await plain.open()
    await plain.save_page(make_page(3), run_id=1, body=body, headers=headers)
    assert [a.body async for a in plain.iter_archived()][-1] is None


async def test_link_priorities_are_kept_unless_turned_off(
    make_storage: Factory, storage_url: str
) -> None:
    scores = (LinkScore("https://example.org/page/2", 0.75, {"anchor": 0.5}),)
    stored: dict[bool, str | None] = {}
    for keep in (True, False):
        storage = make_storage(keep_link_scores=keep)
        await storage.open()
        page = make_page(1 if keep else 3, link_scores=scores)
        await storage.save_page(page, run_id=1)
        await storage.close()
        engine = create_engine(parse_target(storage_url), busy_timeout=5.0, connect_timeout=10.0)
        try:
            async with engine.connect() as connection:
                stored[keep] = (
                    await connection.execute(
                        select(pages.c.link_scores).where(pages.c.url == page.url)
                    )
                ).scalar_one()
        finally:
            await engine.dispose()

    assert stored[False] is None
    assert decode_link_scores(stored[True], make_page(1).links) == {
        "https://example.org/page/2": scores[0]
    }


async def test_storages_opened_together_migrate_once(make_storage: Factory) -> None:
    storages = [make_storage() for _ in range(3)]

    await asyncio.gather(*(s.open() for s in storages))
    await storages[0].save_page(make_page(1), run_id=1)
    await storages[0].flush()

    assert [await s.count_pages() for s in storages] == [1, 1, 1]


async def test_closing_twice_at_once_writes_once_and_both_wait(make_storage: Factory) -> None:
    writer = make_storage()
    await writer.open()
    for n in range(10):
        await writer.save_page(make_page(n), run_id=1)

    await asyncio.gather(writer.close(), writer.close())
    await writer.close()

    reader = make_storage()
    await reader.open()
    assert await reader.count_pages() == 10


async def test_using_a_closed_storage_is_an_error(storage: SqlStorage) -> None:
    await storage.close()
    with pytest.raises(StorageError, match="closed"):
        await storage.save_page(make_page(1), run_id=1)


# -- PostgreSQL: a connection dropped mid-run ------------------------------------------------


async def _kill_pages_writes(storage_url: str, *, times: int | None) -> None:
    """Make the server terminate the backend that inserts into ``pages`` (``times`` times)."""
    base, _, query = storage_url.partition("?")
    schema = query.removeprefix("schema=")
    condition = f"nextval('kills') <= {times}" if times is not None else "true"
    connection = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(f'SET search_path TO "{schema}"')
        await connection.execute("CREATE SEQUENCE IF NOT EXISTS kills")
        await connection.execute(
            f"""
            CREATE OR REPLACE FUNCTION kill_writer() RETURNS trigger AS $$
            BEGIN
                IF {condition} THEN
                    PERFORM pg_terminate_backend(pg_backend_pid());
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql
            """
        )
        await connection.execute(
            "CREATE OR REPLACE TRIGGER kill_writer BEFORE INSERT ON pages "
            "FOR EACH STATEMENT EXECUTE FUNCTION kill_writer()"
        )
    finally:
        await connection.close()


async def _stop_killing(storage_url: str) -> None:
    base, _, query = storage_url.partition("?")
    connection = await asyncpg.connect(base.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        schema = query.removeprefix("schema=")
        await connection.execute(f'DROP TRIGGER kill_writer ON "{schema}".pages')
    finally:
        await connection.close()


async def test_postgres_write_survives_a_dropped_connection(
    storage_url: str, make_storage: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    if not storage_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only: a server-side backend termination")
    storage = make_storage(retries=4, retry_backoff=0.01)
    await storage.open()
    for n in range(10):
        await storage.save_page(make_page(n), run_id=1)
    await storage.flush()
    await _kill_pages_writes(storage_url, times=2)
    for n in range(10, 50):
        await storage.save_page(make_page(n), run_id=1)

    with caplog.at_level(logging.WARNING, logger="topicrawl.storage"):
        await storage.flush()

    assert sum("connection lost" in r.getMessage() for r in caplog.records) == 2
    assert await pages_of(storage, with_links=True) == [make_page(n) for n in range(50)]


async def test_postgres_batch_is_kept_when_retries_run_out(
    storage_url: str, make_storage: Factory
) -> None:
    if not storage_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only: a server-side backend termination")
    storage = make_storage(retries=1, retry_backoff=0.01)
    await storage.open()
    await _kill_pages_writes(storage_url, times=None)
    for n in range(20):
        await storage.save_page(make_page(n), run_id=1)

    with pytest.raises(StorageError, match=r"PostgreSQL at 127\.0\.0\.1"):
        await storage.flush()
    assert storage.stats.buffered_pages == 20

    await _stop_killing(storage_url)
    await storage.flush()
    assert [p.url for p in await pages_of(storage)] == [make_page(n).url for n in range(20)]


async def test_a_read_only_storage_reads_and_refuses_writes(make_storage: Factory) -> None:
    writer = make_storage()
    await writer.open()
    await writer.save_page(make_page(1), run_id=1)
    await writer.save_failure(FetchFailure("https://f/", ErrorKind.DNS, "no host", 1.0), run_id=1)
    await writer.flush()

    reader = make_storage(read_only=True)
    await reader.open()

    assert [page.url async for page in reader.iter_pages()] == [make_page(1).url]
    assert [failure.url async for failure in reader.iter_failures()] == ["https://f/"]
    with pytest.raises(StorageError, match="read-only"):
        await reader.save_page(make_page(2), run_id=1)
    # The writer goes on while the reader is open.
    await writer.save_page(make_page(3), run_id=1)
    await writer.flush()
    assert await reader.count_pages() == 2
