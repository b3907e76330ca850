"""Responses for the engine tests, as the fetcher would hand them over."""

from __future__ import annotations

from topicrawl.core.models import Response


def html_response(
    html: str, url: str = "http://demo.test/page", *, fetched_at: float = 0.0
) -> Response:
    """A 200 text/html response whose body and decoded text are ``html``."""
    return Response(
        url=url,
        final_url=url,
        status=200,
        headers={},
        body=html.encode(),
        content_type="text/html",
        encoding="utf-8",
        text=html,
        fetched_at=fetched_at,
        elapsed=0.0,
    )
