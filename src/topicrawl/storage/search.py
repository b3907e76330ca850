"""Full-text search and keyset pagination over stored pages (the dashboard's pages list).

Without words, pages come newest first by ``(fetched_at, id)``; with words, best match first
(SQLite: FTS5's bm25 over the word index; PostgreSQL: ``ts_rank`` of the stored vector, the
``simple`` configuration), then by id. Each answer carries an opaque cursor naming the last row
returned; the next page starts after it (keyset pagination: a deep page costs what the
first one does, where ``OFFSET`` would read and drop every row before it).

The user's words never reach the query as syntax. SQLite: every word becomes a quoted FTS5
string (a double quote inside is doubled), so ``OR``, ``NOT``, ``NEAR``, ``*``, ``^``, ``:``
and parentheses are plain text, and the words are ANDed. Words go to the word index
(unicode61); Chinese, Japanese and Korean words of three characters or more to the trigram
index of the pages in those scripts (see :mod:`topicrawl.storage.search_index`); a shorter
CJK word (most Chinese words have two characters) or a word of punctuation only is matched
by ``LIKE`` (its ``%``, ``_`` and escape characters escaped), and when every word is such a
word the search scans the pages, newest (highest id) first: fast when the word is common,
a full scan when it is rare. PostgreSQL: the words go through ``plainto_tsquery``, which
takes any text, against the stored ``search_vector`` column; a CJK word of two characters or
more is looked up by its last bigram and, when longer, matched as a whole by ``LIKE`` (see
``_postgres_query``), a one-character one is matched by ``LIKE`` only.

Ranking every match of a common word costs a bm25 score per match (seconds for a word in
most of a million pages), so a text search ranks the newest :data:`RANKED` matches that pass
the filters, best first; a word in more pages than that gives the best of its newest
matches; more words or filters reach older ones.

While a crawl writes, the ranks of a text search shift between two requests (bm25 counts the
documents), so a later page may repeat or skip a result; the pages list without words is
stable apart from newly fetched pages.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Double,
    Select,
    String,
    TableClause,
    Text,
    TextClause,
    bindparam,
    cast,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
    text,
    tuple_,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.ext.compiler import compiles

from topicrawl.storage.schema import pages
from topicrawl.storage.search_index import CJK_TABLE, FTS_TABLE, PG_VECTOR, cjk_bigrams, has_cjk
from topicrawl.storage.stored_schema import StoredSchema

__all__ = [
    "MAX_LIMIT",
    "RANKED",
    "InvalidCursor",
    "MissingColumn",
    "PageQuery",
    "PageSummary",
    "fts_words",
    "search_pages",
    "search_unavailable",
    "snippet_of",
]

MAX_LIMIT = 500
_FILTER_COLUMNS = ("host", "status", "relevance", "run_id", "topic", "fetched_at")
RANKED = 2_000
"""Matches a text search ranks: the newest this many that pass the filters."""
_WORK_MEM = "32MB"  # PostgreSQL: work_mem of a text search's transaction
# Enough memory for the matches' bitmaps to stay exact (4 MB, the default, made the topic
# filter's lossy: 33,000 rows read to find 12,000 on 1,000,000 rows, 3x the work) and for the
# sorts; for the search's transaction only.
_WORK_MEM_SETTING = func.set_config("work_mem", _WORK_MEM, True)
_SNIPPET = 200  # characters of text around the first match
_TRIGRAM = 3
_MAX_WORDS = 16  # more words add nothing a user could tell but cost a join term each


class InvalidCursor(ValueError):
    """A cursor that this module did not make (or one for the other kind of search)."""


class MissingColumn(ValueError):
    """A filter on a column the database's (older) schema does not have."""


# The schema whose full-text index a ranked text search reads, by dialect: SQLite's FTS5
# tables with the filter index of schema 8, PostgreSQL's stored vector of schema 8. Before
# it, words are matched by a scan (LIKE), newest first.
SEARCH_SCHEMA = {"sqlite": 8, "postgresql": 8}


def search_unavailable(schema: StoredSchema | None, dialect: str) -> str | None:
    """Why a text search in a database of ``schema`` is a scan, not ranked (None: it is
    ranked)."""
    if schema is None:
        return None
    return schema.lacks(SEARCH_SCHEMA.get(dialect, SEARCH_SCHEMA["postgresql"]))


