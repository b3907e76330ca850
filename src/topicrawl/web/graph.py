"""The Knowledge graph page's data.

The knowledge-graph capability (``topicrawl.kg``) is being built elsewhere and has no tables
yet; :func:`knowledge_graph` is the one place the dashboard asks for it, so it can read the
real tables once they exist without touching the page or its script. The answer's shape:
``{"built": bool, "message": str, "nodes": [...], "edges": [...], "entities": [...]}`` where
a node is ``{"id", "label", "group", "preferred"}``, an edge ``{"from", "to", "label"}`` and an
entity ``{"id", "name", "type", "preferred", "urls": [str]}``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["KG_TABLES", "knowledge_graph"]

# The tables whose presence means the knowledge graph is stored (their names may change when
# topicrawl.kg lands; then this module reads them).
KG_TABLES = ("kg_entities", "kg_relations", "kg_entity_urls")


async def knowledge_graph(engine: AsyncEngine) -> dict[str, Any]:
    """Entities, relations, entity -> URLs and preferred entities, or that there are none yet."""
    async with engine.connect() as connection:
        present = await connection.run_sync(
            lambda sync: {name for name in KG_TABLES if inspect(sync).has_table(name)}
        )
    if not present:
        return {
            "built": False,
            "message": (
                "The knowledge graph is not built yet: this topicrawl has no knowledge-graph "
                "tables (entities, relations, entity -> URLs) to show."
            ),
            "nodes": [],
            "edges": [],
            "entities": [],
        }
    return {
        "built": False,
        "message": (
            f"Knowledge-graph tables were found ({', '.join(sorted(present))}) but this "
            "dashboard does not read them yet."
        ),
        "nodes": [],
        "edges": [],
        "entities": [],
    }
