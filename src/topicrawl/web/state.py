"""What the dashboard's routes share while it runs."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.storage.search import search_unavailable
from topicrawl.storage.stored_schema import StoredSchema
from topicrawl.web.live import LiveTally
from topicrawl.web.nodes import NodesSource

__all__ = [
    "SAMPLES_SCHEMA",
    "TRACKING_SCHEMA",
    "DashboardState",
    "dashboard",
    "missing_parts",
]

TRACKING_SCHEMA = 3
"""The schema that added topic tracking (periods, heat, forecasts, allocations, words)."""
SAMPLES_SCHEMA = 6
"""The schema that added the live samples (queue, in flight, waits: the slowness panel)."""

# What each later schema brought that the dashboard shows, newest last.
_PARTS = (
    (TRACKING_SCHEMA, "Topics (heat, forecasts, allocations, words)"),
    (4, "a page's topic vector over the crawl"),
    (SAMPLES_SCHEMA, "live samples and the slow-or-stalled panel; the host filter"),
    (7, "the knowledge graph"),
    (8, "pages' topics (the topic filter) and their links' priorities"),
    (13, "the video system's pages"),
)


@dataclass(slots=True)
class DashboardState:
    """What the routes share: the read-only engine, the live tally and the nodes' source."""

    engine: AsyncEngine
    tally: LiveTally
    nodes: NodesSource | None
    display: str
    schema: StoredSchema
    """The database's schema as it is (never migrated): what it can show."""

    @property
    def version(self) -> int:
        """The database's schema version (the video system needs 13)."""
        return self.schema.version


def dashboard(request: Request) -> DashboardState:
    """The running dashboard's shared state."""
    state: DashboardState = request.app.state.dashboard
    return state


def missing_parts(state: DashboardState) -> list[str]:
    """What the dashboard cannot show from this database because its schema is older, one line
    each (empty for a database of the latest schema)."""
    parts = [what for version, what in _PARTS if state.schema.version < version]
    if search_unavailable(state.schema, state.engine.dialect.name):
        parts.append("ranked full-text search (words are matched by a scan, newest first)")
    return parts
