"""Ordered schema migrations, applied when storage opens: once each, in one transaction.

A database records the migrations it has had in ``schema_version``. :func:`migrate` applies the
missing ones in version order inside the caller's transaction, so a failure leaves the database
as it was, and two processes opening one database at once apply each migration once (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock).

To evolve the schema, append a :class:`Migration` with the next version number; never edit or
reorder a released one. A migration that creates tables uses :func:`create_tables` with their
definitions from :mod:`topicrawl.storage.schema`. A migration that changes an existing table
(adds a column, an index) must check the live table first (``sqlalchemy.inspect``), because a
database created after the change already got it from the table's current definition.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    bindparam,
    delete,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from topicrawl.core.errors import StorageError
from topicrawl.core.models import Link
from topicrawl.storage.outlinks import encode_links
from topicrawl.storage.rows import host_of
from topicrawl.storage.schema import (
    ACCOUNT_TABLES,
    FOCUS_TABLES,
    KG_TABLES,
    LEADER_TABLES,
    PAGE_TOPIC_COLUMNS,
    PAGE_TOPIC_INDEXES,
    PARSER_TABLES,
    REVISIT_TABLES,
    SPLIT_TABLES,
    SYSTEM_TABLES,
    TRACKING_TABLES,
    VIDEO_TABLES,
    Id,
    failures,
    leader_leases,
    leader_terms,
    metadata,
    node_rounds,
    pages,
    run_samples,
    runs,
    schema_version,
)
from topicrawl.storage.search_index import (
    add_filter_indexes,
    add_search_vector,
    add_status_index,
    create_search_index,
    flag_cjk_pages,
)

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "check_readable",
    "create_tables",
    "migrate",
]

# Any fixed 32-bit number: with the schema's name it names "topicrawl schema migration" among
# advisory locks (two-key form), so migrations of one schema exclude each other and not those
# of another schema in the same database (one lock for all made every new crawl wait while a
# long migration ran anywhere in the database).
_PG_MIGRATION_LOCK = 0x746F7063


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: ``apply`` runs on a synchronous connection inside the open transaction."""

    version: int
    description: str
    apply: Callable[[Connection], None]


def create_tables(*tables: Table) -> Callable[[Connection], None]:
    """A migration step that creates ``tables`` (with their indexes) as defined in the schema."""

    def apply(connection: Connection) -> None:
        metadata.create_all(connection, tables=list(tables), checkfirst=True)

    return apply


