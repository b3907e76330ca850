"""A fetched HTML page for the strategies' tests."""

from __future__ import annotations

from collections.abc import Sequence

from topicrawl.core.models import Link, Page


def html_page(
    url: str,
    links: Sequence[Link] = (),
    *,
    text: str = "nothing here",
    reasons: dict[str, float] | None = None,
) -> Page:
    """A 200 text/html page at depth 0 with ``text`` and ``links``."""
    return Page(
        url=url,
        final_url=url,
        status=200,
        depth=0,
        fetched_at=0.0,
        content_type="text/html",
        text=text,
        links=tuple(links),
        reasons=reasons or {},
    )
