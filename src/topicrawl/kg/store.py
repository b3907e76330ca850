"""The knowledge base in the crawl's own database (tables ``kg_*``, see the storage schema).

:class:`KgStore` opens its own small engine on the storage URL (applying missing migrations
unless read-only). A load is one transaction: a KB file with a problem, or a database error
part way, leaves the database as it was.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, func, select, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from topicrawl.core.errors import ConfigError, StorageError
from topicrawl.core.models import PageEntities
from topicrawl.kg.model import FOUND, LOADED, Alias, Entity, KnowledgeBase, Relation
from topicrawl.storage.opening import SideStore
from topicrawl.storage.schema import (
    kg_aliases,
    kg_entities,
    kg_entity_urls,
    kg_relation_urls,
    kg_relations,
)
from topicrawl.storage.target import WRITE_OPTION

__all__ = ["KgCounts", "KgStore", "PageFinding"]

_EVIDENCE = 300
# Rows per statement when writing many (SQLite binds at most 32,766 parameters).
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class KgCounts:
    """How many rows a load or a record wrote (inserted or replaced)."""

    entities: int
    aliases: int
    relations: int
    entity_urls: int = 0
    relation_urls: int = 0


@dataclass(frozen=True, slots=True)
class PageFinding:
    """A page's recognised entities and relations, to be recorded under its URL."""

    url: str
    found: PageEntities
    seen_at: float


