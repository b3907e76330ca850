"""Focused-crawl records beside the pages: a person's relevance labels and the learned state.

Both live in the crawl's own database (tables ``labels`` and ``focus_states``, migration 4).
:class:`FocusRecords` opens its own small engine on the storage URL; open the database with
:class:`~topicrawl.storage.SqlStorage` first so the migrations have run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import SQLAlchemyError

from topicrawl.core.errors import StorageError
from topicrawl.storage.opening import AttachedStore
from topicrawl.storage.schema import focus_states, labels

__all__ = ["LABELS", "FocusRecords", "SavedState"]

LABELS: tuple[str, ...] = ("yes", "no", "skip")
"""The answers a label can hold."""


@dataclass(frozen=True, slots=True)
class SavedState:
    """One saved learned state: the run that saved it, when, after how many pages, the JSON."""

    run_id: int | None
    saved_at: float
    pages: int
    state: str


class FocusRecords(AttachedStore):
    """Reads and writes labels and learned states of one crawl database."""

    what = "focus records"

    async def labels(self, *, topic: str = "") -> dict[str, str]:
        """Every labelled URL of ``topic`` and its answer (yes, no or skip)."""
        statement = select(labels.c.url, labels.c.label).where(labels.c.topic == topic)
        try:
            async with self._open().connect() as connection:
                rows = (await connection.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise StorageError(f"reading labels from {self._target.display}: {exc}") from exc
        return {str(row.url): str(row.label) for row in rows}

    async def judgements(self, *, topic: str = "") -> dict[str, bool]:
        """The yes/no labels as booleans (skipped pages left out), for a human judge."""
        return {
            url: label == "yes"
            for url, label in (await self.labels(topic=topic)).items()
            if label != "skip"
        }

    async def save_label(self, url: str, label: str, *, topic: str = "") -> None:
        """Record (or replace) the label of ``url``.

        Raises:
            ValueError: the label is not yes, no or skip.
        """
        if label not in LABELS:
            raise ValueError(f"label {label!r} is not one of {', '.join(LABELS)}")
        try:
            async with self._open().begin() as connection:
                await connection.execute(
                    delete(labels).where(labels.c.url == url, labels.c.topic == topic)
                )
                await connection.execute(
                    insert(labels).values(
                        url=url, topic=topic, label=label, labelled_at=time.time()
                    )
                )
        except SQLAlchemyError as exc:
            raise StorageError(f"saving a label to {self._target.display}: {exc}") from exc

    async def save_state(self, state: str, *, pages: int, run_id: int | None) -> None:
        """Append a learned state (JSON)."""
        try:
            async with self._open().begin() as connection:
                await connection.execute(
                    insert(focus_states).values(
                        run_id=run_id, saved_at=time.time(), pages=pages, state=state
                    )
                )
        except SQLAlchemyError as exc:
            raise StorageError(f"saving the learned state: {exc}") from exc

    async def states(self) -> list[SavedState]:
        """Every saved state, oldest first."""
        statement = select(focus_states).order_by(focus_states.c.id)
        return [_saved(row) for row in await self._rows(statement)]

    async def latest_state(self) -> SavedState | None:
        """The most recently saved state, or None."""
        latest = select(func.max(focus_states.c.id)).scalar_subquery()
        rows = await self._rows(select(focus_states).where(focus_states.c.id == latest))
        return _saved(rows[0]) if rows else None

    async def _rows(self, statement: object) -> list[Mapping[str, object]]:
        try:
            async with self._open().connect() as connection:
                result = await connection.execute(statement)  # type: ignore[call-overload]
                return [dict(row._mapping) for row in result]
        except SQLAlchemyError as exc:
            raise StorageError(f"reading learned states: {exc}") from exc


def _saved(row: Mapping[str, object]) -> SavedState:
    run_id = row["run_id"]
    return SavedState(
        run_id=None if run_id is None else int(run_id),  # type: ignore[call-overload]
        saved_at=float(row["saved_at"]),  # type: ignore[arg-type]
        pages=int(row["pages"]),  # type: ignore[call-overload]
        state=str(row["state"]),
    )
