"""The full-text index over pages' titles and texts (schema version 6), one per dialect.

SQLite: two FTS5 tables with external content (the text stays in ``pages`` only), kept
current by triggers on ``pages``:

- ``pages_fts``, FTS5's ``unicode61`` tokenizer (accents folded), over every page: words.
- ``pages_fts_cjk``, the ``trigram`` tokenizer, over the pages with Chinese, Japanese or
  Korean characters only. unicode61 makes one token of a whole run of such characters (they
  have no spaces), so "人民" could never match "中华人民共和国"; trigram indexes every three
  characters and matches any substring of three or more. It is kept to those pages because
  on every page it costs too much: on 10,000 rows cut from the Java docs, trigram took 13 x
  unicode61's build time (16 s against 1.2 s) and 8 x its size (31 MB against 4 MB), and a
  crawl of the Java docs with it on every page stored half its pages/s (49 against 92 without
  an index, see benchmarks/dashboard/README.md). Shorter CJK words are matched by a scan (see
  :mod:`topicrawl.storage.search`).

The update trigger skips an upsert that leaves the title and text as they were (a page
fetched again unchanged). Rows of ``pages_fts_cjk`` are added and deleted under the same
condition, so its external-content index never holds a row it did not get.

PostgreSQL (schema 6): a GIN index on ``to_tsvector('simple', title || ' ' || text)``. A
query ranked or checked each match by rebuilding that tsvector from the text (0.8-8.4 s for a
common word on 1,000,000 rows), so schema 8 replaces it by a stored column,
``pages.search_vector`` (``GENERATED ALWAYS AS (...) STORED``: PostgreSQL keeps it current on
every insert and update, whoever writes), with the GIN index on the column; queries test and
rank the stored vector (:data:`PG_VECTOR`).

Chinese, Japanese and Korean on PostgreSQL: the ``simple`` parser keeps a whole run of such
characters as one token, so the stored vector also holds every two-character piece (bigram) of
each run, made in the database by :data:`PG_BIGRAMS` (an immutable SQL function, so the
generated column can call it; no Python segmenter such as jieba is needed in the writer). A
CJK word of two characters or more is searched as the phrase of its bigrams (``服务器`` is
``'服务' <-> '务器'``): any substring is found, as with SQLite's trigram index. A one-character
word is scanned by ``LIKE``. Two runs separated only by punctuation have adjacent positions, so
a phrase can (rarely) match across them.
"""

from __future__ import annotations

import re

from sqlalchemy import Connection, text

__all__ = [
    "CJK_TABLE",
    "FTS_TABLE",
    "PG_BIGRAMS",
    "PG_DOCUMENT",
    "PG_VECTOR",
    "add_filter_indexes",
    "add_search_vector",
    "add_status_index",
    "cjk_bigrams",
    "create_search_index",
    "drop_search_index",
    "flag_cjk_pages",
    "has_cjk",
    "has_cjk_text",
]

FTS_TABLE = "pages_fts"
CJK_TABLE = "pages_fts_cjk"
PG_DOCUMENT = "to_tsvector('simple'::regconfig, title || ' ' || text)"
PG_VECTOR = "search_vector"
PG_BIGRAMS = "topicrawl_cjk_bigrams"

# Hiragana, katakana, CJK ideographs (extension A and the main block), Hangul syllables, CJK
# compatibility ideographs: the scripts written without spaces between words.
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))
_CJK_CLASS = "[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _CJK_RANGES) + "]"


def has_cjk(word: str) -> bool:
    """Whether ``word`` has a character of a script written without spaces."""
    return any(a <= ord(ch) <= b for ch in word for a, b in _CJK_RANGES)


_CJK_SEARCH = re.compile(_CJK_CLASS).search


def has_cjk_text(*texts: str) -> bool:
    """Whether any of ``texts`` has a character of a script written without spaces: the
    writer's value of ``pages.cjk``, which SQLite's triggers read (schema 15). The GLOB the
    triggers ran before scanned a text without such characters to its end, 1.2 ms for the
    17 KB text of an English page of the scale web, the most costly step of storing it; this
    search takes a few microseconds."""
    return any(_CJK_SEARCH(part) is not None for part in texts)


