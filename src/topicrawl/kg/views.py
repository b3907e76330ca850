"""Reading the knowledge graph back: a snapshot for the dashboard and the CLI, and exports.

:func:`graph_snapshot` is what a dashboard's graph page shows: the entities most pages
mention (nodes), the relations between them (edges), the pages that mention each, and which
entities the latest crawl preferred. :func:`export_jsonl` and :func:`export_graphml` write the
whole graph.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import networkx as nx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.storage.schema import (
    kg_aliases,
    kg_entities,
    kg_entity_urls,
    kg_relation_urls,
    kg_relations,
    runs,
)

__all__ = [
    "KgEdge",
    "KgNode",
    "KgSnapshot",
    "export_graphml",
    "export_jsonl",
    "graph_snapshot",
]


@dataclass(frozen=True, slots=True)
class KgNode:
    """An entity: its key, name, type, origin (loaded or found), the pages that mention it,
    and whether the latest crawl preferred it."""

    key: str
    name: str
    type: str
    origin: str
    pages: int
    preferred: bool = False
    aliases: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, slots=True)
class KgEdge:
    """A relation between two entities (keys), with the pages it was read on."""

    subject: str
    type: str
    object: str
    confidence: float
    provenance: str
    pages: int


@dataclass(frozen=True, slots=True)
class KgSnapshot:
    """Nodes, the edges between them, each node's URLs (up to a cap), and the preferred keys."""

    nodes: tuple[KgNode, ...]
    edges: tuple[KgEdge, ...]
    entity_urls: Mapping[str, tuple[str, ...]]
    preferred: tuple[str, ...]
    total_entities: int
    total_relations: int

    def to_json(self) -> dict[str, Any]:
        """The snapshot as plain JSON values."""
        return {
            "nodes": [asdict(node) for node in self.nodes],
            "edges": [asdict(edge) for edge in self.edges],
            "entity_urls": {key: list(urls) for key, urls in self.entity_urls.items()},
            "preferred": list(self.preferred),
            "total_entities": self.total_entities,
            "total_relations": self.total_relations,
        }


async def graph_snapshot(
    engine: AsyncEngine, *, limit: int, urls_per_entity: int = 20, origin: str | None = None
) -> KgSnapshot:
    """The ``limit`` entities most pages mention (loaded ones first among equals), the
    relations among them, and up to ``urls_per_entity`` URLs of each.

    Args:
        engine: an engine on the crawl's database (read-only is enough).
        limit: nodes at most.
        urls_per_entity: URLs listed per node at most.
        origin: only entities of this origin (``loaded`` or ``found``), or all.
    """
    if limit < 1 or urls_per_entity < 0:
        raise ValueError("limit must be >= 1 and urls_per_entity >= 0")
    async with engine.connect() as connection:
        pages = (
            select(kg_entity_urls.c.entity_id, func.count().label("pages"))
            .group_by(kg_entity_urls.c.entity_id)
            .subquery()
        )
        query = select(kg_entities, func.coalesce(pages.c.pages, 0).label("pages")).outerjoin(
            pages, pages.c.entity_id == kg_entities.c.id
        )
        if origin is not None:
            query = query.where(kg_entities.c.origin == origin)
        query = query.order_by(
            func.coalesce(pages.c.pages, 0).desc(),
            (kg_entities.c.origin == "loaded").desc(),
            kg_entities.c.id,
        ).limit(limit)
        entity_rows = (await connection.execute(query)).all()
        ids = {int(row.id): str(row.key) for row in entity_rows}
        alias_rows = (
            await connection.execute(
                select(kg_aliases.c.entity_id, kg_aliases.c.alias)
                .where(kg_aliases.c.entity_id.in_(list(ids)))
                .order_by(kg_aliases.c.entity_id, kg_aliases.c.prior.desc())
            )
        ).all()
        edge_pages = (
            select(kg_relation_urls.c.relation_id, func.count().label("pages"))
            .group_by(kg_relation_urls.c.relation_id)
            .subquery()
        )
        edge_rows = (
            await connection.execute(
                select(kg_relations, func.coalesce(edge_pages.c.pages, 0).label("pages"))
                .outerjoin(edge_pages, edge_pages.c.relation_id == kg_relations.c.id)
                .where(
                    kg_relations.c.subject_id.in_(list(ids)),
                    kg_relations.c.object_id.in_(list(ids)),
                )
                .order_by(kg_relations.c.id)
            )
        ).all()
        urls: dict[str, list[str]] = {}
        if urls_per_entity:
            url_rows = await connection.execute(
                select(kg_entity_urls.c.entity_id, kg_entity_urls.c.url)
                .where(kg_entity_urls.c.entity_id.in_(list(ids)))
                .order_by(kg_entity_urls.c.entity_id, kg_entity_urls.c.score.desc())
            )
            for row in url_rows:
                listed = urls.setdefault(ids[int(row.entity_id)], [])
                if len(listed) < urls_per_entity:
                    listed.append(str(row.url))
        total_entities = (await connection.execute(select(func.count(kg_entities.c.id)))).scalar()
        total_relations = (await connection.execute(select(func.count(kg_relations.c.id)))).scalar()
        preferred_names = await _preferred_names(connection)
    aliases: dict[int, list[str]] = {}
    for row in alias_rows:
        aliases.setdefault(int(row.entity_id), []).append(str(row.alias))
    preferred = _preferred_keys(entity_rows, aliases, preferred_names)
    nodes = tuple(
        KgNode(
            key=row.key,
            name=row.name,
            type=row.type,
            origin=row.origin,
            pages=int(row.pages),
            preferred=row.key in preferred,
            aliases=tuple(a for a in aliases.get(int(row.id), []) if a != row.name),
            description=row.description,
        )
        for row in entity_rows
    )
    edges = tuple(
        KgEdge(
            ids[int(row.subject_id)],
            row.type,
            ids[int(row.object_id)],
            float(row.confidence),
            row.provenance,
            int(row.pages),
        )
        for row in edge_rows
    )
    return KgSnapshot(
        nodes=nodes,
        edges=edges,
        entity_urls={key: tuple(found) for key, found in urls.items()},
        preferred=tuple(sorted(preferred)),
        total_entities=int(total_entities or 0),
        total_relations=int(total_relations or 0),
    )


