"""Every fetch of a page (table ``page_history``, migration 9), for revisits.

:class:`PageHistory` opens its own small engine on the storage URL (open the database with
:class:`~topicrawl.storage.SqlStorage` first so the migrations have run). Rows are appended in
batches; :meth:`PageHistory.rows` reads a URL's fetches oldest first, and
:meth:`PageHistory.all_rows` every row in fetch order (a resumed crawl rebuilds each page's
change history from them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import SQLAlchemyError

from topicrawl.core.errors import StorageError
from topicrawl.storage.opening import AttachedStore
from topicrawl.storage.schema import page_history

__all__ = ["FetchRecord", "PageHistory"]

_CHUNK = 5000


@dataclass(frozen=True, slots=True)
class FetchRecord:
    """One fetch of a page: when, what came back, whether it changed, when it is due again."""

    url: str
    fetched_at: float
    status: int
    changed: bool
    content_hash: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    rate: float | None = None
    due_at: float | None = None
    run_id: int | None = None


class PageHistory(AttachedStore):
    """Appends and reads the fetches of the pages of one crawl database."""

    what = "page history"

    async def append(self, records: Sequence[FetchRecord]) -> None:
        """Append fetches in one transaction.

        Raises:
            StorageError: the write failed (nothing of the batch is written).
        """
        if not records:
            return
        try:
            async with self._open().begin() as connection:
                await connection.execute(insert(page_history), [asdict(r) for r in records])
        except SQLAlchemyError as exc:
            raise StorageError(f"saving page history to {self._target.display}: {exc}") from exc

    async def rows(self, url: str) -> list[FetchRecord]:
        """The fetches of one URL, oldest first."""
        statement = (
            select(page_history)
            .where(page_history.c.url == url)
            .order_by(page_history.c.fetched_at, page_history.c.id)
        )
        return [_record(row) for row in await self._read(statement)]

    async def all_rows(self) -> AsyncIterator[FetchRecord]:
        """Every fetch in the order written, read in chunks."""
        last_id = 0
        while True:
            statement = (
                select(page_history)
                .where(page_history.c.id > last_id)
                .order_by(page_history.c.id)
                .limit(_CHUNK)
            )
            rows = await self._read(statement)
            if not rows:
                return
            for row in rows:
                yield _record(row)
            last_id = int(rows[-1]["id"])

    async def _read(self, statement: Any) -> list[dict[str, Any]]:
        try:
            async with self._open().connect() as connection:
                result = await connection.execute(statement)
                return [dict(row._mapping) for row in result]
        except SQLAlchemyError as exc:
            raise StorageError(f"reading page history: {exc}") from exc


def _record(row: dict[str, Any]) -> FetchRecord:
    return FetchRecord(
        url=row["url"],
        fetched_at=float(row["fetched_at"]),
        status=int(row["status"]),
        changed=bool(row["changed"]),
        content_hash=row["content_hash"],
        etag=row["etag"],
        last_modified=row["last_modified"],
        rate=row["rate"],
        due_at=row["due_at"],
        run_id=row["run_id"],
    )