def cjk_bigrams(word: str) -> list[str]:
    """Every two-character piece of ``word``, in order (what :data:`PG_BIGRAMS` stores)."""
    return [word[at : at + 2] for at in range(len(word) - 1)]


def _cjk(row: str) -> str:
    return f"({row}.title GLOB '*{_CJK_CLASS}*' OR {row}.text GLOB '*{_CJK_CLASS}*')"


def _add(table: str, *, when: str | None = None) -> str:
    values = "new.id, new.title, new.text"
    if when is None:
        return f"INSERT INTO {table}(rowid, title, text) VALUES ({values});"
    return f"INSERT INTO {table}(rowid, title, text) SELECT {values} WHERE {when};"


def _remove(table: str, *, when: str | None = None) -> str:
    values = "'delete', old.id, old.title, old.text"
    if when is None:
        return f"INSERT INTO {table}({table}, rowid, title, text) VALUES ({values});"
    return f"INSERT INTO {table}({table}, rowid, title, text) SELECT {values} WHERE {when};"


_SQLITE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(title, text, content='pages', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {CJK_TABLE} USING fts5(title, text, content='pages', "
    "content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON pages BEGIN "
    f"{_add(FTS_TABLE)} {_add(CJK_TABLE, when=_cjk('new'))} END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON pages BEGIN "
    f"{_remove(FTS_TABLE)} {_remove(CJK_TABLE, when=_cjk('old'))} END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update AFTER UPDATE OF title, text ON pages "
    "WHEN old.title IS NOT new.title OR old.text IS NOT new.text BEGIN "
    f"{_remove(FTS_TABLE)} {_remove(CJK_TABLE, when=_cjk('old'))} "
    f"{_add(FTS_TABLE)} {_add(CJK_TABLE, when=_cjk('new'))} END",
    # Index the pages already stored ('rebuild' would put every page in the CJK table too).
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
    f"INSERT INTO {CJK_TABLE}(rowid, title, text) SELECT id, title, text FROM pages AS old "
    f"WHERE {_cjk('old')}",
)

# Schema 15 (SQLite): the same triggers, testing the row's cjk flag instead of a GLOB over
# its title and text.
_FLAGGED_TRIGGERS = (
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_insert",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_delete",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_update",
    f"CREATE TRIGGER {FTS_TABLE}_insert AFTER INSERT ON pages BEGIN "
    f"{_add(FTS_TABLE)} {_add(CJK_TABLE, when='new.cjk')} END",
    f"CREATE TRIGGER {FTS_TABLE}_delete AFTER DELETE ON pages BEGIN "
    f"{_remove(FTS_TABLE)} {_remove(CJK_TABLE, when='old.cjk')} END",
    f"CREATE TRIGGER {FTS_TABLE}_update AFTER UPDATE OF title, text, cjk ON pages "
    "WHEN old.title IS NOT new.title OR old.text IS NOT new.text OR old.cjk IS NOT new.cjk "
    f"BEGIN {_remove(FTS_TABLE)} {_remove(CJK_TABLE, when='old.cjk')} "
    f"{_add(FTS_TABLE)} {_add(CJK_TABLE, when='new.cjk')} END",
)

_POSTGRES = (f"CREATE INDEX IF NOT EXISTS ix_pages_fulltext ON pages USING GIN ({PG_DOCUMENT})",)

# Schema 8 (PostgreSQL): the stored vector. The bigrams of each CJK run, space separated, in
# order; '' without any (STRICT: NULL in, NULL out, and to_tsvector(NULL) is NULL, hence the
# coalesce in the column).
_PG_VECTOR_STATEMENTS = (
    f"CREATE OR REPLACE FUNCTION {PG_BIGRAMS}(doc text) RETURNS text "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ "
    "SELECT coalesce(string_agg(substr(found.run[1], at, 2), ' ' ORDER BY found.n, at), '') "
    f"FROM regexp_matches(doc, '({_CJK_CLASS}{{2,}})', 'g') WITH ORDINALITY AS found(run, n), "
    "generate_series(1, char_length(found.run[1]) - 1) AS at $$",
    f"ALTER TABLE pages ADD COLUMN IF NOT EXISTS {PG_VECTOR} tsvector GENERATED ALWAYS AS ("
    f"{PG_DOCUMENT} || to_tsvector('simple'::regconfig, "
    f"coalesce({PG_BIGRAMS}(title || ' ' || text), ''))) STORED, "
    # Kept in the row (compressed) while the text goes out of line first: a search tests
    # the vector of each row it walks, and a TOAST fetch per row cost twice the time.
    f"ALTER COLUMN {PG_VECTOR} SET STORAGE MAIN",
    f"CREATE INDEX IF NOT EXISTS ix_pages_search_vector ON pages USING GIN ({PG_VECTOR})",
    "DROP INDEX IF EXISTS ix_pages_fulltext",
)


def add_search_vector(connection: Connection) -> None:
    """Schema 8 on PostgreSQL: the stored, indexed tsvector column (nothing on SQLite)."""
    if connection.dialect.name == "sqlite":
        return
    for statement in _PG_VECTOR_STATEMENTS:
        connection.execute(text(statement))


# Schema 13 (PostgreSQL): a text search filtered by status reads the rows that match both
# through the index bitmaps (BitmapAnd) instead of every row matching the words: 'thread' +
# status 404 on 1,000,000 rows read 818 rows instead of 25,522 (1,092 -> 267 ms, loaded).
# SQLite reads its filter columns from ix_pages_filters (schema 8) instead.
PG_STATUS_INDEX = "CREATE INDEX IF NOT EXISTS ix_pages_status_id ON pages (status, id)"


def add_status_index(connection: Connection) -> None:
    """Schema 14 on PostgreSQL: ``pages`` indexed by status (nothing on SQLite)."""
    if connection.dialect.name != "sqlite":
        connection.execute(text(PG_STATUS_INDEX))


# Schema 17 (PostgreSQL): a text search looks for its matches in windows of ids, newest first
# (storage.search), and a filter by topic or host joins the index bitmaps of the words and the
# window through these: only the rows that match the words and the filter in the window are
# read (the (topic, fetched_at, id) and (host, fetched_at, id) indexes of the list cannot be
# bounded by id).
PG_FILTER_INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_pages_topic_id ON pages (topic, id)",
    "CREATE INDEX IF NOT EXISTS ix_pages_host_id ON pages (host, id)",
)


