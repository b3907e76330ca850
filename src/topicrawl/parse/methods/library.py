"""The parser library's state: which method works for each URL pattern, how well, and when it
changed. The half that runs on the crawl's event loop (the extraction itself runs in the parse
worker, :mod:`topicrawl.parse.methods.extract`).

:meth:`ParserLibrary.hint_for` tells the worker what is known of a page's pattern (None for
pages no schema applies to: they cost one cached dictionary look-up);
:meth:`ParserLibrary.learn` takes the worker's :class:`~topicrawl.parse.methods.extract.Extraction`:
a pattern with no method remembers the first that validated; a remembered method that failed
and another that won is a :class:`MethodChange` (logged and stored). :meth:`sync` writes what
was learnt to a :class:`LibraryStore` and reads back what other workers learnt, so workers on
other machines share one library (the SQL store is
:class:`topicrawl.storage.parsers.SqlParserStore`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from topicrawl.parse.methods.extract import Extraction, Hint
from topicrawl.parse.methods.patterns import url_pattern
from topicrawl.parse.methods.relocate import Fingerprint, merge_variants
from topicrawl.parse.methods.schema import ParserConfig
from topicrawl.parse.methods.validators import Value
from topicrawl.parse.urls import registered_domain

__all__ = [
    "PARTIAL",
    "LibraryStore",
    "MemoryLibraryStore",
    "MethodChange",
    "ParserLibrary",
    "PatternState",
    "PatternUpdate",
    "StoredRecord",
]

log = logging.getLogger(__name__)

PARTIAL = "partial:"
"""The stored method of a partial record starts with this (``partial:rules``)."""

FINGERPRINT_EVERY = 5
"""Fingerprints of a pattern are refreshed every this many pages (and after each change)."""
FINGERPRINT_FIRST = 20
"""...and on each of its first pages, so that variants (languages, layouts) are caught early."""


@dataclass(slots=True)
class PatternState:
    """What the library knows of one URL pattern."""

    pattern: str
    schema: str
    method: str | None = None
    successes: int = 0
    failures: int = 0
    tried: int = 0
    pages: int = 0
    fingerprints: dict[str, tuple[Fingerprint, ...]] = field(default_factory=dict)
    updated_at: float = 0.0

    @property
    def success_rate(self) -> float:
        """Pages whose record validated, of the pages seen."""
        return self.successes / self.pages if self.pages else 0.0


@dataclass(frozen=True, slots=True)
class MethodChange:
    """A pattern's remembered method failed and another took its place."""

    at: float
    pattern: str
    old_method: str | None
    new_method: str
    sample_url: str
    failed_fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PatternUpdate:
    """What one worker learnt of a pattern since its last sync: counts to add, and the method
    and fingerprints to set (None: leave as stored)."""

    pattern: str
    schema: str
    successes: int
    failures: int
    tried: int
    pages: int
    method: str | None
    fingerprints: Mapping[str, tuple[Fingerprint, ...]] | None


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A page's extracted record as stored beside it; a partial one (no method validated)
    names the required fields it is ``missing`` and its method is ``partial:<method>``."""

    url: str
    pattern: str
    schema: str
    method: str
    record: Mapping[str, Value]
    extracted_at: float
    missing: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        return bool(self.missing)


class LibraryStore(Protocol):
    """Where the library's state is shared."""

    async def load(self, schemas: Sequence[str]) -> dict[str, PatternState]:
        """Every stored pattern of these schemas."""
        ...

    async def save(
        self,
        updates: Sequence[PatternUpdate],
        changes: Sequence[MethodChange],
        records: Sequence[StoredRecord],
    ) -> None:
        """Add the updates' counts, set their methods and fingerprints, append the changes and
        upsert the records."""
        ...


class MemoryLibraryStore:
    """A store in memory (one process; tests and crawls without a database)."""

    def __init__(self) -> None:
        self.patterns: dict[str, PatternState] = {}
        self.changes: list[MethodChange] = []
        self.records: dict[str, StoredRecord] = {}

    async def load(self, schemas: Sequence[str]) -> dict[str, PatternState]:
        wanted = set(schemas)
        return {key: _copy(state) for key, state in self.patterns.items() if state.schema in wanted}

    async def save(
        self,
        updates: Sequence[PatternUpdate],
        changes: Sequence[MethodChange],
        records: Sequence[StoredRecord],
    ) -> None:
        for update in updates:
            state = self.patterns.setdefault(
                update.pattern, PatternState(update.pattern, update.schema)
            )
            state.successes += update.successes
            state.failures += update.failures
            state.tried += update.tried
            state.pages += update.pages
            if update.method is not None:
                state.method = update.method
            if update.fingerprints is not None:
                state.fingerprints = dict(update.fingerprints)
            state.updated_at = time.time()
        self.changes.extend(changes)
        self.records.update((r.url, r) for r in records)


def _copy(state: PatternState) -> PatternState:
    return PatternState(
        state.pattern,
        state.schema,
        state.method,
        state.successes,
        state.failures,
        state.tried,
        state.pages,
        dict(state.fingerprints),
        state.updated_at,
    )


@dataclass(slots=True)
class _Pending:
    schema: str
    successes: int = 0
    failures: int = 0
    tried: int = 0
    pages: int = 0
    method: str | None = None
    fingerprints: dict[str, tuple[Fingerprint, ...]] | None = None