async def _preferred_names(connection: Any) -> tuple[str, ...]:
    """The ``kg.prefer`` of the latest crawl run, if any."""
    row = (
        await connection.execute(select(runs.c.config).order_by(runs.c.id.desc()).limit(1))
    ).first()
    if row is None:
        return ()
    try:
        config = json.loads(row.config)
    except (TypeError, ValueError):
        return ()
    prefer = config.get("kg", {}).get("prefer", ()) if isinstance(config, dict) else ()
    return tuple(str(name) for name in prefer) if isinstance(prefer, list) else ()


def _preferred_keys(
    rows: Sequence[Any], aliases: Mapping[int, list[str]], names: Sequence[str]
) -> set[str]:
    wanted = {name.casefold() for name in names}
    return {
        str(row.key)
        for row in rows
        if str(row.key) in names
        or {a.casefold() for a in (row.name, *aliases.get(int(row.id), []))} & wanted
    }


def export_jsonl(snapshot: KgSnapshot) -> str:
    """One JSON object a line: every node (``"kind": "node"``, with its URLs), then every
    edge (``"kind": "edge"``)."""
    out = io.StringIO()
    for node in snapshot.nodes:
        record = {"kind": "node", **asdict(node), "urls": snapshot.entity_urls.get(node.key, ())}
        out.write(json.dumps(record, ensure_ascii=False, default=list) + "\n")
    for edge in snapshot.edges:
        out.write(json.dumps({"kind": "edge", **asdict(edge)}, ensure_ascii=False) + "\n")
    return out.getvalue()


def export_graphml(snapshot: KgSnapshot) -> bytes:
    """The graph as GraphML (networkx): a directed multigraph keyed by entity key."""
    graph = nx.MultiDiGraph()
    for node in snapshot.nodes:
        graph.add_node(
            node.key,
            name=node.name,
            type=node.type,
            origin=node.origin,
            pages=node.pages,
            preferred=node.preferred,
            aliases="|".join(node.aliases),
            description=node.description,
        )
    for edge in snapshot.edges:
        graph.add_edge(
            edge.subject,
            edge.object,
            key=edge.type,
            type=edge.type,
            confidence=edge.confidence,
            provenance=edge.provenance,
            pages=edge.pages,
        )
    out = io.BytesIO()
    nx.write_graphml(graph, out, encoding="utf-8")
    return out.getvalue()