class KgStore(SideStore):
    """Reads and writes the knowledge-graph tables of one crawl database.

    Args:
        url: the storage URL (SQLite path or ``postgresql://...``).
        read_only: only read (the database must exist with a schema that has the tables).
    """

    def __init__(self, url: str, *, read_only: bool = False, busy_timeout: float = 30.0) -> None:
        super().__init__(
            url, what="the knowledge graph", busy_timeout=busy_timeout, read_only=read_only
        )
        self._ids: dict[str, int] = {}

    # -- reads ----------------------------------------------------------------------------

    async def keys(self) -> set[str]:
        """The keys of every entity in the database."""
        rows = await self._fetch(select(kg_entities.c.key))
        return {str(row.key) for row in rows}

    async def read(self, *, include_found: bool = True) -> KnowledgeBase:
        """The whole knowledge base (found entities too, unless ``include_found`` is false)."""
        query = select(kg_entities)
        if not include_found:
            query = query.where(kg_entities.c.origin == LOADED)
        entity_rows = await self._fetch(query.order_by(kg_entities.c.id))
        alias_rows = await self._fetch(
            select(kg_aliases).order_by(kg_aliases.c.entity_id, kg_aliases.c.prior.desc())
        )
        relation_rows = await self._fetch(select(kg_relations).order_by(kg_relations.c.id))
        aliases: dict[int, list[Alias]] = {}
        for row in alias_rows:
            aliases.setdefault(int(row.entity_id), []).append(Alias(row.alias, float(row.prior)))
        key_of: dict[int, str] = {}
        entities = []
        for row in entity_rows:
            key_of[int(row.id)] = str(row.key)
            entities.append(
                Entity(
                    key=row.key,
                    name=row.name,
                    type=row.type,
                    aliases=tuple(aliases.get(int(row.id), ())),
                    description=row.description,
                    lang=row.lang,
                    origin=row.origin,
                )
            )
        relations = tuple(
            Relation(
                key_of[int(row.subject_id)],
                row.type,
                key_of[int(row.object_id)],
                float(row.confidence),
                row.provenance,
            )
            for row in relation_rows
            if int(row.subject_id) in key_of and int(row.object_id) in key_of
        )
        return KnowledgeBase(entities=tuple(entities), relations=relations)

    # -- writes ---------------------------------------------------------------------------

    async def load(self, kb: KnowledgeBase) -> KgCounts:
        """Add (or replace, by key) a user's entities and relations, all in one transaction.

        A loaded entity replaces a found one of the same key; its aliases replace the
        stored ones.
        """
        now = time.time()
        async with self._write() as connection:
            ids = await self._upsert_entities(connection, kb.entities, now)
            await connection.execute(
                delete(kg_aliases).where(kg_aliases.c.entity_id.in_(list(ids.values())))
            )
            alias_rows = [
                {"entity_id": ids[entity.key], "alias": alias.text, "prior": alias.prior}
                for entity in kb.entities
                for alias in entity.all_names()
            ]
            await _insert_chunks(connection, kg_aliases, alias_rows)
            missing = {r.subject for r in kb.relations} | {r.object for r in kb.relations}
            ids.update(await self._ids_of(connection, missing - ids.keys()))
            if unknown := sorted(missing - ids.keys()):
                # Raised inside the transaction: the entities written above are rolled back.
                raise ConfigError(f"relations name unknown entity ids: {', '.join(unknown)}")
            await self._upsert_relations(connection, kb.relations, ids)
        self._ids.update(ids)
        return KgCounts(len(kb.entities), len(alias_rows), len(kb.relations))

    async def record(self, findings: Sequence[PageFinding], kb: KnowledgeBase) -> KgCounts:
        """Record what a batch of pages mentioned: found entities (new to the KB) are added
        with origin ``found``, then each entity's and relation's URL rows; one transaction."""
        if not findings:
            return KgCounts(0, 0, 0)
        async with self._write() as connection:
            wanted = {m.entity for f in findings for m in f.found.mentions}
            wanted |= {r.subject for f in findings for r in f.found.relations}
            wanted |= {r.object for f in findings for r in f.found.relations}
            ids = {key: self._ids[key] for key in wanted if key in self._ids}
            ids.update(await self._ids_of(connection, wanted - ids.keys()))
            new = _found_entities(findings, wanted - ids.keys(), kb)
            if new:
                ids.update(await self._upsert_entities(connection, new, time.time()))
                await _insert_chunks(
                    connection,
                    kg_aliases,
                    [{"entity_id": ids[e.key], "alias": e.name, "prior": 1.0} for e in new],
                )
            entity_urls = _entity_url_rows(findings, ids)
            await _upsert(
                connection, kg_entity_urls, entity_urls, ("entity_id", "url"), _URL_UPDATE
            )
            relations = [
                Relation(r.subject, r.relation, r.object, r.confidence, "pattern")
                for f in findings
                for r in f.found.relations
            ]
            relation_ids = await self._upsert_relations(connection, relations, ids, keep_max=True)
            relation_urls = {
                (relation_ids[(ids[r.subject], r.relation, ids[r.object])], f.url): {
                    "relation_id": relation_ids[(ids[r.subject], r.relation, ids[r.object])],
                    "url": f.url,
                    "confidence": r.confidence,
                    "evidence": r.evidence[:_EVIDENCE],
                }
                for f in findings
                for r in f.found.relations
            }
            await _upsert(
                connection,
                kg_relation_urls,
                list(relation_urls.values()),
                ("relation_id", "url"),
                ("confidence", "evidence"),
            )
        self._ids.update(ids)
        return KgCounts(len(new), len(new), len(relations), len(entity_urls), len(relation_urls))

    # -- internals ------------------------------------------------------------------------

    def _write(self) -> Any:
        return self.engine.execution_options(**{WRITE_OPTION: True}).begin()

    async def _fetch(self, statement: Any) -> Sequence[Any]:
        try:
            async with self.engine.connect() as connection:
                return (await connection.execute(statement)).all()
        except SQLAlchemyError as exc:
            raise StorageError(f"reading {self._target.display}: {exc}") from exc

    async def _ids_of(self, connection: AsyncConnection, keys: Iterable[str]) -> dict[str, int]:
        wanted = list(keys)
        found: dict[str, int] = {}
        for start in range(0, len(wanted), _CHUNK):
            rows = await connection.execute(
                select(kg_entities.c.key, kg_entities.c.id).where(
                    kg_entities.c.key.in_(wanted[start : start + _CHUNK])
                )
            )
            found.update({str(row.key): int(row.id) for row in rows})
        return found

    async def _upsert_entities(
        self, connection: AsyncConnection, entities: Sequence[Entity], now: float
    ) -> dict[str, int]:
        rows = [
            {
                "key": e.key,
                "name": e.name,
                "type": e.type,
                "description": e.description,
                "lang": e.lang,
                "origin": e.origin,
                "created_at": now,
            }
            for e in entities
        ]
        await _upsert(
            connection,
            kg_entities,
            rows,
            ("key",),
            ("name", "type", "description", "lang", "origin"),
        )
        return await self._ids_of(connection, (e.key for e in entities))

    async def _upsert_relations(
        self,
        connection: AsyncConnection,
        relations: Sequence[Relation],
        ids: Mapping[str, int],
        *,
        keep_max: bool = False,
    ) -> dict[tuple[int, str, int], int]:
        rows: dict[tuple[int, str, int], dict[str, object]] = {}
        for r in relations:
            triple = (ids[r.subject], r.type, ids[r.object])
            old = rows.get(triple)
            if old is None or float(str(old["confidence"])) < r.confidence:
                rows[triple] = {
                    "subject_id": triple[0],
                    "type": r.type,
                    "object_id": triple[2],
                    "confidence": r.confidence,
                    "provenance": r.provenance,
                }
        if not rows:
            return {}
        update = ("confidence",) if keep_max else ("confidence", "provenance")
        await _upsert(
            connection,
            kg_relations,
            list(rows.values()),
            ("subject_id", "type", "object_id"),
            update,
            greatest=keep_max,
        )
        found: dict[tuple[int, str, int], int] = {}
        triples = list(rows)
        c = kg_relations.c
        for start in range(0, len(triples), _CHUNK):
            result = await connection.execute(
                select(c.id, c.subject_id, c.type, c.object_id).where(
                    tuple_(c.subject_id, c.type, c.object_id).in_(triples[start : start + _CHUNK])
                )
            )
            for row in result:
                found[(int(row.subject_id), str(row.type), int(row.object_id))] = int(row.id)
        return found


