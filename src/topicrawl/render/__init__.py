"""Rendering pages whose content or links only exist after their scripts run (DESIGN C17).

:mod:`~topicrawl.render.detect` decides which pages need a browser (pure policy);
:mod:`~topicrawl.render.pool` renders them in the system Chromium through Playwright.
Playwright is imported only when a browser starts.
"""

from __future__ import annotations

from topicrawl.render.detect import RenderDecision, RenderMode, RenderPolicy, Signal
from topicrawl.render.pool import BrowserPool, Fetched, Rendered, SubresourceFetch
from topicrawl.render.resources import ResourceAction, resource_action

__all__ = [
    "BrowserPool",
    "Fetched",
    "RenderDecision",
    "RenderMode",
    "RenderPolicy",
    "Rendered",
    "ResourceAction",
    "Signal",
    "SubresourceFetch",
    "resource_action",
]
