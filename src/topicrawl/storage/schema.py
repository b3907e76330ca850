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
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
)

__all__ = [
    "ACCOUNT_TABLES",
    "FOCUS_TABLES",
    "KG_TABLES",
    "LEADER_TABLES",
    "PAGE_TOPIC_COLUMNS",
    "PAGE_TOPIC_INDEXES",
    "PARSER_TABLES",
    "REVISIT_TABLES",
    "SYSTEM_TABLES",
    "TRACKING_TABLES",
    "VIDEO_TABLES",
    "account_follows",
    "account_posts",
    "account_runs",
    "account_tiers",
    "accounts",
    "allocations",
    "failures",
    "focus_states",
    "heat_forecasts",
    "kg_aliases",
    "kg_entities",
    "kg_entity_urls",
    "kg_relation_urls",
    "kg_relations",
    "labels",
    "leader_leases",
    "leader_terms",
    "metadata",
    "node_rounds",
    "page_history",
    "page_media",
    "page_records",
    "pages",
    "parser_changes",
    "parser_patterns",
    "posts",
    "run_samples",
    "runs",
    "schema_version",
    "system_visits",
    "topic_heat",
    "topic_words",
    "tracked_topics",
    "tracking_periods",
    "video_tiers",
    "videos",
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
    # The URL's host (and port when not the default), for the dashboard's filter; schema 6.
    Column("host", Text, nullable=True),
    # Schema 8 (PAGE_TOPIC_COLUMNS): the crawl topic the page is most about (a scoring strategy
    # with topics says), and the priorities its strategy gave its links, stored with the page.
    Column("topic", Text, nullable=True),
    Column("link_scores", Text, nullable=True, comment="JSON, see storage.link_scores"),
    # Schema 15: whether the title or text has Chinese, Japanese or Korean characters, set by
    # the writer (one regular-expression search); SQLite's triggers put such pages in the
    # trigram index by it (see storage.search_index).
    Column("cjk", Boolean, nullable=True),
    # Newest first (the dashboard's pages list) and by host, both in keyset order.
    Index("ix_pages_fetched_at_id", "fetched_at", "id"),
    Index("ix_pages_host_fetched_at", "host", "fetched_at", "id"),
    # Schema 8: by topic in keyset order; and on SQLite, the columns a text search filters on,
    # by id: FTS5 gives the matches' ids, and looking each up here reads a few bytes where the
    # table's row (its text first, host last) costs overflow pages (10x faster, see
    # benchmarks/dashboard). PostgreSQL keeps those columns inline in the row anyway.
    Index("ix_pages_topic_fetched_at", "topic", "fetched_at", "id"),
    Index(
        "ix_pages_filters", "id", "host", "status", "relevance", "run_id", "topic", "fetched_at"
    ).ddl_if(dialect="sqlite"),
)

# The columns and indexes of ``pages`` that migration 8 adds to an older database.
PAGE_TOPIC_COLUMNS = ("topic", "link_scores")
PAGE_TOPIC_INDEXES = ("ix_pages_topic_fetched_at", "ix_pages_filters")

