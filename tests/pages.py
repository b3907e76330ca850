"""Fetched pages for the tests: a 200 HTML page with the fields a test cares about."""

from __future__ import annotations

from typing import Any

from topicrawl.core.models import Page


def fetched_page(url: str, text: str = "", *, title: str = "", **fields: Any) -> Page:
    """A 200 HTML page at ``url`` (no redirect) with ``text``, ``title`` and any other
    :class:`Page` fields."""
    return Page(
        url=url,
        final_url=url,
        status=200,
        depth=0,
        fetched_at=0.0,
        content_type="text/html",
        title=title,
        text=text,
        **fields,
    )
