"""Search over stored pages with filters and keyset pagination.

# TEMPORARY: replaced by the obs branch at merge (full-text search: SQLite FTS5, PostgreSQL
# tsvector). This stand-in implements the shared interface with a case-insensitive substring
# match of every word in the title or text, newest first, so the dashboard can be built and
# tested before the index exists; it scans the table and is not meant for large crawls.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import func, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from topicrawl.storage.schema import pages

__all__ = ["PageQuery", "PageSummary", "search_pages"]

_SNIPPET = 160


@dataclass(frozen=True, slots=True)
class PageQuery:
    """What to look for; every field left ``None`` does not filter."""

    text: str | None = None
    host: str | None = None
    status: int | None = None
    min_relevance: float | None = None
    max_relevance: float | None = None
    since: float | None = None
    until: float | None = None
    run_id: int | None = None


@dataclass(frozen=True, slots=True)
class PageSummary:
    """One search result; ``snippet`` is plain text (escape it where it is shown)."""

    id: int
    url: str
    title: str
    host: str
    status: int
    relevance: float | None
    score: float
    fetched_at: float
    snippet: str


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _conditions(query: PageQuery) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    for word in (query.text or "").split():
        pattern = f"%{_escape_like(word.lower())}%"
        where.append(
            or_(
                func.lower(pages.c.title).like(pattern, escape="\\"),
                func.lower(pages.c.text).like(pattern, escape="\\"),
            )
        )
    if query.host:
        host = _escape_like(query.host.lower())
        where.append(
            or_(
                pages.c.url.like(f"http://{host}/%", escape="\\"),
                pages.c.url.like(f"https://{host}/%", escape="\\"),
                pages.c.url.like(f"http://{host}:%", escape="\\"),
                pages.c.url.like(f"https://{host}:%", escape="\\"),
            )
        )
    if query.status is not None:
        where.append(pages.c.status == query.status)
    if query.min_relevance is not None:
        where.append(pages.c.relevance >= query.min_relevance)
    if query.max_relevance is not None:
        where.append(pages.c.relevance <= query.max_relevance)
    if query.since is not None:
        where.append(pages.c.fetched_at >= query.since)
    if query.until is not None:
        where.append(pages.c.fetched_at < query.until)
    if query.run_id is not None:
        where.append(pages.c.run_id == query.run_id)
    return where


def _cursor(fetched_at: float, page_id: int) -> str:
    raw = json.dumps([fetched_at, page_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        fetched_at, page_id = json.loads(raw)
        return float(fetched_at), int(page_id)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError(f"not a search cursor: {cursor[:40]!r}") from exc


def _snippet(text: str, words: list[str]) -> str:
    lowered = text.lower()
    hits = [i for i in (lowered.find(w.lower()) for w in words) if i >= 0]
    start = max(0, min(hits) - _SNIPPET // 3) if hits else 0
    piece = " ".join(text[start : start + _SNIPPET].split())
    return ("… " if start else "") + piece + (" …" if start + _SNIPPET < len(text) else "")


async def search_pages(
    engine: AsyncEngine, query: PageQuery, *, after: str | None = None, limit: int = 50
) -> tuple[list[PageSummary], str | None]:
    """One page of results and the opaque cursor of the next (None at the end).

    Raises:
        ValueError: ``after`` is not a cursor this function made.
    """
    where = _conditions(query)
    if after is not None:
        fetched_at, page_id = _decode_cursor(after)
        where.append(tuple_(pages.c.fetched_at, pages.c.id) < tuple_(fetched_at, page_id))
    statement: Any = (
        select(
            pages.c.id,
            pages.c.url,
            pages.c.title,
            pages.c.status,
            pages.c.relevance,
            pages.c.score,
            pages.c.fetched_at,
            func.substr(pages.c.text, 1, 4000).label("text"),
        )
        .where(*where)
        .order_by(pages.c.fetched_at.desc(), pages.c.id.desc())
        .limit(limit + 1)
    )
    async with engine.connect() as connection:
        rows = (await connection.execute(statement)).all()
    words = (query.text or "").split()
    found = [
        PageSummary(
            id=int(r.id),
            url=r.url,
            title=r.title,
            host=urlsplit(r.url).hostname or "",
            status=int(r.status),
            relevance=r.relevance,
            score=float(r.score),
            fetched_at=float(r.fetched_at),
            snippet=_snippet(r.text or "", words),
        )
        for r in rows[:limit]
    ]
    following = _cursor(found[-1].fetched_at, found[-1].id) if len(rows) > limit else None
    return found, following