def _check_filters(query: PageQuery, schema: StoredSchema) -> None:
    for value, name, version in ((query.host, "host", 6), (query.topic, "topic", 8)):
        if value is not None and not schema.has(pages.name, name):
            raise MissingColumn(
                f"this database has schema version {schema.version}: its pages have no {name} "
                f"to filter on (that came with version {version}; the dashboard never migrates "
                "a database: open it once with write access to migrate it)"
            )


@dataclass(frozen=True, slots=True)
class PageQuery:
    """What to look for; every field left ``None`` is no condition."""

    text: str | None = None
    host: str | None = None  # "name:port" as stored, or a bare name for every port
    status: int | None = None
    min_relevance: float | None = None
    max_relevance: float | None = None
    since: float | None = None
    until: float | None = None
    run_id: int | None = None
    topic: str | None = None  # the crawl topic a scoring strategy found the page most about


@dataclass(frozen=True, slots=True)
class PageSummary:
    """One result: the page's list fields and a plain-text snippet (never escaped here)."""

    id: int
    url: str
    title: str
    host: str
    status: int
    relevance: float | None
    score: float
    fetched_at: float
    snippet: str
    topic: str | None = None


def fts_words(words: str) -> list[str]:
    """The user's words, split on white space, duplicates and empties dropped, in order."""
    seen: dict[str, None] = {}
    for word in words.split():
        seen.setdefault(word, None)
    return list(seen)[:_MAX_WORDS]