_URL_UPDATE = ("mentions", "score", "seen_at")


def _found_entities(
    findings: Sequence[PageFinding], keys: set[str], kb: KnowledgeBase
) -> list[Entity]:
    """Entities for keys the database lacks: from the KB in hand, else found ones (NIL)."""
    new: dict[str, Entity] = {}
    for finding in findings:
        for mention in finding.found.mentions:
            key = mention.entity
            if key not in keys or key in new:
                continue
            known = kb.get(key)
            new[key] = known or Entity(
                key=key, name=mention.surface, type=mention.type or "unknown", origin=FOUND
            )
    return list(new.values())


def _entity_url_rows(
    findings: Sequence[PageFinding], ids: Mapping[str, int]
) -> list[dict[str, object]]:
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for finding in findings:
        for mention in finding.found.mentions:
            entity_id = ids[mention.entity]
            row = rows.get((entity_id, finding.url))
            if row is None:
                rows[(entity_id, finding.url)] = {
                    "entity_id": entity_id,
                    "url": finding.url,
                    "mentions": 1,
                    "score": mention.score,
                    "seen_at": finding.seen_at,
                }
            else:
                row["mentions"] += 1
                row["score"] = max(row["score"], mention.score)
    return list(rows.values())


async def _insert_chunks(
    connection: AsyncConnection, table: Table, rows: Sequence[Mapping[str, object]]
) -> None:
    await _upsert(connection, table, rows, tuple(c.name for c in table.primary_key), ())


async def _upsert(
    connection: AsyncConnection,
    table: Table,
    rows: Sequence[Mapping[str, object]],
    keys: tuple[str, ...],
    update: tuple[str, ...],
    *,
    greatest: bool = False,
) -> None:
    """Insert rows; a row whose ``keys`` exist already updates ``update`` (or is skipped).
    With ``greatest``, the one updated column keeps the larger of the old and new values."""
    dialect = connection.dialect.name
    insert_of = postgresql.insert if dialect == "postgresql" else sqlite.insert
    for start in range(0, len(rows), _CHUNK):
        statement = insert_of(table)
        chunk = list(rows[start : start + _CHUNK])
        if update:
            values: dict[str, Any] = {name: statement.excluded[name] for name in update}
            if greatest:
                name = update[0]
                pick = func.greatest if dialect == "postgresql" else func.max
                values[name] = pick(table.c[name], statement.excluded[name])
            statement = statement.on_conflict_do_update(index_elements=list(keys), set_=values)
        else:
            statement = statement.on_conflict_do_nothing(index_elements=list(keys))
        await connection.execute(statement, chunk)
