"""The dashboard: ``topicrawl serve``'s web application (FastAPI, the ``web`` extra)."""

from __future__ import annotations

from topicrawl.web.app import DashboardConfig, create_app

__all__ = ["DashboardConfig", "create_app"]