def add_filter_indexes(connection: Connection) -> None:
    """Schema 17 on PostgreSQL: ``pages`` indexed by topic and by host in id order (nothing
    on SQLite, whose search reads its filters from ix_pages_filters)."""
    if connection.dialect.name != "sqlite":
        for statement in PG_FILTER_INDEXES:
            connection.execute(text(statement))


def flag_cjk_pages(connection: Connection) -> None:
    """Schema 15: ``pages.cjk``; on SQLite set for exactly the pages the CJK index holds (its
    docsize table has a row per page indexed), and the triggers test it instead of a GLOB."""
    if connection.dialect.name != "sqlite":
        connection.execute(text("ALTER TABLE pages ADD COLUMN IF NOT EXISTS cjk BOOLEAN"))
        return
    present = {row[1] for row in connection.execute(text("PRAGMA table_info(pages)"))}
    if "cjk" not in present:
        connection.execute(text("ALTER TABLE pages ADD COLUMN cjk BOOLEAN"))
    connection.execute(
        text(f"UPDATE pages SET cjk = 1 WHERE id IN (SELECT id FROM {CJK_TABLE}_docsize)")
    )
    for statement in _FLAGGED_TRIGGERS:
        connection.execute(text(statement))


def create_search_index(connection: Connection) -> None:
    """Create the dialect's full-text index over ``pages`` and index the stored pages."""
    statements = _SQLITE if connection.dialect.name == "sqlite" else _POSTGRES
    for statement in statements:
        connection.execute(text(statement))


def drop_search_index(connection: Connection) -> None:
    """Remove the full-text index (its write cost is measured against a crawl without it)."""
    if connection.dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            connection.execute(text(f"DROP TRIGGER IF EXISTS {FTS_TABLE}_{trigger}"))
        connection.execute(text(f"DROP TABLE IF EXISTS {FTS_TABLE}"))
        connection.execute(text(f"DROP TABLE IF EXISTS {CJK_TABLE}"))
    else:
        connection.execute(text("DROP INDEX IF EXISTS ix_pages_fulltext"))
        connection.execute(text("DROP INDEX IF EXISTS ix_pages_search_vector"))
