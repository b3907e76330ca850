"""The full-text index over pages' titles and texts (schema version 6), one per dialect.

SQLite: an FTS5 table ``pages_fts`` with external content (the text stays in ``pages`` only),
kept current by three triggers, and the ``trigram`` tokenizer. unicode61, FTS5's default,
makes one token of a whole run of Chinese or Japanese characters (they have no spaces), so
"人民" could never match "中华人民共和国"; trigram indexes every three characters and matches
any substring of three characters or more, in every script. Words shorter than that are
matched by a scan (see :mod:`topicrawl.storage.search`). The triggers skip an upsert that
leaves the title and text as they were (a page fetched again unchanged).

PostgreSQL: a GIN index on ``to_tsvector('simple', title || ' ' || text)``; the query must
spell the expression exactly so (:data:`PG_DOCUMENT`) for the index to serve it.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

__all__ = ["FTS_TABLE", "PG_DOCUMENT", "create_search_index"]

FTS_TABLE = "pages_fts"
PG_DOCUMENT = "to_tsvector('simple'::regconfig, title || ' ' || text)"

_SQLITE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "title, text, content='pages', content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON pages BEGIN "
    f"INSERT INTO {FTS_TABLE}(rowid, title, text) VALUES (new.id, new.title, new.text); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON pages BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, title, text) "
    "VALUES ('delete', old.id, old.title, old.text); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update AFTER UPDATE OF title, text ON pages "
    "WHEN old.title IS NOT new.title OR old.text IS NOT new.text BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, title, text) "
    "VALUES ('delete', old.id, old.title, old.text); "
    f"INSERT INTO {FTS_TABLE}(rowid, title, text) VALUES (new.id, new.title, new.text); END",
    # Indexes the pages already stored.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
)

_POSTGRES = (f"CREATE INDEX IF NOT EXISTS ix_pages_fulltext ON pages USING GIN ({PG_DOCUMENT})",)


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
    else:
        connection.execute(text("DROP INDEX IF EXISTS ix_pages_fulltext"))