def _fts_string(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _like_pattern(word: str) -> str:
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet_of(body: str, words: Sequence[str], *, size: int = _SNIPPET) -> str:
    """About ``size`` characters of ``body`` around the first of ``words`` found in it (case
    folded), else its start; white space runs become one space."""
    lowered = body.lower()
    found = [at for at in (lowered.find(w.lower()) for w in words) if at >= 0]
    start = max(0, min(found) - size // 4) if found else 0
    piece = " ".join(body[start : start + size].split())
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + size < len(body) else ""
    return f"{prefix}{piece}{suffix}"


def _encode_cursor(kind: str, values: Sequence[float | int]) -> str:
    raw = json.dumps([kind, *values], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, kind: str) -> tuple[float, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor("the cursor is not one this search made") from exc
    if (
        not isinstance(decoded, list)
        or len(decoded) != 3  # kind, sort key, id
        or decoded[0] != kind
        or not isinstance(decoded[1], int | float)
        or isinstance(decoded[1], bool)
        or not isinstance(decoded[2], int)
        or isinstance(decoded[2], bool)
    ):
        raise InvalidCursor("the cursor is not one this search made (or is for another search)")
    return float(decoded[1]), decoded[2]


def _host_condition(host: str, rows: TableClause = pages) -> ColumnElement[bool]:
    """``host`` as stored (``name:port``), or a bare name (or ``[v6]`` address) for every port.

    The bare form is a range on the indexed column (``name:`` up to ``name;``, the character after
    ``:``), not a LIKE, so the index on ``(host, fetched_at)`` still serves it.
    """
    if host.endswith("]") or ":" not in host:
        return or_(rows.c.host == host, (rows.c.host >= host + ":") & (rows.c.host < host + ";"))
    return rows.c.host == host


def _filters(query: PageQuery, rows: TableClause = pages) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if query.host is not None:
        conditions.append(_host_condition(query.host, rows))
    if query.status is not None:
        conditions.append(rows.c.status == query.status)
    if query.min_relevance is not None:
        conditions.append(rows.c.relevance >= query.min_relevance)
    if query.max_relevance is not None:
        conditions.append(rows.c.relevance <= query.max_relevance)
    if query.since is not None:
        conditions.append(rows.c.fetched_at >= query.since)
    if query.until is not None:
        conditions.append(rows.c.fetched_at <= query.until)
    if query.run_id is not None:
        conditions.append(rows.c.run_id == query.run_id)
    if query.topic is not None:
        conditions.append(rows.c.topic == query.topic)
    return conditions


# Read for the (at most ``limit``) pages found, once their ids are known: a sort that carried
# every match's text along would read the text of every match.
_SUMMARY_COLUMNS = (
    "id",
    "url",
    "title",
    "host",
    "status",
    "relevance",
    "score",
    "fetched_at",
    "text",
    "topic",
)
_SUMMARY = tuple(pages.c[name] for name in _SUMMARY_COLUMNS)


def _newest(query: PageQuery, after: str | None, limit: int) -> Select[Any]:
    statement = select(pages.c.id, pages.c.fetched_at.label("sort_key")).where(*_filters(query))
    if after is not None:
        fetched_at, page_id = _decode_cursor(after, "n")
        statement = statement.where(
            tuple_(pages.c.fetched_at, pages.c.id) < tuple_(fetched_at, page_id)
        )
    return statement.order_by(pages.c.fetched_at.desc(), pages.c.id.desc()).limit(limit)


def _scan_conditions(words: Sequence[str], rows: TableClause = pages) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    for word in words:
        pattern = _like_pattern(word)
        conditions.append(
            or_(
                rows.c.title.like(pattern, escape="\\"),
                rows.c.text.like(pattern, escape="\\"),
            )
        )
    return conditions


def _scan(conditions: list[ColumnElement[bool]], after: str | None, limit: int) -> Select[Any]:
    """No word the index can look up: a scan, newest (highest id) first, rank 0 for all."""
    statement = select(pages.c.id, literal_column("0.0").label("sort_key")).where(*conditions)
    if after is not None:
        _, page_id = _decode_cursor(after, "t")
        statement = statement.where(pages.c.id < page_id)
    return statement.order_by(pages.c.id.desc()).limit(limit)


class _IndexedPages(TableClause):
    """``pages`` read through its index of filter columns by id (SQLite, schema 8)."""

    inherit_cache = True


@compiles(_IndexedPages, "sqlite")
def _indexed_by(element: _IndexedPages, compiler: Any, **kw: Any) -> str:
    rendered: str = compiler.visit_table(element, **kw)
    return f"{rendered} INDEXED BY ix_pages_filters" if kw.get("asfrom") else rendered


# Each text match's filter columns come from the narrow index by id, not from its page row
# (whose text comes first and host last: overflow pages): a filtered search on 200,000 rows
# 226-351 ms -> 17-22 ms. SQLite's planner picks the table's own key for ``id = ?`` unless
# the database was ANALYZEd, hence INDEXED BY.
_INDEXED = _IndexedPages(
    "pages",
    *(column(c.name, c.type) for c in pages.columns if c.name in {"id", *_FILTER_COLUMNS}),
    column("title", Text()),
    column("text", Text()),
)


@dataclass(frozen=True, slots=True)
class _Words:
    """The user's words by how they can be looked up."""

    indexed: list[str]  # words of letters or digits: the word index
    cjk: list[str]  # Chinese, Japanese or Korean, three characters or more: the trigram index
    scanned: list[str]  # shorter CJK words, and words of punctuation only: LIKE

    @classmethod
    def sort(cls, words: Sequence[str]) -> _Words:
        indexed: list[str] = []
        cjk: list[str] = []
        scanned: list[str] = []
        for word in words:
            if has_cjk(word):
                (cjk if len(word) >= _TRIGRAM else scanned).append(word)
            elif any(ch.isalnum() for ch in word):
                indexed.append(word)
            else:
                scanned.append(word)
        return cls(indexed, cjk, scanned)


def _fts_match(table_name: str, words: Sequence[str]) -> tuple[Any, TextClause]:
    """The FTS5 table and its MATCH condition for ``words`` (each a quoted string, ANDed)."""
    fts = table(table_name, column("rowid"), column("rank"))
    parameter = f"{table_name}_query"
    match = text(f"{table_name} MATCH :{parameter}").bindparams(
        bindparam(parameter, " ".join(_fts_string(w) for w in words))
    )
    return fts, match


def _sqlite_text(query: PageQuery, words: list[str], after: str | None, limit: int) -> Select[Any]:
    """Best bm25 first (FTS5's rank: lower is better), then id. The word index ranks; CJK
    words of three characters or more must match in the trigram index too."""
    sorted_words = _Words.sort(words)
    conditions = _filters(query, _INDEXED) + _scan_conditions(sorted_words.scanned, _INDEXED)
    ranked_by = [(FTS_TABLE, sorted_words.indexed), (CJK_TABLE, sorted_words.cjk)]
    ranked_by = [(name, found) for name, found in ranked_by if found]
    if not ranked_by:
        plain = _filters(query) + _scan_conditions(sorted_words.scanned)
        return _scan(plain, after, limit)
    for name, found in ranked_by[1:]:
        fts, match = _fts_match(name, found)
        conditions.append(_INDEXED.c.id.in_(select(fts.c.rowid).where(match)))
    fts, match = _fts_match(*ranked_by[0])
    # The newest RANKED matches that pass the filters, walked in the index's own rowid
    # order (FTS5 stops there): bm25 is computed for those only, not for every match.
    matched = (
        select(fts.c.rowid.label("id"), cast(fts.c.rank, Double).label("sort_key"))
        .join_from(fts, _INDEXED, _INDEXED.c.id == fts.c.rowid)
        .where(match, *conditions)
        .order_by(fts.c.rowid.desc())
        .limit(RANKED)
        .subquery("matched")
    )
    statement = select(matched.c.id, matched.c.sort_key)
    if after is not None:
        sort_key, page_id = _decode_cursor(after, "t")
        statement = statement.where(
            tuple_(matched.c.sort_key, matched.c.id) > tuple_(sort_key, page_id)
        )
    return statement.order_by(matched.c.sort_key, matched.c.id).limit(limit)


def _postgres_query(words: Sequence[str]) -> Any | None:
    """The tsquery of the words the stored vector can look up (None: none can). Words of
    letters go through ``plainto_tsquery``; a CJK word of two characters or more is its last
    bigram (see :mod:`topicrawl.storage.search_index`), and one of three or more is also
    matched by ``LIKE`` (:func:`_pg_scanned`), which makes it exact: the whole word, as a
    substring. Not the phrase (or the AND) of its bigrams: PostgreSQL estimates those as if
    the bigrams were independent (390 pages for '服务器' on 1,000,000 rows, 18,000 found), so
    it took them for rare and read every page holding them instead of those of the window
    searched (17,700 heap blocks against 2,600); one bigram it estimates right."""
    simple: ColumnElement[Any] = literal_column("'simple'::regconfig")
    sorted_words = _Words.sort(words)
    queries: list[ColumnElement[Any]] = []
    if sorted_words.indexed:
        queries.append(func.plainto_tsquery(simple, _inlined(" ".join(sorted_words.indexed))))
    queries.extend(
        func.plainto_tsquery(simple, _inlined(cjk_bigrams(w)[-1])) for w in _pg_grams(words)
    )
    if not queries:
        return None
    tsquery = queries[0]
    for more in queries[1:]:
        tsquery = tsquery.op("&&")(more)
    return tsquery


def _pg_grams(words: Sequence[str]) -> list[str]:
    sorted_words = _Words.sort(words)
    return [w for w in (*sorted_words.cjk, *sorted_words.scanned) if _all_cjk(w)]


def _pg_scanned(words: Sequence[str]) -> list[str]:
    """The words matched by ``LIKE``: those the vector cannot look up, and the CJK words of
    more than one bigram (their order)."""
    sorted_words = _Words.sort(words)
    two = {w for w in _pg_grams(words) if len(w) == 2}
    return [w for w in (*sorted_words.cjk, *sorted_words.scanned) if w not in two]


_PG_VECTOR_COLUMN: ColumnElement[Any] = literal_column(f"pages.{PG_VECTOR}")
_FIRST_WINDOW = 1_024
"""Newest ids a PostgreSQL text search walks first (see :func:`_postgres_newest`)."""
_WALK_DENSITY = 0.04
"""Past this share of matching rows in the first window, the search walks on down the key."""
_WINDOW_GROWTH = 8


async def _plans(connection: AsyncConnection, *, bitmaps: bool, index_walks: bool) -> None:
    """Which scans the planner may use for the rest of this search's transaction."""
    on = {True: "on", False: "off"}
    await connection.exec_driver_sql(
        f"SELECT set_config('enable_bitmapscan', '{on[bitmaps]}', true), "
        f"set_config('enable_indexscan', '{on[index_walks]}', true)"
    )


async def _postgres_newest(
    connection: AsyncConnection, conditions: list[ColumnElement[bool]]
) -> list[int]:
    """The ids of the newest :data:`RANKED` pages that meet ``conditions``, newest first.

    The newest :data:`_FIRST_WINDOW` ids are walked row by row down the key (it stops at the
    :data:`RANKED`-th match). What they held says how the rest is read:

    - more than :data:`_WALK_DENSITY` of them matched: the walk goes on (a common word: the
      rows it reads lie together, cheaper a row than a bitmap's scattered ones);
    - the rest would hold fewer than 2 x :data:`RANKED` matches at that rate: one query over
      the rest, by the index bitmaps (a rare word: its few matches are read);
    - else windows of ids, newest first, sized from the matches found so far (twice the ids
      their rate says the rest needs), down to the oldest page. Inside each the index
      bitmaps of the words, of the filters' ``(column, id)`` indexes and of the id range are
      ANDed, so only the window's matches are read from the heap: 2,300-3,500 blocks where
      the bitmap of every match read one block per match (12,000-18,000 for 'deprecated' +
      topic and '服务器' on 1,000,000 rows, benchmarks/dashboard/README.md), and a walk
      expecting matches early read 164,000 rows.

    Each step reads ids below the last, newest first, so the ids found are exactly the newest
    matches, as one query over the whole table would give them.
    """
    # The first window is walked: the planner's own choice for it could be the whole bitmap of
    # a word in most pages (900,000 ids for 'the'), where the walk stops after ~2,200 rows.
    # Set with work_mem and read with the bounds: one round trip.
    bounds = (
        await connection.execute(
            select(
                func.min(pages.c.id),
                func.max(pages.c.id),
                _WORK_MEM_SETTING,
                func.set_config("enable_bitmapscan", "off", True),
            )
        )
    ).one()
    if bounds[0] is None:
        return []
    oldest, newest = int(bounds[0]), int(bounds[1])

    async def below(high: int, low: int | None) -> list[int]:
        window = [pages.c.id < high] if low is None else [pages.c.id < high, pages.c.id >= low]
        statement = (
            select(pages.c.id)
            .where(*conditions, *window)
            .order_by(pages.c.id.desc())
            .limit(RANKED - len(found))
        )
        return [int(row.id) for row in await connection.execute(statement)]

    found: list[int] = []
    high = newest + 1 - _FIRST_WINDOW  # the next window is [low, high)
    found += await below(newest + 1, high if high > oldest else None)
    if len(found) >= RANKED or high <= oldest:
        return found
    density = len(found) / _FIRST_WINDOW
    if density > _WALK_DENSITY:
        return found + await below(high, None)
    # Bitmaps only from here: in a big window the planner would walk the key backwards,
    # testing each row (it expects the matches early).
    await _plans(connection, bitmaps=True, index_walks=False)
    if density * (high - oldest) < 2 * RANKED:
        return found + await below(high, None)
    size = _FIRST_WINDOW
    while True:
        # Twice the ids the matches so far say the rest needs (their rate, from a few dozen
        # matches, is rough); only without any yet a fixed growth.
        if found:
            size = max(_FIRST_WINDOW, 2 * (RANKED - len(found)) * (newest + 1 - high) // len(found))
        else:
            size *= _WINDOW_GROWTH
        low = high - size
        found += await below(high, low if low > oldest else None)
        if len(found) >= RANKED or low <= oldest:
            return found
        high = low


async def _postgres_text(
    connection: AsyncConnection, query: PageQuery, words: list[str], after: str | None, limit: int
) -> Select[Any]:
    """Best ts_rank first (negated, so that lower is better as on SQLite), then id, over the
    stored ``search_vector`` (schema 8); words it cannot look up are scanned by ``LIKE``.

    As on SQLite, the newest :data:`RANKED` matches that pass the filters are ranked
    (:func:`_postgres_newest` finds their ids); only they are ranked, reading their vectors by
    id.
    """
    tsquery = _postgres_query(words)
    scanned = _scan_conditions(_pg_scanned(words))
    if tsquery is None:
        await connection.execute(select(_WORK_MEM_SETTING))
        return _scan(_filters(query) + scanned, after, limit)
    conditions = [_PG_VECTOR_COLUMN.op("@@")(tsquery), *_filters(query), *scanned]
    # Whichever scans are left on, 2,000 ids are looked up by the key (a walk or a bitmap).
    ids = await _postgres_newest(connection, conditions)
    matched = (
        select(
            pages.c.id, cast(-func.ts_rank(_PG_VECTOR_COLUMN, tsquery), Double).label("sort_key")
        )
        .where(pages.c.id.in_(ids))
        .subquery("matched")
    )
    statement = select(matched.c.id, matched.c.sort_key)
    if after is not None:
        key, page_id = _decode_cursor(after, "t")
        statement = statement.where(tuple_(matched.c.sort_key, matched.c.id) > tuple_(key, page_id))
    return statement.order_by(matched.c.sort_key, matched.c.id).limit(limit)


def _inlined(words: str) -> ColumnElement[Any]:
    """The words as a string literal in the statement (SQLAlchemy escapes it), not a parameter:
    a prepared statement reused with a parameter gets PostgreSQL's generic plan after five
    runs, which cannot know how common the word is; for a word in most pages it chose to
    rank every match (2.2 s on 200,000 rows where the plan for the word takes 24 ms)."""
    return bindparam(None, words, type_=String(), literal_execute=True)


def _all_cjk(word: str) -> bool:
    """A word of two or more CJK characters only: searchable as the phrase of its bigrams."""
    return len(word) >= 2 and all(has_cjk(ch) for ch in word)


async def search_pages(
    engine: AsyncEngine,
    query: PageQuery,
    *,
    after: str | None = None,
    limit: int = 50,
    schema: StoredSchema | None = None,
) -> tuple[list[PageSummary], str | None]:
    """One page of results and the opaque cursor of the next (None at the end).

    ``schema``: what a database opened without migrating holds (None: the latest schema). An
    older one's missing columns read as None, and before :data:`SEARCH_SCHEMA` words are
    matched by a scan, newest first (see :func:`search_unavailable`).

    Raises:
        InvalidCursor: ``after`` was not made by this function for the same kind of search
            (with words, or without).
        MissingColumn: a filter on a column the database's schema does not have.
        ValueError: ``limit`` is not between 1 and :data:`MAX_LIMIT`.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
    if schema is not None:
        _check_filters(query, schema)
    words = fts_words(query.text or "")
    summary = schema.columns(pages, _SUMMARY_COLUMNS) if schema is not None else list(_SUMMARY)
    async with engine.connect() as connection:
        # One row more than asked for tells whether there is a next page.
        if not words:
            kind, statement = "n", _newest(query, after, limit + 1)
        elif search_unavailable(schema, engine.dialect.name):
            conditions = _filters(query) + _scan_conditions(words)
            kind, statement = "t", _scan(conditions, after, limit + 1)
        elif engine.dialect.name == "sqlite":
            kind, statement = "t", _sqlite_text(query, words, after, limit + 1)
        else:
            kind = "t"
            statement = await _postgres_text(connection, query, words, after, limit + 1)
        keys = (await connection.execute(statement)).all()
        more = len(keys) > limit
        keys = keys[:limit]
        ids = [int(key.id) for key in keys]
        details = (
            (await connection.execute(select(*summary).where(pages.c.id.in_(ids)))).all()
            if ids
            else []
        )
    by_id = {int(row.id): row for row in details}
    rows = [by_id[page_id] for page_id in ids if page_id in by_id]
    found = [
        PageSummary(
            id=int(row.id),
            url=row.url,
            title=row.title,
            host=row.host or "",
            status=int(row.status),
            relevance=row.relevance,
            score=float(row.score),
            fetched_at=float(row.fetched_at),
            snippet=snippet_of(row.text, words),
            topic=row.topic,
        )
        for row in rows
    ]
    if not more or not keys:
        return found, None
    last = keys[-1]
    return found, _encode_cursor(kind, [float(last.sort_key), int(last.id)])
