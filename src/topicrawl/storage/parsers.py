"""The parser library's shared state in the crawl's database (tables ``parser_patterns``,
``parser_changes`` and ``page_records``; see :mod:`topicrawl.parse.methods.library`).

Counts are added in the database (``successes = successes + n``), so any number of workers
on PostgreSQL add theirs without losing one; a pattern's method and fingerprints are set by
the last worker that learnt them. :class:`SqlParserStore` opens its own small engine on the
storage URL; open the database with :class:`~topicrawl.storage.SqlStorage` first so the
migrations have run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from topicrawl.core.errors import StorageError
from topicrawl.parse.methods.library import (
    PARTIAL,
    MethodChange,
    PatternState,
    PatternUpdate,
    StoredRecord,
)
from topicrawl.parse.methods.relocate import Fingerprint
from topicrawl.storage.opening import AttachedStore
from topicrawl.storage.schema import page_records, parser_changes, parser_patterns

__all__ = ["SqlParserStore"]


def _prints_json(prints: Mapping[str, tuple[Fingerprint, ...]]) -> str:
    data = {name: [fp.to_json() for fp in variants] for name, variants in prints.items()}
    return json.dumps(data, ensure_ascii=False)


def _prints(text: str) -> dict[str, tuple[Fingerprint, ...]]:
    try:
        data = json.loads(text)
        return {str(k): tuple(map(Fingerprint.from_json, v)) for k, v in data.items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}  # unreadable fingerprints: relocation waits for fresh ones


class SqlParserStore(AttachedStore):
    """The library's state in a SQLite or PostgreSQL database (a
    :class:`~topicrawl.parse.methods.LibraryStore`)."""

    what = "the parser store"

    async def load(self, schemas: Sequence[str]) -> dict[str, PatternState]:
        """Every stored pattern of these schemas."""
        statement = select(parser_patterns).where(parser_patterns.c.schema_name.in_(schemas))
        return {state.pattern: state for state in await self._states(statement)}

    async def patterns(self) -> list[PatternState]:
        """Every stored pattern, by pattern."""
        return await self._states(select(parser_patterns).order_by(parser_patterns.c.pattern))

    async def _states(self, statement: Any) -> list[PatternState]:
        rows = await self._rows(statement)
        return [
            PatternState(
                pattern=str(row["pattern"]),
                schema=str(row["schema_name"]),
                method=row["method"],
                successes=int(row["successes"]),
                failures=int(row["failures"]),
                tried=int(row["tried"]),
                pages=int(row["pages"]),
                fingerprints=_prints(str(row["fingerprints"])),
                updated_at=float(row["updated_at"]),
            )
            for row in rows
        ]

    async def changes(self, *, limit: int = 100) -> list[MethodChange]:
        """The latest method changes, newest first."""
        statement = select(parser_changes).order_by(parser_changes.c.id.desc()).limit(limit)
        return [
            MethodChange(
                at=float(row["at"]),
                pattern=str(row["pattern"]),
                old_method=row["old_method"],
                new_method=str(row["new_method"]),
                sample_url=str(row["sample_url"]),
                failed_fields=tuple(json.loads(str(row["failed_fields"]))),
            )
            for row in await self._rows(statement)
        ]

    async def records(
        self, urls: Sequence[str] | None = None, *, partial: bool = False
    ) -> dict[str, dict[str, Any]]:
        """Stored records by URL (all of them, or those of ``urls``): the validated ones, and
        with ``partial`` also those stored with only some fields (method ``partial:...``)."""
        statement = select(page_records.c.url, page_records.c.record)
        if urls is not None:
            statement = statement.where(page_records.c.url.in_(urls))
        if not partial:
            statement = statement.where(~page_records.c.method.startswith(PARTIAL))
        return {
            str(row["url"]): json.loads(str(row["record"])) for row in await self._rows(statement)
        }

    async def methods(self) -> dict[str, str]:
        """The method each stored record came from, by URL (``partial:<method>`` for a record
        stored with only some of its fields)."""
        statement = select(page_records.c.url, page_records.c.method)
        return {str(row["url"]): str(row["method"]) for row in await self._rows(statement)}

    async def count_records(self, *, partial: bool = False) -> int:
        """How many pages have a validated record (``partial``: a partial one instead)."""
        flagged = page_records.c.method.startswith(PARTIAL)
        rows = await self._rows(
            select(func.count()).select_from(page_records).where(flagged if partial else ~flagged)
        )
        return int(next(iter(rows[0].values())))

    async def save(
        self,
        updates: Sequence[PatternUpdate],
        changes: Sequence[MethodChange],
        records: Sequence[StoredRecord],
    ) -> None:
        """Add the updates' counts, set methods and fingerprints, append changes, upsert
        records, in one transaction."""
        if not (updates or changes or records):
            return
        try:
            async with self._open().begin() as connection:
                for item in updates:
                    await _apply(connection, item)
                if changes:
                    await connection.execute(
                        insert(parser_changes),
                        [
                            {
                                "at": c.at,
                                "pattern": c.pattern,
                                "old_method": c.old_method,
                                "new_method": c.new_method,
                                "sample_url": c.sample_url,
                                "failed_fields": json.dumps(list(c.failed_fields)),
                            }
                            for c in changes
                        ],
                    )
                await _upsert_records(connection, records)
        except SQLAlchemyError as exc:
            raise StorageError(
                f"saving the parser library to {self._target.display}: {exc}"
            ) from exc

    async def _rows(self, statement: Any) -> list[Mapping[str, Any]]:
        try:
            async with self._open().connect() as connection:
                result = await connection.execute(statement)
                return [dict(row._mapping) for row in result]
        except SQLAlchemyError as exc:
            raise StorageError(f"reading the parser library: {exc}") from exc


async def _apply(connection: AsyncConnection, item: PatternUpdate) -> None:
    values: dict[str, Any] = {
        "successes": parser_patterns.c.successes + item.successes,
        "failures": parser_patterns.c.failures + item.failures,
        "tried": parser_patterns.c.tried + item.tried,
        "pages": parser_patterns.c.pages + item.pages,
        "updated_at": time.time(),
    }
    if item.method is not None:
        values["method"] = item.method
    if item.fingerprints is not None:
        values["fingerprints"] = _prints_json(item.fingerprints)
    where = parser_patterns.c.pattern == item.pattern
    result = await connection.execute(update(parser_patterns).where(where).values(**values))
    if result.rowcount:
        return
    row = {
        "pattern": item.pattern,
        "schema_name": item.schema,
        "method": item.method,
        "successes": item.successes,
        "failures": item.failures,
        "tried": item.tried,
        "pages": item.pages,
        "fingerprints": _prints_json(item.fingerprints or {}),
        "updated_at": time.time(),
    }
    try:
        async with connection.begin_nested():
            await connection.execute(insert(parser_patterns).values(**row))
    except IntegrityError:  # another worker inserted it meanwhile: add to theirs
        await connection.execute(update(parser_patterns).where(where).values(**values))


async def _upsert_records(connection: AsyncConnection, records: Sequence[StoredRecord]) -> None:
    latest = {r.url: r for r in records}  # one row per URL, the newest
    if not latest:
        return
    urls = list(latest)
    await connection.execute(page_records.delete().where(page_records.c.url.in_(urls)))
    await connection.execute(
        insert(page_records),
        [
            {
                "url": r.url,
                "pattern": r.pattern,
                "schema_name": r.schema,
                "method": r.method,
                "record": json.dumps(dict(r.record), ensure_ascii=False),
                "extracted_at": r.extracted_at,
            }
            for r in latest.values()
        ],
    )