class ParserLibrary:
    """Learns and heals the method of each URL pattern (see the module docstring).

    Args:
        config: the crawl's schemas.
        store: where the state is shared (default: memory).
        clock: the time source of changes and records.
    """

    def __init__(
        self,
        config: ParserConfig,
        *,
        store: LibraryStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self._store: LibraryStore = store if store is not None else MemoryLibraryStore()
        self._clock = clock
        self._states: dict[str, PatternState] = {}
        self._pending: dict[str, _Pending] = {}
        self._changes: list[MethodChange] = []
        self._records: list[StoredRecord] = []
        self.changes_seen: list[MethodChange] = []

    def states(self) -> dict[str, PatternState]:
        """The patterns as this library knows them now."""
        return self._states

    def hint_for(self, url: str) -> Hint | None:
        """What a worker needs to extract ``url``'s record, or None when no schema applies."""
        domain = registered_domain(url)
        if domain not in self.config.domains:
            return None
        schema = self.config.schema_for(domain, urlsplit(url).path)
        if schema is None:
            return None
        pattern = url_pattern(url)
        state = self._states.get(pattern)
        names = schema.required  # an optional field left out is no failure: never borrowed
        if state is None:
            borrowed = self._borrowed(domain, pattern, names, {})
            return Hint(schema.name, pattern, fingerprints=borrowed, want_fingerprints=True)
        return Hint(
            schema.name,
            pattern,
            method=state.method,
            fingerprints=self._borrowed(domain, pattern, names, state.fingerprints),
            want_fingerprints=(
                not state.fingerprints
                or state.pages < FINGERPRINT_FIRST
                or state.pages % FINGERPRINT_EVERY == 0
            ),
        )

    def _borrowed(
        self,
        domain: str,
        pattern: str,
        names: Sequence[str],
        own: Mapping[str, tuple[Fingerprint, ...]],
    ) -> Mapping[str, tuple[Fingerprint, ...]]:
        """``own`` fingerprints, plus for each required field without any those of the
        same-named field on the domain's other patterns (session 20): a page kind the library never
        extracted before a template change (its rules never matched, so nothing was learnt)
        can still be relocated by how, e.g., ``title`` or ``plays`` looked on the site's
        other pages. Only relocation reads them; the winner's own fingerprints are then
        learnt for its pattern."""
        missing = [n for n in names if not own.get(n)]
        if not missing:
            return own
        merged = dict(own)
        prefix = domain + "/"
        for other, state in self._states.items():
            if other == pattern or not other.startswith(prefix):
                continue
            for name in missing:
                for fp in reversed(state.fingerprints.get(name, ())):
                    merged[name] = merge_variants(merged.get(name, ()), fp)
        return merged

    def learn(self, extraction: Extraction, url: str) -> MethodChange | None:
        """Take one page's outcome: count it, remember or replace the pattern's method, keep
        its record; the change, when the method changed."""
        pattern = extraction.pattern
        state = self._states.setdefault(pattern, PatternState(pattern, extraction.schema))
        pending = self._pending.setdefault(pattern, _Pending(extraction.schema))
        state.pages += 1
        pending.pages += 1
        state.tried += len(extraction.attempts)
        pending.tried += len(extraction.attempts)
        now = self._clock()
        if extraction.method is None:
            state.failures += 1
            pending.failures += 1
            if extraction.partial and extraction.partial_method is not None:
                self._records.append(
                    StoredRecord(
                        url,
                        pattern,
                        extraction.schema,
                        f"{PARTIAL}{extraction.partial_method}",
                        extraction.partial,
                        now,
                        missing=extraction.missing,
                    )
                )
            return None
        state.successes += 1
        pending.successes += 1
        if extraction.fingerprints:
            merged = dict(state.fingerprints)
            for name, fresh in extraction.fingerprints.items():
                merged[name] = merge_variants(merged.get(name, ()), fresh)
            state.fingerprints = merged
            pending.fingerprints = merged
        if extraction.record is not None:
            self._records.append(
                StoredRecord(
                    url, pattern, extraction.schema, extraction.method, extraction.record, now
                )
            )
        change = None
        if state.method != extraction.method:
            if state.method is not None:
                change = MethodChange(
                    now,
                    pattern,
                    state.method,
                    extraction.method,
                    url,
                    extraction.failed_fields,
                )
                self._changes.append(change)
                self.changes_seen.append(change)
                log.warning(
                    "parser for %s changed from %s to %s at %s (failed: %s)",
                    pattern,
                    change.old_method,
                    change.new_method,
                    url,
                    ", ".join(change.failed_fields) or "-",
                )
            state.method = extraction.method
            pending.method = extraction.method
        state.updated_at = now
        return change

    async def sync(self) -> None:
        """Write what was learnt since the last sync, then read back every pattern (with what
        other workers learnt)."""
        updates = [
            PatternUpdate(
                pattern,
                p.schema,
                p.successes,
                p.failures,
                p.tried,
                p.pages,
                p.method,
                p.fingerprints,
            )
            for pattern, p in self._pending.items()
        ]
        changes, records = self._changes, self._records
        self._pending, self._changes, self._records = {}, [], []
        try:
            await self._store.save(updates, changes, records)
        except BaseException:
            self._changes = changes + self._changes
            self._records = records + self._records
            for update in updates:  # keep them for the next sync
                self._merge_back(update)
            raise
        loaded = await self._store.load([s.name for s in self.config.schemas])
        for pattern, state in loaded.items():
            pending = self._pending.get(pattern)
            if pending is not None and pending.method is not None:
                state.method = pending.method  # learnt here since the save: ours is newer
            self._states[pattern] = state

    def _merge_back(self, update: PatternUpdate) -> None:
        pending = self._pending.setdefault(update.pattern, _Pending(update.schema))
        pending.successes += update.successes
        pending.failures += update.failures
        pending.tried += update.tried
        pending.pages += update.pages
        pending.method = pending.method or update.method
        if pending.fingerprints is None and update.fingerprints is not None:
            pending.fingerprints = dict(update.fingerprints)
