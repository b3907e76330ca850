"""The Knowledge graph page's data, read from the crawl's knowledge-graph tables (``topicrawl.kg``).

:func:`knowledge_graph` is the one place the dashboard asks for it. The answer's shape:
``{"built": bool, "message": str, "nodes": [...], "edges": [...], "entities": [...],
"total_entities": int, "total_relations": int}`` where a node is
``{"id", "label", "group", "preferred"}``, an edge ``{"from", "to", "label"}`` and an entity
``{"id", "name", "type", "preferred", "urls": [str]}``. Every name and URL is crawled or
user-given text: the page's script sets them as text, never as markup.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.kg.views import graph_snapshot

__all__ = ["GRAPH_NODES", "KG_TABLES", "knowledge_graph"]

# The tables whose presence means this database has the knowledge graph's schema (version 7).
KG_TABLES = ("kg_entities", "kg_relations", "kg_entity_urls")

# Entities drawn at most: the ones most pages mention (a browser draws a few hundred nodes
# smoothly; the totals say how many there are).
GRAPH_NODES = 300


def _empty(message: str) -> dict[str, Any]:
    return {
        "built": False,
        "message": message,
        "nodes": [],
        "edges": [],
        "entities": [],
        "total_entities": 0,
        "total_relations": 0,
    }


async def knowledge_graph(engine: AsyncEngine, *, limit: int = GRAPH_NODES) -> dict[str, Any]:
    """Entities, relations, entity -> URLs and preferred entities, or why there are none."""
    async with engine.connect() as connection:
        present = await connection.run_sync(
            lambda sync: {name for name in KG_TABLES if inspect(sync).has_table(name)}
        )
    if present != set(KG_TABLES):
        return _empty(
            "This database has no knowledge-graph tables: it was written by a topicrawl older "
            "than schema version 7. Open it once with this topicrawl (e.g. `topicrawl kg show`)."
        )
    snapshot = await graph_snapshot(engine, limit=limit)
    if not snapshot.total_entities:
        return _empty(
            "The knowledge graph is empty: load a knowledge base (`topicrawl kg load`) or crawl "
            "with --prefer-entity or kg.recognise to recognise the entities pages name."
        )
    shown = len(snapshot.nodes)
    return {
        "built": True,
        "message": (
            f"{snapshot.total_entities} entities, {snapshot.total_relations} relations"
            + (f"; the {shown} most mentioned are drawn" if shown < snapshot.total_entities else "")
        ),
        "nodes": [
            {"id": n.key, "label": n.name, "group": n.type or n.origin, "preferred": n.preferred}
            for n in snapshot.nodes
        ],
        "edges": [{"from": e.subject, "to": e.object, "label": e.type} for e in snapshot.edges],
        "entities": [
            {
                "id": n.key,
                "name": n.name,
                "type": n.type,
                "preferred": n.preferred,
                "urls": list(snapshot.entity_urls.get(n.key, ())),
            }
            for n in snapshot.nodes
        ],
        "total_entities": snapshot.total_entities,
        "total_relations": snapshot.total_relations,
    }
