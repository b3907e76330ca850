"""Parsing fetched documents: HTML text and links, link blocks, URLs and content hashes."""

from __future__ import annotations

from topicrawl.parse.content import content_hash, normalise_text
from topicrawl.parse.html import parse_html
from topicrawl.parse.urls import (
    TRACKING_PARAMS,
    InvalidUrl,
    Scope,
    canonicalize,
    fingerprint,
    host_of,
    registered_domain,
)

__all__ = [
    "TRACKING_PARAMS",
    "InvalidUrl",
    "Scope",
    "canonicalize",
    "content_hash",
    "fingerprint",
    "host_of",
    "normalise_text",
    "parse_html",
    "registered_domain",
]
