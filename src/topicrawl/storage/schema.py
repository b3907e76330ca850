"""The one SQLAlchemy Core schema that SQLite and PostgreSQL storage share.

Every table is defined here, at its latest shape; :mod:`topicrawl.storage.migrations` decides
when each one is created in a given database. JSON values are kept in ``TEXT`` columns so both
databases store them the same way.

To add a table (topics, posts, heat, entities, ...): define it on :data:`metadata` below, then
append a migration that creates it (see :mod:`topicrawl.storage.migrations`).

A page's outgoing links live in its own row, packed into the one ``pages.links`` column
(:mod:`topicrawl.storage.outlinks`), not one row per link: writing a row and two index entries
per link made links, not pages, the cost of storage. A link-graph index (which pages link to a
URL, edges for PageRank) is a *derived* table, to be built from that column by a later job;
no such table is built yet.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Double,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
)

__all__ = [
    "failures",
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
    Column("links", LargeBinary, nullable=True, comment="outgoing links, see storage.outlinks"),
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
