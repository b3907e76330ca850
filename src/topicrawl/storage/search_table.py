"""PostgreSQL's search table (schema 17): each page's tsvector and filter columns, apart.

Up to schema 16 the stored tsvector was a column of ``pages`` with the GIN index on it. A text
search finds its matches' ids in the index, but the ids and the filters (topic, status, host)
are read from the heap, one block per match, and a ``pages`` row (its text, URL, reasons,
links and vector) fills a quarter of a block: 12,000-18,000 blocks for the slow searches of
benchmarks/dashboard on 1,000,000 rows, 1-1.4 s under load.

``page_search`` holds, per page, the id, the filter columns and the vector, with
``toast_tuple_target`` at its minimum so the vector always goes out of line (TOAST): its heap
row is ~100 bytes, so the whole heap of 1,000,000 pages is ~15,000 blocks that stay in memory,
and the matches of a word and its filters are checked on it without touching ``pages`` or the
vectors. A vector is read only to rank (the newest :data:`~topicrawl.storage.search.RANKED`
matches) or to check a phrase. Written by a trigger on ``pages`` (every insert, update and
delete, whoever writes; an update that leaves the title and text as they were does not
rebuild the vector).

Chinese, Japanese and Korean runs are indexed as their two- and three-character pieces
(bigrams and trigrams): a CJK word of two or three characters is one lexeme (no phrase, so no
vector is read to check it), a longer one the phrase of its trigrams. Schema 8's vector had
the bigrams only, so '服务器' was a phrase checked on every page holding both bigrams.

SQLite keeps its FTS5 tables (:mod:`topicrawl.storage.search_index`); nothing here runs there.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Connection, Double, Integer, Text, column, table, text
from sqlalchemy.dialects.postgresql import TSVECTOR

from topicrawl.storage.search_index import CJK_CLASS, PG_BIGRAMS

__all__ = [
    "PG_SEARCH_TABLE",
    "PG_SEARCH_VERSION",
    "add_search_table",
    "cjk_trigrams",
    "drop_search_table",
    "page_search",
]

PG_SEARCH_TABLE = "page_search"
PG_SEARCH_VERSION = 17
PG_TRIGRAMS = "topicrawl_cjk_trigrams"
PG_SEARCH_DOCUMENT = "topicrawl_search_document"
_SYNC = "topicrawl_page_search_sync"
_TRIGGER = "topicrawl_page_search"
_FILTERS = ("fetched_at", "status", "host", "topic", "run_id", "relevance")

page_search = table(
    PG_SEARCH_TABLE,
    column("id", BigInteger()),
    column("fetched_at", Double()),
    column("status", Integer()),
    column("host", Text()),
    column("topic", Text()),
    column("run_id", BigInteger()),
    column("relevance", Double()),
    column("vector", TSVECTOR()),
)
"""The search table as the queries see it (created by :func:`add_search_table`)."""


def cjk_trigrams(word: str) -> list[str]:
    """Every three-character piece of ``word``, in order (what :data:`PG_TRIGRAMS` stores)."""
    return [word[at : at + 3] for at in range(len(word) - 2)]


def _new_vector(row: str) -> str:
    return f"{PG_SEARCH_DOCUMENT}({row}.title, {row}.text)"


_VALUES = ", ".join(f"NEW.{name}" for name in ("id", *_FILTERS))
_SET = ", ".join(f"{name} = NEW.{name}" for name in _FILTERS)

_STATEMENTS = (
    # Trigrams as PG_BIGRAMS makes bigrams: every three-character piece of each run, in order.
    f"CREATE OR REPLACE FUNCTION {PG_TRIGRAMS}(doc text) RETURNS text "
    "LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ "
    "SELECT coalesce(string_agg(substr(found.run[1], at, 3), ' ' ORDER BY found.n, at), '') "
    f"FROM regexp_matches(doc, '({CJK_CLASS}{{3,}})', 'g') WITH ORDINALITY AS found(run, n), "
    "generate_series(1, char_length(found.run[1]) - 2) AS at $$",
    f"CREATE OR REPLACE FUNCTION {PG_SEARCH_DOCUMENT}(title text, body text) RETURNS tsvector "
    "LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ "
    "SELECT to_tsvector('simple'::regconfig, coalesce(title, '') || ' ' || coalesce(body, '')) "
    f"|| to_tsvector('simple'::regconfig, coalesce({PG_BIGRAMS}(title || ' ' || body), '')) "
    f"|| to_tsvector('simple'::regconfig, coalesce({PG_TRIGRAMS}(title || ' ' || body), '')) $$",
    f"CREATE TABLE IF NOT EXISTS {PG_SEARCH_TABLE} (id BIGINT PRIMARY KEY, "
    "fetched_at DOUBLE PRECISION NOT NULL, status INTEGER NOT NULL, host TEXT, topic TEXT, "
    "run_id BIGINT, relevance DOUBLE PRECISION, vector tsvector NOT NULL) "
    "WITH (toast_tuple_target = 128)",
    # The function runs with the search path it was made with (the crawl's schema), whoever
    # writes the page.
    f"CREATE OR REPLACE FUNCTION {_SYNC}() RETURNS trigger LANGUAGE plpgsql "
    "SET search_path FROM CURRENT AS $$ BEGIN "
    "IF TG_OP = 'DELETE' THEN "
    f"DELETE FROM {PG_SEARCH_TABLE} WHERE id = OLD.id; RETURN NULL; END IF; "
    "IF TG_OP = 'UPDATE' AND OLD.title IS NOT DISTINCT FROM NEW.title "
    "AND OLD.text IS NOT DISTINCT FROM NEW.text THEN "
    f"UPDATE {PG_SEARCH_TABLE} SET {_SET} WHERE id = NEW.id; "
    "IF FOUND THEN RETURN NULL; END IF; END IF; "
    f"INSERT INTO {PG_SEARCH_TABLE} (id, {', '.join(_FILTERS)}, vector) "
    f"VALUES ({_VALUES}, {_new_vector('NEW')}) "
    f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{n} = EXCLUDED.{n}' for n in _FILTERS)}, "
    "vector = EXCLUDED.vector; "
    "RETURN NULL; END $$",
)

# The pages already stored; schema 8's stored vector is kept where it is the same (a page
# without CJK characters), so only CJK pages are indexed again.
_FILL_FROM_VECTOR = (
    f"INSERT INTO {PG_SEARCH_TABLE} (id, {', '.join(_FILTERS)}, vector) "
    f"SELECT id, {', '.join(_FILTERS)}, CASE WHEN title || ' ' || text ~ '{CJK_CLASS}' "
    f"THEN {_new_vector('pages')} ELSE search_vector END FROM pages"
)
_FILL = (
    f"INSERT INTO {PG_SEARCH_TABLE} (id, {', '.join(_FILTERS)}, vector) "
    f"SELECT id, {', '.join(_FILTERS)}, {_new_vector('pages')} FROM pages"
)
_INDEX_AND_TRIGGER = (
    f"CREATE INDEX IF NOT EXISTS ix_{PG_SEARCH_TABLE}_vector ON {PG_SEARCH_TABLE} "
    "USING GIN (vector)",
    f"ANALYZE {PG_SEARCH_TABLE}",
    f"DROP TRIGGER IF EXISTS {_TRIGGER} ON pages",
    f"CREATE TRIGGER {_TRIGGER} AFTER INSERT OR UPDATE OR DELETE ON pages "
    f"FOR EACH ROW EXECUTE FUNCTION {_SYNC}()",
    # Schema 8's vector and its index: searched no more, and no longer kept by each write.
    "DROP INDEX IF EXISTS ix_pages_search_vector",
    "ALTER TABLE pages DROP COLUMN IF EXISTS search_vector",
)


def add_search_table(connection: Connection) -> None:
    """Schema 17 on PostgreSQL: the search table, filled from the stored pages, its index and
    the trigger that keeps it (nothing on SQLite).

    On 1,000,000 pages the fill and the index take minutes (benchmarks/dashboard/README.md):
    the GIN index sorts in ``maintenance_work_mem``, raised for this transaction.
    """
    if connection.dialect.name == "sqlite":
        return
    connection.execute(text("SET LOCAL maintenance_work_mem = '256MB'"))
    for statement in _STATEMENTS:
        connection.execute(text(statement))
    present = connection.execute(
        text(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = 'pages' AND column_name = 'search_vector'"
        )
    ).scalar_one()
    already = connection.execute(text(f"SELECT count(*) FROM {PG_SEARCH_TABLE}")).scalar_one()
    if not already:
        connection.execute(text(_FILL_FROM_VECTOR if present else _FILL))
    for statement in _INDEX_AND_TRIGGER:
        connection.execute(text(statement))


def drop_search_table(connection: Connection) -> None:
    """Remove the search table and its trigger (a bulk load adds them again afterwards with
    :func:`add_search_table`, faster than a trigger per row)."""
    if connection.dialect.name == "sqlite":
        return
    connection.execute(text(f"DROP TRIGGER IF EXISTS {_TRIGGER} ON pages"))
    connection.execute(text(f"DROP TABLE IF EXISTS {PG_SEARCH_TABLE}"))
