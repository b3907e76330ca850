"""Main text and metadata through trafilatura: title, author, date, description, site name,
categories, tags and text, as a schema's ``metadata`` names them."""

from __future__ import annotations

from topicrawl.parse.methods.validators import RawValue

__all__ = ["extract_metadata"]


def extract_metadata(html: str, url: str) -> dict[str, RawValue]:
    """trafilatura's metadata and main text of a page (keys as in its Document; blank ones
    left out)."""
    import trafilatura  # noqa: PLC0415 - heavy; loaded only when a schema needs it

    doc = trafilatura.bare_extraction(
        html, url=url, fast=True, with_metadata=True, include_comments=False, as_dict=False
    )
    if doc is None:
        return {}
    found: dict[str, RawValue] = {}
    for key in ("title", "author", "date", "description", "sitename", "text", "url"):
        value = getattr(doc, key, None)
        if isinstance(value, str) and value.strip():
            found[key] = value.strip()
    for key in ("categories", "tags"):
        value = getattr(doc, key, None)
        if isinstance(value, list) and value:
            found[key] = [str(v) for v in value]
    return found
