"""The knowledge graph in a crawl: the entity analyzer for the parse workers, the preference
wrapper around the strategy, and the recorder that writes pages' findings to the database."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from topicrawl.core.config import KgSettings
from topicrawl.core.protocols import Strategy
from topicrawl.focus import BfsStrategy
from topicrawl.kg.analyse import EntityAnalyzer
from topicrawl.kg.model import FOUND, Entity, KnowledgeBase, found_key
from topicrawl.kg.preference import EntityPreference, KgStrategy
from topicrawl.kg.store import KgStore, PageFinding

__all__ = ["CrawlKg", "open_kg", "preferred_keys"]

log = logging.getLogger(__name__)

# Pages whose findings one transaction writes: short transactions, so the crawl's own storage
# never waits long for SQLite's write lock.
_PAGES_PER_WRITE = 100


def preferred_keys(kb: KnowledgeBase, names: tuple[str, ...]) -> tuple[KnowledgeBase, list[str]]:
    """The keys the preferred names stand for (every entity a name fits), and the KB with an
    entity of its own for each name it lacks (so the name is still recognised and matched)."""
    keys: list[str] = []
    extra: list[Entity] = []
    for name in names:
        found = kb.find(name)
        if found:
            if len(found) > 1:
                log.info("preferring %d entities named %r", len(found), name)
            keys += [entity.key for entity in found if entity.key not in keys]
            continue
        log.warning("%r is not in the knowledge base: preferring the name as it is", name)
        entity = Entity(key=found_key("unknown", name), name=name, type="unknown", origin=FOUND)
        extra.append(entity)
        keys.append(entity.key)
    if extra:
        kb = KnowledgeBase(entities=(*kb.entities, *extra), relations=kb.relations)
    return kb, keys


@dataclass(slots=True)
class CrawlKg:
    """A crawl's knowledge-graph parts: what the parse workers run, the wrapped strategy, and
    ``record`` (awaited at checkpoints and at the end) that stores the findings so far."""

    analyzer: EntityAnalyzer | None
    strategy: KgStrategy
    record: Callable[[], Awaitable[None]]


@contextlib.asynccontextmanager
async def open_kg(
    settings: KgSettings, storage_url: str, strategy: Strategy, *, max_depth: int
) -> AsyncIterator[CrawlKg | None]:
    """The crawl's knowledge-graph parts, or None when it has no use for them (no KB in the
    database, nothing preferred, or recognition turned off with nothing preferred).
    ``max_depth`` sets breadth-first's default boost (see ``KgSettings.boost``)."""
    if settings.recognise is False and not settings.prefer:
        yield None
        return
    async with KgStore(storage_url) as store:
        kb = await store.read(include_found=False)
        recognise = settings.recognise
        if recognise is None:
            recognise = bool(kb.entities) or bool(settings.prefer)
        if not recognise and not settings.prefer:
            yield None
            return
        kb, keys = preferred_keys(kb, settings.prefer)
        preference = EntityPreference(kb, keys, radius=settings.radius) if keys else None
        boost = settings.boost
        if boost is None:
            boost = float(max_depth + 1) if isinstance(strategy, BfsStrategy) else 1.0
        wrapped = KgStrategy(
            strategy, preference=preference, boost=boost, block_exponent=settings.block_exponent
        )
        if preference is not None:
            log.info(
                "preferring %d entities (%d with neighbours within %d)",
                len(keys),
                len(preference.strengths),
                settings.radius,
            )

        writing: list[asyncio.Task[None]] = []

        async def write(findings: list[PageFinding]) -> None:
            for start in range(0, len(findings), _PAGES_PER_WRITE):
                await store.record(findings[start : start + _PAGES_PER_WRITE], kb)

        async def record() -> None:
            # One write at a time, each in a task of its own that a cancelled checkpoint does
            # not interrupt: a SQLite transaction cut off half way would keep the database's
            # write lock from the crawl's own storage.
            while writing and not writing[-1].done():
                await asyncio.shield(writing[-1])
            findings = wrapped.take_findings()
            if findings and recognise:
                writing[:] = [asyncio.create_task(write(findings))]
                await asyncio.shield(writing[0])

        try:
            yield CrawlKg(EntityAnalyzer(kb) if recognise else None, wrapped, record)
        finally:
            for task in writing:
                with contextlib.suppress(Exception):
                    await task
