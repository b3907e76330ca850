"""Exports read back: JSONL and CSV parse to the stored pages, WARC reads with warcio."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from topicrawl.core.errors import StorageError
from topicrawl.core.models import ErrorKind, FetchFailure, Page
from topicrawl.storage import (
    EXPORT_FIELDS,
    FAILURE_FIELDS,
    SqlStorage,
    export_csv,
    export_failures_csv,
    export_failures_jsonl,
    export_jsonl,
    export_warc,
)

BODY = "<html><head><title>Café</title></head><body>Ünïcode body</body></html>".encode()


def make_page(n: int, **changes: Any) -> Page:
    fields: dict[str, Any] = {
        "url": f"https://example.org/{n}",
        "final_url": f"https://example.org/{n}/final",
        "status": 200,
        "depth": n,
        "fetched_at": 1_714_564_800.5 + n,
        "content_type": "text/html",
        "title": f"Title {n}",
        "text": f"Extracted text {n}",
        "parent_url": f"https://example.org/{n - 1}" if n else None,
        "content_hash": f"h{n}",
        "relevance": 0.25 * n if n else None,
        "lang": "en",
    }
    fields.update(changes)
    return Page(**fields)


PAGES = [
    make_page(0),
    make_page(1, title='Hostile, "quoted"\ntitle =1+1', duplicate_of="https://example.org/0"),
    make_page(2, status=404, title="漢字 😀"),
]


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[SqlStorage]:
    async with SqlStorage(str(tmp_path / "crawl.db"), keep_body=True) as opened:
        await opened.save_page(
            PAGES[0],
            run_id=1,
            body=BODY,
            headers={
                "Content-Type": "text/html; charset=utf-8",
                "Content-Encoding": "gzip",
                "Content-Length": "9",
                "X-Evil": "a\r\nInjected: yes",
            },
        )
        for page in PAGES[1:]:
            await opened.save_page(page, run_id=1)
        yield opened


def iso(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)


async def test_jsonl_has_one_record_per_page_in_fetch_order(storage: SqlStorage) -> None:
    out = io.StringIO()

    written = await export_jsonl(storage, out)

    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert written == len(records) == 3
    assert [r["url"] for r in records] == [p.url for p in PAGES]
    assert all(tuple(r) == EXPORT_FIELDS for r in records)
    assert records[1]["title"] == PAGES[1].title
    assert records[1]["duplicate_of"] == "https://example.org/0"
    assert records[0]["relevance"] is None
    assert records[2]["status"] == 404
    assert [datetime.fromisoformat(r["fetched_at"]) for r in records] == [
        iso(p.fetched_at) for p in PAGES
    ]
    assert records[0]["fetched_at"].endswith("Z")


async def test_jsonl_can_carry_the_text(storage: SqlStorage) -> None:
    out = io.StringIO()
    await export_jsonl(storage, out, with_text=True)
    assert [json.loads(line)["text"] for line in out.getvalue().splitlines()] == [
        p.text for p in PAGES
    ]


async def test_csv_parses_back_to_the_pages(storage: SqlStorage) -> None:
    out = io.StringIO(newline="")

    written = await export_csv(storage, out)

    rows = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    assert written == len(rows) == 3
    assert tuple(rows[0]) == EXPORT_FIELDS
    assert [r["title"] for r in rows] == [p.title for p in PAGES]
    assert [r["status"] for r in rows] == ["200", "200", "404"]
    assert rows[0]["relevance"] == ""
    assert rows[0]["parent_url"] == ""
    assert float(rows[2]["relevance"]) == 0.5
    assert datetime.fromisoformat(rows[1]["fetched_at"]) == iso(PAGES[1].fetched_at)


async def test_warc_holds_responses_for_kept_bodies_and_text_otherwise(
    storage: SqlStorage,
) -> None:
    out = io.BytesIO()

    written = await export_warc(storage, out)

    out.seek(0)
    records = [(r, r.content_stream().read()) for r in ArchiveIterator(out)]
    assert written == len(records) == 3
    kinds = [r.rec_type for r, _ in records]
    assert kinds == ["response", "resource", "resource"]

    response, body = records[0]
    assert body == BODY
    assert response.rec_headers.get_header("WARC-Target-URI") == PAGES[0].final_url
    assert response.rec_headers.get_header("WARC-Topicrawl-Requested-URI") == PAGES[0].url
    assert response.http_headers.get_statuscode() == "200"
    assert response.http_headers.get_header("Content-Type") == "text/html; charset=utf-8"
    assert response.http_headers.get_header("Content-Length") == str(len(BODY))
    assert response.http_headers.get_header("Content-Encoding") is None
    assert response.http_headers.get_header("Injected") is None
    assert iso_date(response) == iso(PAGES[0].fetched_at)

    resource, text = records[1]
    assert text.decode("utf-8") == PAGES[1].text
    assert resource.rec_headers.get_header("Content-Type") == "text/plain; charset=utf-8"
    assert resource.rec_headers.get_header("WARC-Topicrawl-Title") == 'Hostile, "quoted" title =1+1'
    assert resource.rec_headers.get_header("WARC-Topicrawl-Duplicate-Of") == PAGES[0].url
    assert records[2][0].rec_headers.get_header("WARC-Topicrawl-Status") == "404"
    assert records[2][0].rec_headers.get_header("WARC-Topicrawl-Title") == "漢字 😀"


def iso_date(record: Any) -> datetime:
    return datetime.fromisoformat(record.rec_headers.get_header("WARC-Date"))


async def test_warc_can_be_uncompressed(storage: SqlStorage) -> None:
    out = io.BytesIO()
    await export_warc(storage, out, gzip=False)
    assert out.getvalue().startswith(b"WARC/1.1\r\n")
    out.seek(0)
    assert len(list(ArchiveIterator(out))) == 3


async def test_an_empty_storage_exports_nothing(tmp_path: Path) -> None:
    async with SqlStorage(str(tmp_path / "empty.db")) as empty:
        text_out = io.StringIO()
        assert await export_jsonl(empty, text_out) == 0
        assert text_out.getvalue() == ""
        csv_out = io.StringIO()
        assert await export_csv(empty, csv_out) == 0
        assert csv_out.getvalue().strip() == ",".join(EXPORT_FIELDS)
        assert await export_warc(empty, io.BytesIO()) == 0


# -- issue 26 item 6: CSV injection, failures, read-only databases ---------------------------


@pytest.mark.parametrize(
    ("title", "cell"),
    [
        ('=HYPERLINK("http://evil/")', '\'=HYPERLINK("http://evil/")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("a=1", "a=1"),
        ("", ""),
    ],
)
async def test_csv_cells_that_would_start_a_formula_are_escaped(
    tmp_path: Path, title: str, cell: str
) -> None:
    async with SqlStorage(str(tmp_path / "crawl.db")) as opened:
        await opened.save_page(make_page(3, title=title, relevance=-0.5), run_id=1)
        out = io.StringIO(newline="")
        await export_csv(opened, out)
    (row,) = csv.DictReader(io.StringIO(out.getvalue(), newline=""))
    assert row["title"] == cell
    # Numbers are not text: a negative relevance stays a number.
    assert row["relevance"] == "-0.5"


async def test_failures_export_as_jsonl_and_csv(tmp_path: Path) -> None:
    failed = [
        FetchFailure("https://a/", ErrorKind.TIMEOUT, "timed out", 1_714_564_800.0),
        FetchFailure("https://b/", ErrorKind.HTTP_NOT_FOUND, "=1+1", 1_714_564_801.0, 404, 2,
                     "https://a/", 3),
    ]  # fmt: skip
    async with SqlStorage(str(tmp_path / "crawl.db")) as opened:
        for failure in failed:
            await opened.save_failure(failure, run_id=1)
        lines = io.StringIO()
        assert await export_failures_jsonl(opened, lines) == 2
        table = io.StringIO(newline="")
        assert await export_failures_csv(opened, table) == 2
    records = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [tuple(r) for r in records] == [FAILURE_FIELDS] * 2
    assert records[1] == {
        "url": "https://b/",
        "kind": "http_404",
        "status": 404,
        "message": "=1+1",
        "at": "2024-05-01T12:00:01.000000Z",
        "depth": 2,
        "parent_url": "https://a/",
        "attempts": 3,
    }
    rows = list(csv.DictReader(io.StringIO(table.getvalue(), newline="")))
    assert [r["url"] for r in rows] == ["https://a/", "https://b/"]
    assert rows[1]["message"] == "'=1+1"


async def test_a_read_only_storage_reads_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path)) as writer:
        await writer.save_page(make_page(0), run_id=1)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    async with SqlStorage(str(path), read_only=True) as reader:
        assert [p.url async for p in reader.iter_pages()] == [make_page(0).url]
        with pytest.raises(StorageError, match="read-only"):
            await reader.save_page(make_page(1), run_id=1)

    assert path.read_bytes() == before["crawl.db"]


async def test_a_read_only_storage_refuses_a_file_that_is_not_a_crawl(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(StorageError, match="not a topicrawl database"):
        async with SqlStorage(str(path), read_only=True):
            pass
