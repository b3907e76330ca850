"""What the dashboard's routes share while it runs."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncEngine

from topicrawl.web.live import LiveTally
from topicrawl.web.nodes import NodesSource

__all__ = ["DashboardState", "dashboard"]


@dataclass(slots=True)
class DashboardState:
    """What the routes share: the read-only engine, the live tally and the nodes' source."""

    engine: AsyncEngine
    tally: LiveTally
    nodes: NodesSource | None
    display: str
    version: int = 0
    """The database's schema version (what it can show: the video system needs 13)."""


def dashboard(request: Request) -> DashboardState:
    """The running dashboard's shared state."""
    state: DashboardState = request.app.state.dashboard
    return state
