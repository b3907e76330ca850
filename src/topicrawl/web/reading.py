"""What the dashboard reads from a crawl database: runs, one page in detail, topic vectors.

Every function takes the dashboard's read-only engine and returns plain JSON-ready values
(crawled strings are returned as they are; the browser shows them as text, never markup).
Each read is one short statement: on SQLite a reader never holds the writer back.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.core.errors import ConfigError, StorageError
from topicrawl.core.models import LinkScore
from topicrawl.focus.relevance import parse_topic
from topicrawl.focus.state import LearnedState
from topicrawl.storage.link_scores import decode_link_scores
from topicrawl.storage.outlinks import decode_links
from topicrawl.storage.rows import decode_body
from topicrawl.storage.schema import failures, focus_states, pages, runs
from topicrawl.storage.stored_schema import StoredSchema

__all__ = [
    "RawPage",
    "list_runs",
    "page_detail",
    "raw_page",
    "topic_evolution",
]

MAX_OUTLINKS = 300
_TEXT_EXCERPT = 3000
_TOP_TERMS = 12
_MAX_SNAPSHOTS = 40
_CHARSET = re.compile(r"[A-Za-z0-9._:-]{1,40}")


def _json(value: str | None) -> Any:
    if not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


async def list_runs(
    engine: AsyncEngine, *, limit: int = 50, run_id: int | None = None
) -> list[dict[str, Any]]:
    """The newest runs (or the one ``run_id``) with their settings and final stats (None
    while a run is going)."""
    statement = select(runs).order_by(runs.c.id.desc()).limit(limit)
    if run_id is not None:
        statement = statement.where(runs.c.id == run_id)
    async with engine.connect() as connection:
        rows = (await connection.execute(statement)).all()
    return [
        {
            "id": int(r.id),
            "name": r.name,
            "started_at": r.started_at,
            "finished_at": r.finished_at,
            "config": (config := _json(r.config)),
            "stats": _json(r.stats),
            "topic_names": topic_names(config),
        }
        for r in rows
    ]


def topic_names(config: Any) -> list[str]:
    """The names a run's pages are filed under (``pages.topic``), one per topic of its
    settings, in order; empty for a run without topics or with settings this cannot read."""
    topics = config.get("topics") if isinstance(config, dict) else None
    if not isinstance(topics, list):
        return []
    names: list[str] = []
    for topic in topics:
        try:
            names.append(parse_topic(str(topic)).name)
        except ConfigError:
            continue
    return names


_DETAIL_FIELDS = tuple(
    c.name
    for c in pages.columns
    if c.name not in {"body", "links", "text", "headers", "link_scores"}
)
FOCUS_SCHEMA = 4
"""The schema that added the focused crawl's learned state (topic vectors)."""


async def page_detail(
    engine: AsyncEngine, page_id: int, *, schema: StoredSchema | None = None
) -> dict[str, Any] | None:
    """One page: its fields, component scores, outlinks (with what became of each),
    duplicates and the failures of it and of its links; None when there is no such page.

    ``schema``: what the database holds (a column it lacks reads as None); None: the latest.
    """
    columns = (
        schema.columns(pages, (*_DETAIL_FIELDS, "links", "link_scores"))
        if schema is not None
        else [pages.c[name] for name in (*_DETAIL_FIELDS, "links", "link_scores")]
    )
    async with engine.connect() as connection:
        row = (
            await connection.execute(
                select(
                    *columns,
                    pages.c.text,
                    (pages.c.body.is_not(None)).label("has_body"),
                ).where(pages.c.id == page_id)
            )
        ).one_or_none()
        if row is None:
            return None
        try:
            links = decode_links(row.links)
        except StorageError:
            links = ()
        shown = links[:MAX_OUTLINKS]
        targets: dict[str, Any] = {}
        if shown:
            found = await connection.execute(
                select(
                    pages.c.id,
                    pages.c.url,
                    pages.c.status,
                    pages.c.relevance,
                    pages.c.score,
                    pages.c.reasons,
                ).where(pages.c.url.in_({link.url for link in shown}))
            )
            targets = {t.url: t for t in found}
        same = [pages.c.duplicate_of == row.url]
        if row.content_hash:
            same.append(pages.c.content_hash == row.content_hash)
        if row.duplicate_of:
            same.append(pages.c.url == row.duplicate_of)
        duplicates = (
            await connection.execute(
                select(pages.c.id, pages.c.url, pages.c.duplicate_of)
                .where(or_(*same), pages.c.id != row.id)
                .limit(20)
            )
        ).all()
        failed = (
            await connection.execute(
                select(failures)
                .where(
                    or_(
                        failures.c.url.in_({row.url, row.final_url}),
                        failures.c.parent_url == row.url,
                    )
                )
                .order_by(failures.c.at)
                .limit(50)
            )
        ).all()
    fields = {name: getattr(row, name) for name in _DETAIL_FIELDS}
    fields["reasons"] = _json(row.reasons) or {}
    scored = decode_link_scores(row.link_scores, links)
    fields["redirects"] = _json(row.redirects) or []
    return {
        "page": fields,
        "text": row.text[:_TEXT_EXCERPT],
        "has_body": bool(row.has_body),
        "outlinks": [
            {
                "url": link.url,
                "anchor": link.anchor,
                "block": link.block,
                "nofollow": link.nofollow,
                "fetched": _target(targets.get(link.url)),
                "scored": _scored(scored.get(link.url)),
            }
            for link in shown
        ],
        "outlinks_scored": len(scored),
        "outlinks_total": len(links),
        "duplicates": [
            {"id": int(d.id), "url": d.url, "duplicate_of": d.duplicate_of} for d in duplicates
        ],
        "failures": [
            {
                "url": f.url,
                "kind": f.kind,
                "message": f.message,
                "status": f.status,
                "at": f.at,
                "attempts": f.attempts,
                "of_link": f.url not in {row.url, row.final_url},
            }
            for f in failed
        ],
    }


