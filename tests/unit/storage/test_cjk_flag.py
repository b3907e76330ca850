"""pages.cjk (schema 15): the writer flags pages with CJK characters, and SQLite's triggers put
exactly those in the trigram index, as the GLOB they replace did."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.unit.storage.test_migrations import run_migrations
from topicrawl.core.models import Page
from topicrawl.storage import MIGRATIONS, SqlStorage
from topicrawl.storage.migrations import LATEST_VERSION
from topicrawl.storage.search_index import CJK_TABLE, has_cjk_text

# The class the triggers' GLOB tested before schema 15.
_GLOB = "*[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]*"


def page(n: int, title: str, text: str) -> Page:
    return Page(
        url=f"https://example.org/{n}",
        final_url=f"https://example.org/{n}",
        status=200,
        depth=0,
        fetched_at=1_700_000_000.0 + n,
        content_type="text/html",
        title=title,
        text=text,
    )


def indexed(path: Path) -> set[int]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute(f"SELECT id FROM {CJK_TABLE}_docsize")}


def test_the_flag_says_what_the_glob_said() -> None:
    samples = [
        "plain English",
        "",
        "caf\u00e9 na\u00efve \u00fcber",
        "\u3040",  # first hiragana
        "\u30ff",
        "\u3400",
        "\u9fff",
        "\uac00",
        "\ud7af",
        "\uf900",
        "\ufaff",
        "\u303f \u30ff",
        "\u33ff \ud7b0 \ufb00",  # just outside the ranges
        "\u4e2d\u6587 in the middle of English",
        "emoji \U0001f600 only",
    ]
    with sqlite3.connect(":memory:") as conn:
        for sample in samples:
            (glob,) = conn.execute("SELECT ? GLOB ?", (sample, _GLOB)).fetchone()
            assert has_cjk_text(sample) == bool(glob), repr(sample)
            assert has_cjk_text("title", sample) == bool(glob)


async def test_the_trigram_index_holds_the_flagged_pages_through_upserts_and_deletes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.db"
    async with SqlStorage(str(path)) as storage:
        await storage.save_page(page(1, "English", "only English words here"), run_id=1)
        await storage.save_page(page(2, "\u4e2d\u6587\u9875\u9762", "\u670d\u52a1\u5668"), run_id=1)
        await storage.save_page(page(3, "mixed", "a quote: \u4eba\u6c11\u5171\u548c"), run_id=1)
        await storage.flush()
        assert indexed(path) == {2, 3}
        # Fetched again: page 3 lost its Chinese, page 1 gained some.
        await storage.save_page(page(3, "mixed", "now only English"), run_id=1)
        await storage.save_page(page(1, "English", "\u65b0\u95fb\u62a5\u9053 added"), run_id=1)
        await storage.flush()
    assert indexed(path) == {1, 2}
    with sqlite3.connect(path) as conn:
        flags = dict(conn.execute("SELECT id, cjk FROM pages"))
        found = conn.execute(
            f"SELECT rowid FROM {CJK_TABLE} WHERE {CJK_TABLE} MATCH ?", ("\u95fb\u62a5\u9053",)
        ).fetchall()
        conn.execute("DELETE FROM pages WHERE id = 2")
        check = f"INSERT INTO {CJK_TABLE}({CJK_TABLE}, rank) VALUES ('integrity-check', 0)"
        conn.execute(check)  # the index itself is sound
    assert flags == {1: 1, 2: 1, 3: 0}
    assert found == [(1,)]
    assert indexed(path) == {1}


async def test_migrating_flags_the_pages_the_index_holds(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    assert await run_migrations(path, MIGRATIONS[:14]) == list(range(1, 15))
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE pages DROP COLUMN cjk")  # as a schema-14 database was
        rows = [(1, "English", "words"), (2, "\u4e2d\u6587", "\u670d\u52a1\u5668"), (3, "t", "x")]
        for n, title, text in rows:
            conn.execute(
                "INSERT INTO pages (id, url, final_url, status, depth, fetched_at, content_type,"
                " title, text, score, reasons, elapsed, size, redirects, noindex)"
                " VALUES (?, ?, ?, 200, 0, 0, 'text/html', ?, ?, 0, '{}', 0, 0, '[]', 0)",
                (n, f"https://example.org/{n}", f"https://example.org/{n}", title, text),
            )
    assert indexed(path) == {2}

    assert await run_migrations(path, MIGRATIONS) == list(range(15, LATEST_VERSION + 1))

    with sqlite3.connect(path) as conn:
        assert dict(conn.execute("SELECT id, cjk FROM pages")) == {1: None, 2: 1, 3: None}
        conn.execute("UPDATE pages SET text = 'English now' WHERE id = 2")
        conn.execute("UPDATE pages SET cjk = 0 WHERE id = 2")
        conn.execute(f"INSERT INTO {CJK_TABLE}({CJK_TABLE}, rank) VALUES ('integrity-check', 0)")
    assert indexed(path) == set()