# One row per URL, like pages: a failure saved again (the URL's lease came back after a crash
# and it failed again) replaces the stored one, keeping its place; a late write of an older
# failure never replaces a newer one. Unique since schema version 5.
failures = Table(
    "failures",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, index=True, unique=True),
    Column("kind", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("status", Integer, nullable=True),
    Column("at", Double, nullable=False),
    Column("depth", Integer, nullable=False),
    Column("parent_url", Text, nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("run_id", Id, nullable=True),
)


# -- topic tracking (schema version 3) ---------------------------------------------------------
# A tracked topic's id is the topic-word table's id; one database holds one tracking history.

tracking_periods = Table(
    "tracking_periods",
    metadata,
    Column("period", Integer, primary_key=True, autoincrement=False),
    Column("started_at", Double, nullable=False),
    Column("finished_at", Double, nullable=False),
    Column("keywords", Text, nullable=False, comment="JSON array"),
    Column("posts", Integer, nullable=False, comment="new posts collected"),
    Column("cpu_total", Double, nullable=True, comment="machine CPU %, one core = 100"),
    Column("cpu_used_by_others", Double, nullable=True),
    Column("heat_weights", Text, nullable=False, comment="JSON: AHP weights of the indicators"),
)

posts = Table(
    "posts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("source", Text, nullable=False),
    Column("post_id", Text, nullable=False),
    Column("period", Integer, nullable=False, index=True),
    Column("created_at", Double, nullable=False),
    Column("author", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("url", Text, nullable=False),
    Column("links", Text, nullable=False, comment="JSON array of URLs"),
    Column("tags", Text, nullable=False, comment="JSON array"),
    Column("lang", Text, nullable=True),
    Column("reposts", BigInteger, nullable=False),
    Column("likes", BigInteger, nullable=False),
    Column("comments", BigInteger, nullable=False),
    Column("heat", Double, nullable=False),
    Column("topic_id", Integer, nullable=True, index=True),
    Index("ix_posts_source_post_id", "source", "post_id", unique=True),
)

tracked_topics = Table(
    "tracked_topics",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("first_seen", Integer, nullable=False),
    Column("last_seen", Integer, nullable=False),
    Column("retired_at", Integer, nullable=True),
    Column("words", Text, nullable=False, comment="JSON object word -> weight, current"),
)

topic_words = Table(
    "topic_words",
    metadata,
    Column("topic_id", Integer, nullable=False),
    Column("period", Integer, nullable=False),
    Column("word", Text, nullable=False),
    Column("weight", Double, nullable=False),
    PrimaryKeyConstraint("topic_id", "period", "word"),
)

topic_heat = Table(
    "topic_heat",
    metadata,
    Column("topic_id", Integer, nullable=False),
    Column("period", Integer, nullable=False),
    Column("heat", Double, nullable=False),
    Column("posts", Integer, nullable=False),
    PrimaryKeyConstraint("topic_id", "period"),
)

# One row per method per forecast, plus method "combined" (the entropy mix, weight 1).
heat_forecasts = Table(
    "heat_forecasts",
    metadata,
    Column("topic_id", Integer, nullable=False),
    Column("target_period", Integer, nullable=False),
    Column("method", Text, nullable=False),
    Column("made_at_period", Integer, nullable=False),
    Column("value", Double, nullable=False),
    Column("weight", Double, nullable=False, comment="entropy weight in the combination"),
    Column("note", Text, nullable=False),
    PrimaryKeyConstraint("topic_id", "target_period", "method"),
)

allocations = Table(
    "allocations",
    metadata,
    Column("topic_id", Integer, nullable=False),
    Column("period", Integer, nullable=False),
    Column("heat", Double, nullable=False, comment="the forecast heat allocated on"),
    Column("cpu_cap", Double, nullable=False),
    Column("processes", Integer, nullable=False),
    PrimaryKeyConstraint("topic_id", "period"),
)

TRACKING_TABLES: tuple[Table, ...] = (
    tracking_periods,
    posts,
    tracked_topics,
    topic_words,
    topic_heat,
    heat_forecasts,
    allocations,
)

# Focused crawling (migration 4). A person's relevance labels of pages (``topicrawl label``),
# one per URL and topic ("" when the crawl has one topic): yes, no or skip.
labels = Table(
    "labels",
    metadata,
    Column("url", Text, primary_key=True),
    Column("topic", Text, primary_key=True, server_default=""),
    Column("label", Text, nullable=False, comment="yes, no or skip"),
    Column("labelled_at", Double, nullable=False),
)

# What a focused crawl learned (topic vector history, threshold history), one row per save;
# a resumed crawl continues from the latest row of its storage.
focus_states = Table(
    "focus_states",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("run_id", Id, nullable=True),
    Column("saved_at", Double, nullable=False),
    Column("pages", Integer, nullable=False),
    Column("state", Text, nullable=False, comment="JSON, see topicrawl.focus.state"),
)

FOCUS_TABLES: tuple[Table, ...] = (labels, focus_states)

# The crawl's live time series (schema version 6), one row every ``samples_interval`` seconds
# per crawling process: counters are cumulative, gauges are the values at ``at``. ``node`` is
# the distributed worker's id, null for ``topicrawl crawl``. See topicrawl.engine.samples.
run_samples = Table(
    "run_samples",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("run_id", Id, nullable=False),
    Column("at", Double, nullable=False),
    Column("node", Text, nullable=True),
    Column("pages", BigInteger, nullable=False),
    Column("failures", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("queued", BigInteger, nullable=False),
    Column("in_flight", Integer, nullable=False),
    Column("parse_backlog", Integer, nullable=False),
    Column("failures_by_kind", Text, nullable=False, comment="JSON object kind -> count"),
    Column("waits", Text, nullable=False, comment="JSON object reason -> count"),
    Index("ix_run_samples_run_id_at", "run_id", "at"),
)


# -- knowledge graph (migration 7; see topicrawl.kg) -------------------------------------------
# ``key`` names an entity across loads: the KB file's own id for a loaded entity, or
# ``found:<type>:<name>`` for one the crawl recognised but could not link (origin "found").
kg_entities = Table(
    "kg_entities",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False, unique=True),
    Column("name", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("lang", Text, nullable=True),
    Column("origin", Text, nullable=False, comment="loaded or found"),
    Column("created_at", Double, nullable=False),
)

# An alias's prior weighs how often the alias means this entity rather than another one.
kg_aliases = Table(
    "kg_aliases",
    metadata,
    Column("entity_id", Id, nullable=False),
    Column("alias", Text, nullable=False, index=True),
    Column("prior", Double, nullable=False),
    PrimaryKeyConstraint("entity_id", "alias"),
)

kg_relations = Table(
    "kg_relations",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("subject_id", Id, nullable=False, index=True),
    Column("type", Text, nullable=False),
    Column("object_id", Id, nullable=False, index=True),
    Column("confidence", Double, nullable=False),
    Column("provenance", Text, nullable=False, comment="loaded, or the pattern that found it"),
    Index("ix_kg_relations_triple", "subject_id", "type", "object_id", unique=True),
)

# Which pages mention an entity (one row per entity and URL, kept at its best link score).
kg_entity_urls = Table(
    "kg_entity_urls",
    metadata,
    Column("entity_id", Id, nullable=False),
    Column("url", Text, nullable=False, index=True),
    Column("mentions", Integer, nullable=False),
    Column("score", Double, nullable=False),
    Column("seen_at", Double, nullable=False),
    PrimaryKeyConstraint("entity_id", "url"),
)

kg_relation_urls = Table(
    "kg_relation_urls",
    metadata,
    Column("relation_id", Id, nullable=False),
    Column("url", Text, nullable=False, index=True),
    Column("confidence", Double, nullable=False),
    Column("evidence", Text, nullable=False, comment="the sentence, cut to 300 characters"),
    PrimaryKeyConstraint("relation_id", "url"),
)

KG_TABLES: tuple[Table, ...] = (
    kg_entities,
    kg_aliases,
    kg_relations,
    kg_entity_urls,
    kg_relation_urls,
)


# Revisits (issue #22, helper s15-revisit): every fetch of a page, not only the newest; the
# newest row per URL also carries what a resumed crawl needs (validators, text hash).
page_history = Table(
    "page_history",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False),
    Column("fetched_at", Double, nullable=False),
    Column("status", Integer, nullable=False, comment="304: not modified"),
    Column("content_hash", Text, nullable=True, comment="hash of the extracted text"),
    Column("changed", Boolean, nullable=False, comment="changed since the previous fetch"),
    Column("etag", Text, nullable=True),
    Column("last_modified", Text, nullable=True),
    Column("rate", Double, nullable=True, comment="estimated changes per day after this fetch"),
    Column("due_at", Double, nullable=True, comment="when the page is due again"),
    Column("run_id", Id, nullable=True),
    Index("ix_page_history_url_fetched_at", "url", "fetched_at"),
)

REVISIT_TABLES: tuple[Table, ...] = (page_history,)
# -- microblog accounts (migration 10; see topicrawl.engine.accounts) ---------------------------
# One row per run of `topicrawl accounts run`: what it was given, what it found, how it ended.
account_runs = Table(
    "account_runs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("source", Text, nullable=False, comment="the microblog server's host"),
    Column("started_at", Double, nullable=False),
    Column("finished_at", Double, nullable=True),
    Column("status", Text, nullable=False, comment="running, done or failed"),
    Column("entities", Integer, nullable=False),
    Column("matched", Integer, nullable=False),
    Column("accounts", Integer, nullable=False),
    Column("edges", Integer, nullable=False),
    Column("kept", Integer, nullable=False),
    Column("settings", Text, nullable=False, comment="JSON"),
    Column("error", Text, nullable=True),
)

# An account at its latest run: match, hop, LDA score, influence, tier and where it is worked.
accounts = Table(
    "accounts",
    metadata,
    Column("source", Text, nullable=False),
    Column("account_id", Text, nullable=False),
    Column("username", Text, nullable=False),
    Column("display_name", Text, nullable=False),
    Column("followers", BigInteger, nullable=False),
    Column("following", BigInteger, nullable=False),
    Column("statuses", BigInteger, nullable=False),
    Column("hop", Integer, nullable=True),
    Column("match_name", Text, nullable=True),
    Column("match_step", Integer, nullable=True, comment="1 exact, 2 affix, 3 fuzzy"),
    Column("match_score", Double, nullable=True),
    Column("domain_score", Double, nullable=True),
    Column("kept", Boolean, nullable=False),
    Column("activity", Double, nullable=False, comment="posts a day"),
    Column("influence", Double, nullable=True),
    Column("tier", Integer, nullable=True),
    Column("revisit_days", Double, nullable=True),
    Column("next_visit_at", Double, nullable=True),
    Column("node", Text, nullable=True),
    Column("thread", Integer, nullable=True),
    Column("run_id", Id, nullable=False, index=True),
    Column("updated_at", Double, nullable=False),
    PrimaryKeyConstraint("source", "account_id"),
)

account_follows = Table(
    "account_follows",
    metadata,
    Column("source", Text, nullable=False),
    Column("follower", Text, nullable=False),
    Column("followee", Text, nullable=False),
    Column("run_id", Id, nullable=False),
    PrimaryKeyConstraint("source", "follower", "followee"),
    Index("ix_account_follows_followee", "source", "followee"),
)

# A status on an account's timeline (``original_id`` set for a repost: the reposted status).
account_posts = Table(
    "account_posts",
    metadata,
    Column("source", Text, nullable=False),
    Column("account_id", Text, nullable=False),
    Column("post_id", Text, nullable=False),
    Column("original_id", Text, nullable=True),
    Column("author", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("reposts", Integer, nullable=False),
    Column("likes", Integer, nullable=False),
    Column("comments", Integer, nullable=False),
    Column("url", Text, nullable=False),
    Column("run_id", Id, nullable=False),
    PrimaryKeyConstraint("source", "account_id", "post_id"),
)

# Each run's influence and tier per account: the history the weekly recompute leaves.
account_tiers = Table(
    "account_tiers",
    metadata,
    Column("run_id", Id, nullable=False),
    Column("source", Text, nullable=False),
    Column("account_id", Text, nullable=False),
    Column("influence", Double, nullable=False),
    Column("tier", Integer, nullable=True),
    PrimaryKeyConstraint("run_id", "source", "account_id"),
)

ACCOUNT_TABLES: tuple[Table, ...] = (
    account_runs,
    accounts,
    account_follows,
    account_posts,
    account_tiers,
)
# -- parser library (see topicrawl.parse.methods) --------------------------
# One row per URL pattern: the method that works for it now, counts added by every worker, and
# the fingerprints of its fields' elements (JSON) for relocation after a template change.
parser_patterns = Table(
    "parser_patterns",
    metadata,
    Column("pattern", Text, primary_key=True),
    Column("schema_name", Text, nullable=False, index=True),
    Column("method", Text, nullable=True),
    Column("successes", BigInteger, nullable=False),
    Column("failures", BigInteger, nullable=False),
    Column("tried", BigInteger, nullable=False, comment="methods tried, summed over pages"),
    Column("pages", BigInteger, nullable=False),
    Column("fingerprints", Text, nullable=False, comment="JSON object: field -> fingerprint"),
    Column("updated_at", Double, nullable=False),
)

# Each time a pattern's remembered method failed and another took over.
parser_changes = Table(
    "parser_changes",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("at", Double, nullable=False, index=True),
    Column("pattern", Text, nullable=False, index=True),
    Column("old_method", Text, nullable=True),
    Column("new_method", Text, nullable=False),
    Column("sample_url", Text, nullable=False),
    Column("failed_fields", Text, nullable=False, comment="JSON array of field names"),
)

# A page's extracted record (the latest), beside its row in pages (joined on url).
page_records = Table(
    "page_records",
    metadata,
    Column("url", Text, primary_key=True),
    Column("pattern", Text, nullable=False),
    Column("schema_name", Text, nullable=False),
    Column("method", Text, nullable=False),
    Column("record", Text, nullable=False, comment="JSON object: field -> value"),
    Column("extracted_at", Double, nullable=False),
)

PARSER_TABLES: tuple[Table, ...] = (parser_patterns, parser_changes, page_records)
# -- video pages (schema version 12) ------------------------------------------------------------
# One row per video or play page, keyed like pages by URL (a label, not a foreign key: the
# row is written in the same batch as its page). ``media`` is a JSON array of objects with
# url, type, width, height, bitrate, source (topicrawl.core.models.MediaUrl).

page_media = Table(
    "page_media",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, unique=True),
    Column("video_class", Text, nullable=False, comment="play | video"),
    Column("media", Text, nullable=False, comment="JSON array of media URL objects"),
    Column("resolver", Text, nullable=False),
    Column("errors", Text, nullable=False, comment="JSON array of messages"),
    Column("fetched_at", Double, nullable=False),
    Column("run_id", Id, nullable=True),
)

VIDEO_TABLES: tuple[Table, ...] = (page_media,)
# -- seed 004 as one system (issue #22, `topicrawl video run`; see topicrawl.engine.videosystem)
# A video of a site at its latest plan: its fields from the detail page's record, the pages that
# belong to it, the counts its popularity came from, its tier and the node that revisits it.
videos = Table(
    "videos",
    metadata,
    Column("source", Text, nullable=False, comment="the video site's base URL"),
    Column("video", Text, nullable=False, comment="the detail page's URL"),
    Column("title", Text, nullable=False),
    Column("kind", Text, nullable=False, comment="film, series or video"),
    Column("directors", Text, nullable=False, comment="JSON array"),
    Column("actors", Text, nullable=False, comment="JSON array"),
    Column("pages", Text, nullable=False, comment="JSON array of the video's page URLs"),
    Column("counts", Text, nullable=False, comment="JSON object: plays, comments, favourites"),
    Column("partial", Boolean, nullable=False, comment="some fields of the record missing"),
    Column("popularity", Double, nullable=False),
    Column("tier", Integer, nullable=False),
    Column("revisit_days", Double, nullable=False),
    Column("node", Text, nullable=False),
    Column("planned_at", Double, nullable=False),
    PrimaryKeyConstraint("source", "video"),
)

# Every plan's popularity and tier per video: the history the weekly re-plan leaves.
video_tiers = Table(
    "video_tiers",
    metadata,
    Column("source", Text, nullable=False),
    Column("planned_at", Double, nullable=False),
    Column("video", Text, nullable=False),
    Column("popularity", Double, nullable=False),
    Column("tier", Integer, nullable=False),
    PrimaryKeyConstraint("source", "planned_at", "video"),
)

# Every revisit the system made, of a page or an account: when it was due, when it was made,
# what it found.
system_visits = Table(
    "system_visits",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("source", Text, nullable=False),
    Column("kind", Text, nullable=False, comment="page or account"),
    Column("item", Text, nullable=False, comment="page URL or account id"),
    Column("tier", Integer, nullable=False),
    Column("node", Text, nullable=False),
    Column("due_at", Double, nullable=False),
    Column("visited_at", Double, nullable=False),
    Column("status", Integer, nullable=False, comment="HTTP status; 304 not modified"),
    Column("changed", Boolean, nullable=False),
    Column("found", Integer, nullable=False, comment="new posts, or fields that changed"),
    Index("ix_system_visits_item", "source", "item", "visited_at"),
)

# Each node's measured work per round (between two plans): the weights new videos go by.
node_rounds = Table(
    "node_rounds",
    metadata,
    Column("source", Text, nullable=False),
    Column("node", Text, nullable=False),
    Column("at", Double, nullable=False, comment="the plan that closed the round"),
    Column("items", Integer, nullable=False, comment="pages and accounts revisited"),
    Column("seconds", Double, nullable=False, comment="real seconds they took"),
    PrimaryKeyConstraint("source", "node", "at"),
)

SYSTEM_TABLES: tuple[Table, ...] = (videos, video_tiers, system_visits, node_rounds)

# -- the video system's leader (schema version 16) -----------------------------------------------
# Which node of a run leads it (crawls, plans, ranks accounts): a lease on the system's clock,
# renewed by its holder and taken over by another node once it has expired. One row a source.
leader_leases = Table(
    "leader_leases",
    metadata,
    Column("source", Text, primary_key=True, comment="the video site's base URL"),
    Column("holder", Text, nullable=False, comment="the leading node's name"),
    Column("term", Integer, nullable=False, comment="1 for the first holder, +1 a takeover"),
    Column("taken_at", Double, nullable=True, comment="when the term began (NULL: unknown)"),
    Column("renewed_at", Double, nullable=True, comment="the holder's last renewal"),
    Column("expires", Double, nullable=False, comment="the clock's time the lease ends"),
)

# Every term of a lease: who took it, when, and from whom (the takeover log).
leader_terms = Table(
    "leader_terms",
    metadata,
    Column("source", Text, nullable=False),
    Column("term", Integer, nullable=False),
    Column("holder", Text, nullable=False),
    Column("taken_at", Double, nullable=True),
    Column("previous", Text, nullable=True, comment="the holder before (NULL: the first)"),
    Column("previous_expires", Double, nullable=True, comment="when its lease had ended"),
    PrimaryKeyConstraint("source", "term"),
)

LEADER_TABLES: tuple[Table, ...] = (leader_leases, leader_terms)

# -- work split between the video system's nodes (schema version 18) -----------------------------
# The items of one job (the first crawl's URLs, an account ranking's accounts to read) that
# every live node claims a few at a time: a claim lasts until ``expires`` (real seconds), so a
# dead node's items go back to the others; ``done`` items keep who did them and their result.
split_items = Table(
    "split_items",
    metadata,
    Column("source", Text, nullable=False, comment="the video site's base URL"),
    Column("job", Text, nullable=False, comment="e.g. crawl:<run id>, follows:<run>:<hop>"),
    Column("item", Text, nullable=False, comment="a URL or an account id"),
    Column("node", Text, nullable=True, comment="who holds or did it (NULL: nobody yet)"),
    Column("expires", Double, nullable=True, comment="when the claim ends (epoch seconds)"),
    Column("done", Boolean, nullable=False),
    Column("result", Text, nullable=True, comment="JSON, the job kind's own"),
    PrimaryKeyConstraint("source", "job", "item"),
    Index("ix_split_items_open", "source", "job", "done"),
)

SPLIT_TABLES: tuple[Table, ...] = (split_items,)