def _scored(found: LinkScore | None) -> dict[str, Any] | None:
    """The priority this page's strategy gave the link and its components (fetched or not)."""
    if found is None:
        return None
    score = found.score if math.isfinite(found.score) else None
    return {"score": score, "reasons": dict(found.reasons)}


def _target(row: Any) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "id": int(row.id),
        "status": row.status,
        "relevance": row.relevance,
        "score": row.score,
        "reasons": _json(row.reasons) or {},
    }


async def topic_evolution(
    engine: AsyncEngine, run_id: int | None, *, schema: StoredSchema | None = None
) -> list[dict[str, Any]]:
    """How a focused run's topic vectors moved: each topic's snapshots with their top terms
    (none in a database of a schema before the learned state's)."""
    if schema is not None and schema.lacks(FOCUS_SCHEMA):
        return []
    statement = select(focus_states.c.state).order_by(focus_states.c.id.desc()).limit(1)
    if run_id is not None:
        statement = statement.where(focus_states.c.run_id == run_id)
    async with engine.connect() as connection:
        state = (await connection.execute(statement)).scalar()
    if state is None:
        return []
    try:
        learned = LearnedState.from_json(state)
    except ConfigError:
        return []
    return [
        {
            "topic": history.topic,
            "snapshots": [
                {
                    "pages": s.pages,
                    "threshold": s.threshold,
                    "terms": sorted(s.weights, key=lambda item: -item[1])[:_TOP_TERMS],
                }
                for s in history.snapshots[-_MAX_SNAPSHOTS:]
            ],
        }
        for history in learned.topics
    ]


@dataclass(frozen=True, slots=True)
class RawPage:
    """A page's kept raw body and the type to serve it as (its text when none was kept)."""

    body: bytes
    content_type: str
    kept: bool


async def raw_page(engine: AsyncEngine, page_id: int) -> RawPage | None:
    """The raw body of a page (its extracted text when the crawl kept no bodies)."""
    statement = select(pages.c.body, pages.c.text, pages.c.content_type, pages.c.encoding).where(
        pages.c.id == page_id
    )
    async with engine.connect() as connection:
        row = (await connection.execute(statement)).one_or_none()
    if row is None:
        return None
    try:
        body = decode_body(row.body)
    except StorageError:
        body = None
    if body is None:
        return RawPage(body=row.text.encode(), content_type="text/plain; charset=utf-8", kept=False)
    html = "html" in row.content_type.lower()
    # The stored encoding came from the page: only a plain charset name goes into a header.
    encoding = row.encoding or ""
    charset = f"; charset={encoding}" if _CHARSET.fullmatch(encoding) else ""
    return RawPage(
        body=body, content_type=("text/html" if html else "text/plain") + charset, kept=True
    )