# Version 1 kept each link as a row of this table; version 2 moved links into ``pages.links``.
# Kept here (apart from the live schema) only so migration 1 still means what it meant.
_v1_metadata = MetaData(naming_convention=metadata.naming_convention)
_v1_links = Table(
    "links",
    _v1_metadata,
    Column("page_id", Id, ForeignKey(pages.c.id, ondelete="CASCADE"), nullable=False),
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

# Pages whose link rows one step of migration 2 packs.
_PACK_CHUNK = 500


def _create_v1(connection: Connection) -> None:
    metadata.create_all(connection, tables=[runs, pages, failures], checkfirst=True)
    _v1_metadata.create_all(connection, tables=[_v1_links], checkfirst=True)


def _links_into_pages(connection: Connection) -> None:
    """Add ``pages.links``, pack each page's link rows into it, and drop the ``links`` table."""
    inspector = inspect(connection)
    if "links" not in {column["name"] for column in inspector.get_columns("pages")}:
        preparer = connection.dialect.identifier_preparer
        column_type = pages.c.links.type.compile(dialect=connection.dialect)
        connection.execute(
            text(
                f"ALTER TABLE {preparer.format_table(pages)} "
                f"ADD COLUMN {preparer.format_column(pages.c.links)} {column_type}"
            )
        )
    if not inspector.has_table("links"):
        return
    store = (
        update(pages).where(pages.c.id == bindparam("page_id")).values(links=bindparam("packed"))
    )
    last_id = 0
    while True:
        ids = (
            connection.execute(
                select(pages.c.id)
                .where(pages.c.id > last_id)
                .order_by(pages.c.id)
                .limit(_PACK_CHUNK)
            )
            .scalars()
            .all()
        )
        if not ids:
            break
        rows = connection.execute(
            select(_v1_links)
            .where(_v1_links.c.page_id.between(ids[0], ids[-1]))
            .order_by(_v1_links.c.page_id, _v1_links.c.position)
        )
        by_page: dict[int, list[Link]] = {}
        for row in rows:
            by_page.setdefault(row.page_id, []).append(
                Link(row.url, row.anchor, row.block, row.block_text, bool(row.nofollow))
            )
        if by_page:
            connection.execute(
                store,
                [
                    {"page_id": page_id, "packed": encode_links(found)}
                    for page_id, found in by_page.items()
                ],
            )
        last_id = ids[-1]
    _v1_links.drop(connection)


def _one_failure_per_url(connection: Connection) -> None:
    """Keep the last saved failure of each URL and make ``failures.url`` unique.

    Before version 5 a URL that failed, was leased again after a crash (its failure stored,
    its ack not yet) and failed again got a second row.
    """
    indexes = inspect(connection).get_indexes("failures")
    if any(index["column_names"] == ["url"] and index["unique"] for index in indexes):
        return
    latest = select(func.max(failures.c.id)).group_by(failures.c.url)
    connection.execute(delete(failures).where(failures.c.id.not_in(latest)))
    preparer = connection.dialect.identifier_preparer
    for old in indexes:
        if old["column_names"] == ["url"] and old["name"]:
            connection.execute(text(f"DROP INDEX {preparer.quote(old['name'])}"))
    for index in failures.indexes:
        if [column.name for column in index.columns] == ["url"]:
            index.create(connection)


# Pages whose host one step of migration 6 fills in.
_HOST_CHUNK = 5_000


def _dashboard(connection: Connection) -> None:
    """Schema 6, for the dashboard: ``pages.host`` (filled in for existing pages) and the
    keyset indexes, the live samples table, and the full-text index over pages."""
    inspector = inspect(connection)
    preparer = connection.dialect.identifier_preparer
    if "host" not in {column["name"] for column in inspector.get_columns("pages")}:
        connection.execute(
            text(
                f"ALTER TABLE {preparer.format_table(pages)} "
                f"ADD COLUMN {preparer.format_column(pages.c.host)} TEXT"
            )
        )
    _fill_hosts(connection)
    present = {index["name"] for index in inspect(connection).get_indexes("pages")}
    for index in pages.indexes:
        # Migration 8's indexes are on its columns, which a database at version 5 lacks.
        if index.name not in present and index.name not in PAGE_TOPIC_INDEXES:
            index.create(connection)
    metadata.create_all(connection, tables=[run_samples], checkfirst=True)
    create_search_index(connection)


def _fill_hosts(connection: Connection) -> None:
    store = update(pages).where(pages.c.id == bindparam("page_id")).values(host=bindparam("found"))
    last_id = 0
    while True:
        rows = connection.execute(
            select(pages.c.id, pages.c.url)
            .where(pages.c.id > last_id, pages.c.host.is_(None))
            .order_by(pages.c.id)
            .limit(_HOST_CHUNK)
        ).all()
        if not rows:
            return
        connection.execute(store, [{"page_id": row.id, "found": host_of(row.url)} for row in rows])
        last_id = rows[-1].id


def _dashboard_search(connection: Connection) -> None:
    """Schema 8, for the dashboard: ``pages.topic`` and ``pages.link_scores``, the indexes of
    the topic filter and of the filters a search checks, and on PostgreSQL the stored,
    indexed tsvector column in place of the expression index (see storage.search_index)."""
    preparer = connection.dialect.identifier_preparer
    present = {column["name"] for column in inspect(connection).get_columns("pages")}
    for name in PAGE_TOPIC_COLUMNS:
        if name not in present:
            connection.execute(
                text(
                    f"ALTER TABLE {preparer.format_table(pages)} "
                    f"ADD COLUMN {preparer.format_column(pages.c[name])} TEXT"
                )
            )
    indexes = {index["name"] for index in inspect(connection).get_indexes("pages")}
    for index in pages.indexes:
        if index.name in PAGE_TOPIC_INDEXES and index.name not in indexes:
            index.create(connection)
    add_search_vector(connection)


# Schema 13-15 kept a run's leader lease as this reserved row of ``node_rounds``: node "" and
# ``at`` 0, ``items`` the holder's index in the run's node list, ``seconds`` when it expired.
_OLD_LEASE_NODE = ""


def _leader_leases(connection: Connection) -> None:
    """Schema 16: the video system's leader lease in a table of its own, with its takeover log.

    A lease kept as a reserved row of ``node_rounds`` is moved over and its row deleted. That
    row named its holder by index in the run's node list, not by name: the moved lease's holder
    is ``#<index>``, which no node is, so it is honoured until it expires and then taken over
    as any other (a node whose name was never ``#<index>`` cannot renew it).
    """
    create_tables(*LEADER_TABLES)(connection)
    old = (node_rounds.c.node == _OLD_LEASE_NODE) & (node_rounds.c.at == 0)
    rows = connection.execute(
        select(node_rounds.c.source, node_rounds.c["items"], node_rounds.c.seconds).where(old)
    ).all()
    for source, index, expires in rows:
        holder = f"#{int(index)}"
        lease = {"source": source, "holder": holder, "term": 1, "expires": float(expires)}
        connection.execute(insert(leader_leases).values(**lease, taken_at=None, renewed_at=None))
        connection.execute(
            insert(leader_terms).values(source=source, term=1, holder=holder, taken_at=None)
        )
    connection.execute(delete(node_rounds).where(old))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, pages, links and failures", _create_v1),
    Migration(2, "links packed into pages.links; links table dropped", _links_into_pages),
    Migration(
        3,
        "topic tracking: periods, posts, topics, topic words, heat, forecasts, allocations",
        create_tables(*TRACKING_TABLES),
    ),
    Migration(4, "focused crawling: page labels, learned state", create_tables(*FOCUS_TABLES)),
    Migration(5, "one failure per URL; failures.url unique", _one_failure_per_url),
    Migration(
        6, "dashboard: pages.host, keyset indexes, run_samples, full-text search", _dashboard
    ),
    Migration(
        7,
        "knowledge graph: entities, aliases, relations, entity and relation URLs",
        create_tables(*KG_TABLES),
    ),
    Migration(
        8,
        "dashboard search: pages.topic and link_scores, filter indexes, stored tsvector",
        _dashboard_search,
    ),
    Migration(9, "revisits: page_history (every fetch of a page)", create_tables(*REVISIT_TABLES)),
    Migration(
        10,
        "microblog accounts: runs, accounts, follow edges, posts, tiers",
        create_tables(*ACCOUNT_TABLES),
    ),
    Migration(
        11,
        "parser library: URL patterns and their methods, method changes, page records",
        create_tables(*PARSER_TABLES),
    ),
    Migration(12, "video pages: page_media (class and media URLs)", create_tables(*VIDEO_TABLES)),
    Migration(
        13,
        "seed 004 as one system: videos, their tiers, every revisit",
        create_tables(*SYSTEM_TABLES),
    ),
    Migration(14, "dashboard search (PostgreSQL): pages indexed by status", add_status_index),
    Migration(15, "pages.cjk: the CJK index's triggers test a flag, not a GLOB", flag_cjk_pages),
    Migration(
        16, "video system: the leader's lease and its terms in tables of their own", _leader_leases
    ),
    Migration(
        17,
        "dashboard search (PostgreSQL): pages indexed by (topic, id) and (host, id)",
        add_filter_indexes,
    ),
    Migration(
        18,
        "video system: the first crawl's and account pipeline's work split between nodes",
        create_tables(*SPLIT_TABLES),
    ),
)

