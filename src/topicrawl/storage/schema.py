"""The one SQLAlchemy Core schema that SQLite and PostgreSQL storage share.

Every table is defined here, at its latest shape; :mod:`topicrawl.storage.migrations` decides
when each one is created in a given database. JSON values are kept in ``TEXT`` columns so both
databases store them the same way.

To add a table (topics, posts, heat, entities, ...): define it on :data:`metadata` below, then
append a migration that creates it (see :mod:`topicrawl.storage.migrations`).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)

__all__ = [
    "failures",
    "links",
    "metadata",
    "pages",
    "runs",
    "schema_version",
]

# SQLite only auto-increments an ``INTEGER PRIMARY KEY`` (the rowid); PostgreSQL gets BIGSERIAL.
Id = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", Text, nullable=False),
    Column("applied_at", Double, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", Text, nullable=False),
    Column("started_at", Double, nullable=False),
    Column("finished_at", Double, nullable=True),
    Column("config", Text, nullable=False, comment="JSON"),
    Column("stats", Text, nullable=True, comment="JSON"),
)

# ``id`` is assigned when a page is first written, so ordering by it is fetch order. A page
# fetched again keeps its row (and id): the upsert on ``url`` replaces the other columns.
pages = Table(
    "pages",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, unique=True),
    Column("final_url", Text, nullable=False),
    Column("status", Integer, nullable=False),
    Column("depth", Integer, nullable=False),
    Column("parent_url", Text, nullable=True),
    Column("fetched_at", Double, nullable=False),
    Column("content_type", Text, nullable=False),
    Column("encoding", Text, nullable=True),
    Column("title", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("lang", Text, nullable=True),
    Column("content_hash", Text, nullable=True, index=True),
    Column("duplicate_of", Text, nullable=True),
    Column("relevance", Double, nullable=True),
    Column("score", Double, nullable=False),
    Column("reasons", Text, nullable=False, comment="JSON object of component scores"),
    Column("elapsed", Double, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("redirects", Text, nullable=False, comment="JSON array of URLs"),
    Column("noindex", Boolean, nullable=False),
    # A label, not a foreign key: a bad run id must not make a whole batch unwritable.
    Column("run_id", Id, nullable=True),
    Column("body", LargeBinary, nullable=True, comment="zlib-compressed raw body (keep_body)"),
    Column("headers", Text, nullable=True, comment="JSON object of response headers"),
)

# Clustered on (page_id, position) (WITHOUT ROWID in SQLite): a page's links sit together, in
# document order, which makes writing, replacing and reading them one range each.
links = Table(
    "links",
    metadata,
    Column("page_id", Id, ForeignKey("pages.id", ondelete="CASCADE"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("anchor", Text, nullable=False),
    Column("block", Integer, nullable=False),
    Column("block_text", Text, nullable=False),
    Column("nofollow", Boolean, nullable=False),
    PrimaryKeyConstraint("page_id", "position"),
    Index(None, "url"),
    sqlite_with_rowid=False,
)

failures = Table(
    "failures",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("status", Integer, nullable=True),
    Column("at", Double, nullable=False),
    Column("depth", Integer, nullable=False),
    Column("parent_url", Text, nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("run_id", Id, nullable=True),
)
