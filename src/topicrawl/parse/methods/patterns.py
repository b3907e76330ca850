"""URL patterns: the registered domain and a path template, the unit the library learns for.

``https://www.example.com/film/12345.html?x=1`` -> ``example.com/film/{n}.html``: digit runs
become ``{n}``, segments that look like ids (letters and digits mixed, 8 or more characters)
``{id}``, long slugs ``{slug}``; the query is dropped.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from topicrawl.parse.urls import registered_domain

__all__ = ["url_pattern"]

_DIGITS = re.compile(r"\d+")
_ID = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_-]{8,}$")
_SLUG = re.compile(r"^[\w%.]+(?:[-_][\w%.]+){2,}$")


def _segment(segment: str) -> str:
    stem, dot, ext = segment.rpartition(".") if "." in segment else (segment, "", "")
    if _ID.match(stem) and not stem.isdigit():
        return "{id}" + dot + ext
    if _SLUG.match(stem) and len(stem) > 12:
        return "{slug}" + dot + ext
    return _DIGITS.sub("{n}", stem) + dot + ext


def url_pattern(url: str) -> str:
    """The pattern of ``url`` (see the module docstring)."""
    parts = urlsplit(url)
    segments = [_segment(s) for s in parts.path.split("/")]
    return registered_domain(url) + "/".join(segments).rstrip("/") or "/"