LATEST_VERSION = MIGRATIONS[-1].version


def _check_order(migrations: tuple[Migration, ...]) -> None:
    versions = [migration.version for migration in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise StorageError(f"migrations must be numbered 1, 2, 3, ... in order; got {versions}")


async def migrate(
    connection: AsyncConnection, migrations: tuple[Migration, ...] = MIGRATIONS
) -> list[int]:
    """Apply the migrations the database lacks, inside the caller's transaction.

    Returns:
        the versions applied now (empty when the database was up to date).

    Raises:
        StorageError: the database has a newer schema than this topicrawl knows.
    """
    _check_order(migrations)
    if connection.dialect.name == "postgresql":
        await connection.execute(
            text("SELECT pg_advisory_xact_lock(:key, hashtext(coalesce(current_schema(), '')))"),
            {"key": _PG_MIGRATION_LOCK},
        )
    await connection.run_sync(create_tables(schema_version))
    current = (await connection.execute(select(func.max(schema_version.c.version)))).scalar()
    current = int(current or 0)
    latest = migrations[-1].version if migrations else 0
    if current > latest:
        raise StorageError(
            f"the database has schema version {current} but this topicrawl knows only up to "
            f"{latest}: upgrade topicrawl, or use another database"
        )
    applied: list[int] = []
    for migration in migrations:
        if migration.version <= current:
            continue
        await connection.run_sync(migration.apply)
        await connection.execute(
            insert(schema_version).values(
                version=migration.version,
                description=migration.description,
                applied_at=time.time(),
            )
        )
        applied.append(migration.version)
    return applied


# The oldest schema whose pages and failures this topicrawl reads as they are (pages.links).
_OLDEST_READABLE = 2


async def check_readable(engine: AsyncEngine, *, display: str) -> int:
    """The schema version of a database to be read without migrating it.

    Raises:
        StorageError: it is not a topicrawl database, or its schema is too old or too new to
            read as it is.
    """
    async with engine.connect() as connection:
        if not await connection.run_sync(lambda sync: inspect(sync).has_table("schema_version")):
            raise StorageError(
                f"{display} is not a topicrawl database (it has no schema_version table)"
            )
        found = (await connection.execute(select(func.max(schema_version.c.version)))).scalar()
    version = int(found or 0)
    if version > LATEST_VERSION:
        raise StorageError(
            f"{display} has schema version {version} but this topicrawl knows only up to "
            f"{LATEST_VERSION}: upgrade topicrawl"
        )
    if version < _OLDEST_READABLE:
        raise StorageError(
            f"{display} has schema version {version}, too old to read as it is: open it "
            "once with write access (e.g. resume its crawl) to migrate it"
        )
    return version
